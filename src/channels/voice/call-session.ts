import type { Logger } from 'pino';
import type { G711Codec, MediaEngine, MediaHandle } from '../../rtp/index.js';
import type { IncomingCall, OutgoingCall, ReferAnswer, ReferProgress, UserAgent } from '../../sip/index.js';
import type { Call, CallChange } from './call.js';
import type { PreparedAudio } from './call-audio.js';
import { DETECTION_WINDOW_MS, guessAnsweredBy, type AnsweredBy } from './answering-machine.js';
import type { CallRecorder } from './call-recorder.js';
import { isRinging, statusOfFinalResponse } from './call-status.js';
import { generateTone } from '../../rtp/tone.js';
import { parseUri } from '../../sip/index.js';
import { buildOffer, readAnswer, type AnswerReading } from './sdp.js';
import type { Trunk } from './trunk-registry.js';
import { AgentConversation, type ConversationEnd, type TranscriptEntry } from './agents/agent-conversation.js';
import type { AgentTool, TransferDestination } from './agents/agent-config.js';
import type { PreparedAgent } from './agents/agent-runtime.js';
import type { ToolOutcome } from './agents/agent-tools.js';

/** Why an answered call ended on our side: kept as the call's error (status completed unless it is a failure). */
export type LocalEnd = { code: string; message: string; status: 'completed' | 'failed' };

/** What a transfer needs of the call's leg, whichever side placed it. */
interface ReferringLeg {
  refer(referTo: string): Promise<ReferAnswer>;
  bye(): void;
  on(event: 'referProgress', fn: (p: ReferProgress) => void): unknown;
  off(event: 'referProgress', fn: (p: ReferProgress) => void): unknown;
}

/** Ends that are no fault of anyone's: the call's error stays empty. */
const NORMAL_ENDS = new Set(['REMOTE_HANGUP', 'CALLER_HANGUP']);

/**
 * The browser's side of a call placed from the dialer page: the trunk's RTP goes to it (relayed to the browser's
 * WebRTC leg) instead of to the media engine, and the browser hears how the call goes.
 */
export interface BrowserSide {
  /** The UDP port the trunk sends its RTP to (announced in the INVITE's SDP). */
  readonly trunkPort: number;
  /** The codec the browser's leg negotiated: the trunk is offered only it, as nothing is transcoded. */
  readonly codec: G711Codec;
  /** The call's row moved (ringing, answered, or its end). */
  status(call: Call): void;
  /** The trunk answered: relay the audio and answer the browser; resolves with why the call ended on the browser's side. */
  connect(answer: Extract<AnswerReading, { ok: true }>, signal: AbortSignal): Promise<LocalEnd | null>;
  /** The call is over: free the leg and its ports. */
  close(): Promise<void>;
  /** A call coming in to the browser: ring it until it answers or not (the caller's INVITE waits meanwhile). */
  ring?(signal: AbortSignal, timeoutMs: number): Promise<RingOutcome>;
}

/** How ringing a browser for an incoming call went. */
export type RingOutcome = { answered: true } | { answered: false; status: 'busy' | 'no-answer' | 'canceled' | 'failed'; code: number; reason: string };

export interface CallSessionDeps {
  ua: UserAgent;
  media: MediaEngine;
  recorder: CallRecorder;
  owner: { id: string; leaseMs: number };
  /** The SDP host our RTP is reached at. */
  mediaHost: string;
  rtpTimeoutMs: number;
  log: Logger;
  /** Writes the digits gathered so far to the row (GET shows them while the call lasts). */
  saveDigits: (callId: string, digits: string) => Promise<void>;
}

/** A call an agent talks on: the agent made ready before dialling, and what its tools reach beyond the call. */
export interface CallAgent {
  prepared: PreparedAgent;
  /** Stores a transcript line (and its event), in order. */
  record(seq: number, entry: TranscriptEntry): Promise<void>;
  webhook(tool: Extract<AgentTool, { type: 'webhook' }>, args: Record<string, unknown>): Promise<ToolOutcome>;
  sendSms(tool: Extract<AgentTool, { type: 'send_sms' }>, message: string): Promise<ToolOutcome>;
}

/** How long a blind transfer may take to be reported as answered or failed before the agent hears it failed. */
const TRANSFER_REPORT_MS = 60_000;
/** How long Ferry rings the person of a bridged (warm, or fallback) transfer before the agent hears nobody answered. */
const TRANSFER_RING_MS = 30_000;
/** A REFER answered with one of these was refused by the far end: Ferry calls the person itself and bridges. */
const REFER_REFUSALS = new Set([403, 405, 420, 488, 501, 603]);

