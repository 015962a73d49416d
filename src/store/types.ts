/**
 * Storage contracts. Every interface here has one contract test file under
 * test/store/ that runs against each implementation (Redis and embedded).
 */

/** Something SQL can be sent to: the pool itself, or one transaction. */
export interface Queryable {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<T>>;
}

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

/** The statements of one transaction (Db.tx). */
export interface Transaction extends Queryable {
  /**
   * Nothing more will be issued: the COMMIT goes out now, right behind the statements already issued, instead of
   * after the callback returns (on Postgres one round trip fewer, and the rows' locks are held that much shorter;
   * nothing changes on PGlite). A failure of any statement issued before still rolls everything back, and the
   * callback still sees it. Call it only once nothing but those statements can fail: an error thrown afterwards can
   * no longer undo the commit. A statement issued afterwards is refused.
   */
  commitNow(): void;
}

/** The SQL ledger: Postgres through `pg`, or embedded PGlite. Same SQL for both. */
export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs fn in one transaction; commits on resolve, rolls back on throw. Statements fn issues without awaiting the
   * ones before go out together (one round trip on Postgres) and run in the order issued; fn must have settled every
   * statement it issued before it resolves or throws.
   */
  tx<T>(fn: (q: Transaction) => Promise<T>): Promise<T>;
  /** Cheap liveness check (SELECT 1). Throws when the database is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Queue lanes, in the order they are served: receipts, then priority (OTP, priority_flag), then bulk. */
export type Lane = 'receipt' | 'priority' | 'bulk';
export const LANES: readonly Lane[] = ['receipt', 'priority', 'bulk'];

export interface PushItem<P = unknown> {
  /** Caller-chosen id; pushing an id that is already queued is a no-op (idempotent push). */
  id: string;
  lane: Lane;
  payload: P;
  /** Epoch ms when the item becomes due; default now. */
  runAt?: number;
  /** Attempts before the item is dead; default 10. */
  maxAttempts?: number;
  /**
   * Sharded Redis queue only (ShardedRedisQueue; ignored elsewhere): items with the same shard key go to the same
   * shard, so they keep the order one queue gives them (runAt, then id). Default: the id. Every push of an id must
   * give the same shard key (a re-push under another key could queue the id a second time, in another shard).
   */
  shardKey?: string;
}

export interface QueueItem<P = unknown> {
  id: string;
  lane: Lane;
  payload: P;
  runAt: number;
  /** Attempts so far, including the lease that returned this item. */
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
}

export interface RetryOptions {
  /** The attempt does not count (the item waited on back-pressure, not on its own failure): it never dies of it. */
  refund?: boolean;
}

export interface LaneStats {
  lane: Lane;
  /** Items due now (runAt <= now) and not leased. */
  due: number;
  /** Items waiting for a future runAt. */
  scheduled: number;
  /** When the item due the longest became due (epoch ms), or null with none due: how long the lane is behind. */
  oldestDueAt: number | null;
}

export interface QueueStats {
  lanes: LaneStats[];
  leased: number;
  dead: number;
}

/**
 * A durable, time-scheduled work queue with lanes and leases.
 * A leased item that is neither acked nor retried before its lease ends is due again
 * (this is how work in flight during a crash comes back after a restart).
 */
export interface Queue<P = unknown> {
  readonly name: string;
  push(items: readonly PushItem<P>[]): Promise<void>;
  /** Leases up to max due items, receipt lane first, then priority, then bulk (or only the given lanes). */
  lease(max: number, leaseMs: number, lanes?: readonly Lane[]): Promise<QueueItem<P>[]>;
  /** Done: removes the items. Unknown ids are ignored. */
  ack(ids: readonly string[]): Promise<void>;
  /** Failed attempt: due again after delayMs, or dead once attempts reached maxAttempts. */
  retry(id: string, delayMs: number, error: string, options?: RetryOptions): Promise<'scheduled' | 'dead' | 'unknown'>;
  /** Removes an item that is not leased (e.g. cancel_sm of a scheduled message). */
  cancel(id: string): Promise<boolean>;
  /** The item as stored, or null. */
  get(id: string): Promise<QueueItem<P> | null>;
  stats(): Promise<QueueStats>;
  /** Dead items, newest first (bounded). */
  dead(limit: number): Promise<QueueItem<P>[]>;
}

export interface TakeResult {
  allowed: boolean;
  /** Tokens left after this take (floored). */
  remaining: number;
  /** When not allowed: ms until `cost` tokens are available again. */
  retryAfterMs: number;
}

