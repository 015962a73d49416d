// The Redis scripts go by the server's TIME, not the caller's clock: two instances whose clocks differ by minutes
// (each store built as the daemon builds it, with no test clock, but with a skewed local clock) share one sliding
// window exactly, see each other's due items, and never take over a lease the other holds. With the callers' clocks,
// the instance ahead dropped the other's hits from the window, leased items before they were due and took over
// live leases.
import t from 'tap';
import { RedisKeys } from '../../src/store/redis/keys.js';
import { RedisQueue } from '../../src/store/redis/redis-queue.js';
import { RedisRateWindows } from '../../src/store/redis/redis-rate-windows.js';
import { RedisThrottle } from '../../src/store/redis/redis-throttle.js';
import { defineScripts } from '../../src/store/redis/scripts.js';
import { deleteKeys } from '../helpers/backends.js';
import { REDIS_URL, testKeyPrefix, testRedisClient } from '../helpers/redis.js';

const SKEW_MS = 10 * 60_000;

t.test('instances whose clocks differ by minutes agree on windows and leases (Redis TIME)', { skip: REDIS_URL ? false : 'Redis only (REDIS_URL)' }, async (t) => {
  const prefix = testKeyPrefix();
  const clients = [testRedisClient({ lazyConnect: true }), testRedisClient({ lazyConnect: true })];
  for (const c of clients) await c.connect();
  t.teardown(async () => {
    for (const c of clients) await c.quit();
    await deleteKeys(prefix);
  });
  const keys = new RedisKeys(prefix);
  // Instance a runs 10 minutes behind, b 10 minutes ahead.
  const clocks = [() => Date.now() - SKEW_MS, () => Date.now() + SKEW_MS];
  const [a, b] = clients.map((c, i) => ({ redis: defineScripts(c), clock: clocks[i] }));

  await t.test('a sliding window: at most the limit across both', async (t) => {
    const ta = new RedisThrottle(a.redis, keys, { clock: a.clock });
    const tb = new RedisThrottle(b.redis, keys, { clock: b.clock });
    const allowed: boolean[] = [];
    for (let i = 0; i < 6; i++) allowed.push((await (i % 2 ? tb : ta).hit('skew-window', 3, 60_000)).allowed);
    t.same(allowed, [true, true, true, false, false, false], 'three hits in the window, whichever instance made them');
  });

  await t.test('a token bucket: the instance ahead refills nothing', async (t) => {
    const ta = new RedisThrottle(a.redis, keys, { clock: a.clock });
    const tb = new RedisThrottle(b.redis, keys, { clock: b.clock });
    const r = [await ta.take('skew-bucket', 1, 2), await ta.take('skew-bucket', 1, 2), await tb.take('skew-bucket', 1, 2)];
    t.same(
      r.map((x) => x.allowed),
      [true, true, false],
      'the burst of 2 is shared: 20 minutes of clock difference are not 20 minutes of refill',
    );
  });

  await t.test('rate windows: one count for both', async (t) => {
    const wa = new RedisRateWindows(a.redis, keys, { clock: a.clock });
    const wb = new RedisRateWindows(b.redis, keys, { clock: b.clock });
    const allowed: boolean[] = [];
    for (let i = 0; i < 6; i++) allowed.push((await (i % 2 ? wb : wa).take('skew-rw', { minute: 3 })).allowed);
    t.same(allowed, [true, true, true, false, false, false]);
  });

  await t.test('a queue: due items are due for both; a live lease is not taken over', async (t) => {
    const qa = new RedisQueue<{ n: number }>(a.redis, keys, 'skew', { clock: a.clock });
    const qb = new RedisQueue<{ n: number }>(b.redis, keys, 'skew', { clock: b.clock });
    // Pushed by the instance ahead, due now: the one behind leases it at once.
    await qb.push([{ id: 'due-now', lane: 'priority', payload: { n: 1 } }]);
    const leased = await qa.lease(10, 60_000);
    t.same(
      leased.map((i) => i.id),
      ['due-now'],
      'due for the instance behind',
    );
    // Held by a for a minute: b, ten minutes ahead, does not find it expired.
    t.same(await qb.lease(10, 60_000), [], 'the lease holds for the instance ahead');
    // Pushed by the instance behind with a delay of a minute: not due for the instance ahead either.
    await qa.push([{ id: 'later', lane: 'priority', payload: { n: 2 }, runAt: a.clock() + 60_000 }]);
    t.same(await qb.lease(10, 60_000), [], 'a delay is a delay for every instance');
    await qa.ack(['due-now', 'later']);
  });
});
