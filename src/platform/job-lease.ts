import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisClient } from '../store/redis/redis-client.js';
import type { Queryable } from '../store/types.js';

/**
 * A named lease one holder has until it runs out: how a cluster-wide job runs on one instance at a time. The
 * holder renews it while it holds it; another holder takes it only once it ran out (a crashed holder's too) or was
 * given back. Both implementations pass one contract test (test/platform/job-lease.test.ts).
 */
export interface JobLease {
  /** Takes the lease, or renews it when `holder` has it, until now + ttlMs; false while another holder has it. */
  take(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease back if `holder` has it (no-op otherwise). */
  release(name: string, holder: string): Promise<void>;
}

/** Names in maintenance_leases are shared with retention ('retention'): jobs take theirs under `job:`. */
const SQL_PREFIX = 'job:';

/** The lease in maintenance_leases (migration 0034), on Postgres or the embedded database. */
export class SqlJobLease implements JobLease {
  constructor(
    private readonly db: Queryable,
    private readonly clock: () => number = Date.now,
  ) {}

  async take(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = this.clock();
    const { rows } = await this.db.query<{ holder: string }>(
      `INSERT INTO maintenance_leases (name, holder, until_ms) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, until_ms = EXCLUDED.until_ms
       WHERE maintenance_leases.until_ms <= $4 OR maintenance_leases.holder = EXCLUDED.holder
       RETURNING holder`,
      [SQL_PREFIX + name, holder, now + ttlMs, now],
    );
    return rows.length === 1;
  }

  async release(name: string, holder: string): Promise<void> {
    await this.db.query(`UPDATE maintenance_leases SET until_ms = 0 WHERE name = $1 AND holder = $2`, [SQL_PREFIX + name, holder]);
  }
}

// Take or renew in one step: set when free, extend when ours.
const TAKE_LUA = `local v = redis.call('GET', KEYS[1])
if v == false then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0`;
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** The lease as a Redis key with a TTL (`<prefix>job-lease:<name>`). */
export class RedisJobLease implements JobLease {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async take(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.eval(TAKE_LUA, 1, this.key(name), holder, String(Math.max(1, Math.round(ttlMs))))) === 1;
  }

  async release(name: string, holder: string): Promise<void> {
    await this.redis.eval(RELEASE_LUA, 1, this.key(name), holder);
  }

  private key(name: string): string {
    return `${this.prefix}job-lease:${name}`;
  }
}

/**
 * Records `holder` as the lease holder of the scheduler of the daemon on `dataDir` (`scheduler.holder`, or `name` for
 * another holder of leases, such as the webhook stream's) and returns the one recorded before, null the first time.
 * One process holds a data folder at a time (ferry.pid), so the previous holder is an earlier life of this daemon:
 * after a crash its cluster leases are still taken, and the daemon gives them back at start rather than wait them out
 * (up to 3 × a job's interval without the job anywhere).
 */
export function swapLeaseHolder(dataDir: string, holder: string, name = 'scheduler.holder'): string | null {
  const file = join(dataDir, name);
  let previous: string | null = null;
  try {
    previous = readFileSync(file, 'utf8').trim() || null;
  } catch {
    // the first start on this folder
  }
  writeFileSync(file, holder + '\n');
  return previous;
}
