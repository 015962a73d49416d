import dgram from 'node:dgram';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { SipParseError, SipTransportError } from './errors.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import { parseMessage, serializeMessage, type SipMessage } from './message.js';
import { SipStreamFramer } from './stream-framer.js';
import { SipWsTransport, type SipWsListenOptions } from './ws-transport.js';

/** ws and wss are SIP over WebSocket (RFC 7118): connections browsers open to us, reached only through them. */
export type TransportKind = 'udp' | 'tcp' | 'ws' | 'wss';

/** Where a message came from or goes to. */
export interface SipTarget {
  transport: TransportKind;
  host: string;
  port: number;
  /** ws/wss: the connection (flow) that reaches the peer; host and port are only its remote address, for logs. */
  flow?: string;
}

/** Whether a transport delivers reliably (no retransmissions: RFC 3261 17). */
export function isReliable(transport: TransportKind): boolean {
  return transport !== 'udp';
}

export interface SipTransportOptions {
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** Port for both UDP and TCP (default 0: one free port for both). */
  port?: number;
  /** Default udp and tcp; ws or wss also serves WebSocket on a port of its own (see `webSocket`). */
  transports?: TransportKind[];
  maxMessageBytes?: number;
  /** Give up on an outgoing TCP connect after this long (default 10 s). */
  connectTimeoutMs?: number;
  /** Serve SIP over WebSocket on a port of its own (WSS with `tls`); `webSocket.attach()` shares an HTTP server instead. */
  webSocket?: SipWsListenOptions;
  /** Ping WebSocket connections this often, closing one that missed the last ping (default 30 s; 0: never). */
  webSocketPingIntervalMs?: number;
}

export interface SipTransportEvents {
  message: [message: SipMessage, source: SipTarget];
  /** Unparseable input; `error.request` is set when a 400 can still be addressed. */
  invalid: [error: SipParseError, source: SipTarget];
  /** A socket-level problem, already handled (connection dropped); for logs. */
  warning: [error: Error];
  /** A WebSocket connection closed: its peer cannot be reached until it connects again. */
  flowClosed: [flow: SipTarget];
}

interface Connection {
  socket: net.Socket;
  ready: Promise<void>;
}

/**
 * SIP over UDP and TCP on one port; outgoing TCP connections are reused per remote host:port. WebSocket flows
 * (`webSocket`) come in through it too, and sends to a ws/wss target go over that target's connection.
 */
export class SipTransport extends EventEmitter<SipTransportEvents> {
  /** SIP over WebSocket: attach it to an HTTP server, or give `webSocket` options to serve on a port of its own. */
  readonly webSocket: SipWsTransport;
  private udp: dgram.Socket | undefined;
  private tcp: net.Server | undefined;
  private readonly connections = new Map<string, Connection>();
  private readonly options: Required<Omit<SipTransportOptions, 'webSocket' | 'webSocketPingIntervalMs'>>;
  private readonly webSocketListen: SipWsListenOptions | undefined;
  private boundPort = 0;
  private closed = false;

  constructor(options: SipTransportOptions = {}) {
    super();
    this.options = {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 0,
      transports: options.transports ?? ['udp', 'tcp'],
      maxMessageBytes: options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    };
    this.webSocketListen = options.webSocket;
    this.webSocket = new SipWsTransport({ maxMessageBytes: this.options.maxMessageBytes, pingIntervalMs: options.webSocketPingIntervalMs });
    this.webSocket.on('message', (msg, source) => this.emit('message', msg, source));
    this.webSocket.on('invalid', (err, source) => this.emit('invalid', err, source));
    this.webSocket.on('warning', (err) => this.emit('warning', err));
    this.webSocket.on('flowClosed', (flow) => this.emit('flowClosed', flow));
  }

  get host(): string {
    return this.options.host;
  }

  get port(): number {
    return this.boundPort;
  }

  get transports(): readonly TransportKind[] {
    return this.options.transports;
  }

  async listen(): Promise<void> {
    const kinds = this.options.transports;
    if (kinds.includes('wss') && !this.webSocketListen?.tls) throw new SipTransportError('wss needs webSocket.tls (a certificate and key)');
    if (this.webSocketListen || kinds.includes('ws') || kinds.includes('wss')) {
      await this.webSocket.listen({ host: this.options.host, ...this.webSocketListen });
    }
    const wantUdp = this.options.transports.includes('udp');
    const wantTcp = this.options.transports.includes('tcp');
    // with port 0, UDP picks and TCP must get the same number; retry a few times if TCP finds it taken
    for (let attempt = 0; ; attempt++) {
      let port = this.options.port;
      if (wantUdp) port = await this.bindUdp(port);
      if (!wantTcp) return void (this.boundPort = port);
      try {
        this.boundPort = await this.listenTcp(port);
        return;
      } catch (err) {
        this.udp?.close();
        this.udp = undefined;
        if (this.options.port !== 0 || attempt >= 5) throw new SipTransportError(`cannot listen on TCP port ${port}: ${(err as Error).message}`, { cause: err });
      }
    }
  }

