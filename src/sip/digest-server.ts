import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { quote } from './auth-params.js';
import { digestResponse, parseAuthorization, type DigestAlgorithm } from './digest.js';
import { SipParseError } from './errors.js';

export interface DigestServerOptions {
  realm: string;
  /** HMAC key for nonces; random per instance by default (nonces then die with the process, which is fine). */
  secret?: Buffer;
  /** A nonce older than this is answered with stale=true (default 5 minutes). */
  nonceTtlMs?: number;
  algorithm?: DigestAlgorithm;
  /** Clock, for tests. */
  now?: () => number;
}

export type DigestVerdict =
  | { ok: true; username: string }
  | { ok: false; stale: boolean; reason: string };

const TIME_BYTES = 6;
const RANDOM_BYTES = 8;
const MAC_BYTES = 16;

/**
 * The UAS side of digest: challenges and verification. Nonces carry their issue time and an HMAC over it, so they
 * need no storage; the price is that a nonce can be replayed until it expires (no nc tracking).
 */
export class DigestServer {
  readonly realm: string;
  private readonly secret: Buffer;
  private readonly ttlMs: number;
  private readonly algorithm: DigestAlgorithm;
  private readonly now: () => number;

  constructor(options: DigestServerOptions) {
    this.realm = options.realm;
    this.secret = options.secret ?? randomBytes(32);
    this.ttlMs = options.nonceTtlMs ?? 300_000;
    this.algorithm = options.algorithm ?? 'MD5';
    this.now = options.now ?? Date.now;
  }

  /** A WWW-Authenticate / Proxy-Authenticate value with a fresh nonce. */
  challenge(stale = false): string {
    return `Digest realm=${quote(this.realm)}, nonce=${quote(this.issueNonce())}, algorithm=${this.algorithm}, qop="auth"${stale ? ', stale=true' : ''}`;
  }

  issueNonce(): string {
    const raw = Buffer.alloc(TIME_BYTES + RANDOM_BYTES + MAC_BYTES);
    raw.writeUIntBE(Math.floor(this.now()), 0, TIME_BYTES);
    randomBytes(RANDOM_BYTES).copy(raw, TIME_BYTES);
    this.mac(raw.subarray(0, TIME_BYTES + RANDOM_BYTES)).copy(raw, TIME_BYTES + RANDOM_BYTES);
    return raw.toString('base64url');
  }

  /** Checks an Authorization value for `method`; `passwordOf` returns undefined for an unknown user. */
  verify(header: string, method: string, passwordOf: (username: string) => string | undefined): DigestVerdict {
    let auth;
    try {
      auth = parseAuthorization(header);
    } catch (err) {
      if (err instanceof SipParseError) return { ok: false, stale: false, reason: err.reason };
      throw err;
    }
    if (auth.realm !== this.realm) return { ok: false, stale: false, reason: 'wrong realm' };
    if (auth.algorithm !== this.algorithm) return { ok: false, stale: false, reason: 'wrong algorithm' };
    const issued = this.nonceTime(auth.nonce);
    if (issued === undefined) return { ok: false, stale: false, reason: 'nonce not ours' };
    if (auth.qop !== undefined && (auth.qop !== 'auth' || auth.nc === undefined || auth.cnonce === undefined)) {
      return { ok: false, stale: false, reason: 'bad qop' };
    }
    const password = passwordOf(auth.username);
    // compute even for an unknown user so timing does not tell which usernames exist
    const expected = digestResponse({ ...auth, password: password ?? '', method });
    const good = constantTimeEqual(expected, auth.response.toLowerCase()) && password !== undefined;
    if (!good) return { ok: false, stale: false, reason: 'wrong credentials' };
    // a right answer to an expired nonce: the client knows the password, it only needs a new nonce
    const age = this.now() - issued;
    if (age > this.ttlMs || age < -60_000) return { ok: false, stale: true, reason: 'nonce expired' };
    return { ok: true, username: auth.username };
  }

  private nonceTime(nonce: string): number | undefined {
    if (!/^[A-Za-z0-9_-]+$/.test(nonce)) return undefined;
    const raw = Buffer.from(nonce, 'base64url');
    if (raw.length !== TIME_BYTES + RANDOM_BYTES + MAC_BYTES) return undefined;
    const mac = this.mac(raw.subarray(0, TIME_BYTES + RANDOM_BYTES));
    if (!timingSafeEqual(mac, raw.subarray(TIME_BYTES + RANDOM_BYTES))) return undefined;
    return raw.readUIntBE(0, TIME_BYTES);
  }

  private mac(data: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(data).digest().subarray(0, MAC_BYTES);
  }
}

function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
