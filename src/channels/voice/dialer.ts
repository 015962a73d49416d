import type { Logger } from 'pino';
import type { MediaEngine } from '../../rtp/index.js';
import type { IncomingCall, UserAgent } from '../../sip/index.js';
import type { Db, Queryable, Throttle } from '../../store/types.js';
import { WakeableSleep } from '../../util/wakeable-sleep.js';
import type { Call } from './call.js';
import { CallAudioError, prepareAudio, type PreparedAudio } from './call-audio.js';
import type { CallRecorder } from './call-recorder.js';
import { CallSession, type BrowserSide, type CallAgent, type CallSessionDeps } from './call-session.js';
import { AgentPreparationError } from './agents/agent-runtime.js';
import type { CallStore } from './call-store.js';
import type { VoiceConfig } from './config.js';
import type { Trunk, TrunkRegistry } from './trunk-registry.js';

export interface DialerDeps {
  db: Db;
  store: CallStore;
  recorder: CallRecorder;
  trunks: TrunkRegistry;
  ua: UserAgent;
  /** The media engine, started with the first call (its worker threads cost nothing until a call needs them). */
  media: () => Promise<MediaEngine>;
  /** Runs before the first call is admitted (the embedded trunk simulator starts then). */
  beforeFirstCall?: () => Promise<void>;
  throttle: Throttle;
  config: VoiceConfig;
  instanceId: string;
  mediaHost: string;
  log: Logger;
  prepare: (steps: Call['steps']) => Promise<PreparedAudio>;
  /** Makes a call's agent ready (first message synthesised, brain and recogniser chosen); rejects with AgentPreparationError. */
  agent: (call: Call) => Promise<CallAgent>;
}

const POLL_MS = 250;
const CLAIM_LEASE_MS = 30_000;
/** Claimed calls being admitted (limits checked, audio prepared) at once on one instance. */
const MAX_ADMITTING = 64;

/**
 * The owner side of calls, on an instance running the media role: claims due calls, admits each under the account's
 * and a trunk's limits (calls a second through the shared throttle, calls up at once counted in the table under an
 * advisory lock, so instances agree), prepares its audio, marks it `initiated` with this instance as owner, and runs
 * its session. Renews its claim on its live calls and acts on hangups other instances asked for.
 */
export class Dialer {
  readonly sessions = new Map<string, CallSession>();
  private readonly admitting = new Set<Promise<void>>();
  private readonly wakeable = new WakeableSleep();
  private stopping = false;
  private loop: Promise<void> | null = null;
  private renewTimer: NodeJS.Timeout | null = null;

  constructor(private readonly d: DialerDeps) {}

  start(): void {
    this.loop = this.run();
    const every = Math.max(1000, Math.floor((this.d.config.ownerLeaseSeconds * 1000) / 4));
    this.renewTimer = setInterval(() => void this.renew().catch((err) => this.d.log.warn({ err }, 'voice: renewing the claim on live calls failed')), every);
  }

  wake(): void {
    this.wakeable.wake();
  }

