import { createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, jwtVerify } from 'jose';

/** A service account FCM knows: its email (the assertion's issuer), its project and the public half of its key. */
export interface FcmSimServiceAccount {
  clientEmail: string;
  projectId: string;
  publicKeyPem: string;
}

/** What a send to a token is answered with (the success, or one of FCM's errors). */
export type FcmSimOutcome = 'OK' | 'UNREGISTERED' | 'INVALID_TOKEN' | 'SENDER_ID_MISMATCH' | 'QUOTA_EXCEEDED' | 'UNAVAILABLE' | 'INTERNAL' | 'THIRD_PARTY_AUTH_ERROR';

export interface FcmSimulatorOptions {
  /** Lifetime of the access tokens it issues (expires_in); default 3600 s, as Google's. */
  tokenLifetimeSeconds?: number;
  /** The Retry-After of QUOTA_EXCEEDED and UNAVAILABLE answers; default 1 s. */
  retryAfterSeconds?: number;
  /** How many received sends are kept (the oldest go first); default 1000. */
  recordLimit?: number;
  clock?: () => number;
}

/** A send as received, with how it was answered. */
export interface FcmSimReceived {
  at: number;
  projectId: string;
  token: string;
  /** The Message object as posted. */
  message: Record<string, unknown>;
  status: number;
  /** The message name when sent, else FCM's error code. */
  result: string;
}

export interface FcmSimCounters {
  tokensIssued: number;
  tokensRefused: number;
  sent: number;
  /** Answers other than a success, by FCM error code (UNAUTHENTICATED and PERMISSION_DENIED included). */
  errors: Record<string, number>;
}

interface IssuedToken {
  projectId: string;
  expiresAt: number;
}

interface Script {
  pattern: RegExp;
  outcome: FcmSimOutcome;
  /** Sends it still fails; afterwards the matching tokens succeed. Infinity: always. */
  remaining: number;
}

/** Tokens whose prefix picks their outcome, unless a script says otherwise. */
const DEFAULT_OUTCOMES: ReadonlyArray<readonly [string, FcmSimOutcome]> = [
  ['unregistered-', 'UNREGISTERED'],
  ['invalid-', 'INVALID_TOKEN'],
  ['mismatch-', 'SENDER_ID_MISMATCH'],
  ['quota-', 'QUOTA_EXCEEDED'],
  ['unavailable-', 'UNAVAILABLE'],
  ['internal-', 'INTERNAL'],
  ['thirdparty-', 'THIRD_PARTY_AUTH_ERROR'],
];

const SCOPES = new Set(['https://www.googleapis.com/auth/firebase.messaging', 'https://www.googleapis.com/auth/cloud-platform']);
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const SEND_PREFIX = '/v1/projects/';
const SEND_SUFFIX = '/messages:send';
const PAYLOAD_LIMIT = 4096;
const MAX_BODY = 256 * 1024;
const FCM_ERROR = 'type.googleapis.com/google.firebase.fcm.v1.FcmError';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

/** FCM v1's error bodies, as its documentation shows them (google.rpc.Status with an FcmError detail). */
function fcmError(code: number, status: string, message: string, errorCode?: string, violation?: { field: string; description: string }): string {
  const details: unknown[] = [];
  if (errorCode) details.push({ '@type': FCM_ERROR, errorCode });
  if (violation) details.push({ '@type': BAD_REQUEST, fieldViolations: [violation] });
  return JSON.stringify({ error: { code, message, status, ...(details.length ? { details } : {}) } });
}