/** Ringback for the caller while Ferry rings the person (440 + 480 Hz, 2 s on, 4 s off: the North American cadence). */
let ringback: Int16Array | null = null;
function ringbackTone(): Int16Array {
  if (!ringback) {
    ringback = new Int16Array(6 * 8000);
    ringback.set(generateTone([440, 480], 2000, 3000));
  }
  return ringback;
}

/**
 * A SIP final that moves a call to the next trunk when nothing rang yet: the trunk failed or refused us (no answer to
 * the INVITE, a server error, our credentials refused), not the callee (busy, declined, unknown number).
 */
export function trunkFailure(code: number): boolean {
  return code === 408 || code === 401 || code === 407 || code === 403 || (code >= 500 && code < 600);
}

/**
 * One call on its owner: the media session, INVITE through the trunks in failover order, ring timeout, the script
 * once answered, the time limit, and hang-up either way. Every status change goes through the recorder; when the
 * recorder refuses one (the call was ended elsewhere, e.g. by the orphan sweep after this instance was cut off) the
 * session hangs up at once.
 */
export class CallSession {
  private media: MediaHandle | null = null;
  /** Where the trunk sends its RTP: the media session's port, or the browser side's. */
  private localPort = 0;
  private sip: OutgoingCall | null = null;
  private ringTimer: NodeJS.Timeout | null = null;
  private limitTimer: NodeJS.Timeout | null = null;
  private ringTimedOut = false;
  private hangupAsked = false;
  private answered = false;
  private ended = false;
  private digits = '';
  private readonly abort = new AbortController();
  private digitWaiter: (() => void) | null = null;
  private status: Call['status'];
  /** machineDetection's guess, once the far end's first seconds were heard. */
  private answeredBy: AnsweredBy | null = null;
  /** The trunk the call went out on (a transfer to a number goes through it too). */
  private trunk: Trunk | null = null;
  private transferredTo: string | null = null;
  /** The person's leg of a bridged transfer, while it lasts. */
  private transferLeg: { sip: OutgoingCall; media: MediaHandle; name: string; ended: Promise<LocalEnd | null> } | null = null;
  private transcriptSeq = 0;
  /** Settles when run() has ended the call (the dialer waits on it at shutdown). */
  done: Promise<void> = Promise.resolve();

  constructor(
    private call: Call,
    private readonly trunks: readonly Trunk[],
    private readonly audio: PreparedAudio,
    private readonly d: CallSessionDeps,
    private readonly agent: CallAgent | null = null,
    private readonly browser: BrowserSide | null = null,
    /** A call coming in from `trunks[0]` that the agent answers (no dialling). */
    private readonly incoming: IncomingCall | null = null,
  ) {
    this.status = call.status;
  }

  get id(): string {
    return this.call.id;
  }

  /** The call's SIP leg: the INVITE we sent, or the one we answered. */
  private get leg(): ReferringLeg | null {
    return (this.sip ?? this.incoming) as ReferringLeg | null;
  }

  /** Runs the call to its end; never throws (a failure ends the call as failed with its reason). */
  async run(): Promise<void> {
    try {
      if (this.browser) this.localPort = this.browser.trunkPort;
      else await this.openMedia();
      if (this.incoming) return await this.answerIncoming(this.incoming);
      const tried: string[] = [...this.call.trunksTried];
      let last: { code: number; reason: string } = { code: 503, reason: 'no trunk' };
      for (const trunk of this.trunks) {
        if (this.hangupAsked) break;
        tried.push(trunk.name);
        const outcome = await this.dial(trunk, tried);
        if (outcome === 'answered' || outcome === 'ended') return;
        last = outcome;
        // A callee's answer (busy, declined, no answer) ends the call; only a trunk's own failure moves on.
        if (this.ringing() || !trunkFailure(last.code)) break;
      }
      if (this.hangupAsked && !this.answered) return this.finish({ status: 'canceled', sipCode: 487, sipReason: 'Request Terminated', detail: { by: 'api' } });
      const status = this.ringTimedOut ? 'no-answer' : statusOfFinalResponse(last.code);
      await this.finish({
        status: status === 'in-progress' ? 'failed' : status,
        sipCode: last.code,
        sipReason: last.reason,
        trunksTried: tried,
        detail: { code: last.code, reason: last.reason, ringTimeout: this.ringTimedOut || undefined },
        ...(this.ringTimedOut ? { errorCode: 'RING_TIMEOUT', errorReason: `no answer within ${this.call.ringTimeoutSeconds} s` } : {}),
      });
    } catch (err) {
      this.d.log.error({ err, callId: this.call.id }, 'voice call failed');
      this.leg?.bye();
      this.sip?.cancel();
      this.incoming?.reject(500, 'Server Internal Error');
      await this.finish({ status: 'failed', errorCode: 'INTERNAL', errorReason: 'the call failed inside Ferry', detail: { error: (err as Error).message } }).catch(() => undefined);
    } finally {
      this.cleanup();
    }
  }

