import { EventEmitter } from 'node:events';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { Logger } from 'pino';
import { WebSocket, type ClientOptions, type RawData } from 'ws';
import { SentenceChunker, type SentenceChunkerOptions } from '../../../../llm/index.js';
import { GuardedHttpError, type GuardedResolver } from '../../../../security/guarded-http.js';
import type { AgentBrain, BrainEvents, BrainSetup } from '../agent-brain.js';
import { RelayError, type RelayErrorCode } from './relay-errors.js';
import { parseCustomerFrame, type CustomerFrame, type FerryFrame, type RelayEndReason } from './relay-protocol.js';
import { RELAY_SIGNATURE_HEADER, RELAY_TIMESTAMP_HEADER, relaySignature } from './relay-signature.js';

/** Where a relay URL may connect: one address its name resolved to, every one of them allowed by the SSRF policy. */
export interface RelayTarget {
  address: string;
  family: number;
}

/** The SSRF guard for relay URLs: resolves with the address to connect to, rejects (with the reason) when refused. */
export type RelayTargetCheck = (url: URL) => Promise<RelayTarget>;

export interface RelayBrainOptions {
  /** The agent's relay.url (ws:// or wss://). */
  url: string;
  /** The account's signing secrets (whsec_…; several during a rotation): the upgrade request is signed with each. */
  signingSecrets: readonly string[];
  /** The SSRF guard (relayTargetCheck(ctx.http.resolver) in the daemon); the address it returns is the one connected to. */
  checkTarget: RelayTargetCheck;
  /** Accept http:// play sources (only where the server lets requests reach private targets). Default false. */
  allowPlainHttp?: boolean;
  /** Resolving the name, TCP, TLS and the upgrade, all together. Default 5,000. */
  connectTimeoutMs?: number;
  /**
   * The first frame answering a prompt must come within this long, and while a text answer streams each next token
   * within this long of the one before; otherwise `failed` RELAY_TIMEOUT. Default 10,000.
   */
  responseTimeoutMs?: number;
  /** A ping this often; no pong by the next one closes the socket (→ `failed` RELAY_CLOSED). Default 15,000. */
  pingIntervalMs?: number;
  /** Larger frames are ignored (counted). Default 65,536 bytes. */
  maxFrameBytes?: number;
  /** Frames over this rate (bursts of twice as many allowed) are ignored (counted). Default 200. */
  maxFramesPerSecond?: number;
  /** How answers are cut into sentences (SentenceChunker). */
  sentences?: SentenceChunkerOptions;
  log?: Logger;
  clock?: () => number;
}

/** What the brain received and what it ignored (a customer's bugs show here, and once in the debug log). */
export interface RelayFrameCounts {
  received: number;
  ignored: number;
  invalid: number;
  oversize: number;
  rateLimited: number;
  binary: number;
}

type IgnoredKind = 'invalid' | 'oversize' | 'rateLimited' | 'binary';
type State = 'idle' | 'connecting' | 'open' | 'ended' | 'failed' | 'closed';

/** A frame past this closes the socket inside ws (1009) before it is even read whole: memory stays bounded. */
const HARD_MAX_PAYLOAD_BYTES = 1024 * 1024;
/** How long close() waits for the relay to answer the close handshake before cutting the socket. */
const CLOSE_WAIT_MS = 1000;

/**
 * The SSRF guard of the daemon (ctx.http.resolver) for relay URLs: ws:// is checked as http:// and wss:// as https://,
 * so the same policy applies (plain ws:// only where private targets are allowed).
 */
export function relayTargetCheck(resolver: GuardedResolver): RelayTargetCheck {
  return async (url) => {
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new Error('only wss:// URLs are accepted');
    if (url.protocol === 'ws:' && resolver.policy.httpsOnly) throw new Error('only wss:// URLs are accepted (ws:// only where the server allows private targets)');
    const asHttp = new URL(url.href.replace(/^ws/, 'http'));
    try {
      const { addresses } = await resolver.resolve(asHttp);
      return addresses[0];
    } catch (err) {
      if (err instanceof GuardedHttpError) throw new Error(err.message, { cause: err });
      throw err;
    }
  };
}

