import type { LookupFunction } from 'node:net';
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import { rootCertificates } from 'node:tls';
import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import { parseRetryAfter, type SendResult } from '../../../outbound/index.js';
import type { ApnsAuthKey } from '../credentials.js';
import { APNS_ERRORS, EXPIRED_PROVIDER_TOKEN, PUSH_REJECTED } from './apns-errors.js';
import { PUSH_CREDENTIALS_REJECTED, type PushMessage, type PushProviderClient } from './types.js';

export interface ApnsClientOptions {
  key: ApnsAuthKey;
  environment: 'sandbox' | 'production';
  /** Default Apple's production or sandbox host, by `environment`. */
  baseUrl?: string;
  /** A PEM CA trusted beside the system's (the simulator's certificate). */
  ca?: string;
  /**
   * Where provider tokens are kept: every client of one key shares its token (APNs refuses a key's token changing more
   * often than every 20 minutes, and two apps, or two environments, commonly share one key). Default: this process's.
   */
  tokens?: ApnsProviderTokens;
  /** Resolves the host to the address the SSRF guard checked (an app's own endpoint); default DNS. */
  lookup?: LookupFunction;
  /** Epoch ms: the provider token's iat and age, apns-expiration. */
  clock?: () => number;
  /** Streams at once on the session, whatever larger number the server allows (default 1,000). */
  maxStreams?: number;
  /** Sends that may wait for a free stream; past it a send answers retry at once (default 2,000). */
  maxQueued?: number;
  /** An idle session is PINGed this often (default 60 s); one unanswered for `pingTimeoutMs` (20 s) is replaced. */
  pingIntervalMs?: number;
  pingTimeoutMs?: number;
}

export const APNS_PRODUCTION_URL = 'https://api.push.apple.com';
export const APNS_SANDBOX_URL = 'https://api.sandbox.push.apple.com';

/** A token is signed again at this age: inside Apple's window (older than 20 minutes, younger than 50). */
const TOKEN_RENEW_AGE_MS = 40 * 60_000;
/** After ExpiredProviderToken a token younger than this is not renewed again (a clock problem a new token won't fix). */
const TOKEN_FRESH_MS = 60_000;
/** How often one send may be moved to a new session because the old one did not process it (GOAWAY, refused). */
const MAX_REDISPATCHES = 10;
const COLLAPSE_ID_MAX_BYTES = 64;

interface Session {
  h2: ClientHttp2Session;
  /** Streams open on it. */
  active: number;
  /** Streams it answered. */
  answered: number;
  /** The server's SETTINGS_MAX_CONCURRENT_STREAMS (capped); 0 until its SETTINGS arrive. */
  limit: number;
  /** GOAWAY received or closed: no new streams. */
  gone: boolean;
  /** The last stream the server says it processed (GOAWAY); streams above it are safe to send again. */
  lastStreamId: number;
  lastError: string | null;
  usedSinceTick: boolean;
  pingTimer: NodeJS.Timeout | null;
}

interface Pending {
  path: string;
  pushType: 'alert' | 'background';
  priority: string;
  expiration: string | undefined;
  collapseId: string | undefined;
  body: string;
  resolve: (r: SendResult) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | null;
  stream: ClientHttp2Stream | null;
  redispatches: number;
  renewedToken: boolean;
  done: boolean;
}

/** The JSON body APNs receives for a message: `aps` plus the message's data keys (and `image` for a service extension). */
export function apnsPayload(message: PushMessage): string {
  const n = message.notification;
  const aps: Record<string, unknown> = {};
  if (isAlert(message)) {
    if (n!.title !== undefined || n!.body !== undefined) {
      const alert: Record<string, string> = {};
      if (n!.title !== undefined) alert.title = n!.title;
      if (n!.body !== undefined) alert.body = n!.body;
      aps.alert = alert;
    }
    if (n!.badge !== undefined) aps.badge = n!.badge;
    if (n!.sound !== undefined) aps.sound = n!.sound;
    if (n!.image !== undefined) aps['mutable-content'] = 1;
  } else {
    aps['content-available'] = 1;
  }
  const payload: Record<string, unknown> = { aps };
  if (message.data) for (const k of Object.keys(message.data)) if (k !== 'aps') payload[k] = message.data[k];
  if (n?.image !== undefined) payload.image = n.image;
  return JSON.stringify(payload);
}