  /** The call's own media session in the engine (script, agent, machine detection, DTMF). */
  private async openMedia(): Promise<void> {
    const detect = this.call.machineDetection === 'detect';
    const media = await this.d.media.open({
      codec: 'PCMU',
      rtpTimeoutMs: this.d.rtpTimeoutMs,
      inbandDtmf: true,
      continuous: true,
      ...(detect ? { speechProfile: { windowMs: DETECTION_WINDOW_MS } } : {}),
      ...(this.agent ? { listen: {} } : {}),
    });
    this.media = media;
    this.localPort = media.localPort;
    if (detect) {
      media.once('speechProfile', (runs) => {
        this.answeredBy = guessAnsweredBy(runs);
        if (!this.ended) void this.d.recorder.annotate(this.call.id, { answeredBy: this.answeredBy }).catch(() => undefined);
      });
    }
    media.on('digit', (digit) => this.onDigit(digit));
    media.on('rtpTimeout', () => this.endAnswered({ code: 'RTP_TIMEOUT', message: `no audio from the far end for ${Math.round(this.d.rtpTimeoutMs / 1000)} s`, status: 'completed' }));
  }

  /** Rings a browser for an incoming call while set. */
  private stopRinging: AbortController | null = null;

  /** Asked by the API (through the dialer): CANCEL while ringing, BYE once answered. */
  hangup(): void {
    if (this.ended || this.hangupAsked) return;
    this.hangupAsked = true;
    if (this.answered) this.endAnswered({ code: 'HANGUP_REQUESTED', message: 'hung up through the API', status: 'completed' });
    else {
      this.sip?.cancel();
      this.stopRinging?.abort();
    }
  }

  /** The instance is stopping: end the call now, saying why. */
  shutdown(): void {
    if (this.ended) return;
    if (this.answered) this.endAnswered({ code: 'INSTANCE_STOPPING', message: 'the instance carrying the call stopped', status: 'completed' });
    else {
      this.hangupAsked = true;
      this.sip?.cancel();
    }
  }

  private ringing(): boolean {
    return this.status === 'ringing';
  }

  /** One INVITE through one trunk; resolves when the call is over ('ended') or this trunk's attempt failed. */
  private dial(trunk: Trunk, tried: string[]): Promise<'answered' | 'ended' | { code: number; reason: string }> {
    return new Promise((resolve) => {
      const host = trunk.fromDomain ?? trunk.host;
      const transport = trunk.transport === 'tcp' ? ';transport=tcp' : '';
      const sip = this.d.ua.invite({
        target: { host: trunk.host, port: trunk.port, transport: trunk.transport },
        requestUri: `sip:+${this.call.to}@${trunk.host}:${trunk.port}${transport}`,
        from: `<sip:+${this.call.from}@${host}>`,
        to: `<sip:+${this.call.to}@${trunk.host}>`,
        sdp: buildOffer({ host: this.d.mediaHost, port: this.localPort, sessionId: Date.now(), ...(this.browser ? { codecs: [this.browser.codec] } : {}) }),
        credentials: trunk.username ? { username: trunk.username, password: trunk.password ?? '' } : undefined,
      });
      this.sip = sip;
      this.trunk = trunk;
      void this.change({ status: this.status, trunk: trunk.name, trunksTried: tried, sipCallId: sip.callId, detail: { trunk: trunk.name } }, true);
      this.ringTimer = setTimeout(() => {
        this.ringTimedOut = true;
        sip.cancel();
      }, this.call.ringTimeoutSeconds * 1000);
      sip.on('provisional', (code) => {
        if (isRinging(code) && this.status === 'initiated') void this.change({ status: 'ringing', detail: { code } });
      });
      sip.on('failed', (code, reason) => {
        this.clearRing();
        resolve({ code, reason });
      });
      sip.on('answered', (sdp) => {
        this.clearRing();
        void this.onAnswered(sdp)
          .catch((err) => this.d.log.error({ err, callId: this.call.id }, 'voice call script failed'))
          .then(() => this.endAnswered({ code: 'INTERNAL', message: 'the call failed inside Ferry', status: 'failed' }))
          .then(() => resolve('answered'));
      });
      sip.on('ended', (info) => {
        if (info.by === 'remote') void this.endAnswered({ code: 'REMOTE_HANGUP', message: 'the far end hung up', status: 'completed' }, true);
      });
    });
  }

