import { ApiError, invalidField } from '../http/errors.js';
import { hashApiSecret, safeEqualHex } from '../security/secrets.js';
import type { Db } from '../store/types.js';
import { newSecret, randomFrom } from '../util/ids.js';
import type { AccountService } from './account-service.js';
import { grantedScopes, isAllScopes, parseScopes, type Scope } from './scopes.js';

export interface ApiKey {
  keyId: string;
  accountId: string;
  name: string | null;
  environment: string;
  scopes: Scope[];
  allowedRecipients: string[] | null;
  createdAt: string;
  rotatedAt: string | null;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  previousSecretValidUntil: string | null;
}

/** Who a request is, once its key checks out. */
export interface AuthContext {
  keyId: string;
  accountId: string;
  accountName: string;
  accountStatus: 'active' | 'suspended';
  currency: string;
  defaultCountry: string | null;
  environment: string;
  scopes: ReadonlySet<Scope>;
  allowedRecipients: string[] | null;
}

export type AuthOutcome = { ok: true; auth: AuthContext } | { ok: false; reason: 'invalid' | 'suspended' };

interface KeyRow {
  id: string;
  account_id: string;
  name: string | null;
  environment: string;
  scopes: string[];
  secret_hash: string;
  previous_secret_hash: string | null;
  previous_valid_until: Date | null;
  allowed_recipients: string[] | null;
  created_at: Date;
  rotated_at: Date | null;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

interface CachedKey {
  row: KeyRow & { account_name: string; account_status: 'active' | 'suspended'; currency: string; default_country: string | null };
  fetchedAt: number;
}

const KEY_COLUMNS =
  'k.id, k.account_id, k.name, k.environment, k.scopes, k.secret_hash, k.previous_secret_hash, k.previous_valid_until, k.allowed_recipients, k.created_at, k.rotated_at, k.last_used_at, k.expires_at, k.revoked_at';
const KEY_ID = /^ak_[a-z0-9]{2,12}_[a-z0-9]{20}$/;
const ENVIRONMENT = /^[a-z0-9]{2,12}$/;
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function toKey(r: KeyRow): ApiKey {
  return {
    keyId: r.id,
    accountId: r.account_id,
    name: r.name,
    environment: r.environment,
    scopes: grantedScopes(r.scopes as string[]),
    allowedRecipients: r.allowed_recipients,
    createdAt: iso(r.created_at)!,
    rotatedAt: iso(r.rotated_at),
    lastUsedAt: iso(r.last_used_at),
    expiresAt: iso(r.expires_at),
    revokedAt: iso(r.revoked_at),
    previousSecretValidUntil: iso(r.previous_valid_until),
  };
}

/** Basic token as the dashboard shows it: base64(keyId:secret). */
export function basicToken(keyId: string, secret: string): string {
  return Buffer.from(`${keyId}:${secret}`).toString('base64');
}

/**
 * API keys: creation (secret shown once), rotation with a grace period, revocation, and the
 * per-request authentication, served from a short-lived cache so the hot path is one HMAC.
 */
export class KeyService {
  private readonly cache = new Map<string, CachedKey>();
  private readonly lastUsed = new Map<string, Date>();
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly accounts: AccountService,
    private readonly hashKey: Buffer,
    private readonly opts: { rotationGraceSeconds: number; cacheSeconds: number },
  ) {
    accounts.onChange = (accountId) => this.forgetAccount(accountId);
  }