export interface WindowResult {
  allowed: boolean;
  /** Hits in the window, including this one when allowed. */
  count: number;
  /** When not allowed: ms until the oldest hit leaves the window. */
  retryAfterMs: number;
}

/** Rate limiting shared by every instance (Redis) or in-process (embedded). */
export interface Throttle {
  /** Token bucket: ratePerSec refill, burst capacity. */
  take(key: string, ratePerSec: number, burst: number, cost?: number): Promise<TakeResult>;
  /** Sliding window: at most `limit` hits per `windowMs`; a refused hit is not counted. */
  hit(key: string, limit: number, windowMs: number): Promise<WindowResult>;
  /** Hits currently in the window, without adding one. */
  count(key: string, windowMs: number): Promise<number>;
  /** Forgets a key (e.g. after a successful login). */
  reset(key: string): Promise<void>;
}

/** The fixed windows a RateWindows limiter counts in, aligned to the clock (UTC): second, minute, day. */
export type RateWindow = 'second' | 'minute' | 'day';
export const RATE_WINDOWS: readonly RateWindow[] = ['second', 'minute', 'day'];

/** At most this many per window; a window left out is not limited (and not counted). */
export type WindowLimits = { readonly [W in RateWindow]?: number };

/** One keyed limit of a RateWindows.takeAll call. */
export interface RateLimitEntry {
  key: string;
  limits: WindowLimits;
  /** What this take counts against the key; default the call's cost. */
  cost?: number;
}

export type RateWindowResult =
  /** Counted in every window of every key. `remaining`: per limited window, the least any key has left. */
  | { allowed: true; remaining: { [W in RateWindow]?: number } }
  /** Counted nowhere. The window (and its key) that keeps the take out longest: retryAfterMs until it resets. */
  | { allowed: false; key: string; window: RateWindow; limit: number; retryAfterMs: number };

/**
 * "N per second, M per minute, K per day" limits by key, shared by every instance (Redis: one script, one round
 * trip) or in-process (embedded). Fixed windows aligned to the clock: second, minute, UTC day (epoch-ms arithmetic).
 * A take is checked against every limited window of every key and counted in all of them or, refused, in none: a
 * burst refused by the second window does not eat the day's quota. Exact: across instances sharing Redis a window
 * never lets more than its limit through (while instance clocks agree within seconds: NTP). The price of fixed
 * windows is the burst at a boundary: a full window's limit at its last instant and another at the next one's first,
 * so up to twice a limit in any span as long as the window (and 2 x limit within a few ms at worst). A smaller window
 * bounds that burst for the larger: 80/s with 3,000/min lets at most 160 through in the second around a minute's end.
 * Memory is O(1) per key (a counter per window), where an exact sliding log would hold every hit.
 */
export interface RateWindows {
  /** One key. `cost` (default 1, a positive integer) is what the take counts, e.g. the segments of a message. */
  take(key: string, limits: WindowLimits, cost?: number): Promise<RateWindowResult>;
  /**
   * Several keys at once, all or nothing (an account's limit and a recipient's). Entries naming the same key are
   * merged: their costs add up and the smallest limit of each window applies. On Redis the keys of one call should
   * share a hash tag (write it in the key, as in `recipient:{acc_1}:233201234567`) so that the call stays on one
   * Cluster slot; a key without braces is its own tag. Concurrent takes whose keys share a tag are decided in call
   * order, as one after another (on Redis the takes of one turn of the event loop that share a tag go as one call).
   */
  takeAll(entries: readonly RateLimitEntry[], cost?: number): Promise<RateWindowResult>;
}

export interface OtpRecord {
  id: string;
  accountId: string;
  phone: string;
  /** Encrypted code (AES-256-GCM, "keyId:iv:tag:ciphertext", base64 parts): readable for resend and USSD fallback. */
  codeCipher: string;
  /** Keyed hash of the code (hex): what verify compares, atomically, inside the store. */
  codeHash: string;
  createdAt: number;
  expiresAt: number;
  lastSentAt: number;
  maxAttempts: number;
  attemptsLeft: number;
  /** Free-form, JSON-serialisable (template, sender, metadata). */
  meta: Record<string, unknown>;
}

export type OtpCreateResult =
  | { ok: true }
  | { ok: false; reason: 'ACTIVE_OTP_EXISTS'; retryAfterMs: number; activeId: string }
  | { ok: false; reason: 'RATE_LIMIT_EXCEEDED'; retryAfterMs: number };