  private bindUdp(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const sock = dgram.createSocket(net.isIPv6(this.options.host) ? 'udp6' : 'udp4');
      sock.once('error', reject);
      sock.bind(port, this.options.host, () => {
        sock.off('error', reject);
        sock.on('error', (err) => this.emit('warning', err));
        sock.on('message', (buf, rinfo) => this.onDatagram(buf, { transport: 'udp', host: rinfo.address, port: rinfo.port }));
        this.udp = sock;
        resolve(sock.address().port);
      });
    });
  }

  private listenTcp(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = net.createServer((socket) => this.adopt(socket));
      server.once('error', reject);
      server.listen(port, this.options.host, () => {
        server.off('error', reject);
        server.on('error', (err) => this.emit('warning', err));
        this.tcp = server;
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  }

  private onDatagram(buf: Buffer, source: SipTarget): void {
    if (isBlank(buf)) return; // keep-alive
    this.deliver(buf, source, false);
  }

  private deliver(buf: Buffer, source: SipTarget, stream: boolean): void {
    let msg: SipMessage;
    try {
      msg = parseMessage(buf, { maxBytes: this.options.maxMessageBytes, stream });
    } catch (err) {
      if (err instanceof SipParseError) this.emit('invalid', err, source);
      else this.emit('warning', err as Error);
      return;
    }
    this.emit('message', msg, source);
  }

  /** Wires a connected socket (accepted or dialled) into framing and the connection table. */
  private adopt(
    socket: net.Socket,
    source: SipTarget = { transport: 'tcp', host: (socket.remoteAddress ?? '').replace(/^::ffff:/, ''), port: socket.remotePort ?? 0 },
  ): Connection {
    const key = keyOf(source.host, source.port);
    const framer = new SipStreamFramer(
      (msg) => this.deliver(msg, source, true),
      () => socket.write('\r\n'), // RFC 5626 pong
      this.options.maxMessageBytes,
    );
    socket.on('data', (chunk: Buffer) => {
      try {
        framer.push(chunk);
      } catch (err) {
        this.emit('warning', err as Error);
        socket.destroy(); // that connection only
      }
    });
    socket.on('error', (err) => this.emit('warning', err));
    socket.on('close', () => {
      if (this.connections.get(key)?.socket === socket) this.connections.delete(key);
    });
    const conn: Connection = { socket, ready: Promise.resolve() };
    if (!this.closed) this.connections.set(key, conn);
    else socket.destroy();
    return conn;
  }

  /** Sends a message (or raw bytes). Rejects with SipTransportError; never throws synchronously. */
  async send(message: SipMessage | Buffer, target: SipTarget): Promise<void> {
    const data = Buffer.isBuffer(message) ? message : serializeMessage(message);
    if (this.closed) throw new SipTransportError('transport closed');
    if (target.transport === 'udp') return this.sendUdp(data, target);
    if (target.transport === 'ws' || target.transport === 'wss') return this.webSocket.send(data, target);
    const conn = this.connections.get(keyOf(target.host, target.port)) ?? this.dial(target);
    await conn.ready;
    if (conn.socket.destroyed) throw new SipTransportError(`connection to ${target.host}:${target.port} closed`);
    await new Promise<void>((resolve, reject) =>
      conn.socket.write(data, (err) => (err ? reject(new SipTransportError('TCP write failed', { cause: err })) : resolve())),
    );
  }

  private sendUdp(data: Buffer, target: SipTarget): Promise<void> {
    const sock = this.udp;
    if (!sock) return Promise.reject(new SipTransportError('UDP is not enabled'));
    return new Promise((resolve, reject) => {
      sock.send(data, target.port, target.host, (err) => (err ? reject(new SipTransportError('UDP send failed', { cause: err })) : resolve()));
    });
  }

  private dial(target: SipTarget): Connection {
    const key = keyOf(target.host, target.port);
    const socket = net.connect({ host: target.host, port: target.port, localAddress: this.options.host });
    const conn = this.adopt(socket, { ...target, transport: 'tcp' });
    conn.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new SipTransportError(`TCP connect to ${key} timed out`));
      }, this.options.connectTimeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once('close', () => {
        clearTimeout(timer);
        reject(new SipTransportError(`TCP connect to ${key} failed`));
      });
    });
    conn.ready.catch(() => undefined); // a failed dial is reported to the sender, never unhandled
    return conn;
  }

  /** Open TCP connections (accepted and dialled). */
  get connectionCount(): number {
    return this.connections.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const { socket } of this.connections.values()) socket.destroy();
    this.connections.clear();
    const udp = this.udp;
    const tcp = this.tcp;
    await Promise.all([
      this.webSocket.close(),
      udp ? new Promise<void>((r) => udp.close(() => r())) : undefined,
      tcp ? new Promise<void>((r) => tcp.close(() => r())) : undefined,
    ]);
  }
}

function keyOf(host: string, port: number): string {
  return `${host.replace(/^::ffff:/, '')}:${port}`;
}

function isBlank(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c !== 0x0d && c !== 0x0a && c !== 0x20 && c !== 0x09 && c !== 0) return false;
  }
  return true;
}