  private async onAnswered(sdp: string): Promise<void> {
    this.answered = true;
    const answer = readAnswer(sdp);
    if (!answer.ok) {
      await this.change({ status: 'in-progress', sipCode: 200, sipReason: 'OK', detail: { code: 200 } });
      return this.endAnswered({ code: 'SDP_REJECTED', message: answer.reason, status: 'failed' });
    }
    if (this.browser && answer.codec !== this.browser.codec) {
      await this.change({ status: 'in-progress', sipCode: 200, sipReason: 'OK', detail: { code: 200 } });
      return this.endAnswered({ code: 'SDP_REJECTED', message: `the trunk answered ${answer.codec} to an offer of ${this.browser.codec} only`, status: 'failed' });
    }
    this.media?.setRemote(answer.remote, { codec: answer.codec, dtmfPayloadType: answer.dtmfPayloadType ?? undefined });
    return this.connected(answer);
  }

  /**
   * A call from a trunk to one of the account's numbers: answered at once (the agent was made ready while the caller
   * heard ringing) with the offer's first G.711 codec, then talked on like an answered outbound call.
   */
  private async answerIncoming(incoming: IncomingCall): Promise<void> {
    const offer = readAnswer(incoming.sdp);
    if (!offer.ok) {
      incoming.reject(488, 'Not Acceptable Here');
      return this.finish({ status: 'failed', sipCode: 488, sipReason: 'Not Acceptable Here', errorCode: 'SDP_REJECTED', errorReason: offer.reason, detail: { code: 488 } });
    }
    if (incoming.state !== 'offered') return this.finish({ status: 'canceled', sipCode: 487, sipReason: 'Request Terminated', detail: { by: 'caller' } });
    incoming.on('ended', (info) => {
      if (info.by === 'remote') void this.endAnswered({ code: 'REMOTE_HANGUP', message: 'the caller hung up', status: 'completed' }, true);
    });
    if (this.browser?.ring) {
      // The caller hears ringing while the browsers do; giving up (CANCEL) or the API's hang-up stops them.
      const giveUp = new AbortController();
      this.stopRinging = giveUp;
      if (this.hangupAsked) giveUp.abort();
      const stop = () => giveUp.abort();
      incoming.once('cancelled', stop);
      this.abort.signal.addEventListener('abort', stop, { once: true });
      const rung = await this.browser.ring(giveUp.signal, this.call.ringTimeoutSeconds * 1000);
      incoming.off('cancelled', stop);
      if (!rung.answered) {
        incoming.reject(rung.code, rung.reason);
        return this.finish({ status: (incoming.state as string) === 'cancelled' ? 'canceled' : rung.status, sipCode: rung.code, sipReason: rung.reason, detail: { code: rung.code, by: 'browser' } });
      }
      if (incoming.state !== 'offered') return this.finish({ status: 'canceled', sipCode: 487, sipReason: 'Request Terminated', detail: { by: 'caller' } });
    }
    this.answered = true;
    this.trunk = this.trunks[0] ?? null;
    this.media?.setRemote(offer.remote, { codec: offer.codec, dtmfPayloadType: offer.dtmfPayloadType ?? undefined });
    incoming.answer(buildOffer({ host: this.d.mediaHost, port: this.localPort, sessionId: Date.now(), codecs: [offer.codec], dtmfPayloadType: offer.dtmfPayloadType }));
    await this.connected(offer);
    // The time a call ends is the session's to say (endAnswered), so connected() returning ends nothing here.
    await this.endPromise;
  }

  /** The far end and we agree on the media: the call is live until its script, agent or browser side ends it. */
  private async connected(answer: Extract<AnswerReading, { ok: true }>): Promise<void> {
    const live = await this.change({ status: 'in-progress', sipCode: 200, sipReason: 'OK', detail: { code: 200, codec: answer.codec } });
    if (!live) return;
    if (this.hangupAsked) return this.endAnswered({ code: 'HANGUP_REQUESTED', message: 'hung up through the API', status: 'completed' });
    const limitCut = this.call.heldSeconds < this.call.timeLimitSeconds;
    this.limitTimer = setTimeout(
      () =>
        this.endAnswered(
          limitCut
            ? { code: 'BALANCE_LIMIT', message: `the balance covered ${this.call.heldSeconds} s of this call`, status: 'completed' }
            : { code: 'TIME_LIMIT', message: `the call reached its time limit of ${this.call.timeLimitSeconds} s`, status: 'completed' },
        ),
      this.call.heldSeconds * 1000,
    );
    if (this.browser) return this.endAnswered(await this.browser.connect(answer, this.abort.signal));
    if (this.agent) return this.endAnswered(await this.runAgent(this.agent));
    await this.runScript();
    await this.endAnswered(null);
  }

