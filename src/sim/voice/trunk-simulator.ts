/**
 * A SIP trunk simulator: a carrier's side of outbound calls for tests, demos and Ferry's embedded default. It answers
 * INVITEs over UDP and/or TCP as its number plan says (number-plan.ts: …486 busy, …480 rings until CANCEL, …503 trunk
 * failure, …183 early media, …555 the far end hangs up, …77 it sends DTMF 1234#, …88 it plays 440 Hz, any other number
 * is answered), takes the caller's first G.711 codec and telephone-event, sends its RTP to the offer's address, and
 * records what it hears. Optionally every INVITE is challenged (digest, 401). Each call is kept (the newest 200) with
 * its state, the digits the caller sent and measurements of the received audio; bye/sendDigits/play act on live calls.
 */
import { MediaEngine, type MediaHandle, type OpenOptions, type PortRange } from '../../rtp/index.js';
import { UserAgent, type IncomingCall, type SipTimerConfig, type TransportKind } from '../../sip/index.js';
import { CallHistory } from './call-history.js';
import { behaviourOf } from './number-plan.js';
import type { SimVoiceCall } from './sim-voice-call.js';
import { calledNumber, TrunkCall } from './trunk-call.js';

export type SimTransport = TransportKind | 'both';

export interface VoiceTrunkSimulatorOptions {
  /** Address for SIP and RTP (default 127.0.0.1). */
  host?: string;
  /** SIP port, the same for UDP and TCP (default 0: a free one). */
  port?: number;
  /** Default 'both', like Ferry's user agent. */
  transport?: SimTransport;
  /** RTP ports (default 30000–30999). */
  mediaPortRange?: PortRange;
  /** Challenge every INVITE (401) and accept only these users' digest credentials. */
  auth?: { realm: string; users: Record<string, string> };
  /** Longest recording per call (default 120 s). */
  recordSeconds?: number;
  /** The trunk hangs up answered calls after this long (default 3,600 s). */
  maxCallSeconds?: number;
  /** Calls kept (default 200). */
  historySize?: number;
  /** Recorded audio kept over all calls; older recordings are dropped first (default 3,600 s, about 58 MB). */
  recordingBudgetSeconds?: number;
  /** SIP timers (tests shorten them). */
  timers?: Partial<SipTimerConfig>;
}

const DEFAULT_MEDIA_PORTS: PortRange = { min: 30000, max: 30999 };
/** A timer cannot wait longer than 2^31 ms; a day is plenty for a simulated call. */
const MAX_CALL_CAP_SECONDS = 86_400;
/** How long stop() waits for a caller to answer the trunk's BYE. */
const BYE_WAIT_MS = 2000;

export class VoiceTrunkSimulator {
  private ua: UserAgent | undefined;
  private engine: MediaEngine | undefined;
  private history = new CallHistory(200, 0);
  private options: Required<Pick<VoiceTrunkSimulatorOptions, 'host' | 'transport' | 'recordSeconds' | 'maxCallSeconds'>> = { host: '127.0.0.1', transport: 'both', recordSeconds: 120, maxCallSeconds: 3600 };
  private nextId = 1;
  private stopping = false;

  async start(options: VoiceTrunkSimulatorOptions = {}): Promise<void> {
    if (this.ua) throw new Error('the voice trunk simulator is already running');
    const host = options.host ?? '127.0.0.1';
    const transport = options.transport ?? 'both';
    this.options = { host, transport, recordSeconds: options.recordSeconds ?? 120, maxCallSeconds: options.maxCallSeconds ?? 3600 };
    this.history = new CallHistory(options.historySize ?? 200, Math.round((options.recordingBudgetSeconds ?? 3600) * 8000));
    this.stopping = false;
    this.engine = await MediaEngine.start({ portRange: options.mediaPortRange ?? DEFAULT_MEDIA_PORTS, host, workers: 1 });
    try {
      this.ua = await UserAgent.create({
        host,
        port: options.port ?? 0,
        transports: transport === 'both' ? ['udp', 'tcp'] : [transport],
        userAgent: 'Ferry trunk simulator',
        contactUser: 'trunk',
        requireAuth: options.auth,
        timers: options.timers,
      });
    } catch (err) {
      await this.engine.close();
      this.engine = undefined;
      throw err;
    }
    this.ua.onInvite((call) => this.onInvite(call));
  }

