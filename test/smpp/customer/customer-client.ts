// A customer ESME on the `smpp` npm package (an independent SMPP implementation), promisified for tests.
import type { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type net from 'node:net';

/** A PDU as the `smpp` package decodes it: header fields plus body fields and TLVs by name. */
export interface ClientPdu {
  command: string;
  command_status: number;
  sequence_number: number;
  [field: string]: unknown;
}

interface SmppPduInstance extends ClientPdu {
  response(options?: Record<string, unknown>): SmppPduInstance;
}

interface SmppSession extends EventEmitter {
  socket: net.Socket;
  send(pdu: SmppPduInstance, onResponse?: (pdu: ClientPdu) => void): boolean;
  close(cb?: () => void): void;
  destroy(cb?: () => void): void;
}

interface SmppModule {
  connect(options: { url: string; rejectUnauthorized?: boolean; localAddress?: string }, listener?: () => void): SmppSession;
  PDU: new (command: string, options?: Record<string, unknown>) => SmppPduInstance;
}

// The package ships no types; it is loaded through require so the tests type exactly what they use.
const smpp = createRequire(import.meta.url)('smpp') as SmppModule;

export type ClientBindType = 'transmitter' | 'receiver' | 'transceiver';

export interface ConnectOptions {
  tls?: boolean;
  host?: string;
  /** The client's own address (e.g. 127.0.0.2, to bind as another peer). */
  localAddress?: string;
}

/** One customer connection. Answers unbind and deliver_sm itself, like a well-behaved ESME. */
export class CustomerClient {
  readonly received: ClientPdu[] = [];
  readonly closed: Promise<void>;

  private constructor(private readonly session: SmppSession) {
    this.closed = new Promise((resolve) => session.on('close', () => resolve()));
    session.on('error', () => undefined);
    session.on('pdu', (pdu: SmppPduInstance) => {
      this.received.push(pdu);
      if (pdu.command === 'unbind' || pdu.command === 'deliver_sm' || pdu.command === 'enquire_link') session.send(pdu.response());
    });
  }

  /** Connects over TCP, or over TLS (certificate not verified) when `tls` is set; from `localAddress` when given. */
  static connect(port: number, options: ConnectOptions = {}): Promise<CustomerClient> {
    const host = options.host ?? '127.0.0.1';
    return new Promise((resolve, reject) => {
      const url = `${options.tls ? 'ssmpp' : 'smpp'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
      // The package hands its options to net/tls.connect, localAddress included (Linux loopback answers all 127/8).
      const session = smpp.connect({ url, rejectUnauthorized: false, ...(options.localAddress ? { localAddress: options.localAddress } : {}) }, () => {
        session.off('error', reject);
        resolve(new CustomerClient(session));
      });
      session.once('error', reject);
    });
  }

  /** Connects and binds; resolves with the bind response whatever its status. */
  static async bound(port: number, bindType: ClientBindType, systemId: string, password: string, options: ConnectOptions = {}): Promise<{ client: CustomerClient; resp: ClientPdu }> {
    const client = await CustomerClient.connect(port, options);
    const resp = await client.bind(bindType, systemId, password);
    return { client, resp };
  }

  get socket(): net.Socket {
    return this.session.socket;
  }

  bind(bindType: ClientBindType, systemId: string, password: string): Promise<ClientPdu> {
    return this.request(`bind_${bindType}`, { system_id: systemId, password });
  }

  /** Sends a request and resolves with its response (or a generic_nack). */
  request(command: string, fields: Record<string, unknown> = {}, timeoutMs = 5000): Promise<ClientPdu> {
    return new Promise((resolve, reject) => {
      const pdu = new smpp.PDU(command, fields);
      const timer = setTimeout(() => reject(new Error(`${command}: no response within ${timeoutMs} ms`)), timeoutMs);
      const sent = this.session.send(pdu, (resp) => {
        clearTimeout(timer);
        resolve(resp);
      });
      if (!sent) {
        clearTimeout(timer);
        reject(new Error(`${command}: socket not writable`));
      }
    });
  }

  /** Resolves with the first received PDU (already received or to come) matching `pred`. */
  next(pred: (pdu: ClientPdu) => boolean, timeoutMs = 5000): Promise<ClientPdu> {
    const already = this.received.find(pred);
    if (already) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.session.off('pdu', onPdu);
        reject(new Error(`no matching PDU within ${timeoutMs} ms`));
      }, timeoutMs);
      const onPdu = (pdu: ClientPdu): void => {
        if (!pred(pdu)) return;
        clearTimeout(timer);
        this.session.off('pdu', onPdu);
        resolve(pdu);
      };
      this.session.on('pdu', onPdu);
    });
  }

  /** Writes raw bytes on the socket (for malformed-input tests). */
  writeRaw(bytes: Buffer): void {
    this.session.socket.write(bytes);
  }

  close(): Promise<void> {
    this.session.destroy();
    return this.closed;
  }
}
