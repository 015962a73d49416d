import { Redis } from 'ioredis';
import { openBackends } from '../../src/store/backends.js';
import type { Backends } from '../../src/store/types.js';
import { testDb, type TestDb } from './db.js';
import { REDIS_URL, testKeyPrefix } from './redis.js';

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
  const backends = await openBackends({ db: tdb.db, redisUrl: REDIS_URL, keyPrefix: keyPrefix ?? undefined, clock: () => clock.now });
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
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  await redis.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    await redis.quit();
  }
}