  get port(): number {
    return this.running().port;
  }

  get host(): string {
    return this.options.host;
  }

  get transport(): SimTransport {
    return this.options.transport;
  }

  /** The trunk's SIP address (`;transport=tcp` when it listens on TCP only). */
  get url(): string {
    return `sip:${this.host}:${this.port}${this.options.transport === 'tcp' ? ';transport=tcp' : ''}`;
  }

  /** Every call kept, oldest first. */
  calls(): SimVoiceCall[] {
    return this.history.list();
  }

  call(id: string): SimVoiceCall | undefined {
    return this.history.get(id);
  }

  /** The first call (oldest first) `predicate` holds for, polled until `timeoutMs`; rejects naming what there is. */
  async waitFor(predicate: (call: SimVoiceCall) => boolean, timeoutMs = 5000): Promise<SimVoiceCall> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.history.list().find(predicate);
      if (found) return found;
      if (Date.now() >= deadline) {
        const seen = this.history.list().map((c) => `${c.id} ${c.to} ${c.state}`).join(', ') || 'none';
        throw new Error(`no simulator call matched within ${timeoutMs} ms (calls: ${seen})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The trunk hangs up a call; false when it is not answered. Throws RangeError for an unknown id. */
  bye(id: string): boolean {
    return this.known(id).bye();
  }

  /** Sends DTMF to the caller; false when the call is not answered. Throws RangeError for an unknown id or key. */
  sendDigits(id: string, digits: string): boolean {
    return this.known(id).sendDigits(digits);
  }

  /** Plays 8 kHz audio to the caller; false when the call has no media. Throws RangeError for an unknown id. */
  play(id: string, pcm: Int16Array): boolean {
    return this.known(id).play(pcm);
  }

  /** Hangs up every answered call (BYE), refuses ringing ones, closes SIP and media. The history stays readable. */
  async stop(): Promise<void> {
    const ua = this.ua;
    if (!ua || this.stopping) return;
    this.stopping = true;
    await Promise.all(this.history.live().map((call) => call.shutdown(BYE_WAIT_MS)));
    await ua.close();
    await this.engine?.close();
    this.ua = undefined;
    this.engine = undefined;
  }

  private onInvite(sip: IncomingCall): void {
    if (this.stopping) return sip.reject(503, 'Service Unavailable (trunk shutting down)');
    const call = new TrunkCall(String(this.nextId++), sip.source.transport, sip, behaviourOf(calledNumber(sip)), {
      mediaHost: this.options.host,
      maxCallMs: Math.min(this.options.maxCallSeconds, MAX_CALL_CAP_SECONDS) * 1000,
      openMedia: (o) => this.openMedia(o),
      settled: () => this.history.enforceBudget(),
    });
    this.history.add(call);
    call.run();
  }

  private openMedia(o: Pick<OpenOptions, 'codec' | 'dtmfPayloadType' | 'remote' | 'inbandDtmf'>): Promise<MediaHandle> {
    if (!this.engine) return Promise.reject(new Error('the voice trunk simulator is stopped'));
    return this.engine.open({ ...o, record: { maxSeconds: this.options.recordSeconds } });
  }

  private known(id: string): TrunkCall {
    const call = this.history.get(id);
    if (!call) throw new RangeError(`no simulator call ${JSON.stringify(id)}`);
    return call;
  }

  private running(): UserAgent {
    if (!this.ua) throw new Error('the voice trunk simulator is not running');
    return this.ua;
  }
}
