import { openBackends } from '../../src/store/backends.js';
import { openDb } from '../../src/store/sql/db.js';
import type { Backends, Db } from '../../src/store/types.js';
import { testDb, type TestDb } from './db.js';
import { REDIS_CLUSTER, REDIS_QUEUE_SHARDS, REDIS_URL, scanKeys, testKeyPrefix, testRedisClient } from './redis.js';

/** A clock the test moves by hand; every backend reads its time from here. */
export interface TestClock {
  now: number;
  advance(ms: number): number;
}

export interface TestBackends {
  backends: Backends;
  tdb: TestDb;
  clock: TestClock;
  /** Redis key prefix private to this test file, or null on the embedded backend. */
  keyPrefix: string | null;
  cleanup(): Promise<void>;
}

export function testClock(start = Date.now()): TestClock {
  const c: TestClock = {
    now: Math.floor(start),
    advance(ms: number) {
      c.now += ms;
      return c.now;
    },
  };
  return c;
}

/** The backends the environment selects (REDIS_URL → Redis, else embedded) on a private database and key prefix. */
export async function openTestBackends(): Promise<TestBackends> {
  const tdb = await testDb();
  const clock = testClock();
  const keyPrefix = REDIS_URL ? testKeyPrefix() : null;
  const backends = await openBackends({ db: tdb.db, redisUrl: REDIS_URL, redisCluster: REDIS_CLUSTER, queueShards: REDIS_QUEUE_SHARDS, keyPrefix: keyPrefix ?? undefined, clock: () => clock.now });
  return {
    backends,
    tdb,
    clock,
    keyPrefix,
    async cleanup() {
      await backends.close();
      if (keyPrefix) await deleteKeys(keyPrefix);
      await tdb.cleanup();
    },
  };
}

/** Deletes every key under a test prefix. */
export async function deleteKeys(prefix: string): Promise<void> {
  if (!REDIS_URL) return;
  const redis = testRedisClient({ lazyConnect: true });
  await redis.connect();
  try {
    // One UNLINK per key: on a Cluster the keys of one call would have to share a slot.
    await Promise.all((await scanKeys(redis, `${prefix}*`)).map((k) => redis.unlink(k)));
  } finally {
    await redis.quit();
  }
}

/**
 * Storage a test hands to a child process it kills, then takes back: a private database and key prefix. `release()`
 * closes PGlite so the child can own its data folder (Postgres stays open), `reopen()` takes it back after the child
 * is gone, and `env(prefix)` gives the child what it needs (`<prefix>DB_URL`, `DATA_DIR`, `REDIS_URL`, `KEY_PREFIX`).
 * Everything is undone at teardown.
 */
export interface HandedStorage {
  readonly tdb: TestDb;
  readonly keyPrefix: string | null;
  /** The database this process uses now. */
  readonly db: Db;
  release(): Promise<void>;
  reopen(): Promise<Db>;
  env(prefix: string): Record<string, string>;
  /** The backends over `db`, with `clock`, closed at teardown. */
  backends(t: { teardown(fn: () => unknown): void }, clock?: TestClock): Promise<Backends>;
}

export async function handedStorage(t: { teardown(fn: () => unknown): void }): Promise<HandedStorage> {
  const tdb = await testDb();
  const keyPrefix = REDIS_URL ? testKeyPrefix() : null;
  let db: Db = tdb.db;
  t.teardown(async () => {
    if (db !== tdb.db) await db.close().catch(() => {});
    if (keyPrefix) await deleteKeys(keyPrefix);
    await tdb.cleanup();
  });
  return {
    tdb,
    keyPrefix,
    get db() {
      return db;
    },
    async release() {
      if (!tdb.url) await db.close();
    },
    async reopen() {
      if (!tdb.url) db = await openDb({ url: null, dataDir: tdb.dataDir });
      return db;
    },
    env: (prefix) => ({
      [`${prefix}DB_URL`]: tdb.url ?? '',
      [`${prefix}DATA_DIR`]: tdb.dataDir,
      [`${prefix}REDIS_URL`]: REDIS_URL ?? '',
      [`${prefix}KEY_PREFIX`]: keyPrefix ?? '',
    }),
    async backends(tt, clock) {
      const b = await openBackends({ db, redisUrl: REDIS_URL, redisCluster: REDIS_CLUSTER, queueShards: REDIS_QUEUE_SHARDS, keyPrefix: keyPrefix ?? undefined, ...(clock ? { clock: () => clock.now } : {}) });
      tt.teardown(() => b.close());
      return b;
    },
  };
}
