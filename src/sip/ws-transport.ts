import { isUtf8 } from 'node:buffer';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { SipParseError, SipTransportError } from './errors.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import { parseMessage, serializeMessage, type SipMessage } from './message.js';
import type { SipTarget } from './transport.js';

/*
 * How a browser dialer uses it (through UserAgent, which owns one as `ua.webSocket`):
 *   ua.webSocket.attach(httpServer, { path: '/sip', verify })   or   UserAgent.create({ webSocket: { port } })
 *   ua.onRequest('REGISTER', (r) => { remember r.request's Contact → r.source (the flow); r.respond(200, …) })
 *   ua.on('flowClosed', (flow) => { forget the bindings naming flow.flow })
 *   ua.invite({ target: binding.flow, requestUri: binding.contact, … })   // calls the browser over its connection
 * The core has no registrar of its own: digest challenges, expiry and the AOR table belong to whoever handles REGISTER.
 */

/** The WebSocket subprotocol of RFC 7118; a handshake that does not offer it is refused. */
export const SIP_SUBPROTOCOL = 'sip';

export interface SipWsTransportOptions {
  /** A SIP message larger than this is dropped (default MAX_MESSAGE_BYTES); a frame over twice it closes the connection. */
  maxMessageBytes?: number;
  /** Ping each connection this often and close one that did not answer the previous ping (default 30 s; 0: never). */
  pingIntervalMs?: number;
  /** Open connections at most; handshakes beyond it get 503 (default 10 000). */
  maxFlows?: number;
}

export interface SipWsAttachOptions {
  /** The HTTP path that upgrades to SIP (default '/'); other paths are left to the server's other upgrade listeners. */
  path?: string;
  /**
   * Whether to accept a handshake (an Origin check, a session cookie, a token in the query string); false refuses it
   * with 403. Browsers cannot set headers on a WebSocket, so this is where the dialer's sign-in is checked.
   */
  verify?: (request: http.IncomingMessage) => boolean | Promise<boolean>;
}

export interface SipWsListenOptions extends SipWsAttachOptions {
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  /** Certificate and key: serve WSS instead of WS. */
  tls?: https.ServerOptions;
}

export interface SipWsTransportEvents {
  message: [message: SipMessage, source: SipTarget];
  invalid: [error: SipParseError, source: SipTarget];
  warning: [error: Error];
  /** A browser connected; `flow` is where its requests come from and where requests to it go. */
  flowOpened: [flow: SipTarget, request: http.IncomingMessage];
  /** Its connection is gone: nothing can reach that peer any more until it connects (and registers) again. */
  flowClosed: [flow: SipTarget];
}

interface Flow {
  socket: WebSocket;
  target: SipTarget;
  /** Heard from since the last ping. */
  alive: boolean;
}

interface Attachment {
  server: http.Server;
  onUpgrade: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Created by listen(): closed with us. */
  owned: boolean;
}

const PING = '\r\n\r\n';
const PONG = '\r\n';

/**
 * SIP over WebSocket (RFC 7118), server side: browsers connect with the `sip` subprotocol and send one SIP message
 * per frame. Each connection is a flow (SipTarget with `flow` set): responses to its requests and requests to that
 * peer go back over it, never by Via or Contact address (a browser's are `something.invalid`). It serves on its own
 * port (listen) or on an existing HTTP(S) server at a path (attach), as WS or, over TLS, WSS.
 */
export class SipWsTransport extends EventEmitter<SipWsTransportEvents> {
  private readonly wss: WebSocketServer;
  private readonly flows = new Map<string, Flow>();
  private readonly attachments: Attachment[] = [];
  private readonly maxMessageBytes: number;
  private readonly pingIntervalMs: number;
  private readonly maxFlows: number;
  private pingTimer: NodeJS.Timeout | undefined;
  private nextFlow = 0;
  private closed = false;

