import type { AccountService } from '../../accounts/account-service.js';
import type { FerryConfig } from '../../config/schema.js';
import type { LogsConfig } from './config.js';
import type { Db } from '../../store/types.js';
import type { RangePartitions } from '../../store/sql/range-partitions.js';
import { REQUEST_LOGS_TABLE } from './storage.js';
import type { LogFilter, RequestLogDetail, RequestLogRow, RequestLogStore } from './request-log-store.js';
import type { KeyUsage } from './request-log-store.js';

const DAY_MS = 86_400_000;

export interface RateRule {
  scope: 'key' | 'account' | 'address' | 'endpoint';
  applies: string;
  limit: number | null;
  per: string;
  refusal: string;
}

export interface KeyStats {
  since: string;
  keys: Array<KeyUsage & { name: string | null; scopes: string[]; revoked: boolean }>;
  limits: RateRule[];
}

/**
 * The request logs as the API, the MCP tools and the /logs page read them: an account's requests (never another's),
 * one request with its bodies, the usage of its keys with the rate rules in force, and retention.
 */
export class LogsService {
  constructor(
    private readonly o: {
      db: Db;
      store: RequestLogStore;
      /** Drops request_logs' partitions past the retention. */
      partitions: RangePartitions;
      accounts: AccountService;
      config: FerryConfig;
      /** Its own config section. */
      section: LogsConfig;
      /** The OTP endpoints' limits, listed among the rate rules. */
      otpLimits: { requestsPerHour: number; resendCooldownSeconds: number };
      now?: () => number;
    },
  ) {}

  get retentionDays(): number {
    return this.o.section.retentionDays;
  }

  get bodyLimitBytes(): number {
    return this.o.section.bodyLimitBytes;
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  async search(accountId: string, filter: LogFilter, limit: number): Promise<{ items: RequestLogRow[]; nextCursor: string | null }> {
    const { rows, more } = await this.o.store.search(accountId, filter, limit);
    return { items: rows, nextCursor: more && rows.length ? rows[rows.length - 1].seq : null };
  }

  get(accountId: string, requestId: string): Promise<RequestLogDetail | null> {
    return this.o.store.get(accountId, requestId);
  }

  /** The account's requests after a position, oldest first (the live tail). */
  after(accountId: string, seq: string, limit = 100): Promise<RequestLogRow[]> {
    return this.o.store.after(accountId, seq, limit);
  }

  latest(accountId: string): Promise<string> {
    return this.o.store.latest(accountId);
  }

  /**
   * Drops the partitions whose whole range is past the retention; returns their rows (the planner's estimate). Rows
   * live at most one partition's width past it: no row is deleted alone, which would cost as much as its insert.
   */
  async purgeExpired(): Promise<number> {
    const dropped = await this.o.partitions.dropExpired(REQUEST_LOGS_TABLE, this.now() - this.retentionDays * DAY_MS);
    return dropped.reduce((n, p) => n + p.rows, 0);
  }

  async keyStats(accountId: string, days?: number): Promise<KeyStats> {
    const span = Math.min(days ?? this.retentionDays, this.retentionDays);
    // Whole UTC days: the first day counted is the one `span - 1` days before today.
    const since = Math.floor(this.now() / DAY_MS) * DAY_MS - (span - 1) * DAY_MS;
    const [usage, keys, account] = await Promise.all([
      this.o.store.keyUsage(accountId, since),
      // The account's keys, unused ones included (read-only; the key service owns the table).
      this.o.db.query<{ id: string; name: string | null; scopes: string[]; revoked: boolean }>(
        `SELECT id, name, scopes, (revoked_at IS NOT NULL) AS revoked FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`,
        [accountId],
      ),
      this.o.accounts.get(accountId),
    ]);
    const byKey = new Map(usage.map((u) => [u.keyId, u]));
    const out: KeyStats['keys'] = keys.rows.map((k) => ({
      ...(byKey.get(k.id) ?? { keyId: k.id, requests: 0, errors: 0, rateLimited: 0, lastUsedAt: null, lastUsedFrom: null, byDay: [], byProduct: [] }),
      name: k.name,
      scopes: k.scopes,
      revoked: Boolean(k.revoked),
    }));
    return { since: new Date(since).toISOString(), keys: out, limits: this.rules(account.maxTps) };
  }

  /** Every rate rule a key of this account meets, from the configuration and the account's own settings. */
  rules(accountMaxTps: number | null): RateRule[] {
    const c = this.o.config;
    const perKey = c.http.rateLimit.perKeyPerSecond;
    return [
      { scope: 'key', applies: `every authenticated request of one key (bursts up to ${c.http.rateLimit.burst})`, limit: perKey > 0 ? perKey : null, per: 'second', refusal: 'RATE_LIMIT_EXCEEDED' },
      { scope: 'account', applies: 'messages the account sends to upstreams (SMS over REST and SMPP)', limit: (accountMaxTps ?? c.messages.defaultAccountTps) || null, per: 'second', refusal: 'queued, not refused' },
      { scope: 'address', applies: 'failed authentications from one client address', limit: c.auth.failureLimit, per: `${c.auth.failureWindowSeconds} seconds`, refusal: 'TOO_MANY_AUTH_FAILURES' },
      { scope: 'endpoint', applies: 'POST /v1/otp/request: new OTPs for one phone', limit: this.o.otpLimits.requestsPerHour, per: 'hour', refusal: 'RATE_LIMIT_EXCEEDED' },
      { scope: 'endpoint', applies: 'POST /v1/otp/resend: sends of one OTP', limit: 1, per: `${this.o.otpLimits.resendCooldownSeconds} seconds`, refusal: 'RESEND_COOLDOWN' },
    ];
  }
}
