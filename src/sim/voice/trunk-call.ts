/** One call at the simulated trunk: plays out its number-plan behaviour over SIP and RTP and records what it hears. */
import { analyzeAudio } from '../../audio/analysis.js';
import { encodeWav } from '../../audio/wav.js';
import { dtmfEventCode, generateDtmf, generateTone, SAMPLE_RATE, type G711Codec, type MediaHandle, type MediaStopResult, type OpenOptions } from '../../rtp/index.js';
import { parseUri, type IncomingCall, type IncomingRefer, type TransportKind } from '../../sip/index.js';
import { behaviourOf, type AfterAnswer, type TrunkBehaviour } from './number-plan.js';
import type { SimCallAudio, SimCallState, SimVoiceCall } from './sim-voice-call.js';
import { buildAnswer, readOffer } from './trunk-sdp.js';

/** What a call needs from the simulator. */
export interface TrunkCallDeps {
  /** Opens a recording media session (the simulator adds the recording cap). */
  openMedia(options: Pick<OpenOptions, 'codec' | 'dtmfPayloadType' | 'remote' | 'inbandDtmf'>): Promise<MediaHandle>;
  /** The address written into the SDP answer (where the caller sends RTP). */
  mediaHost: string;
  /** The trunk hangs up an answered call after this long (a caller that vanished without BYE ends too). */
  maxCallMs: number;
  /** The call reached a terminal state and its record is complete. */
  settled(call: TrunkCall): void;
}

/** Ringback heard during early media (…183): 440 + 480 Hz, shorter than the ring so it ends before the answer. */
const RINGBACK_MS = 900;
const EMPTY = new Int16Array(0);

function describe(b: TrunkBehaviour): string {
  if (b.outcome === 'reject') return `reject ${b.status}`;
  if (b.outcome === 'ring') return 'ring until cancelled';
  const first = b.provisional === 183 ? 'early media, answer' : 'answer';
  const then = b.then.action === 'none' ? '' : `, then ${b.then.action}`;
  return `${first}${b.telephoneEvent ? '' : ' without telephone-event'}${then}${b.refer === false ? ', refuses REFER' : ''}`;
}

export class TrunkCall implements SimVoiceCall {
  readonly callId: string;
  readonly from: string;
  readonly to: string;
  readonly behaviour: string;
  readonly startedAt = Date.now();
  state: SimCallState = 'ringing';
  codec: G711Codec | null = null;
  status: number | null = null;
  answeredAt: number | null = null;
  endedAt: number | null = null;
  endedBy: 'caller' | 'trunk' | null = null;
  digitsReceived = '';
  digitsSent = '';
  audio: SimCallAudio | null = null;
  transfer: { to: string; status: number | null } | null = null;
  private media: MediaHandle | undefined;
  private dtmfPayloadType: number | null = null;
  private recording: Int16Array = EMPTY;
  private readonly timers = new Set<NodeJS.Timeout>();
  private ending = false;
  private readonly complete: Promise<void>;
  private markComplete!: () => void;

  constructor(
    readonly id: string,
    readonly transport: TransportKind,
    private readonly sip: IncomingCall,
    private readonly plan: TrunkBehaviour,
    private readonly deps: TrunkCallDeps,
  ) {
    this.complete = new Promise((resolve) => (this.markComplete = resolve));
    this.callId = sip.callId;
    this.from = sip.from.sip?.user ?? sip.from.uri;
    this.to = calledNumber(sip);
    this.behaviour = describe(plan);
    sip.on('cancelled', () => this.finish('canceled', 'caller', 487));
    sip.on('ended', (info) => this.finish('ended', info.by === 'remote' ? 'caller' : 'trunk'));
    if (plan.outcome === 'answer' && plan.refer !== false) sip.on('refer', (refer) => this.onRefer(refer));
  }

  /**
   * A blind transfer asked of the trunk: accepted, and reported as the Refer-To number's own plan goes (a number that
   * rejects gives that status, one that rings forever stays at 180 until the caller hangs up, others answer). On
   * success the transferor is expected to hang up; the transferred party's new call is not simulated further.
   */
  private onRefer(refer: IncomingRefer): void {
    if (this.state !== 'answered' || this.ending) return refer.reject(603);
    let to = refer.referTo;
    try {
      to = parseUri(refer.referTo).user ?? refer.referTo;
    } catch {
      // a tel: or other URI: kept as written, the default plan applies
    }
    this.transfer = { to, status: null };
    const transfer = this.transfer;
    refer.accept();
    const plan = behaviourOf(to);
    const report = (status: number) => {
      if (this.ending) return;
      if (status >= 200) transfer.status = status;
      refer.notify(status);
    };
    if (plan.outcome === 'reject') {
      if (plan.ringMs !== undefined) report(180);
      return void this.later(plan.ringMs ?? 50, () => report(plan.status));
    }
    this.later(plan.outcome === 'answer' ? plan.ringMs : 100, () => report(180));
    if (plan.outcome === 'answer') this.later(plan.ringMs + plan.answerMs, () => report(200));
  }

  /** Whether the call still has a SIP side (ringing or answered, not yet over). */
  get live(): boolean {
    return !this.ending;
  }

  /** Resolves once the record is complete (immediately for a settled call). */
  settled(): Promise<void> {
    return this.complete;
  }

  /** Received samples held now (the simulator bounds the total). */
  get recordedSamples(): number {
    return this.recording.length;
  }

  /** Frees the samples; the measurements stay. */
  dropRecording(): void {
    this.recording = EMPTY;
    if (this.audio) this.audio.kept = false;
  }

  wav(): Buffer {
    return encodeWav(this.recording, SAMPLE_RATE);
  }