  /** A hangup asked on another instance (pub/sub): acted on at once if the call is ours. */
  hangup(callId: string): void {
    this.sessions.get(callId)?.hangup();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeable.wake();
    await this.loop;
    if (this.renewTimer) clearInterval(this.renewTimer);
    const live = [...this.sessions.values()];
    for (const s of live) s.shutdown();
    // Each ends within a SIP transaction's time (BYE or CANCEL answered, or timed out).
    await Promise.race([Promise.all(live.map((s) => s.done)), new Promise((r) => setTimeout(r, 5_000))]);
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      let claimed = 0;
      try {
        // Admissions run side by side: one call whose prompt is slow to fetch or synthesize holds up no other.
        const room = MAX_ADMITTING - this.admitting.size;
        const due = room > 0 ? await this.d.store.claimDue(Math.min(20, room), CLAIM_LEASE_MS) : [];
        claimed = due.length;
        for (const call of due) {
          const admission = this.admit(call)
            .catch((err) => this.d.log.error({ err, callId: call.id }, 'voice: admitting a call failed; it is dialled after its claim lapses'))
            .finally(() => {
              this.admitting.delete(admission);
              this.wakeable.wake();
            });
          this.admitting.add(admission);
        }
      } catch (err) {
        this.d.log.error({ err }, 'voice: claiming due calls failed');
      }
      if (claimed === 20) continue;
      await this.wakeable.sleep(POLL_MS);
    }
    await Promise.all([...this.admitting]);
  }

  /**
   * A call from the browser dialer, stored with its claim held by this instance (the browser's connection is here):
   * admitted now under the same limits, or failed with the limit's reason; a person holding a handset is not queued.
   * Resolves with its session, or null when it ended before dialling (its row says why).
   */
  async placeFromBrowser(call: Call, browser: BrowserSide): Promise<CallSession | null> {
    await this.admit(call, browser);
    return this.sessions.get(call.id) ?? null;
  }

  /**
   * A call coming in from `trunk` to a number routed to an agent, stored with its claim held by this instance (the
   * INVITE is here): its agent made ready, admitted under the account's calls-up-at-once limit (a trunk's own limits
   * are the trunk's to keep for calls it sends us), and answered by its session. Resolves with the session, or null
   * when it ended before (its row says why, and the caller's INVITE was refused saying so).
   */
  async answerInbound(call: Call, incoming: IncomingCall, trunk: Trunk, browser: BrowserSide | null = null): Promise<CallSession | null> {
    const c = this.d.config;
    // Ended before answering: the row says why, and the caller hears it (busy at the account's limit).
    const fail = async (errorCode: string, errorReason: string) => {
      await this.d.recorder.apply(call.id, { status: 'failed', errorCode, errorReason, detail: { before: 'answering' } });
      incoming.reject(errorCode === 'LIMIT_REACHED' ? 486 : 480, errorReason.slice(0, 120));
      return null;
    };
    let agent: CallAgent | null = null;
    let media: MediaEngine;
    try {
      if (call.agent) agent = await this.d.agent(call);
      media = await this.d.media();
    } catch (err) {
      if (err instanceof AgentPreparationError) return fail(err.code, err.message);
      this.d.log.error({ err, callId: call.id }, 'voice: an inbound call could not be made ready');
      return fail('INTERNAL', 'the call failed inside Ferry');
    }
    if (incoming.state !== 'offered') {
      await this.d.recorder.apply(call.id, { status: 'canceled', sipCode: 487, sipReason: 'Request Terminated', detail: { by: 'caller', before: 'answering' } });
      return null;
    }
    const owner = { id: this.d.instanceId, leaseMs: c.ownerLeaseSeconds * 1000 };
    const initiated = await this.d.recorder.apply(call.id, { status: 'initiated', trunk: trunk.name, sipCallId: incoming.callId, detail: { owner: owner.id, direction: 'inbound' } }, owner, async (q: Queryable) => {
      await q.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`voice-account:${call.accountId}`]);
      return (await this.d.store.liveCount(q, { accountId: call.accountId })) < c.maxConcurrentCallsPerAccount;
    });
    if (!initiated) return fail('LIMIT_REACHED', 'the calls up at once allowed for the account');
    const session = new CallSession(initiated, [trunk], await this.d.prepare([]), this.sessionDeps(media, owner), agent, browser, incoming);
    this.sessions.set(call.id, session);
    session.done = session.run().finally(() => this.sessions.delete(call.id));
    return session;
  }

  private sessionDeps(media: MediaEngine, owner: { id: string; leaseMs: number }): CallSessionDeps {
    const c = this.d.config;
    return {
      ua: this.d.ua,
      media,
      recorder: this.d.recorder,
      owner,
      mediaHost: this.d.mediaHost,
      rtpTimeoutMs: c.media.rtpTimeoutSeconds * 1000,
      log: this.d.log,
      saveDigits: (id, digits) => this.d.store.saveDigits(id, digits),
    };
  }

  /** One claimed call: dialled now, or put back to wait for its account's or a trunk's limits. */
  private firstCall: Promise<void> | null = null;

  /** What the first call needs started (the embedded trunk simulator, itself a trunk calls come in from). */
  async ready(): Promise<void> {
    if (this.d.beforeFirstCall) await (this.firstCall ??= this.d.beforeFirstCall());
  }

  private async admit(call: Call, browser: BrowserSide | null = null): Promise<void> {
    const c = this.d.config;
    if (!browser && (call.direction === 'inbound' || (!call.agent && call.steps.length === 0))) {
      // Held for the instance that took it (a call coming in, a browser's call) and due here because that instance's
      // claim lapsed: it stopped before connecting the call, and nobody else holds the caller's leg.
      await this.d.recorder.apply(call.id, { status: 'failed', errorCode: 'OWNER_LOST', errorReason: 'the instance taking the call stopped before it was connected', detail: { before: 'connecting' } });
      return;
    }
    // A browser's call is not put back to wait: it fails with the limit it met, and the person hears why.
    const wait = (delayMs: number, limit: string) =>
      browser
        ? this.d.recorder.apply(call.id, { status: 'failed', errorCode: 'LIMIT_REACHED', errorReason: limit, detail: { before: 'dialling' } }).then(() => undefined)
        : this.d.store.postpone(call.id, delayMs);
    if (this.d.beforeFirstCall) await (this.firstCall ??= this.d.beforeFirstCall());
    const cps = await this.d.throttle.take(`voice:cps:{${call.accountId}}`, c.callsPerSecondPerAccount, Math.max(1, Math.ceil(c.callsPerSecondPerAccount)));
    if (!cps.allowed) return wait(Math.max(50, cps.retryAfterMs), "the account's calls per second");
    const trunks = this.d.trunks.candidates(call.to, call.from);
    if (!trunks.length) {
      await this.d.recorder.apply(call.id, { status: 'failed', errorCode: 'NO_TRUNK', errorReason: 'no SIP trunk carries calls to this destination from this caller ID', detail: { trunks: 0 } });
      return;
    }
    // The first trunk with room; the others stay behind it for failover.
    let first: Trunk | null = null;
    for (const t of trunks) {
      const take = await this.d.throttle.take(`voice:trunk-cps:{${t.name}}`, t.maxCallsPerSecond, Math.max(1, Math.ceil(t.maxCallsPerSecond)));
      if (take.allowed) {
        first = t;
        break;
      }
    }
    if (!first) return wait(200, 'the trunks\' calls per second');
    let audio: PreparedAudio;
    let agent: CallAgent | null = null;
    try {
      audio = await this.d.prepare(call.steps);
      if (call.agent) agent = await this.d.agent(call);
    } catch (err) {
      if (!(err instanceof CallAudioError) && !(err instanceof AgentPreparationError)) throw err;
      await this.d.recorder.apply(call.id, { status: 'failed', errorCode: err.code, errorReason: err.message, detail: { before: 'dialling' } });
      return;
    }
    // The media plane before the call is ours: a call marked initiated that cannot get it would wait for the orphan
    // sweep and end OWNER_LOST while this instance is alive. It waits in the queue instead, and says why in the log.
    let media: MediaEngine;
    try {
      media = await this.d.media();
    } catch (err) {
      this.d.log.error({ err, callId: call.id }, 'voice: the media engine could not start; the call waits');
      return wait(5_000, 'the media engine could not start');
    }
    const order = [first, ...trunks.filter((t) => t !== first)];
    const owner = { id: this.d.instanceId, leaseMs: c.ownerLeaseSeconds * 1000 };
    const initiated = await this.d.recorder.apply(call.id, { status: 'initiated', trunk: first.name, detail: { owner: owner.id } }, owner, async (q: Queryable) => {
      // Under advisory locks for the account and the trunk: two instances never both see room for one more call.
      await q.query(`SELECT pg_advisory_xact_lock(hashtext($1)), pg_advisory_xact_lock(hashtext($2))`, [`voice-account:${call.accountId}`, `voice-trunk:${first!.name}`]);
      const accountLive = await this.d.store.liveCount(q, { accountId: call.accountId });
      if (accountLive >= c.maxConcurrentCallsPerAccount) return false;
      return (await this.d.store.liveCount(q, { trunk: first!.name })) < first!.maxConcurrentCalls;
    });
    if (!initiated) {
      // At a limit (or canceled meanwhile: postpone does nothing to a call no longer queued).
      return wait(500, 'the calls up at once allowed for the account or the trunk');
    }
    const session = new CallSession(initiated, order, audio, this.sessionDeps(media, owner), agent, browser);
    this.sessions.set(call.id, session);
    session.done = session.run().finally(() => this.sessions.delete(call.id));
  }

  /** Renews the claim on this instance's live calls; hangs up those another instance asked to. */
  private async renew(): Promise<void> {
    const ids = [...this.sessions.keys()];
    const asked = await this.d.store.renew(this.d.instanceId, ids, this.d.config.ownerLeaseSeconds * 1000);
    for (const id of asked) this.sessions.get(id)?.hangup();
  }
}

export { prepareAudio };