export type OtpVerifyResult =
  | { status: 'verified'; record: OtpRecord }
  /** A wrong pin; the one that uses the last attempt is invalid with 0 remaining (spec §3.1), and locks the OTP. */
  | { status: 'invalid'; attemptsRemaining: number; record: OtpRecord }
  /** Any verify after the last attempt was used, the right pin included. */
  | { status: 'locked'; record: OtpRecord }
  | { status: 'expired' }
  | { status: 'not_found' };

export type OtpResendResult =
  | { status: 'ok'; record: OtpRecord }
  | { status: 'cooldown'; retryAfterMs: number }
  | { status: 'locked' }
  | { status: 'expired' }
  | { status: 'not_found' };

/**
 * OTP state (spec §3.1). Every transition is atomic: of N parallel creates for one phone
 * exactly one succeeds; of parallel right-pin verifies exactly one returns verified.
 * Records stay readable (as expired) for `retainMs` after expiry so verify can say OTP_EXPIRED.
 */
export interface OtpStore {
  /** Creates when no unexpired, unlocked OTP is active for (accountId, phone) and fewer than rateLimit creates happened in rateWindowMs. */
  create(rec: OtpRecord, opts: { rateLimit: number; rateWindowMs: number; retainMs: number; now: number }): Promise<OtpCreateResult>;
  get(id: string): Promise<OtpRecord | null>;
  /** The unexpired, unlocked OTP for the phone (USSD fallback), or null. */
  active(accountId: string, phone: string, now: number): Promise<OtpRecord | null>;
  /** The unexpired, unlocked OTPs for the phone under every account, newest first (USSD arrives without an account). */
  activeForPhone(phone: string, now: number): Promise<OtpRecord[]>;
  /**
   * Right pin: verified and deleted (the id is then not found). Wrong pin: one attempt used (invalid, with the attempts left); at 0 the OTP is locked and the phone is free for a new one.
   * Another account's OTP is not found and left untouched: the owner check is part of the one atomic step, so verify needs no read before it.
   */
  verify(accountId: string, id: string, codeHash: string, now: number): Promise<OtpVerifyResult>;
  /** Marks a resend (lastSentAt = now) when the cooldown since lastSentAt has passed. Another account's OTP is not found and left untouched. */
  resend(accountId: string, id: string, cooldownMs: number, now: number): Promise<OtpResendResult>;
}

/** When failures of a key start a cool-down, and how long it lasts (FailureCooldowns.fail). */
export interface CooldownPolicy {
  /** The failure that starts the first cool-down (1: the first failure does). */
  threshold: number;
  /** The first cool-down; each further failure doubles it, up to maxMs. */
  firstMs: number;
  maxMs: number;
  /** A key's failures are forgotten this long after the last one, or after the cool-down it started ended. */
  forgetMs: number;
}

/**
 * Failures counted per key, with a cool-down that grows with them: what slows password guessing (SMPP binds) without
 * a lockout that lasts. Shared by every instance (Redis: one hash per key, one script per failure) or in-process
 * (embedded). The caller decides what a cool-down means; the store only counts and keeps the time it ends.
 */
export interface FailureCooldowns {
  /** The time left of the key's cool-down; 0 when it has none. */
  remainingMs(key: string): Promise<number>;
  /**
   * Counts one failure. From `threshold` failures on, each starts a cool-down of firstMs, doubled per failure past the
   * threshold, at most maxMs (one already running that ends later is kept). Returns the failures counted (this one
   * included) and the cool-down it started (0: none).
   */
  fail(key: string, policy: CooldownPolicy): Promise<{ failures: number; cooldownMs: number }>;
  /** Forgets the key's failures and cool-down (a success). */
  reset(key: string): Promise<void>;
}

/** The cool-down the `failures`-th failure starts under the policy (0: none); cooldown-fail.lua computes the same. */
export function cooldownAfter(failures: number, policy: CooldownPolicy): number {
  if (failures < policy.threshold) return 0;
  // The exponent is bounded so the product stays a finite number whatever the count.
  return Math.min(policy.maxMs, policy.firstMs * 2 ** Math.min(failures - policy.threshold, 40));
}

/** What the daemon runs on: the SQL ledger plus the Redis roles (Redis, or embedded equivalents). */
export interface Backends {
  readonly kind: 'redis' | 'local';
  readonly db: Db;
  readonly throttle: Throttle;
  readonly rateWindows: RateWindows;
  readonly otp: OtpStore;
  readonly cooldowns: FailureCooldowns;
  queue<P = unknown>(name: string): Queue<P>;
  /** Throws when a backend is unreachable (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