/** The byte length of the JSON body APNs gets (its 4,096-byte limit is on that body). */
export function apnsPayloadBytes(message: PushMessage): number {
  return Buffer.byteLength(apnsPayload(message));
}

function isAlert(message: PushMessage): boolean {
  const n = message.notification;
  return !!n && (n.title !== undefined || n.body !== undefined || n.badge !== undefined || n.sound !== undefined || n.image !== undefined);
}

/**
 * A client of Apple's APNs HTTP/2 provider API for one auth key and environment. One long-lived HTTP/2 session carries
 * up to the server's MAX_CONCURRENT_STREAMS sends at once; sends beyond wait in a bounded FIFO. A GOAWAY, a refused
 * stream or a dead session opens a new session, and the sends the old one did not process go there; every send ends
 * sent or with a result classified by APNS_ERRORS. The ES256 provider token is reused and signed again at 40 minutes.
 */
export class ApnsClient implements PushProviderClient {
  private readonly baseUrl: string;
  private readonly clock: () => number;
  private readonly maxStreams: number;
  private readonly maxQueued: number;
  private readonly pingIntervalMs: number;
  private readonly pingTimeoutMs: number;
  private readonly ca: string[] | undefined;
  private session: Session | null = null;
  private readonly sessions = new Set<Session>();
  /** FIFO of sends waiting for a stream (from `head`), and in front of it those moved off a session that went away. */
  private queue: Pending[] = [];
  private head = 0;
  private moved: Pending[] = [];
  private authorization = '';
  private tokenIssuedAt = Number.NEGATIVE_INFINITY;
  private readonly tokens: ApnsProviderTokens;
  private closed = false;

  constructor(private readonly o: ApnsClientOptions) {
    this.baseUrl = o.baseUrl ?? (o.environment === 'sandbox' ? APNS_SANDBOX_URL : APNS_PRODUCTION_URL);
    if (new URL(this.baseUrl).protocol !== 'https:') throw new Error(`the APNs base URL must be https: ${this.baseUrl}`);
    this.clock = o.clock ?? Date.now;
    this.maxStreams = o.maxStreams ?? 1000;
    this.maxQueued = o.maxQueued ?? 2000;
    this.pingIntervalMs = o.pingIntervalMs ?? 60_000;
    this.pingTimeoutMs = o.pingTimeoutMs ?? 20_000;
    this.ca = o.ca ? [...rootCertificates, o.ca] : undefined;
    this.tokens = o.tokens ?? SHARED_PROVIDER_TOKENS;
  }

  send(message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    // Not async: the common path (a fresh token) builds the promise at once, without the extra ticks of an async function.
    if (this.clock() - this.tokenIssuedAt < TOKEN_RENEW_AGE_MS) return this.enqueue(message, signal);
    return this.renewToken().then(
      () => this.enqueue(message, signal),
      (e: Error): SendResult => ({ kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, message: `the APNs auth key cannot sign a provider token: ${e.message}` }),
    );
  }

  /** The send queued or started; a message that cannot even be encoded (a lone surrogate in its token) fails, never throws. */
  private enqueue(message: PushMessage, signal: AbortSignal | undefined): Promise<SendResult> {
    try {
      return this.enqueueOrThrow(message, signal);
    } catch (e) {
      return Promise.resolve({ kind: 'fail', code: PUSH_REJECTED, message: `the notification cannot be encoded for APNs: ${(e as Error).message}` });
    }
  }