function bytesOf(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/**
 * An agent's brain that is the customer's own model, over a WebSocket (the relay protocol, relay-protocol.ts). Ferry
 * connects when the call is answered, signs the upgrade request, sends `setup`, then each utterance, key and barge-in;
 * the customer's streamed tokens are spoken sentence by sentence. Whatever the customer sends, the call goes on:
 * frames that are invalid, too large or too many are ignored and counted; a socket that closes, stops answering pings
 * or leaves a prompt unanswered ends in `failed`, so the loop speaks the apology.
 */
export class RelayBrain extends EventEmitter<BrainEvents> implements AgentBrain {
  private readonly o: Required<Omit<RelayBrainOptions, 'log' | 'sentences'>> & Pick<RelayBrainOptions, 'log'>;
  private readonly chunker: SentenceChunker;
  private state: State = 'idle';
  private ws: WebSocket | undefined;
  private setup: BrainSetup | undefined;
  private abortConnect: ((err: RelayError) => void) | undefined;
  private closing: Promise<void> | undefined;
  private responseTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private pongPending = false;
  private missedPong = false;
  /** The socket's last error (a frame over 1 MiB, a broken frame…): says why it closed. */
  private socketError: Error | undefined;
  /** Text of an answer has come and its `last` has not. */
  private answering = false;
  /** The answer that was interrupted is still arriving: its text is dropped until its `last` (or the next prompt). */
  private discarding = false;
  /** Whether say() was given the first sentence of the current answer, and when (for durationUntilInterruptMs). */
  private speaking = false;
  private answerStartedAt: number | undefined;
  private rateTokens: number;
  private rateRefilledAt: number;
  private loggedIgnored = false;
  private readonly counts: RelayFrameCounts = { received: 0, ignored: 0, invalid: 0, oversize: 0, rateLimited: 0, binary: 0 };

  constructor(options: RelayBrainOptions) {
    super();
    if (!options.signingSecrets.length) throw new TypeError('RelayBrain needs at least one signing secret');
    this.o = {
      url: options.url,
      signingSecrets: options.signingSecrets,
      checkTarget: options.checkTarget,
      allowPlainHttp: options.allowPlainHttp ?? false,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      responseTimeoutMs: options.responseTimeoutMs ?? 10_000,
      pingIntervalMs: options.pingIntervalMs ?? 15_000,
      maxFrameBytes: options.maxFrameBytes ?? 65_536,
      maxFramesPerSecond: options.maxFramesPerSecond ?? 200,
      clock: options.clock ?? Date.now,
      log: options.log,
    };
    this.chunker = new SentenceChunker(options.sentences);
    this.rateTokens = this.o.maxFramesPerSecond * 2;
    this.rateRefilledAt = this.o.clock();
  }

  /** Frames received and ignored so far. */
  frameCounts(): RelayFrameCounts {
    return { ...this.counts };
  }

  async start(setup: BrainSetup): Promise<void> {
    if (this.state !== 'idle') throw new RelayError('RELAY_CLOSED', 'the relay was already started or closed');
    this.state = 'connecting';
    this.setup = setup;
    try {
      let url: URL;
      try {
        url = new URL(this.o.url);
      } catch {
        throw new RelayError('RELAY_URL_REFUSED', 'the relay URL is not a valid URL');
      }
      let target: RelayTarget;
      try {
        target = await this.o.checkTarget(url);
      } catch (err) {
        throw new RelayError('RELAY_URL_REFUSED', `the relay URL is refused: ${(err as Error).message}`, { cause: err });
      }
      if (this.state !== 'connecting') throw new RelayError('RELAY_CLOSED', 'the call ended before the relay was connected');
      await this.connect(url, target);
    } catch (err) {
      if (this.state === 'connecting') this.state = 'failed';
      throw err;
    }
  }

  /** The socket is open: `setup` goes first, before any frame of the relay is read. */
  private opened(): void {
    this.state = 'open';
    // Field by field: whatever else the loop's object carries is not the customer's.
    const { callId, accountId, agentId, agentVersion, from, to, direction, variables, language } = this.setup!;
    this.send({ type: 'setup', callId, accountId, agentId, agentVersion, from, to, direction, variables, language });
    this.startPings();
  }

  prompt(text: string): void {
    if (this.state !== 'open') return;
    // A new turn: whatever is left of an interrupted answer no longer matters.
    this.discarding = false;
    this.send({ type: 'prompt', voicePrompt: text, last: true, lang: this.setup!.language });
    this.armResponseTimer('no answer to the prompt');
  }

  dtmf(digit: string): void {
    if (this.state !== 'open') return;
    this.send({ type: 'dtmf', digit });
  }

  interrupt(heard: string): void {
    if (this.state !== 'open') return;
    const startedAt = this.answerStartedAt;
    this.send({ type: 'interrupt', utteranceUntilInterrupt: heard, durationUntilInterruptMs: startedAt === undefined ? 0 : Math.max(0, Math.round(this.o.clock() - startedAt)) });
    this.chunker.reset();
    this.speaking = false;
    this.answerStartedAt = undefined;
    if (this.answering) {
      // Tokens of this answer still on the way are not spoken either; a prompt still waiting keeps its timer.
      this.answering = false;
      this.discarding = true;
      this.clearResponseTimer();
    }
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown('call-ended');
    return this.closing;
  }

  private async shutdown(reason: RelayEndReason): Promise<void> {
    const was = this.state;
    this.state = 'closed';
    this.stopTimers();
    this.abortConnect?.(new RelayError('RELAY_CLOSED', 'the call ended before the relay was connected'));
    const ws = this.ws;
    if (!ws || was === 'idle' || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const cut = setTimeout(() => ws.terminate(), CLOSE_WAIT_MS);
      ws.once('close', () => {
        clearTimeout(cut);
        resolve();
      });
      if (ws.readyState === WebSocket.OPEN) {
        this.sendOn(ws, { type: 'end', reason });
        ws.close(1000, reason);
      } else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    });
  }

  private connect(url: URL, target: RelayTarget): Promise<void> {
    const timestamp = Math.floor(this.o.clock() / 1000);
    // Connect to the address the guard checked, whatever the name resolves to by now (no DNS rebinding); the name
    // still serves for TLS (SNI and the certificate) and the Host header.
    const lookup = (_host: string, opts: LookupOptions, cb: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void => {
      if (opts.all) cb(null, [{ address: target.address, family: target.family }]);
      else cb(null, target.address, target.family);
    };
    const options: ClientOptions & { lookup: typeof lookup } = {
      headers: {
        'User-Agent': 'Ferry-Voice-Relay',
        [RELAY_TIMESTAMP_HEADER]: String(timestamp),
        [RELAY_SIGNATURE_HEADER]: relaySignature(this.o.signingSecrets, timestamp, url),
      },
      lookup,
      handshakeTimeout: this.o.connectTimeoutMs,
      followRedirects: false,
      perMessageDeflate: false,
      maxPayload: HARD_MAX_PAYLOAD_BYTES,
    };
    const ws = new WebSocket(url, options);
    this.ws = ws;
    ws.on('error', (err) => {
      this.socketError = err;
      this.o.log?.debug({ err, callId: this.setup?.callId }, 'relay socket error');
    });
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (err?: RelayError): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.abortConnect = undefined;
        ws.off('error', onError);
        if (!err) {
          this.opened();
          return resolve();
        }
        ws.terminate();
        reject(err);
      };
      const timer = setTimeout(() => settle(new RelayError('RELAY_CONNECT_TIMEOUT', `no WebSocket from the relay within ${this.o.connectTimeoutMs} ms`)), this.o.connectTimeoutMs);
      const onError = (err: Error): void => {
        const status = /Unexpected server response: (\d{3})/.exec(err.message)?.[1];
        if (status) settle(new RelayError('RELAY_REJECTED', `the relay answered the upgrade with HTTP ${status}`, { cause: err }));
        else settle(new RelayError('RELAY_CONNECT_FAILED', `could not connect to the relay: ${err.message}`, { cause: err }));
      };
      this.abortConnect = settle;
      ws.on('error', onError);
      ws.once('open', () => settle());
      ws.once('close', () => settle(new RelayError('RELAY_CONNECT_FAILED', 'the relay closed the connection before it was open')));
      ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
      ws.on('pong', () => (this.pongPending = false));
      ws.on('close', (code, reason) => this.onClose(code, reason.toString('utf8')));
    });
  }

  private startPings(): void {
    this.pingTimer = setInterval(() => {
      const ws = this.ws;
      if (!ws || ws.readyState !== WebSocket.OPEN) return;
      if (this.pongPending) {
        this.missedPong = true;
        ws.terminate();
        return;
      }
      this.pongPending = true;
      ws.ping();
    }, this.o.pingIntervalMs);
    this.pingTimer.unref();
  }

  private onClose(code: number, reason: string): void {
    this.stopTimers();
    if (this.state !== 'open') {
      if (this.state === 'ended') this.state = 'closed';
      return;
    }
    const detail = reason || this.socketError?.message || '';
    const why = this.missedPong ? 'the relay stopped answering pings' : `the relay connection closed (${code}${detail ? ' ' + detail.slice(0, 120) : ''})`;
    this.fail('RELAY_CLOSED', why);
  }

  private fail(code: RelayErrorCode, message: string): void {
    if (this.state !== 'open') return;
    this.state = 'failed';
    this.stopTimers();
    this.chunker.reset();
    this.emitSafe('failed', { code, message });
    const ws = this.ws;
    if (ws && ws.readyState === WebSocket.OPEN) {
      this.sendOn(ws, { type: 'end', reason: code === 'RELAY_TIMEOUT' ? 'relay-timeout' : 'call-ended' });
      ws.close(1000, code);
    }
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    this.counts.received++;
    // After the end, a failure or close(), nothing more the relay says is acted on.
    if (this.state !== 'open') return;
    if (isBinary) return this.ignore('binary', 'a binary frame');
    const bytes = bytesOf(data);
    if (bytes.length > this.o.maxFrameBytes) return this.ignore('oversize', `a frame of ${bytes.length} bytes, over ${this.o.maxFrameBytes}`);
    if (!this.takeRateToken()) return this.ignore('rateLimited', `over ${this.o.maxFramesPerSecond} frames a second`);
    const parsed = parseCustomerFrame(bytes.toString('utf8'), { allowPlainHttp: this.o.allowPlainHttp });
    if (!parsed.ok) return this.ignore('invalid', parsed.reason);
    this.handle(parsed.frame);
  }

  private handle(frame: CustomerFrame): void {
    switch (frame.type) {
      case 'text': {
        if (this.discarding) {
          if (frame.last) this.discarding = false;
          return;
        }
        this.answering = !frame.last;
        if (frame.last) this.clearResponseTimer();
        else this.armResponseTimer('the answer stalled');
        for (const piece of this.chunker.push(frame.token)) this.say(piece, false);
        if (frame.last) this.finishAnswer();
        return;
      }
      case 'play':
        this.clearResponseTimer();
        for (let i = 0; i < frame.loop; i++) this.emitSafe('play', frame.source);
        return;
      case 'sendDigits':
        this.clearResponseTimer();
        this.emitSafe('digits', frame.digits);
        return;
      case 'end':
        this.stopTimers();
        // Text sent before the end without its `last` is still said (a goodbye), then the call ends.
        if (this.answering && !this.discarding) this.finishAnswer();
        this.state = 'ended';
        this.emitSafe('end', frame.handoffData);
        return;
    }
  }

  /** Speaks what is left of the answer, marked last (an empty text when nothing is left: the loop needs the mark). */
  private finishAnswer(): void {
    this.answering = false;
    const [rest] = this.chunker.flush();
    this.say(rest ?? '', true);
  }

  private say(text: string, last: boolean): void {
    if (text && !this.speaking) {
      this.speaking = true;
      this.answerStartedAt = this.o.clock();
    }
    if (last) this.speaking = false;
    this.emitSafe('say', text, last);
  }

  private ignore(kind: IgnoredKind, reason: string): void {
    this.counts[kind]++;
    this.counts.ignored++;
    if (this.loggedIgnored) return;
    this.loggedIgnored = true;
    this.o.log?.debug({ callId: this.setup?.callId, kind, reason }, 'relay frame ignored (logged once per call; see the counts)');
  }

  /** A token bucket: maxFramesPerSecond refilled continuously, up to twice that held for bursts. */
  private takeRateToken(): boolean {
    const now = this.o.clock();
    const cap = this.o.maxFramesPerSecond * 2;
    this.rateTokens = Math.min(cap, this.rateTokens + ((now - this.rateRefilledAt) / 1000) * this.o.maxFramesPerSecond);
    this.rateRefilledAt = now;
    if (this.rateTokens < 1) return false;
    this.rateTokens--;
    return true;
  }

  private armResponseTimer(why: string): void {
    this.clearResponseTimer();
    this.responseTimer = setTimeout(() => this.fail('RELAY_TIMEOUT', `${why} within ${this.o.responseTimeoutMs} ms`), this.o.responseTimeoutMs);
    this.responseTimer.unref();
  }

  private clearResponseTimer(): void {
    clearTimeout(this.responseTimer);
    this.responseTimer = undefined;
  }

  private stopTimers(): void {
    this.clearResponseTimer();
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
  }

  private send(frame: FerryFrame): void {
    if (this.ws) this.sendOn(this.ws, frame);
  }

  private sendOn(ws: WebSocket, frame: FerryFrame): void {
    // A socket closing meanwhile is noticed by its close event, not here.
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame), (err) => err && this.o.log?.debug({ err, callId: this.setup?.callId }, 'relay send failed'));
  }

  /** The loop's listeners run inside the socket's handlers: one that throws must not take the process down. */
  private emitSafe<K extends keyof BrainEvents>(event: K, ...args: BrainEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: BrainEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.o.log?.error({ err, callId: this.setup?.callId, event }, 'a relay brain listener threw');
    }
  }
}
