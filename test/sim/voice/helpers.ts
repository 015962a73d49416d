/** A caller for the trunk simulator's tests: Ferry's own UserAgent and MediaEngine, an offer written with sdp-transform. */
import sdpTransform from 'sdp-transform';
import { MediaEngine, type G711Codec, type MediaHandle, type PortRange } from '../../../src/rtp/index.js';
import { UserAgent, type DigestCredentials, type OutgoingCall, type TransportKind } from '../../../src/sip/index.js';
import type { VoiceTrunkSimulator } from '../../../src/sim/voice/trunk-simulator.js';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Short SIP timers so retransmissions and timeouts stay well under a second. */
export const FAST = { t1: 20, t2: 160, t4: 200 };

const PT: Readonly<Record<G711Codec, number>> = { PCMU: 0, PCMA: 8 };

export function offer(port: number, codecs: readonly G711Codec[] = ['PCMU', 'PCMA'], telephoneEvent = true): string {
  const rtp: Array<{ payload: number; codec: string; rate: number }> = codecs.map((c) => ({ payload: PT[c], codec: c, rate: 8000 }));
  if (telephoneEvent) rtp.push({ payload: 101, codec: 'telephone-event', rate: 8000 });
  return sdpTransform.write({
    version: 0,
    origin: { username: 'caller', sessionId: 1, sessionVersion: 1, netType: 'IN', ipVer: 4, address: '127.0.0.1' },
    name: 'test caller',
    connection: { version: 4, ip: '127.0.0.1' },
    timing: { start: 0, stop: 0 },
    media: [{ type: 'audio', port, protocol: 'RTP/AVP', payloads: rtp.map((r) => r.payload).join(' '), rtp, fmtp: telephoneEvent ? [{ payload: 101, config: '0-16' }] : [], ptime: 20, direction: 'sendrecv' }],
  });
}

/** The answer as the caller reads it: the one codec, the RTP address, the telephone-event payload type. */
export function readAnswer(sdp: string): { codecs: string[]; host: string; port: number; dtmfPayloadType: number | null } {
  const parsed = sdpTransform.parse(sdp);
  const audio = parsed.media[0];
  const dtmf = audio.rtp.find((r) => r.codec === 'telephone-event');
  return {
    codecs: audio.rtp.filter((r) => r.codec !== 'telephone-event').map((r) => r.codec),
    host: audio.connection?.ip ?? parsed.connection?.ip ?? '',
    port: audio.port,
    dtmfPayloadType: dtmf ? dtmf.payload : null,
  };
}

export interface Caller {
  ua: UserAgent;
  engine: MediaEngine;
}

export async function startCaller(t: Teardown, portRange: PortRange): Promise<Caller> {
  const ua = await UserAgent.create({ timers: FAST, transports: ['udp', 'tcp'] });
  const engine = await MediaEngine.start({ portRange });
  t.teardown(async () => {
    await ua.close();
    await engine.close();
  });
  return { ua, engine };
}

export type CallEvent = [name: string, ...args: unknown[]];

export interface Dialled {
  call: OutgoingCall;
  media: MediaHandle;
  /** The call's events in order. */
  events: CallEvent[];
  /** Digits the caller's media received, as `digit:source`. */
  digits: string[];
}

export interface DialOptions {
  transport?: TransportKind;
  codecs?: readonly G711Codec[];
  telephoneEvent?: boolean;
  credentials?: DigestCredentials;
  /** Record what the caller hears (seconds). */
  record?: number;
}

/** Calls `number` at the simulator; the caller's media follows the answer (codec, address, event type). */
export async function dial(caller: Caller, sim: VoiceTrunkSimulator, number: string, o: DialOptions = {}): Promise<Dialled> {
  const codecs = o.codecs ?? ['PCMU', 'PCMA'];
  const media = await caller.engine.open({ codec: codecs[0], record: o.record ? { maxSeconds: o.record } : undefined });
  const call = caller.ua.invite({
    target: { transport: o.transport ?? 'udp', host: '127.0.0.1', port: sim.port },
    from: 'sip:+233200000001@127.0.0.1',
    to: `sip:${number}@127.0.0.1`,
    sdp: offer(media.localPort, codecs, o.telephoneEvent ?? true),
    credentials: o.credentials,
  });
  const events: CallEvent[] = [];
  const digits: string[] = [];
  for (const name of ['provisional', 'answered', 'failed', 'ended']) call.on(name as 'ended', (...args: unknown[]) => events.push([name, ...args]));
  call.on('answered', (sdp) => {
    const answer = readAnswer(sdp);
    media.setRemote({ host: answer.host, port: answer.port }, { codec: answer.codecs[0] as G711Codec, dtmfPayloadType: answer.dtmfPayloadType ?? undefined });
  });
  media.on('digit', (digit, source) => digits.push(`${digit}:${source}`));
  return { call, media, events, digits };
}

export function has(events: CallEvent[], name: string): boolean {
  return events.some((e) => e[0] === name);
}

export function event(events: CallEvent[], name: string): CallEvent | undefined {
  return events.find((e) => e[0] === name);
}

/** Polls `cond` every 10 ms; rejects after `limitMs` (a bound on the wait, not a timing assertion). */
export async function until(cond: () => boolean, limitMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${limitMs} ms`);
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