  private enqueueOrThrow(message: PushMessage, signal: AbortSignal | undefined): Promise<SendResult> {
    if (this.closed) return Promise.resolve({ kind: 'retry', code: 'PROVIDER_ERROR', message: 'the APNs client is closed' });
    if (signal?.aborted) return Promise.resolve({ kind: 'retry', code: 'PROVIDER_TIMEOUT', message: 'the send was aborted before it started' });
    const collapseId = message.collapseKey;
    if (collapseId !== undefined && Buffer.byteLength(collapseId) > COLLAPSE_ID_MAX_BYTES) {
      return Promise.resolve(APNS_ERRORS.classify({ providerCode: 'BadCollapseId', message: `the collapse key is over ${COLLAPSE_ID_MAX_BYTES} bytes (not sent)` }));
    }
    const background = !isAlert(message);
    const ttl = message.ttlSeconds;
    const path = `/3/device/${encodeURIComponent(message.token)}`;
    const body = apnsPayload(message);
    return new Promise<SendResult>((resolve) => {
      const p: Pending = {
        path,
        pushType: background ? 'background' : 'alert',
        priority: background || message.priority === 'normal' ? '5' : '10',
        expiration: ttl === undefined ? undefined : ttl <= 0 ? '0' : String(Math.floor(this.clock() / 1000) + ttl),
        collapseId,
        body,
        resolve,
        signal,
        onAbort: null,
        stream: null,
        redispatches: 0,
        renewedToken: false,
        done: false,
      };
      if (signal) {
        p.onAbort = () => {
          p.stream?.close(constants.NGHTTP2_CANCEL);
          this.finish(p, { kind: 'retry', code: 'PROVIDER_TIMEOUT', message: 'the send was aborted before APNs answered' });
        };
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      try {
        this.dispatch(p, false);
      } catch (e) {
        this.finish(p, { kind: 'retry', code: 'PROVIDER_ERROR', message: `cannot reach APNs at ${this.baseUrl}: ${(e as Error).message}` });
      }
    });
  }

  /** Lets the sends in flight finish (for up to `graceMs`, then drops them: they answer retry) and closes the sessions. */
  async close(graceMs = 5000): Promise<void> {
    this.closed = true;
    for (let p = this.nextQueued(); p; p = this.nextQueued()) this.finish(p, { kind: 'retry', code: 'PROVIDER_ERROR', message: 'the APNs client closed' });
    this.session = null;
    await Promise.all(
      [...this.sessions].map((s) => {
        this.stopPinging(s);
        if (s.h2.destroyed) return undefined;
        return new Promise<void>((resolve) => {
          const timer = setTimeout(() => s.h2.destroy(), graceMs).unref();
          s.h2.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
          s.h2.close();
        });
      }),
    );
  }

  /** Starts the send on the current session when it has a free stream and nobody waits before it; else queues it. */
  private dispatch(p: Pending, moved: boolean): void {
    if (p.done) return;
    if (this.closed) return this.finish(p, { kind: 'retry', code: 'PROVIDER_ERROR', message: 'the APNs client closed' });
    const s = this.currentSession();
    if (!moved && this.queuedCount() === 0 && s.limit > s.active) return this.start(s, p);
    if (moved) this.moved.push(p);
    else if (this.queuedCount() >= this.maxQueued) {
      return this.finish(p, { kind: 'retry', code: 'PROVIDER_BUSY', providerHealthy: true, message: `${this.maxQueued} sends already wait for an APNs stream` });
    } else this.queue.push(p);
    this.drain();
  }

  private drain(): void {
    while (this.queuedCount() > 0 && !this.closed) {
      const s = this.currentSession();
      if (s.active >= s.limit) return;
      const p = this.nextQueued();
      if (p && !p.done) this.start(s, p);
    }
  }

  private queuedCount(): number {
    return this.moved.length + this.queue.length - this.head;
  }

  private nextQueued(): Pending | undefined {
    if (this.moved.length) return this.moved.shift();
    if (this.head >= this.queue.length) return undefined;
    const p = this.queue[this.head++];
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return p;
  }

  private start(s: Session, p: Pending): void {
    const headers: OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': p.path,
      authorization: this.authorization,
      'apns-topic': this.o.key.bundleId,
      'apns-push-type': p.pushType,
      'apns-priority': p.priority,
    };
    if (p.expiration !== undefined) headers['apns-expiration'] = p.expiration;
    if (p.collapseId !== undefined) headers['apns-collapse-id'] = p.collapseId;
    const authorization = this.authorization;
    let stream: ClientHttp2Stream;
    try {
      stream = s.h2.request(headers);
    } catch (e) {
      // The session is going away under us (GOAWAY being processed, destroyed): nothing was sent.
      s.gone = true;
      s.lastError = (e as Error).message;
      if (this.session === s) this.session = null;
      return this.moveOrGiveUp(p, s.lastError);
    }
    s.active++;
    s.usedSinceTick = true;
    p.stream = stream;
    let status = 0;
    let response: IncomingHttpHeaders | null = null;
    let body = '';
    let streamError: string | null = null;
    stream.on('response', (h) => {
      response = h;
      status = Number(h[':status']);
    });
    // Apple's error bodies are short ASCII JSON; a 200 has none.
    stream.on('data', (chunk: Buffer) => {
      body += chunk.toString('latin1');
    });
    stream.on('error', (e) => {
      streamError = e.message;
    });
    stream.on('close', () => {
      s.active--;
      p.stream = null;
      if (response) s.answered++;
      if (response) this.answered(p, status, response, body, authorization);
      else this.unanswered(p, s, stream, streamError);
      this.drain();
    });
    stream.end(p.body);
  }

