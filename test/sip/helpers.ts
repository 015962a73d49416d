import dgram from 'node:dgram';
import { UserAgent, type OutgoingCall, type IncomingCall, type UserAgentOptions } from '../../src/sip/index.js';

/** The part of a tap test these helpers need. */
export interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Small timers so retransmission and timeout paths run in well under a second. */
export const FAST = { t1: 20, t2: 160, t4: 200 };

export function sdp(port: number, origin = 'ferry'): string {
  return ['v=0', `o=${origin} 1 1 IN IP4 127.0.0.1`, 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', `m=audio ${port} RTP/AVP 0 8 101`, 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=sendrecv', ''].join('\r\n');
}

export async function startUa(t: Teardown, options: UserAgentOptions = {}): Promise<UserAgent> {
  const ua = await UserAgent.create({ timers: FAST, ...options });
  t.teardown(() => ua.close());
  return ua;
}

export type CallEvent = [name: string, ...args: unknown[]];

/** Records a call's events in order (for order and content assertions). */
export function record(call: OutgoingCall | IncomingCall): CallEvent[] {
  const events: CallEvent[] = [];
  const names = ['provisional', 'answered', 'failed', 'ended', 'cancelled', 'ack'];
  for (const name of names) (call as unknown as NodeJS.EventEmitter).on(name, (...args: unknown[]) => events.push([name, ...args]));
  return events;
}

export function has(events: CallEvent[], name: string): boolean {
  return events.some((e) => e[0] === name);
}

export function waitFor(cond: () => boolean, limitMs = 5000, what = 'condition'): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (cond()) return resolve();
      if (Date.now() - start > limitMs) return reject(new Error(`${what} not reached within ${limitMs} ms`));
      setTimeout(check, 5);
    };
    check();
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A bound UDP socket that never answers (for Timer B / F). */
export async function silentPort(t: Teardown): Promise<{ port: number; received: () => number }> {
  const sock = dgram.createSocket('udp4');
  let count = 0;
  sock.on('message', () => count++);
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => sock.close(() => r())));
  return { port: sock.address().port, received: () => count };
}

/**
 * A UDP relay between one client and a server that drops the first `dropFirst` datagrams in each direction and
 * counts what it saw, so retransmission is exercised deterministically.
 */
export async function lossyRelay(t: Teardown, serverPort: number, dropFirst: number): Promise<{ port: number; dropped: () => number; forwarded: string[] }> {
  const sock = dgram.createSocket('udp4');
  let client: { address: string; port: number } | undefined;
  let toServer = 0;
  let toClient = 0;
  let dropped = 0;
  const forwarded: string[] = [];
  sock.on('message', (buf, rinfo) => {
    const fromServer = rinfo.port === serverPort;
    if (!fromServer) client = { address: rinfo.address, port: rinfo.port };
    const n = fromServer ? ++toClient : ++toServer;
    if (n <= dropFirst) {
      dropped++;
      return;
    }
    forwarded.push(buf.toString('latin1').split('\r\n')[0]);
    if (fromServer) {
      if (client) sock.send(buf, client.port, client.address);
    } else sock.send(buf, serverPort, '127.0.0.1');
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => sock.close(() => r())));
  return { port: sock.address().port, dropped: () => dropped, forwarded };
}

export interface RawPeer {
  port: number;
  /** Every datagram received, parsed (null where it did not parse). */
  received: Array<import('../../src/sip/index.js').SipMessage>;
  send(text: string, port: number): void;
}

/** A bare UDP socket speaking SIP by hand, to drive the UA into corners a well-behaved peer never reaches. */
export async function rawPeer(t: Teardown): Promise<RawPeer> {
  const { parseMessage } = await import('../../src/sip/index.js');
  const sock = dgram.createSocket('udp4');
  const received: RawPeer['received'] = [];
  sock.on('message', (buf) => {
    try {
      received.push(parseMessage(buf));
    } catch {
      // not SIP: ignored, the tests count only messages
    }
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => sock.close(() => r())));
  return {
    port: sock.address().port,
    received,
    send: (text, port) => sock.send(Buffer.from(text.replace(/\r?\n/g, '\r\n')), port, '127.0.0.1'),
  };
}