  /** The agent's conversation until it ends; how it ended, as the call's end (null: the agent finished normally). */
  private async runAgent(agent: CallAgent): Promise<LocalEnd | null> {
    const { config } = agent.prepared.agent;
    const record = (entry: TranscriptEntry) => {
      const seq = ++this.transcriptSeq;
      void this.inOrder(() => agent.record(seq, entry)).catch((err: Error) => this.d.log.warn({ err: err.message, callId: this.call.id }, 'voice agent: a transcript line was not stored'));
    };
    const maxMs = config.maxDurationSeconds * 1000;
    const agentLimit = setTimeout(() => void this.endAnswered({ code: 'AGENT_MAX_DURATION', message: `the agent's limit of ${config.maxDurationSeconds} s was reached`, status: 'completed' }), maxMs);
    try {
      let conversation: AgentConversation | null = null;
      const brain = agent.prepared.brain({
        // The caller hears the agent's last words (e.g. "let me put you through") before the call leaves.
        transfer: async (destination, mode, reason) => {
          await conversation?.quiet();
          return this.transfer(destination, mode, reason, record);
        },
        end: (reason) => Promise.resolve({ ok: true, result: { ending: true, reason }, stop: true }),
        webhook: (tool, args) => agent.webhook(tool, args),
        sendSms: (tool, message) => agent.sendSms(tool, message),
      });
      conversation = new AgentConversation({
        media: this.media!,
        brain,
        recognizer: agent.prepared.recognizer,
        speak: agent.prepared.speak,
        config,
        setup: {
          callId: this.call.id,
          accountId: this.call.accountId,
          agentId: agent.prepared.agent.agentId,
          agentVersion: agent.prepared.agent.version,
          from: '+' + this.call.from,
          to: '+' + this.call.to,
          direction: this.call.direction,
          variables: agent.prepared.variables,
          language: config.language,
        },
        firstMessage: agent.prepared.firstMessage,
        fetchPlay: agent.prepared.fetchPlay,
        record,
        signal: this.abort.signal,
      });
      const end = await conversation.run();
      record({ role: 'event', event: 'end', detail: { ...end } });
      if (this.transferLeg) return this.transferLeg.ended;
      if (this.transferredTo) return { code: 'TRANSFERRED', message: `transferred to ${this.transferredTo}`, status: 'completed' };
      const after = await this.afterConversation(end, record);
      if (this.transferLeg) return (this.transferLeg as { ended: Promise<LocalEnd | null> }).ended;
      return after;
    } finally {
      clearTimeout(agentLimit);
    }
  }

  private async afterConversation(end: ConversationEnd, record: (entry: TranscriptEntry) => void): Promise<LocalEnd | null> {
    switch (end.reason) {
      case 'agent-ended': {
        // A relay customer hands the caller over by ending with {transfer: <destination name>}.
        const wanted = end.detail?.transfer;
        const destination = typeof wanted === 'string' ? this.destinations().find((d) => d.name === wanted) : undefined;
        if (destination && (await this.transfer(destination, 'blind', 'handed over by the relay', record)).ok) {
          return { code: 'TRANSFERRED', message: `transferred to ${destination.name}`, status: 'completed' };
        }
        return null;
      }
      case 'end-phrase':
      case 'caller-hangup':
        return null;
      case 'silence':
        return { code: 'AGENT_SILENCE_TIMEOUT', message: 'the caller said nothing for the agent\'s silence timeout', status: 'completed' };
      case 'failed': {
        const then = this.agent!.prepared.agent.config.failure.then;
        if (then !== 'hangup') {
          const destination = this.destinations().find((d) => d.name === then.transfer);
          if (destination && (await this.transfer(destination, 'blind', `the agent failed: ${end.code}`, record)).ok) {
            return { code: 'TRANSFERRED', message: `transferred to ${destination.name} after the agent failed (${end.code})`, status: 'completed' };
          }
        }
        return { code: end.code, message: end.message, status: 'completed' };
      }
    }
  }