  private answered(p: Pending, status: number, h: IncomingHttpHeaders, body: string, authorization: string): void {
    const apnsId = h['apns-id'];
    if (status === 200) return this.finish(p, { kind: 'sent', providerId: typeof apnsId === 'string' ? apnsId : '' });
    let reason: string | undefined;
    try {
      const parsed = JSON.parse(body) as { reason?: unknown };
      if (typeof parsed.reason === 'string') reason = parsed.reason;
    } catch {
      // Not Apple's JSON (a proxy's page): classified by status alone.
    }
    if (reason === EXPIRED_PROVIDER_TOKEN && !p.renewedToken && !p.done) {
      p.renewedToken = true;
      this.renewExpiredToken(authorization).then(
        () => this.dispatch(p, true),
        (e: Error) => this.finish(p, { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, message: `the APNs auth key cannot sign a provider token: ${e.message}` }),
      );
      return;
    }
    const retryAfterMs = parseRetryAfter(h['retry-after'], this.clock());
    this.finish(p, APNS_ERRORS.classify({ providerCode: reason, message: reason ? `APNs: ${reason}` : undefined, httpStatus: status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }));
  }

  /** A stream closed without a response: sent again when the server cannot have processed it, else a retry result. */
  private unanswered(p: Pending, s: Session, stream: ClientHttp2Stream, streamError: string | null): void {
    if (p.done) return;
    const id = stream.id;
    const refused = stream.rstCode === constants.NGHTTP2_REFUSED_STREAM;
    if (refused && !s.gone) {
      // The server will not take more on this session: new streams go to a new one; this one ends when its streams do.
      s.gone = true;
      if (this.session === s) this.session = null;
      s.h2.close();
    }
    const notProcessed = refused || id === undefined || id > s.lastStreamId;
    const why =
      streamError ??
      s.lastError ??
      (s.h2.closed || s.h2.destroyed ? 'the connection to APNs closed before it answered' : `APNs reset the stream without an answer (HTTP/2 code ${stream.rstCode})`);
    if (notProcessed) return this.moveOrGiveUp(p, why);
    this.finish(p, { kind: 'retry', code: 'PROVIDER_ERROR', message: why });
  }

  private moveOrGiveUp(p: Pending, why: string): void {
    if (p.redispatches >= MAX_REDISPATCHES) return this.finish(p, { kind: 'retry', code: 'PROVIDER_ERROR', message: `APNs did not take the send on ${MAX_REDISPATCHES} sessions: ${why}` });
    p.redispatches++;
    this.dispatch(p, true);
  }

  private finish(p: Pending, result: SendResult): void {
    if (p.done) return;
    p.done = true;
    if (p.onAbort) p.signal!.removeEventListener('abort', p.onAbort);
    p.resolve(result);
  }

  /** The session new streams go to, connecting one when there is none. */
  private currentSession(): Session {
    if (this.session && !this.session.gone) return this.session;
    const h2 = connect(this.baseUrl, { ...(this.ca ? { ca: this.ca } : {}), ...(this.o.lookup ? { lookup: this.o.lookup } : {}), settings: { enablePush: false } });
    const s: Session = { h2, active: 0, answered: 0, limit: 0, gone: false, lastStreamId: Number.POSITIVE_INFINITY, lastError: null, usedSinceTick: false, pingTimer: null };
    this.session = s;
    this.sessions.add(s);
    h2.on('remoteSettings', (settings) => {
      s.limit = Math.min(this.maxStreams, settings.maxConcurrentStreams ?? this.maxStreams);
      this.drain();
    });
    h2.once('connect', () => this.startPinging(s));
    h2.on('goaway', (_code: number, lastStreamId: number) => {
      s.gone = true;
      s.lastStreamId = lastStreamId;
      if (this.session === s) this.session = null;
    });
    h2.on('error', (e: Error) => {
      s.lastError = e.message;
    });
    h2.on('close', () => {
      const wasCurrent = this.session === s;
      s.gone = true;
      this.stopPinging(s);
      this.sessions.delete(s);
      if (wasCurrent) this.session = null;
      if (s.answered > 0 || !wasCurrent) return this.drain();
      // A session that answered nothing (no connection, or closed at once): the waiting sends answer retry now (the
      // pipeline backs off) instead of reconnecting in a loop; the next send tries a new connection.
      const why = `${s.limit > 0 ? 'APNs closed the session before answering' : 'cannot connect to APNs'} at ${this.baseUrl}: ${s.lastError ?? 'the connection closed'}`;
      for (let p = this.nextQueued(); p; p = this.nextQueued()) this.finish(p, { kind: 'retry', code: 'PROVIDER_ERROR', message: why });
    });
    return s;
  }