  constructor(options: SipWsTransportOptions = {}) {
    super();
    this.maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    this.pingIntervalMs = options.pingIntervalMs ?? 30_000;
    this.maxFlows = options.maxFlows ?? 10_000;
    this.wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      // frames up to this are read and dropped when over the SIP cap; beyond it ws closes the connection (1009)
      maxPayload: 2 * this.maxMessageBytes,
      handleProtocols: (protocols) => (protocols.has(SIP_SUBPROTOCOL) ? SIP_SUBPROTOCOL : false),
    });
  }

  /** Open connections. */
  get flowCount(): number {
    return this.flows.size;
  }

  /** Whether `target` is a connection that is still open. */
  isOpen(target: SipTarget): boolean {
    const flow = target.flow === undefined ? undefined : this.flows.get(target.flow);
    return flow?.socket.readyState === WebSocket.OPEN;
  }

  /** The port of the first server serving `secure` (WSS) or plain WS, for Via and Contact; 0 when none listens. */
  port(secure = false): number {
    for (const { server } of this.attachments) {
      if ((server instanceof tls.Server) !== secure) continue;
      const address = server.address();
      if (address && typeof address === 'object') return address.port;
    }
    return 0;
  }

  /** Serves SIP on `path` of an HTTP server (WSS when it is an HTTPS server); its other upgrade paths are untouched. */
  attach(server: http.Server | https.Server, options: SipWsAttachOptions = {}): void {
    this.attachTo(server, options, false);
  }

  /** Serves SIP over WebSocket on a port of its own; resolves with the bound port. */
  async listen(options: SipWsListenOptions = {}): Promise<number> {
    if (this.closed) throw new SipTransportError('transport closed');
    const server = options.tls ? https.createServer(options.tls) : http.createServer();
    server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(426, { Connection: 'close', Upgrade: 'websocket' }).end();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        server.on('error', (err) => this.emit('warning', err));
        resolve();
      });
    });
    this.attachTo(server, options, true);
    return (server.address() as net.AddressInfo).port;
  }

  private attachTo(server: http.Server, options: SipWsAttachOptions, owned: boolean): void {
    if (this.closed) throw new SipTransportError('transport closed');
    const path = options.path ?? '/';
    const secure = server instanceof tls.Server;
    const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
      if (pathOf(req.url) !== path) {
        if (owned) refuse(socket, 404);
        return; // another upgrade listener's
      }
      void this.handshake(req, socket, head, secure, options.verify);
    };
    server.on('upgrade', onUpgrade);
    this.attachments.push({ server, onUpgrade, owned });
    this.startPings();
  }

  private async handshake(req: http.IncomingMessage, socket: Duplex, head: Buffer, secure: boolean, verify: SipWsAttachOptions['verify']): Promise<void> {
    const onError = (err: Error): void => void this.emit('warning', err);
    socket.on('error', onError); // until ws owns the socket
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    if (!offered.includes(SIP_SUBPROTOCOL)) return refuse(socket, 400, 'the sip subprotocol is required');
    if (this.closed || this.flows.size >= this.maxFlows) return refuse(socket, 503);
    if (verify) {
      let ok = false;
      try {
        ok = await verify(req);
      } catch (err) {
        this.emit('warning', err as Error);
      }
      if (!ok) return refuse(socket, 403);
      if (this.closed) return refuse(socket, 503);
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      socket.off('error', onError);
      this.adopt(ws, req, secure);
    });
  }

  private adopt(socket: WebSocket, req: http.IncomingMessage, secure: boolean): void {
    const id = String(++this.nextFlow);
    const target: SipTarget = {
      transport: secure ? 'wss' : 'ws',
      host: (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
      port: req.socket.remotePort ?? 0,
      flow: id,
    };
    const flow: Flow = { socket, target, alive: true };
    this.flows.set(id, flow);
    socket.on('message', (data) => {
      flow.alive = true;
      this.onFrame(toBuffer(data), flow);
    });
    socket.on('pong', () => (flow.alive = true));
    socket.on('error', (err) => this.emit('warning', err));
    socket.on('close', () => {
      this.flows.delete(id);
      this.emit('flowClosed', target);
    });
    this.emit('flowOpened', target, req);
  }

  private onFrame(buf: Buffer, flow: Flow): void {
    if (buf.length <= 4 && /^[\r\n]*$/.test(buf.toString('latin1'))) {
      // RFC 5626-style keep-alive some SIP libraries send over WebSocket too
      if (buf.toString('latin1') === PING) flow.socket.send(PONG);
      return;
    }
    let msg: SipMessage;
    try {
      // one message per frame: the frame bounds it, so Content-Length is optional (RFC 7118 5.1)
      msg = parseMessage(buf, { maxBytes: this.maxMessageBytes });
    } catch (err) {
      if (err instanceof SipParseError) this.emit('invalid', err, flow.target);
      else this.emit('warning', err as Error);
      return;
    }
    this.emit('message', msg, flow.target);
  }

  /** Sends over the flow `target` names (its `flow`); rejects SipTransportError when that connection is gone. */
  async send(message: SipMessage | Buffer, target: SipTarget): Promise<void> {
    const flow = target.flow === undefined ? undefined : this.flows.get(target.flow);
    if (!flow || flow.socket.readyState !== WebSocket.OPEN) {
      throw new SipTransportError(`no open WebSocket connection to ${target.host}:${target.port}${target.flow === undefined ? ' (no flow given)' : ''}`);
    }
    const data = Buffer.isBuffer(message) ? message : serializeMessage(message);
    // text frames as browsers expect; a body that is not UTF-8 must travel as binary
    await new Promise<void>((resolve, reject) =>
      flow.socket.send(data, { binary: !isUtf8(data) }, (err) => (err ? reject(new SipTransportError('WebSocket send failed', { cause: err })) : resolve())),
    );
  }

  private startPings(): void {
    if (this.pingTimer || this.pingIntervalMs <= 0) return;
    this.pingTimer = setInterval(() => {
      for (const flow of this.flows.values()) {
        if (!flow.alive) {
          flow.socket.terminate(); // emits close: the flow ends like any other
          continue;
        }
        flow.alive = false;
        flow.socket.ping();
      }
    }, this.pingIntervalMs);
    this.pingTimer.unref();
  }

  /** Closes every connection (1001 Going Away), detaches from shared servers and closes its own. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pingTimer);
    const sockets = [...this.flows.values()].map((f) => f.socket);
    await Promise.all(sockets.map((socket) => closeSocket(socket)));
    for (const { server, onUpgrade, owned } of this.attachments) {
      server.off('upgrade', onUpgrade);
      if (owned) {
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      }
    }
    this.attachments.length = 0;
    this.wss.close();
  }
}

/** A close handshake, cut short when the peer does not answer it soon. */
function closeSocket(socket: WebSocket): Promise<void> {
  if (socket.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => socket.terminate(), 500);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.close(1001, 'going away');
  });
}

function refuse(socket: Duplex, status: number, reason?: string): void {
  const text = http.STATUS_CODES[status] ?? 'Error';
  const body = reason ?? text;
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

function pathOf(url: string | undefined): string {
  const q = (url ?? '/').indexOf('?');
  return q < 0 ? (url ?? '/') : (url ?? '/').slice(0, q);
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