  /** The transfer destinations the agent was configured with (a relay or the failure rule names one of them). */
  private destinations(): TransferDestination[] {
    return (this.agent?.prepared.agent.config.tools ?? []).flatMap((t) => (t.type === 'transfer' ? t.destinations : []));
  }

  /**
   * Transfer to a configured destination. Blind: by REFER (a number goes through the trunk the call took); the far
   * end reports the new call's progress, and once it is answered this leg is hung up. A far end that refuses REFER
   * gets the bridged fallback. Warm: Ferry calls the person itself, tells them who is coming and why, then bridges.
   * A transfer that fails is an answer the model hears (it can apologise or try another destination).
   */
  private async transfer(destination: TransferDestination, mode: 'blind' | 'warm', reason: string | null, record: (entry: TranscriptEntry) => void): Promise<ToolOutcome> {
    const sip = this.leg;
    const outcome = (ok: boolean, result: Record<string, unknown>): ToolOutcome => {
      record({ role: 'event', event: 'transfer', detail: { destination: destination.name, mode, reason, ok, ...result } });
      return ok ? { ok, result, stop: true } : { ok, result };
    };
    if (!sip || !this.trunk) return outcome(false, { error: 'the call is not connected' });
    if (this.transferLeg) return outcome(false, { error: 'the call is already transferred' });
    if (mode === 'warm') return this.bridgeTransfer(destination, reason, true, outcome);
    const target = this.transferUri(destination);
    const progress = new Promise<{ status: number; reason: string }>((resolve) => {
      const timer = setTimeout(() => resolve({ status: 408, reason: 'no report of the transfer' }), TRANSFER_REPORT_MS);
      const onProgress = (p: { status: number; reason: string; final: boolean }) => {
        if (!p.final) return;
        clearTimeout(timer);
        sip.off('referProgress', onProgress);
        resolve(p);
      };
      sip.on('referProgress', onProgress);
      this.abort.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve({ status: 487, reason: 'the call ended' });
      }, { once: true });
    });
    const answer = await sip.refer(target);
    if (REFER_REFUSALS.has(answer.status)) {
      record({ role: 'event', event: 'transfer-fallback', detail: { destination: destination.name, why: `REFER refused (${answer.status} ${answer.reason})` } });
      return this.bridgeTransfer(destination, reason, false, outcome);
    }
    if (answer.status !== 202 && answer.status !== 200) {
      return outcome(false, { error: `the transfer was refused by the network (${answer.status} ${answer.reason})`, sipCode: answer.status });
    }
    const final = await progress;
    if (final.status >= 200 && final.status < 300) {
      this.transferredTo = destination.name;
      return outcome(true, { transferred: true, to: destination.name });
    }
    return outcome(false, { error: `${destination.name} could not be reached (${final.status} ${final.reason})`, sipCode: final.status });
  }

  /** The destination as a SIP URI: a number through the call's trunk, a SIP URI as it is. */
  private transferUri(destination: TransferDestination): string {
    const trunk = this.trunk!;
    return destination.target.startsWith('sip') ? destination.target : `sip:${destination.target}@${trunk.host}:${trunk.port}`;
  }

  /**
   * Ferry calls the person on a second leg (in the caller's media worker), the caller hearing ringback, and bridges
   * the two once it is answered; `warm` first tells the person who is coming and why. The call then lasts until
   * either side hangs up (the person's leg ends with it).
   */
  private async bridgeTransfer(
    destination: TransferDestination,
    reason: string | null,
    warm: boolean,
    outcome: (ok: boolean, result: Record<string, unknown>) => ToolOutcome,
  ): Promise<ToolOutcome> {
    const trunk = this.trunk!;
    const how = warm ? 'warm' : 'bridged';
    let target = { host: trunk.host, port: trunk.port, transport: trunk.transport };
    let credentials = trunk.username ? { username: trunk.username, password: trunk.password ?? '' } : undefined;
    const requestUri = this.transferUri(destination);
    if (destination.target.startsWith('sip')) {
      const uri = parseUri(destination.target);
      const own = uri.host === trunk.host && (uri.port ?? 5060) === trunk.port;
      target = { host: uri.host, port: uri.port ?? 5060, transport: uri.params.transport === 'tcp' ? 'tcp' : 'udp' };
      if (!own) credentials = undefined;
    }
    const media = await this.d.media.open({ codec: 'PCMU', rtpTimeoutMs: this.d.rtpTimeoutMs, continuous: true, near: this.media! });
    const sip = this.d.ua.invite({
      target,
      requestUri,
      from: `<sip:+${this.call.from}@${trunk.fromDomain ?? trunk.host}>`,
      to: `<${requestUri}>`,
      sdp: buildOffer({ host: this.d.mediaHost, port: media.localPort, sessionId: Date.now() }),
      credentials,
    });
    this.media!.listening(false);
    this.media!.play(ringbackTone().slice(), { transfer: false });
    const ringing = setInterval(() => this.media?.play(ringbackTone().slice(), { transfer: false }), 6000);
    const answered = await new Promise<{ ok: true; sdp: string } | { ok: false; code: number; reason: string }>((resolve) => {
      const timer = setTimeout(() => {
        sip.cancel();
        resolve({ ok: false, code: 408, reason: 'no answer' });
      }, TRANSFER_RING_MS);
      const done = (r: { ok: true; sdp: string } | { ok: false; code: number; reason: string }) => {
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onAbort = () => {
        sip.cancel();
        sip.bye();
        done({ ok: false, code: 487, reason: 'the call ended' });
      };
      sip.once('answered', (sdp) => done({ ok: true, sdp }));
      sip.once('failed', (code, why) => done({ ok: false, code, reason: why }));
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
    });
    clearInterval(ringing);
    this.media?.interrupt();
    const giveUp = async (error: string, extra: Record<string, unknown> = {}) => {
      sip.bye();
      await media.stop().catch(() => undefined);
      this.media?.listening(true);
      return outcome(false, { error, mode: how, ...extra });
    };
    if (!answered.ok) return giveUp(`${destination.name} could not be reached (${answered.code} ${answered.reason})`, { sipCode: answered.code });
    const answer = readAnswer(answered.sdp);
    if (!answer.ok) return giveUp(`${destination.name} answered with unusable audio (${answer.reason})`);
    media.setRemote(answer.remote, { codec: answer.codec, dtmfPayloadType: answer.dtmfPayloadType ?? undefined });
    // Either side's end: the person hangs up (the call ends with them), or the caller does (the call is ending already).
    const ended = new Promise<LocalEnd | null>((resolve) => {
      this.abort.signal.addEventListener('abort', () => resolve(null), { once: true });
      sip.on('ended', () => resolve({ code: 'TRANSFERRED', message: `transferred to ${destination.name} (${how}); the call ended when they hung up`, status: 'completed' }));
      media.once('rtpTimeout', () => resolve({ code: 'RTP_TIMEOUT', message: `no audio from ${destination.name} for ${Math.round(this.d.rtpTimeoutMs / 1000)} s`, status: 'completed' }));
    });
    this.transferLeg = { sip, media, name: destination.name, ended };
    if (warm && this.agent) {
      // The party the agent talked with: the callee of an outbound call, the caller of an inbound one.
      const party = this.call.direction === 'inbound' ? this.call.from : this.call.to;
      const summary = `You have a call with +${party} from ${this.agent.prepared.agent.config.name}.${reason ? ` ${reason}.` : ''} Connecting you now.`;
      try {
        media.play(await this.agent.prepared.speak(summary));
        await media.played();
      } catch (err) {
        this.d.log.warn({ err: (err as Error).message, callId: this.call.id }, 'voice agent: the warm transfer summary could not be spoken');
      }
    }
    if (this.abort.signal.aborted) return outcome(false, { error: 'the call ended' });
    await this.media!.bridge(media);
    this.transferredTo = destination.name;
    return outcome(true, { transferred: true, to: destination.name, mode: how });
  }

  /** The script, step by step, until its end, a hangup step, or the call ending. */
  private async runScript(): Promise<void> {
    const signal = this.abort.signal;
    for (let i = 0; i < this.call.steps.length && !signal.aborted; i++) {
      const step = this.call.steps[i];
      if ('hangup' in step) return;
      if ('pause' in step) await this.sleep(step.pause.seconds * 1000);
      else if ('say' in step || 'play' in step) {
        const loop = 'say' in step ? (step.say.loop ?? 1) : (step.play.loop ?? 1);
        for (let n = 0; n < loop && !signal.aborted; n++) await this.play(this.audio.get(i)!);
      } else if ('gather' in step) await this.gather(i, step.gather);
    }
  }

  private async gather(i: number, g: { digits?: number; timeoutMs?: number; finishOnKey?: string }): Promise<void> {
    const start = this.digits.length;
    const finish = g.finishOnKey ?? '#';
    const want = g.digits ?? Number.POSITIVE_INFINITY;
    const prompt = this.audio.get(i);
    this.gathering = true;
    if (prompt) await this.play(prompt);
    const timeout = g.timeoutMs ?? 5000;
    const done = () => {
      const got = this.digits.slice(start);
      return got.length >= want || (finish !== '' && got.endsWith(finish));
    };
    while (!done() && !this.abort.signal.aborted) {
      const arrived = await this.nextDigit(timeout);
      if (!arrived) break;
    }
    this.gathering = false;
    if (finish !== '' && this.digits.endsWith(finish)) this.digits = this.digits.slice(0, -1);
    await this.d.saveDigits(this.call.id, this.digits).catch(() => undefined);
  }

  private gathering = false;

  private onDigit(digit: string): void {
    if (!this.gathering) return;
    this.digits += digit;
    const w = this.digitWaiter;
    this.digitWaiter = null;
    w?.();
  }

  private nextDigit(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.digitWaiter = null;
        resolve(false);
      }, timeoutMs);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
      this.digitWaiter = () => {
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', onAbort);
        resolve(true);
      };
    });
  }

  private play(pcm: Int16Array): Promise<void> {
    const media = this.media!;
    return new Promise((resolve) => {
      const done = () => {
        this.abort.signal.removeEventListener('abort', done);
        media.off('playbackDone', done);
        resolve();
      };
      media.once('playbackDone', done);
      this.abort.signal.addEventListener('abort', done, { once: true });
      // A copy: the prepared audio may play again (loops, a repeated prompt) and play() moves its buffer away.
      media.play(pcm.slice());
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.abort.signal.addEventListener('abort', done, { once: true });
    });
  }

  private endPromise: Promise<void> | null = null;

  /** Ends an answered call (BYE unless the far end sent one): completed, with why when it was not the script's end. */
  private endAnswered(why: LocalEnd | null, byRemote = false): Promise<void> {
    if (this.endPromise) return this.endPromise;
    this.abort.abort();
    if (!byRemote) this.leg?.bye();
    this.endPromise = this.finish({
      status: why?.status ?? 'completed',
      digits: this.digits,
      ...(this.call.machineDetection === 'detect' ? { answeredBy: this.answeredBy ?? 'unknown' } : {}),
      detail: { by: byRemote ? 'remote' : 'ferry', ...(why ? { code: why.code } : {}) },
      ...(why && !NORMAL_ENDS.has(why.code) ? { errorCode: why.code, errorReason: why.message } : {}),
    });
    return this.endPromise;
  }

  private async finish(change: CallChange): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.abort.abort();
    await this.change({ ...change, digits: change.digits ?? this.digits }, false).catch((err) => this.d.log.error({ err, callId: this.call.id }, 'voice call end not recorded'));
  }

  /**
   * The call's writes, one after another in the order SIP events came: on a Postgres pool two unawaited writes race,
   * and a 180's `ringing` landing after the 200's `in-progress` was refused as if the call had ended elsewhere (the
   * session hung up), or a failover's first trunk was left on the row.
   */
  private writes: Promise<unknown> = Promise.resolve();

  private inOrder<T>(write: () => Promise<T>): Promise<T> {
    const next = this.writes.then(write);
    this.writes = next.catch(() => undefined);
    return next;
  }

  /** Records a change; a refused one means the call ended elsewhere: hang up now. */
  private async change(change: CallChange, sameStatus = false): Promise<Call | null> {
    if (sameStatus) {
      // Trunk and SIP call id of a new attempt: no status move, only the row (no event).
      await this.inOrder(() => this.d.recorder.annotate(this.call.id, change));
      return this.call;
    }
    const after = await this.inOrder(() => this.d.recorder.apply(this.call.id, change, this.d.owner));
    if (!after) {
      if (!this.ended) {
        this.ended = true;
        this.abort.abort();
        this.leg?.bye();
        this.sip?.cancel();
      }
      return null;
    }
    this.call = after;
    this.status = after.status;
    this.browser?.status(after);
    return after;
  }

  private clearRing(): void {
    if (this.ringTimer) clearTimeout(this.ringTimer);
    this.ringTimer = null;
  }

  private cleanup(): void {
    if (this.transferLeg) {
      this.transferLeg.sip.bye();
      void this.transferLeg.media.stop().catch(() => undefined);
    }
    this.clearRing();
    if (this.limitTimer) clearTimeout(this.limitTimer);
    this.abort.abort();
    void this.media?.stop().catch(() => undefined);
    void this.browser?.close().catch((err: Error) => this.d.log.warn({ err: err.message, callId: this.call.id }, 'voice: closing the browser leg failed'));
  }
}