  private startPinging(s: Session): void {
    s.pingTimer = setInterval(() => {
      const idle = s.active === 0 && !s.usedSinceTick;
      s.usedSinceTick = false;
      if (!idle || s.gone) return;
      const timeout = setTimeout(() => s.h2.destroy(new Error('APNs did not answer a PING')), this.pingTimeoutMs).unref();
      const sent = s.h2.ping((err) => {
        clearTimeout(timeout);
        if (err) s.h2.destroy(err);
      });
      if (!sent) clearTimeout(timeout);
    }, this.pingIntervalMs).unref();
  }

  private stopPinging(s: Session): void {
    if (s.pingTimer) clearInterval(s.pingTimer);
    s.pingTimer = null;
  }

  private async renewToken(): Promise<void> {
    const t = await this.tokens.fresh(this.o.key, this.clock, TOKEN_RENEW_AGE_MS);
    this.authorization = t.authorization;
    this.tokenIssuedAt = t.issuedAt;
  }

  /** After ExpiredProviderToken for `used`: a new token unless another send (of any client of the key) already renewed it. */
  private async renewExpiredToken(used: string): Promise<void> {
    if (this.authorization !== used || this.clock() - this.tokenIssuedAt < TOKEN_FRESH_MS) return;
    const t = await this.tokens.fresh(this.o.key, this.clock, TOKEN_RENEW_AGE_MS, used);
    this.authorization = t.authorization;
    this.tokenIssuedAt = t.issuedAt;
  }
}

interface ProviderToken {
  authorization: string;
  issuedAt: number;
}

/** The provider tokens of the keys in use, one per key, with one signing at a time per key. */
export class ApnsProviderTokens {
  private readonly byKey = new Map<string, ProviderToken>();
  private readonly signing = new Map<string, Promise<ProviderToken>>();
  private readonly keys = new Map<string, Promise<CryptoKey>>();

  /**
   * The key's token while younger than `maxAgeMs` (and not `stale`, one APNs called expired), else a new one signed
   * once for every caller of the key.
   */
  fresh(key: ApnsAuthKey, clock: () => number, maxAgeMs: number, stale?: string): Promise<ProviderToken> {
    const id = `${key.teamId}\u0000${key.keyId}\u0000${key.privateKey}`;
    const current = this.byKey.get(id);
    if (current && clock() - current.issuedAt < maxAgeMs && current.authorization !== stale) return Promise.resolve(current);
    let p = this.signing.get(id);
    if (!p) {
      p = this.sign(id, key, clock).finally(() => this.signing.delete(id));
      this.signing.set(id, p);
    }
    return p;
  }

  private async sign(id: string, key: ApnsAuthKey, clock: () => number): Promise<ProviderToken> {
    let signingKey = this.keys.get(id);
    if (!signingKey) {
      signingKey = importPKCS8(key.privateKey, 'ES256');
      this.keys.set(id, signingKey);
      signingKey.catch(() => this.keys.delete(id));
    }
    const issuedAt = clock();
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: key.keyId })
      .setIssuer(key.teamId)
      .setIssuedAt(Math.floor(issuedAt / 1000))
      .sign(await signingKey);
    const token = { authorization: `bearer ${jwt}`, issuedAt };
    this.byKey.set(id, token);
    return token;
  }
}

/** This process's provider tokens: the default of every ApnsClient. */
export const SHARED_PROVIDER_TOKENS = new ApnsProviderTokens();