  async create(input: {
    account: string;
    scopes: string | readonly string[];
    environment?: string;
    name?: string | null;
    expiresAt?: string | null;
    allowedRecipients?: string[] | null;
  }): Promise<{ key: ApiKey; secret: string; token: string }> {
    const account = await this.accounts.get(input.account);
    let scopes: Scope[];
    try {
      scopes = parseScopes(input.scopes);
    } catch (err) {
      throw invalidField('scopes', (err as Error).message);
    }
    const environment = input.environment ?? 'live';
    if (!ENVIRONMENT.test(environment)) throw invalidField('environment', '2-12 lower-case letters or digits, e.g. live, test');
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && (Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() <= Date.now())) {
      throw invalidField('expiresAt', 'an ISO 8601 time in the future');
    }
    const keyId = `ak_${environment}_${randomFrom('0123456789abcdefghijklmnopqrstuvwxyz', 20)}`;
    const secret = 'sk_' + newSecret(32);
    const { rows } = await this.db.query<KeyRow>(
      `INSERT INTO api_keys AS k (id, account_id, name, environment, scopes, secret_hash, expires_at, allowed_recipients)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${KEY_COLUMNS}`,
      // "all" is stored as such: a key made with every scope also gets the scopes of later versions.
      [keyId, account.id, input.name ?? null, environment, isAllScopes(input.scopes) ? ['all'] : scopes, hashApiSecret(this.hashKey, secret), expiresAt, input.allowedRecipients ?? null],
    );
    return { key: toKey(rows[0]), secret, token: basicToken(keyId, secret) };
  }

  async list(accountRef?: string): Promise<ApiKey[]> {
    if (accountRef) {
      const account = await this.accounts.get(accountRef);
      const { rows } = await this.db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.account_id = $1 ORDER BY k.created_at, k.id`, [account.id]);
      return rows.map(toKey);
    }
    const { rows } = await this.db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys k ORDER BY k.created_at, k.id`);
    return rows.map(toKey);
  }

  async get(keyId: string): Promise<ApiKey> {
    const { rows } = await this.db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.id = $1`, [keyId]);
    if (!rows[0]) throw new ApiError('KEY_NOT_FOUND');
    return toKey(rows[0]);
  }

  /** New secret; the previous one keeps working for the grace period (default from config). */
  async rotate(keyId: string, graceSeconds = this.opts.rotationGraceSeconds): Promise<{ key: ApiKey; secret: string; token: string }> {
    const secret = 'sk_' + newSecret(32);
    const { rows } = await this.db.query<KeyRow>(
      `UPDATE api_keys AS k SET previous_secret_hash = CASE WHEN $3::int > 0 THEN secret_hash END,
              previous_valid_until = CASE WHEN $3::int > 0 THEN now() + make_interval(secs => $3::int) END,
              secret_hash = $2, rotated_at = now()
       WHERE k.id = $1 AND k.revoked_at IS NULL RETURNING ${KEY_COLUMNS}`,
      [keyId, hashApiSecret(this.hashKey, secret), graceSeconds],
    );
    if (!rows[0]) throw new ApiError('KEY_NOT_FOUND');
    this.cache.delete(keyId);
    return { key: toKey(rows[0]), secret, token: basicToken(keyId, secret) };
  }

  async revoke(keyId: string): Promise<ApiKey> {
    const { rows } = await this.db.query<KeyRow>(
      `UPDATE api_keys AS k SET revoked_at = coalesce(revoked_at, now()) WHERE k.id = $1 RETURNING ${KEY_COLUMNS}`,
      [keyId],
    );
    if (!rows[0]) throw new ApiError('KEY_NOT_FOUND');
    this.cache.delete(keyId);
    return toKey(rows[0]);
  }

  /** Checks key id and secret. Unknown key, wrong secret, revoked and expired keys are all 'invalid' (no oracle for which). */
  async authenticate(keyId: string, secret: string, now = Date.now()): Promise<AuthOutcome> {
    if (!KEY_ID.test(keyId) || secret.length > 200) return { ok: false, reason: 'invalid' };
    const row = await this.load(keyId, now);
    if (!row) return { ok: false, reason: 'invalid' };
    const presented = hashApiSecret(this.hashKey, secret);
    let match = safeEqualHex(presented, row.secret_hash);
    if (!match && row.previous_secret_hash && row.previous_valid_until && new Date(row.previous_valid_until).getTime() > now) {
      match = safeEqualHex(presented, row.previous_secret_hash);
    }
    if (!match) return { ok: false, reason: 'invalid' };
    if (row.revoked_at) return { ok: false, reason: 'invalid' };
    if (row.expires_at && new Date(row.expires_at).getTime() <= now) return { ok: false, reason: 'invalid' };
    if (row.account_status !== 'active') return { ok: false, reason: 'suspended' };
    this.touch(keyId);
    return {
      ok: true,
      auth: {
        keyId,
        accountId: row.account_id,
        accountName: row.account_name,
        accountStatus: row.account_status,
        currency: row.currency,
        defaultCountry: row.default_country,
        environment: row.environment,
        scopes: new Set(grantedScopes(row.scopes as string[])),
        allowedRecipients: row.allowed_recipients,
      },
    };
  }

  private async load(keyId: string, now: number): Promise<CachedKey['row'] | null> {
    const hit = this.cache.get(keyId);
    if (hit && now - hit.fetchedAt < this.opts.cacheSeconds * 1000) return hit.row;
    const { rows } = await this.db.query<CachedKey['row']>(
      `SELECT ${KEY_COLUMNS}, a.name AS account_name, a.status AS account_status, a.currency, a.default_country
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = $1`,
      [keyId],
    );
    const row = rows[0] ?? null;
    if (row) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(keyId, { row, fetchedAt: now });
    } else {
      this.cache.delete(keyId);
    }
    return row;
  }

  private forgetAccount(accountId: string): void {
    for (const [id, c] of this.cache) if (c.row.account_id === accountId) this.cache.delete(id);
  }

  /** last_used_at is written in batches, not per request. */
  private touch(keyId: string): void {
    this.lastUsed.set(keyId, new Date());
    if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = null;
        void this.flushLastUsed().catch(() => {});
      }, 5000);
      this.flushTimer.unref();
    }
  }

  async flushLastUsed(): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    if (!this.lastUsed.size) return;
    const ids = [...this.lastUsed.keys()];
    const times = ids.map((id) => this.lastUsed.get(id)!.toISOString());
    this.lastUsed.clear();
    await this.db.query(
      `UPDATE api_keys AS k SET last_used_at = u.t FROM (SELECT unnest($1::text[]) AS id, unnest($2::timestamptz[]) AS t) u
       WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.t)`,
      [ids, times],
    );
  }
}