const OUTCOME_ANSWERS: Record<Exclude<FcmSimOutcome, 'OK'>, { status: number; code: string; body: string }> = {
  UNREGISTERED: { status: 404, code: 'UNREGISTERED', body: fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED') },
  INVALID_TOKEN: { status: 400, code: 'INVALID_ARGUMENT', body: fcmError(400, 'INVALID_ARGUMENT', 'The registration token is not a valid FCM registration token', 'INVALID_ARGUMENT') },
  SENDER_ID_MISMATCH: { status: 403, code: 'SENDER_ID_MISMATCH', body: fcmError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH') },
  QUOTA_EXCEEDED: { status: 429, code: 'QUOTA_EXCEEDED', body: fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for quota metric \'Send requests\'.', 'QUOTA_EXCEEDED') },
  UNAVAILABLE: { status: 503, code: 'UNAVAILABLE', body: fcmError(503, 'UNAVAILABLE', 'The service is currently unavailable.', 'UNAVAILABLE') },
  INTERNAL: { status: 500, code: 'INTERNAL', body: fcmError(500, 'INTERNAL', 'Internal error encountered.', 'INTERNAL') },
  THIRD_PARTY_AUTH_ERROR: { status: 401, code: 'THIRD_PARTY_AUTH_ERROR', body: fcmError(401, 'UNAUTHENTICATED', 'Auth error from APNS or Web Push Service', 'THIRD_PARTY_AUTH_ERROR') },
};

const UNAUTHENTICATED_BODY = fcmError(
  401,
  'UNAUTHENTICATED',
  'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
);

/**
 * Firebase Cloud Messaging as Ferry's FcmClient meets it, over plain HTTP on loopback: Google's OAuth2 token endpoint
 * (`POST /token`, an RS256 JWT assertion verified against a registered service account's public key) and FCM HTTP v1
 * (`POST /v1/projects/{project}/messages:send` with the bearer token it issued). Outcomes are picked per token: by
 * prefix (`unregistered-`, `invalid-`, `mismatch-`, `quota-`, `unavailable-`, `internal-`, `thirdparty-`), or by
 * `script()`. It records what it received (the last `recordLimit` sends) and counts the rest.
 *
 * Cheap per request, as it shares the CPU with the daemon in benches: no URL parsing, one JSON.parse of the body,
 * precomputed error bodies.
 */
export class FcmSimulator {
  readonly counters: FcmSimCounters = { tokensIssued: 0, tokensRefused: 0, sent: 0, errors: {} };
  private readonly accounts = new Map<string, { projectId: string; key: KeyObject }>();
  private readonly issued = new Map<string, IssuedToken>();
  private readonly scripts: Script[] = [];
  private readonly ring: FcmSimReceived[] = [];
  private ringNext = 0;
  private server: Server | null = null;
  private seq = 0;
  private readonly idPrefix = `0:${Date.now()}`;
  private readonly idSuffix = `%${randomBytes(4).toString('hex')}`;
  private readonly clock: () => number;
  private readonly recordLimit: number;
  tokenLifetimeSeconds: number;
  retryAfterSeconds: number;

  constructor(o: FcmSimulatorOptions = {}) {
    this.clock = o.clock ?? Date.now;
    this.tokenLifetimeSeconds = o.tokenLifetimeSeconds ?? 3600;
    this.retryAfterSeconds = o.retryAfterSeconds ?? 1;
    this.recordLimit = Math.max(1, o.recordLimit ?? 1000);
  }

  get url(): string {
    const a = this.server?.address() as AddressInfo | null;
    if (!a) throw new Error('the FCM simulator is not listening');
    return `http://127.0.0.1:${a.port}`;
  }

  /** The token endpoint's address (a service account's token_uri, the assertion's audience). */
  get tokenUrl(): string {
    return `${this.url}/token`;
  }

  async start(port = 0): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    // FcmClient keeps its connections: longer than Node's 5 s default, so a bench pause does not cost reconnects.
    server.keepAliveTimeout = 65_000;
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
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Registers a service account (what uploading it to Firebase's project amounts to). */
  addServiceAccount(sa: FcmSimServiceAccount): void {
    this.accounts.set(sa.clientEmail, { projectId: sa.projectId, key: createPublicKey(sa.publicKeyPem) });
  }

  /** Tokens matching `pattern` get `outcome` (before the prefix table); with `times`, only the first N, then success. */
  script(pattern: RegExp, outcome: FcmSimOutcome, times = Infinity): void {
    this.scripts.unshift({ pattern, outcome, remaining: times });
  }

  clearScripts(): void {
    this.scripts.length = 0;
  }

  /** Every access token issued so far stops working (as when Google revokes them); the next send gets a 401. */
  revokeTokens(): void {
    this.issued.clear();
  }

  /** The sends received, oldest first (at most `recordLimit`). */
  received(): FcmSimReceived[] {
    return this.ring.length < this.recordLimit ? [...this.ring] : [...this.ring.slice(this.ringNext), ...this.ring.slice(0, this.ringNext)];
  }

  private record(r: FcmSimReceived): void {
    if (this.ring.length < this.recordLimit) this.ring.push(r);
    else this.ring[this.ringNext] = r;
    this.ringNext = (this.ringNext + 1) % this.recordLimit;
  }

  private countError(code: string): void {
    this.counters.errors[code] = (this.counters.errors[code] ?? 0) + 1;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => {
      if (size > MAX_BODY) return answer(res, 413, fcmError(413, 'INVALID_ARGUMENT', 'Request payload size exceeds the limit.'));
      const raw = chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      if (req.method === 'POST' && path === '/token') {
        void this.onToken(raw, res).catch(() => answer(res, 500, JSON.stringify({ error: 'internal_failure', error_description: 'the simulator failed' })));
        return;
      }
      if (req.method === 'POST' && path.startsWith(SEND_PREFIX) && path.endsWith(SEND_SUFFIX)) {
        const project = path.slice(SEND_PREFIX.length, -SEND_SUFFIX.length);
        return this.onSend(project.includes('%') ? safeDecode(project) : project, req.headers.authorization, raw, res);
      }
      answer(res, 404, fcmError(404, 'NOT_FOUND', `The requested URL ${path} was not found on this server.`));
    });
  }

  /** Google's OAuth2 token endpoint for the JWT bearer grant (RFC 7523), with its error answers. */
  private async onToken(raw: string, res: ServerResponse): Promise<void> {
    const refuse = (error: string, description: string, status = 400) => {
      this.counters.tokensRefused++;
      answer(res, status, JSON.stringify({ error, error_description: description }));
    };
    const form = new URLSearchParams(raw);
    if (form.get('grant_type') !== JWT_BEARER) return refuse('unsupported_grant_type', 'Invalid grant_type: ' + (form.get('grant_type') ?? ''));
    const assertion = form.get('assertion') ?? '';
    let iss: unknown;
    try {
      iss = decodeJwt(assertion).iss;
    } catch {
      return refuse('invalid_request', 'Invalid JWT: the assertion is not a JWT.');
    }
    const account = typeof iss === 'string' ? this.accounts.get(iss) : undefined;
    if (!account) return refuse('invalid_grant', 'Invalid grant: account not found');
    let claims: Record<string, unknown>;
    try {
      const verified = await jwtVerify(assertion, account.key, { algorithms: ['RS256'], issuer: iss as string, audience: this.tokenUrl, currentDate: new Date(this.clock()), clockTolerance: 60, maxTokenAge: 3600 });
      claims = verified.payload;
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return refuse('invalid_grant', 'Invalid JWT Signature.');
      if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && (e as { claim?: string }).claim === 'aud') {
        return refuse('invalid_grant', `Invalid JWT: Failed audience check. The expected audience is ${this.tokenUrl}.`);
      }
      return refuse('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
    }
    const iat = Number(claims.iat);
    const exp = Number(claims.exp);
    if (!Number.isFinite(iat) || !Number.isFinite(exp) || exp - iat > 3600) {
      return refuse('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
    }
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
    if (!scopes.some((s) => SCOPES.has(s))) return refuse('invalid_scope', 'The scope does not allow Firebase Cloud Messaging.');
    const now = this.clock();
    for (const [t, v] of this.issued) if (v.expiresAt <= now) this.issued.delete(t);
    const token = `ya29.sim-${randomBytes(24).toString('base64url')}`;
    this.issued.set(token, { projectId: account.projectId, expiresAt: now + this.tokenLifetimeSeconds * 1000 });
    this.counters.tokensIssued++;
    answer(res, 200, JSON.stringify({ access_token: token, expires_in: this.tokenLifetimeSeconds, token_type: 'Bearer' }));
  }

  private onSend(projectId: string, authorization: string | undefined, raw: string, res: ServerResponse): void {
    const fail = (status: number, code: string, body: string, headers?: Record<string, string>, received?: { token: string; message: Record<string, unknown> }) => {
      this.countError(code);
      if (received) this.record({ at: this.clock(), projectId, ...received, status, result: code });
      answer(res, status, body, headers);
    };
    const granted = authorization?.startsWith('Bearer ') ? this.issued.get(authorization.slice(7)) : undefined;
    if (!granted || granted.expiresAt <= this.clock()) return fail(401, 'UNAUTHENTICATED', UNAUTHENTICATED_BODY);
    if (granted.projectId !== projectId) {
      return fail(403, 'PERMISSION_DENIED', fcmError(403, 'PERMISSION_DENIED', `Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/${projectId}' (or it may not exist).`));
    }
    let message: Record<string, unknown> | undefined;
    try {
      message = (JSON.parse(raw) as { message?: Record<string, unknown> } | null)?.message;
    } catch {
      return fail(400, 'INVALID_ARGUMENT', fcmError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.'));
    }
    if (!message || typeof message !== 'object') return fail(400, 'INVALID_ARGUMENT', fcmError(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', undefined, { field: 'message', description: 'message is required' }));
    const token = message.token;
    if (typeof token !== 'string' || !token) {
      return fail(400, 'INVALID_ARGUMENT', fcmError(400, 'INVALID_ARGUMENT', 'Recipient of the message is not set.', 'INVALID_ARGUMENT', { field: 'message', description: 'Recipient of the message is not set.' }));
    }
    const invalid = invalidField(message);
    if (invalid) return fail(400, 'INVALID_ARGUMENT', fcmError(400, 'INVALID_ARGUMENT', invalid.description, undefined, invalid), undefined, { token, message });
    // As FCM does for an oversized message: the plain INVALID_ARGUMENT, no details.
    if (payloadBytes(message) > PAYLOAD_LIMIT) return fail(400, 'INVALID_ARGUMENT', fcmError(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.'), undefined, { token, message });
    const outcome = this.outcomeOf(token);
    if (outcome !== 'OK') {
      const a = OUTCOME_ANSWERS[outcome];
      const retry = outcome === 'QUOTA_EXCEEDED' || outcome === 'UNAVAILABLE' ? { 'retry-after': String(this.retryAfterSeconds) } : undefined;
      return fail(a.status, a.code, a.body, retry, { token, message });
    }
    const name = `projects/${projectId}/messages/${this.idPrefix}${++this.seq}${this.idSuffix}`;
    this.counters.sent++;
    this.record({ at: this.clock(), projectId, token, message, status: 200, result: name });
    answer(res, 200, `{"name":${JSON.stringify(name)}}`);
  }

  private outcomeOf(token: string): FcmSimOutcome {
    for (const s of this.scripts) {
      if (!s.pattern.test(token)) continue;
      if (s.remaining <= 0) return 'OK';
      s.remaining--;
      return s.outcome;
    }
    for (const [prefix, outcome] of DEFAULT_OUTCOMES) if (token.startsWith(prefix)) return outcome;
    return 'OK';
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function answer(res: ServerResponse, status: number, body: string, headers?: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** The first field FCM would refuse (data values are strings; android.ttl a duration; priorities from the enum). */
function invalidField(message: Record<string, unknown>): { field: string; description: string } | null {
  const data = message.data;
  if (data !== undefined) {
    if (!data || typeof data !== 'object' || Array.isArray(data)) return { field: 'message.data', description: 'Invalid value at \'message.data\'' };
    let i = 0;
    for (const k in data as Record<string, unknown>) {
      const v = (data as Record<string, unknown>)[k];
      if (typeof v !== 'string') return { field: `message.data[${i}].value`, description: `Invalid value at 'message.data[${i}].value' (TYPE_STRING), ${JSON.stringify(v)}` };
      if (k === 'from' || k === 'gcm' || k.startsWith('google')) return { field: 'message.data', description: `Invalid data key: ${k} is reserved` };
      i++;
    }
  }
  const android = message.android as Record<string, unknown> | undefined;
  if (android !== undefined) {
    if (android.ttl !== undefined && (typeof android.ttl !== 'string' || !/^\d+(\.\d{1,9})?s$/.test(android.ttl))) {
      return { field: 'message.android.ttl', description: `Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), ${JSON.stringify(android.ttl)}` };
    }
    if (android.priority !== undefined && android.priority !== 'HIGH' && android.priority !== 'NORMAL') {
      return { field: 'message.android.priority', description: `Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), ${JSON.stringify(android.priority)}` };
    }
  }
  return null;
}

/** FCM's measure of the 4,096-byte limit: UTF-8 bytes of the keys and values of `data` and of `notification`. */
function payloadBytes(message: Record<string, unknown>): number {
  let bytes = 0;
  for (const part of [message.data, message.notification]) {
    if (!part || typeof part !== 'object') continue;
    for (const k in part as Record<string, unknown>) {
      const v = (part as Record<string, unknown>)[k];
      bytes += Buffer.byteLength(k) + Buffer.byteLength(typeof v === 'string' ? v : JSON.stringify(v) ?? '');
    }
  }
  return bytes;
}
