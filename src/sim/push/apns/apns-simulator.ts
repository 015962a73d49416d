import { createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto';
import { constants, createSecureServer, type Http2SecureServer, type Http2Session, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { SIMULATOR_CERT, SIMULATOR_KEY } from './simulator-tls.js';

/** An auth key the simulator knows, as Apple knows it: its public half, team and (optionally) the one app it may push to. */
export interface ApnsSimKey {
  keyId: string;
  teamId: string;
  publicKeyPem: string;
  /** The topic the key may push to (and its `.voip`, `.complication`… sub-topics); any topic when absent. */
  bundleId?: string;
}

/** What a scripted token answers: 200 (sent), an APNs error status and reason, or RST_STREAM REFUSED_STREAM. */
export type ApnsScriptedOutcome = { status: number; reason?: string } | { refuse: true };

export interface ApnsSimulatorOptions {
  /** Which APNs this is (default production): tokens of the other environment answer 400 BadDeviceToken. */
  environment?: 'sandbox' | 'production';
  /** SETTINGS_MAX_CONCURRENT_STREAMS announced to each session (default 1,000, like Apple). */
  maxConcurrentStreams?: number;
  /** Epoch ms: token ages, the 410 timestamp. */
  clock?: () => number;
  /** A key's provider token may change at most this often (default 20 minutes): else 429 TooManyProviderTokenUpdates. */
  minTokenIntervalMs?: number;
  /** Tokens older than this (by iat) answer 403 ExpiredProviderToken (default 60 minutes). */
  tokenMaxAgeMs?: number;
  /**
   * The environment a device token was issued by, or undefined for a token valid in both (the simulator's
   * convenience). Default: tokens starting `5a4d0000` are sandbox's, `9d0d0000` production's.
   */
  environmentOf?: (token: string) => 'sandbox' | 'production' | undefined;
  /** The default outcomes by token prefix (DEFAULT_APNS_RULES); default on. */
  defaultRules?: boolean;
  /** Requests kept in `received()` (default 1,000, the newest). */
  recordLimit?: number;
}

/** One request as the simulator received and answered it. */
export interface ApnsReceived {
  at: number;
  token: string;
  topic: string | undefined;
  pushType: string | undefined;
  priority: string | undefined;
  expiration: string | undefined;
  collapseId: string | undefined;
  apnsId: string;
  /** The JSON body as sent. */
  payload: string;
  status: number;
  reason: string | undefined;
}

export interface ApnsSimStats {
  /** HTTP/2 sessions opened since start, and open now. */
  sessionsOpened: number;
  sessionsOpen: number;
  /** Requests answered (any status). */
  requests: number;
  /** Answered 200. */
  sent: number;
  /** Error answers by reason. */
  byReason: Record<string, number>;
  /** Distinct device tokens seen (exact up to 100,000). */
  devices: number;
  /** Distinct provider tokens accepted. */
  providerTokens: number;
  /** Streams refused: their session had gone away (GOAWAY sent before them), or scripted `refuse`. */
  refusedStreams: number;
  /** The most streams one session had open at once. */
  peakStreams: number;
  /** PING frames received (keep-alives). */
  pings: number;
}

interface Rule {
  pattern: RegExp;
  outcome: ApnsScriptedOutcome;
  remaining: number;
}

interface SimKeyState {
  key: ApnsSimKey;
  publicKey: KeyObject;
  /** The newest accepted token's iat and when it was first accepted. */
  currentIat: number;
  currentAcceptedAt: number;
}

interface TokenInfo {
  /** Null when the signature, key or issuer is wrong. */
  keyId: string | null;
  iatMs: number;
  accepted: boolean;
}

interface SessionState {
  streams: number;
  /** Open now. */
  open: number;
  /** The newest stream it received. */
  lastSeen: number;
  /** Streams above this id arrived after our GOAWAY and are refused. */
  goawayLastStreamId: number;
}

type Verdict = { status: number; reason: string } | null;
/** The verdict of a scripted refusal: the stream is reset unprocessed, nothing is answered or recorded. */
const REFUSE = { status: 0, reason: 'REFUSED_STREAM' };

/** The default token prefixes (first 8 hex characters) and what they answer. */
export const DEFAULT_APNS_RULES: ReadonlyArray<{ prefix: string; outcome: ApnsScriptedOutcome }> = [
  { prefix: 'dead0000', outcome: { status: 410, reason: 'Unregistered' } },
  { prefix: 'bad00000', outcome: { status: 400, reason: 'BadDeviceToken' } },
  { prefix: '70b1c000', outcome: { status: 400, reason: 'DeviceTokenNotForTopic' } },
  { prefix: 'ba5e0000', outcome: { status: 429, reason: 'TooManyRequests' } },
  { prefix: 'e5000000', outcome: { status: 500, reason: 'InternalServerError' } },
  { prefix: '5e000000', outcome: { status: 503, reason: 'ServiceUnavailable' } },
];
export const SANDBOX_TOKEN_PREFIX = '5a4d0000';
export const PRODUCTION_TOKEN_PREFIX = '9d0d0000';

const PATH_PREFIX = '/3/device/';
const PAYLOAD_LIMIT = 4096;
const DEVICE_TOKEN = /^[0-9a-fA-F]{64}$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const PUSH_TYPES = new Set(['alert', 'background', 'location', 'voip', 'complication', 'fileprovider', 'mdm', 'liveactivity', 'pushtotalk', 'widgets', 'controls']);
const PRIORITIES = new Set(['10', '5', '1']);
const DEVICES_COUNTED = 100_000;
const TOKENS_CACHED = 10_000;

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function defaultEnvironmentOf(token: string): 'sandbox' | 'production' | undefined {
  if (token.startsWith(SANDBOX_TOKEN_PREFIX)) return 'sandbox';
  if (token.startsWith(PRODUCTION_TOKEN_PREFIX)) return 'production';
  return undefined;
}

/**
 * APNs as Apple's HTTP/2 provider API answers it, on 127.0.0.1 with a self-signed certificate (clients trust
 * SIMULATOR_CERT): ES256 provider tokens verified against the registered keys with Apple's age and renewal rules,
 * headers and payload checked, outcomes scripted per device-token pattern, GOAWAY on demand or after N streams per
 * session, and a record of what it received. A provider token's signature is checked once, then looked up.
 */
export class ApnsSimulator {
  /** Sessions send GOAWAY (and close) after this many streams each; null: never. */
  closeAfterStreams: number | null = null;
  private readonly clock: () => number;
  private readonly environment: 'sandbox' | 'production';
  private readonly environmentOf: (token: string) => 'sandbox' | 'production' | undefined;
  private readonly minTokenIntervalMs: number;
  private readonly tokenMaxAgeMs: number;
  private readonly maxConcurrentStreams: number;
  private readonly keys = new Map<string, SimKeyState>();
  private readonly tokens = new Map<string, TokenInfo>();
  private readonly rules: Rule[] = [];
  private readonly sessions = new Map<Http2Session, SessionState>();
  private readonly devices = new Set<string>();
  /** The TLS sockets under the sessions (a session's own `socket` is a proxy that refuses destroy()). */
  private readonly sockets = new Set<TLSSocket>();
  private readonly record: ApnsReceived[] = [];
  private readonly recordLimit: number;
  private recordNext = 0;
  private server: Http2SecureServer | null = null;
  private readonly counters = { sessionsOpened: 0, requests: 0, sent: 0, providerTokens: 0, refusedStreams: 0, peakStreams: 0, pings: 0 };
  private readonly byReason: Record<string, number> = {};

  constructor(o: ApnsSimulatorOptions = {}) {
    this.clock = o.clock ?? Date.now;
    this.environment = o.environment ?? 'production';
    this.environmentOf = o.environmentOf ?? defaultEnvironmentOf;
    this.minTokenIntervalMs = o.minTokenIntervalMs ?? 20 * 60_000;
    this.tokenMaxAgeMs = o.tokenMaxAgeMs ?? 60 * 60_000;
    this.maxConcurrentStreams = o.maxConcurrentStreams ?? 1000;
    this.recordLimit = Math.max(1, o.recordLimit ?? 1000);
    if (o.defaultRules !== false) {
      for (const r of DEFAULT_APNS_RULES) this.rules.push({ pattern: new RegExp(`^${r.prefix}`, 'i'), outcome: r.outcome, remaining: Number.POSITIVE_INFINITY });
    }
  }

  get url(): string {
    const a = this.server?.address() as AddressInfo | null;
    if (!a) throw new Error('the APNs simulator is not listening');
    return `https://127.0.0.1:${a.port}`;
  }

  async start(port = 0): Promise<void> {
    const server = createSecureServer({ cert: SIMULATOR_CERT, key: SIMULATOR_KEY, settings: { maxConcurrentStreams: this.maxConcurrentStreams } });
    server.on('session', (session: ServerHttp2Session) => this.onSession(session));
    server.on('secureConnection', (socket: TLSSocket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => this.onStream(stream, headers));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    for (const session of this.sessions.keys()) session.destroy();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Registers an auth key (its public half); tokens it signs are accepted from now on. */
  addKey(key: ApnsSimKey): void {
    this.keys.set(key.keyId, { key, publicKey: createPublicKey(key.publicKeyPem), currentIat: Number.NEGATIVE_INFINITY, currentAcceptedAt: Number.NEGATIVE_INFINITY });
    this.tokens.clear();
  }

  /** Device tokens matching `pattern` answer `outcome` (the next `count` times; always when absent). Newest rules first. */
  script(pattern: RegExp, outcome: ApnsScriptedOutcome, count?: number): void {
    this.rules.unshift({ pattern, outcome, remaining: count ?? Number.POSITIVE_INFINITY });
  }

  /** Sends GOAWAY on every open session (last processed stream: `lastStreamId`, default the last it received) and closes it. */
  goaway(lastStreamId?: number): void {
    for (const [session, state] of this.sessions) this.sendGoaway(session, state, lastStreamId);
  }

  /** Drops every session at once, without GOAWAY (a dead connection, as a client sees one). */
  dropSessions(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** The newest requests, oldest first (at most `recordLimit`). */
  received(): ApnsReceived[] {
    if (this.record.length < this.recordLimit) return [...this.record];
    return [...this.record.slice(this.recordNext), ...this.record.slice(0, this.recordNext)];
  }

  get stats(): ApnsSimStats {
    return { ...this.counters, sessionsOpen: this.sessions.size, byReason: { ...this.byReason }, devices: this.devices.size };
  }

  private onSession(session: ServerHttp2Session): void {
    this.counters.sessionsOpened++;
    this.sessions.set(session, { streams: 0, open: 0, lastSeen: 0, goawayLastStreamId: Number.POSITIVE_INFINITY });
    session.on('error', () => {});
    session.on('ping', () => this.counters.pings++);
    session.on('close', () => this.sessions.delete(session));
  }

  private sendGoaway(session: Http2Session, state: SessionState, lastStreamId?: number): void {
    if (session.closed || session.destroyed) return;
    const last = lastStreamId ?? state.lastSeen;
    session.goaway(constants.NGHTTP2_NO_ERROR, last);
    // What arrives above the last processed stream is refused, as Apple's servers do; close() ends the session once
    // the streams it kept are answered.
    state.goawayLastStreamId = Math.min(state.goawayLastStreamId, last);
    session.close();
  }

  private onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => {});
    const state = this.sessions.get(stream.session!);
    if (state && stream.id !== undefined) {
      if (stream.id > state.goawayLastStreamId) {
        this.counters.refusedStreams++;
        stream.close(constants.NGHTTP2_REFUSED_STREAM);
        return;
      }
      state.streams++;
      state.lastSeen = stream.id;
      if (++state.open > this.counters.peakStreams) this.counters.peakStreams = state.open;
      if (this.closeAfterStreams !== null && state.streams >= this.closeAfterStreams) this.sendGoaway(stream.session!, state, stream.id);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= PAYLOAD_LIMIT) chunks.push(chunk);
    });
    stream.on('end', () => {
      if (state) state.open--;
      this.answer(stream, headers, size > PAYLOAD_LIMIT ? null : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks), size);
    });
  }

  private answer(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, body: Buffer | null, size: number): void {
    const path = headers[':path'] ?? '';
    const rawToken = path.startsWith(PATH_PREFIX) ? path.slice(PATH_PREFIX.length) : '';
    const token = rawToken.includes('%') ? safeDecode(rawToken) : rawToken;
    const requestedId = headers['apns-id'];
    const verdict = this.check(headers, path, token, size);
    if (verdict === REFUSE) {
      this.counters.refusedStreams++;
      if (!stream.destroyed) stream.close(constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    const apnsId = typeof requestedId === 'string' && UUID.test(requestedId) ? requestedId.toLowerCase() : randomUUID();
    const status = verdict?.status ?? 200;
    this.counters.requests++;
    if (verdict) this.byReason[verdict.reason] = (this.byReason[verdict.reason] ?? 0) + 1;
    else this.counters.sent++;
    if (token && this.devices.size < DEVICES_COUNTED) this.devices.add(token);
    this.remember({
      at: this.clock(),
      token,
      topic: headers['apns-topic'] as string | undefined,
      pushType: headers['apns-push-type'] as string | undefined,
      priority: headers['apns-priority'] as string | undefined,
      expiration: headers['apns-expiration'] as string | undefined,
      collapseId: headers['apns-collapse-id'] as string | undefined,
      apnsId,
      payload: body ? body.toString('utf8') : '',
      status,
      reason: verdict?.reason,
    });
    if (stream.destroyed || stream.closed) return;
    if (!verdict) {
      stream.respond({ ':status': 200, 'apns-id': apnsId }, { endStream: true });
      return;
    }
    stream.respond({ ':status': verdict.status, 'apns-id': apnsId, 'content-type': 'application/json' });
    stream.end(JSON.stringify(verdict.status === 410 ? { reason: verdict.reason, timestamp: this.clock() } : { reason: verdict.reason }));
  }

  /** Apple's checks in order: the request, the provider token, the headers, the payload, the device token, the script. */
  private check(headers: IncomingHttpHeaders, path: string, token: string, size: number): Verdict {
    if (headers[':method'] !== 'POST') return { status: 405, reason: 'MethodNotAllowed' };
    if (!path.startsWith(PATH_PREFIX)) return { status: 404, reason: 'BadPath' };
    if (!token) return { status: 400, reason: 'MissingDeviceToken' };
    const authorization = headers.authorization;
    if (typeof authorization !== 'string' || !authorization.toLowerCase().startsWith('bearer ')) return { status: 403, reason: 'MissingProviderToken' };
    const tokenVerdict = this.checkProviderToken(authorization.slice(7).trim());
    if ('status' in tokenVerdict) return tokenVerdict;
    const topic = headers['apns-topic'];
    if (typeof topic !== 'string' || !topic) return { status: 400, reason: 'MissingTopic' };
    const bundleId = tokenVerdict.key.bundleId;
    if (bundleId && topic !== bundleId && !topic.startsWith(`${bundleId}.`)) return { status: 400, reason: 'TopicDisallowed' };
    const pushType = headers['apns-push-type'];
    if (pushType !== undefined && !PUSH_TYPES.has(pushType as string)) return { status: 400, reason: 'InvalidPushType' };
    const priority = headers['apns-priority'];
    if (priority !== undefined && !PRIORITIES.has(priority as string)) return { status: 400, reason: 'BadPriority' };
    if (pushType === 'background' && priority === '10') return { status: 400, reason: 'BadPriority' };
    const expiration = headers['apns-expiration'];
    if (expiration !== undefined && !/^\d+$/.test(expiration as string)) return { status: 400, reason: 'BadExpirationDate' };
    const collapseId = headers['apns-collapse-id'];
    if (collapseId !== undefined && Buffer.byteLength(collapseId as string) > 64) return { status: 400, reason: 'BadCollapseId' };
    const requestedId = headers['apns-id'];
    if (requestedId !== undefined && !UUID.test(requestedId as string)) return { status: 400, reason: 'BadMessageId' };
    if (size === 0) return { status: 400, reason: 'PayloadEmpty' };
    if (size > PAYLOAD_LIMIT) return { status: 413, reason: 'PayloadTooLarge' };
    if (!DEVICE_TOKEN.test(token)) return { status: 400, reason: 'BadDeviceToken' };
    const issuedBy = this.environmentOf(token);
    if (issuedBy !== undefined && issuedBy !== this.environment) return { status: 400, reason: 'BadDeviceToken' };
    return this.scripted(token);
  }

  private scripted(token: string): Verdict {
    for (let i = 0; i < this.rules.length; i++) {
      const rule = this.rules[i];
      if (!rule.pattern.test(token)) continue;
      if (--rule.remaining <= 0) this.rules.splice(i, 1);
      const outcome = rule.outcome;
      if ('refuse' in outcome) return REFUSE;
      if (outcome.status === 200) return null;
      return { status: outcome.status, reason: outcome.reason ?? 'InternalServerError' };
    }
    return null;
  }

  /** The key a provider token was signed with, or Apple's 403/429 answer; the signature is verified once per token. */
  private checkProviderToken(jwt: string): { key: ApnsSimKey } | { status: number; reason: string } {
    let info = this.tokens.get(jwt);
    if (!info) {
      info = this.verifyToken(jwt);
      if (this.tokens.size >= TOKENS_CACHED) this.tokens.clear();
      this.tokens.set(jwt, info);
    }
    const state = info.keyId === null ? undefined : this.keys.get(info.keyId);
    if (!state) return { status: 403, reason: 'InvalidProviderToken' };
    const now = this.clock();
    if (now - info.iatMs > this.tokenMaxAgeMs) return { status: 403, reason: 'ExpiredProviderToken' };
    if (!info.accepted) {
      // A newer token than the key's current one, too soon after it: Apple wants at most one new token per 20 minutes.
      if (info.iatMs > state.currentIat && now - state.currentAcceptedAt < this.minTokenIntervalMs) return { status: 429, reason: 'TooManyProviderTokenUpdates' };
      info.accepted = true;
      this.counters.providerTokens++;
      if (info.iatMs > state.currentIat) {
        state.currentIat = info.iatMs;
        state.currentAcceptedAt = now;
      }
    }
    return { key: state.key };
  }

  private verifyToken(jwt: string): TokenInfo {
    const invalid: TokenInfo = { keyId: null, iatMs: 0, accepted: false };
    const parts = jwt.split('.');
    if (parts.length !== 3) return invalid;
    try {
      const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: unknown; kid?: unknown };
      const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { iss?: unknown; iat?: unknown };
      if (header.alg !== 'ES256' || typeof header.kid !== 'string' || typeof claims.iat !== 'number') return invalid;
      const state = this.keys.get(header.kid);
      if (!state || claims.iss !== state.key.teamId) return invalid;
      const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
      const ok = verify('sha256', signed, { key: state.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(parts[2], 'base64url'));
      return ok ? { keyId: header.kid, iatMs: claims.iat * 1000, accepted: false } : invalid;
    } catch {
      return invalid;
    }
  }

  private remember(r: ApnsReceived): void {
    if (this.record.length < this.recordLimit) this.record.push(r);
    else this.record[this.recordNext] = r;
    this.recordNext = (this.recordNext + 1) % this.recordLimit;
  }
}