  /** Starts the number plan's behaviour; a fault of the simulator's own becomes a 500 rather than a stuck call. */
  run(): void {
    this.follow().catch(() => this.reject(500, 'Server Internal Error (trunk simulator fault)'));
  }

  private async follow(): Promise<void> {
    const plan = this.plan;
    if (plan.outcome === 'reject') {
      if (plan.ringMs === undefined) return this.reject(plan.status);
      this.sip.ring(180);
      return void this.later(plan.ringMs, () => this.reject(plan.status));
    }
    if (plan.outcome === 'ring') return this.sip.ring(180);

    const offer = readOffer(this.sip.sdp);
    if (!offer.ok) return this.reject(488, `Not Acceptable Here (${offer.reason})`);
    const dtmfPayloadType = plan.telephoneEvent ? offer.dtmfPayloadType : null;
    let media: MediaHandle;
    try {
      // Without RFC 4733 the caller's digits can only arrive as tones.
      media = await this.deps.openMedia({ codec: offer.codec, dtmfPayloadType: dtmfPayloadType ?? undefined, remote: offer.remote, inbandDtmf: dtmfPayloadType === null });
    } catch {
      return this.reject(503, 'Service Unavailable (no media port)');
    }
    if (this.ending) {
      media.stop().catch(() => undefined); // cancelled while the port was being opened
      return;
    }
    this.media = media;
    this.codec = offer.codec;
    this.dtmfPayloadType = dtmfPayloadType;
    media.on('digit', (digit) => (this.digitsReceived += digit));
    const sdp = buildAnswer({ host: this.deps.mediaHost, port: media.localPort, sessionId: Date.now(), codec: offer.codec, dtmfPayloadType });
    this.later(plan.ringMs, () => {
      if (plan.provisional === 183) {
        this.sip.ring(183, sdp);
        media.play(generateTone([440, 480], RINGBACK_MS, 4000));
      } else this.sip.ring(180);
      this.later(plan.answerMs, () => this.answer(sdp, plan.then));
    });
  }

  /** The trunk hangs up (BYE); false when the call is not answered. */
  bye(): boolean {
    if (this.state !== 'answered' || this.ending) return false;
    this.sip.bye();
    return true;
  }

  /** Sends keys to the caller: RFC 4733 when negotiated, else as tones. False when the call is not answered. */
  sendDigits(digits: string): boolean {
    for (const digit of digits) if (dtmfEventCode(digit) < 0) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
    if (!this.media || this.state !== 'answered' || this.ending) return false;
    if (this.dtmfPayloadType === null) this.media.play(generateDtmf(digits));
    else this.media.sendDigits(digits);
    this.digitsSent += digits;
    return true;
  }

  /** Plays 8 kHz audio to the caller (queued after anything playing). False when there is no media. */
  play(pcm: Int16Array): boolean {
    if (!this.media || this.ending) return false;
    this.media.play(pcm, { transfer: false });
    return true;
  }

  /**
   * Simulator shutdown: an answered call is hung up (BYE), a ringing one refused with 503. Resolves when the record
   * is complete, or after `limitMs` if the caller never answers the BYE (the UA's close sends one more, best effort).
   */
  async shutdown(limitMs: number): Promise<void> {
    if (!this.ending) {
      if (this.state === 'answered') this.sip.bye();
      else this.reject(503, 'Service Unavailable (trunk shutting down)');
    }
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, limitMs)));
    await Promise.race([this.settled(), limit]);
    clearTimeout(timer);
    // Still not over (no answer to the BYE): close the record ourselves.
    this.finish('ended', 'trunk');
    await this.settled();
  }

  private answer(sdp: string, then: AfterAnswer): void {
    if (this.ending) return;
    this.sip.answer(sdp);
    this.state = 'answered';
    this.status = 200;
    this.answeredAt = Date.now();
    this.later(this.deps.maxCallMs, () => this.bye());
    switch (then.action) {
      case 'hangup':
        return void this.later(then.afterMs, () => this.bye());
      case 'digits':
        return void this.later(then.afterMs, () => this.sendDigits(then.digits));
      case 'tone':
        this.media?.play(generateTone([then.frequencyHz], then.durationMs));
        return;
      case 'none':
        return;
    }
  }

  private reject(status: number, reason?: string): void {
    if (this.ending) return;
    this.sip.reject(status, reason);
    this.finish('rejected', 'trunk', status);
  }

  private later(ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
    return timer;
  }

  /** The SIP side is over: stop the timers and the media, measure the recording, then take the terminal state. */
  private finish(state: 'ended' | 'rejected' | 'canceled', by: 'caller' | 'trunk', status?: number): void {
    if (this.ending) return;
    this.ending = true;
    this.endedAt = Date.now();
    this.endedBy = by;
    if (status !== undefined) this.status = status;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const media = this.media;
    const stopped: Promise<MediaStopResult | undefined> = media ? media.stop().catch(() => undefined) : Promise.resolve(undefined);
    void stopped.then((result) => {
      if (media) {
        this.recording = result?.recording ?? EMPTY;
        const a = analyzeAudio(this.recording, SAMPLE_RATE);
        this.audio = { seconds: a.durationSeconds, rmsDbfs: a.rmsDbfs, nonSilentShare: a.nonSilentShare, dominantFrequencyHz: a.dominantFrequencyHz, kept: true };
      }
      this.state = state;
      this.markComplete();
      this.deps.settled(this);
    });
  }
}

/** The called number: the Request-URI's user part ('' when it has none). */
export function calledNumber(sip: IncomingCall): string {
  try {
    return parseUri(sip.request.uri).user ?? '';
  } catch {
    return ''; // a tel: or otherwise foreign Request-URI: the default plan applies
  }
}
