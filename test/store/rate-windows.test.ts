import t from 'tap';
import { REDIS_CLUSTER, testRedisClient } from '../helpers/redis.js';
import { MemoryRateWindows } from '../../src/store/local/memory-rate-windows.js';
import { hashTagOf, hasHashTag, RedisKeys } from '../../src/store/redis/keys.js';
import { RedisRateWindows } from '../../src/store/redis/redis-rate-windows.js';
import { defineScripts } from '../../src/store/redis/scripts.js';
import type { RateWindowResult, RateWindows } from '../../src/store/types.js';
import { openTestBackends, testClock } from '../helpers/backends.js';
import { backendLabel, REDIS_URL } from '../helpers/env.js';

const env = await openTestBackends();
t.teardown(() => env.cleanup());
const { clock } = env;
const rw = env.backends.rateWindows;
let seq = 0;
const key = () => `k${++seq}`;

const SECOND = 1000;
const MINUTE = 60_000;
const DAY = 86_400_000;
// Each test starts at the UTC midnight of its own day, later than the one before: the clock only moves forward.
let day = Math.ceil(Date.now() / DAY) + 1;
const midnight = () => (clock.now = ++day * DAY);

t.test(`rate windows contract (${backendLabel})`, async (t) => {
  t.test('second window: limit, retryAfter to the next second, reset when it rolls', async (t) => {
    const k = key();
    const t0 = midnight() + 5 * SECOND;
    clock.now = t0 + 200;
    for (let left = 2; left >= 0; left--) t.same(await rw.take(k, { second: 3 }), { allowed: true, remaining: { second: left } });
    t.same(await rw.take(k, { second: 3 }), { allowed: false, key: k, window: 'second', limit: 3, retryAfterMs: 800 });
    clock.now = t0 + 999;
    t.same(await rw.take(k, { second: 3 }), { allowed: false, key: k, window: 'second', limit: 3, retryAfterMs: 1 }, 'the last ms of the window');
    clock.now = t0 + 1000;
    t.same(await rw.take(k, { second: 3 }), { allowed: true, remaining: { second: 2 } }, 'a new second, a new count');
  });

  t.test('minute window: aligned to the minute, not to the first take', async (t) => {
    const k = key();
    const t0 = midnight() + 7 * MINUTE;
    clock.now = t0 + 30_500;
    for (let i = 0; i < 5; i++) t.equal((await rw.take(k, { minute: 5 })).allowed, true);
    t.same(await rw.take(k, { minute: 5 }), { allowed: false, key: k, window: 'minute', limit: 5, retryAfterMs: 29_500 });
    clock.now = t0 + MINUTE - 1;
    t.equal((await rw.take(k, { minute: 5 })).allowed, false);
    clock.now = t0 + MINUTE;
    t.same(await rw.take(k, { minute: 5 }), { allowed: true, remaining: { minute: 4 } });
  });

  t.test('day window: a UTC day, reset at midnight', async (t) => {
    const k = key();
    const t0 = midnight();
    clock.now = t0 + 10 * 3_600_000;
    t.same(await rw.take(k, { day: 2 }), { allowed: true, remaining: { day: 1 } });
    t.same(await rw.take(k, { day: 2 }), { allowed: true, remaining: { day: 0 } });
    t.same(await rw.take(k, { day: 2 }), { allowed: false, key: k, window: 'day', limit: 2, retryAfterMs: 14 * 3_600_000 });
    clock.now = t0 + DAY - 1;
    t.same(await rw.take(k, { day: 2 }), { allowed: false, key: k, window: 'day', limit: 2, retryAfterMs: 1 });
    clock.now = t0 + DAY;
    t.same(await rw.take(k, { day: 2 }), { allowed: true, remaining: { day: 1 } });
  });

  t.test('three windows at once; refused takes count in none of them', async (t) => {
    const k = key();
    const limits = { second: 2, minute: 3, day: 4 };
    const t0 = midnight();
    clock.now = t0 + 100;
    t.same(await rw.take(k, limits), { allowed: true, remaining: { second: 1, minute: 2, day: 3 } });
    t.same(await rw.take(k, limits), { allowed: true, remaining: { second: 0, minute: 1, day: 2 } });
    for (let i = 0; i < 50; i++) {
      const r = await rw.take(k, limits);
      if (r.allowed || r.window !== 'second') t.fail(`burst take ${i} should be refused by the second window: ${JSON.stringify(r)}`);
    }
    clock.now = t0 + SECOND;
    t.same(await rw.take(k, limits), { allowed: true, remaining: { second: 1, minute: 0, day: 1 } }, 'the refused burst ate nothing of the minute or the day');
    t.same(await rw.take(k, limits), { allowed: false, key: k, window: 'minute', limit: 3, retryAfterMs: MINUTE - SECOND }, 'the minute refuses with room in the second');
    clock.now = t0 + MINUTE;
    t.same(await rw.take(k, limits), { allowed: true, remaining: { second: 1, minute: 2, day: 0 } });
    t.same(await rw.take(k, limits), { allowed: false, key: k, window: 'day', limit: 4, retryAfterMs: DAY - MINUTE }, 'the day is spent');
    t.same(await rw.take(k, limits), { allowed: false, key: k, window: 'day', limit: 4, retryAfterMs: DAY - MINUTE }, 'second and day both full: the day, which lasts longer, is named');
    clock.now = t0 + DAY;
    t.same(await rw.take(k, limits), { allowed: true, remaining: { second: 1, minute: 2, day: 3 } }, 'a new day');
  });

  t.test('cost', async (t) => {
    const k = key();
    midnight();
    t.same(await rw.take(k, { minute: 10 }, 7), { allowed: true, remaining: { minute: 3 } });
    t.same(await rw.take(k, { minute: 10 }, 4), { allowed: false, key: k, window: 'minute', limit: 10, retryAfterMs: MINUTE }, 'four do not fit in three');
    t.same(await rw.take(k, { minute: 10 }, 3), { allowed: true, remaining: { minute: 0 } }, 'the refused four took nothing');
    const big = key();
    t.match(await rw.take(big, { minute: 10 }, 11), { allowed: false, window: 'minute' }, 'more than the limit never fits');
    t.same(await rw.take(big, { minute: 10 }, 10), { allowed: true, remaining: { minute: 0 } });
  });

  t.test('a limit of 0 refuses; a window left out is neither checked nor counted', async (t) => {
    const k = key();
    midnight();
    t.match(await rw.take(k, { day: 0 }), { allowed: false, window: 'day', limit: 0 });
    t.same(await rw.take(k, { second: 1 }), { allowed: true, remaining: { second: 0 } });
    t.same(await rw.take(k, { minute: 1 }), { allowed: true, remaining: { minute: 0 } }, 'the take limited by the second only did not count in the minute');
    t.same(await rw.take(k, {}), { allowed: true, remaining: {} }, 'no limits: always allowed');
  });

  t.test('several keys: all or nothing', async (t) => {
    midnight();
    const acc = key();
    const account = `account:{${acc}}`;
    const alice = `recipient:{${acc}}:233200000001`;
    const bob = `recipient:{${acc}}:233200000002`;
    const send = (to: string) =>
      rw.takeAll([
        { key: account, limits: { second: 100, day: 1000 } },
        { key: to, limits: { day: 2 } },
      ]);
    t.same(await send(alice), { allowed: true, remaining: { second: 99, day: 2 - 1 } }, 'remaining: the least any key has left per window');
    t.same(await send(alice), { allowed: true, remaining: { second: 98, day: 0 } });
    for (let i = 0; i < 5; i++) t.match(await send(alice), { allowed: false, key: alice, window: 'day', limit: 2 });
    t.same(await send(bob), { allowed: true, remaining: { second: 97, day: 1 } }, 'refused takes for alice used none of the account');
    t.same(await rw.take(account, { second: 100, day: 1000 }), { allowed: true, remaining: { second: 96, day: 996 } });

    const k = key();
    t.same(
      await rw.takeAll([
        { key: k, limits: { minute: 3 } },
        { key: k, limits: { minute: 2, second: 10 } },
      ]),
      { allowed: true, remaining: { second: 8, minute: 0 } },
      'the same key twice: costs add up, the smaller limit applies',
    );
    // Keys of different hash tags in one take work on a single Redis only; on a Cluster they must share a tag (as the
    // keys of one account do).
    const tag = key();
    const [a, b] = REDIS_CLUSTER ? [`a:{${tag}}`, `b:{${tag}}`] : [key(), key()];
    t.same(
      await rw.takeAll(
        [
          { key: a, limits: { minute: 10 }, cost: 4 },
          { key: b, limits: { minute: 10 } },
        ],
        2,
      ),
      { allowed: true, remaining: { minute: 6 } },
      'a cost per entry, else the call cost',
    );
    t.same(await rw.take(b, { minute: 10 }), { allowed: true, remaining: { minute: 7 } });
    t.same(await rw.takeAll([]), { allowed: true, remaining: {} }, 'no entries');
  });

  t.test('a clock a little behind counts in the newer window, never reopens a closed one', async (t) => {
    const k = key();
    const t0 = midnight();
    clock.now = t0 + SECOND + 10;
    t.equal((await rw.take(k, { second: 1 })).allowed, true);
    clock.now = t0 + 900;
    t.same(await rw.take(k, { second: 1 }), { allowed: false, key: k, window: 'second', limit: 1, retryAfterMs: 1100 }, 'refused until the newer window ends');
  });

  t.test('parallel takes never exceed the limit', async (t) => {
    const k = key();
    midnight();
    const res = await Promise.all(Array.from({ length: 600 }, () => rw.take(k, { second: 1000, minute: 37, day: 1000 })));
    t.equal(res.filter((r) => r.allowed).length, 37);
    t.same(
      res.flatMap((r) => (r.allowed ? [r.remaining.minute] : [])).sort((x, y) => x! - y!),
      Array.from({ length: 37 }, (_, i) => i),
      'each allowed take saw its own count',
    );
  });

  t.test('concurrent takes on keys of one hash tag are decided in call order, as one after another', async (t) => {
    midnight();
    const tag = key();
    const k = `a:{${tag}}`;
    const other = `b:{${tag}}`;
    const res = await Promise.all([
      rw.take(k, { minute: 5 }, 3),
      rw.take(other, { minute: 1 }),
      rw.take(k, { minute: 5 }, 1),
      rw.take(k, { minute: 5 }, 2),
      rw.takeAll([
        { key: k, limits: { minute: 5 } },
        { key: other, limits: { minute: 1 } },
      ]),
      rw.take(k, { minute: 5 }, 1),
      rw.take(k, { minute: 5 }, 1),
    ]);
    t.same(
      res.map((r) => (r.allowed ? r.remaining : r.key === k ? 'refused by k' : 'refused by other')),
      [{ minute: 2 }, { minute: 0 }, { minute: 1 }, 'refused by k', 'refused by other', { minute: 0 }, 'refused by k'],
      'a take that does not fit takes nothing and leaves the rest to the ones after it',
    );
  });

  t.test('bad arguments are refused', async (t) => {
    await t.rejects(rw.take('x', { second: -1 }), RangeError);
    await t.rejects(rw.take('x', { minute: 1.5 }), RangeError);
    await t.rejects(rw.take('x', { day: Number.NaN }), RangeError);
    await t.rejects(rw.take('x', { second: 1 }, 0), RangeError);
    await t.rejects(rw.take('x', { second: 1 }, 1.5), RangeError);
    await t.rejects(rw.take('', { second: 1 }), RangeError);
    await t.rejects(rw.takeAll([{ key: 'x', limits: { second: 1 }, cost: -2 }]), RangeError);
  });

  const twoInstances = REDIS_URL ? false : 'embedded rate windows live in one process: the embedded mode is single-instance by design';
  t.test('two instances share one limit exactly', { skip: twoInstances }, async (t) => {
    // A second instance: its own connection and its own RedisRateWindows, on the same key prefix and clock.
    const other = testRedisClient({ lazyConnect: true, enableAutoPipelining: true });
    await other.connect();
    t.teardown(() => other.quit());
    const rw2: RateWindows = new RedisRateWindows(defineScripts(other), new RedisKeys(env.keyPrefix!), { scriptClock: () => clock.now });
    midnight();
    const k = key();
    const instances = [rw, rw2];
    // 200 takes, alternating between the instances and sent over several turns of the event loop so that the two
    // connections' writes interleave at the server. Each instance alone asks for less than the limit.
    const pending: Promise<RateWindowResult>[] = [];
    for (let i = 0; i < 200; i++) {
      if (i % 10 === 0) await new Promise(setImmediate);
      pending.push(instances[i % 2].take(k, { minute: 150 }));
    }
    const res = await Promise.all(pending);
    const split = [0, 1].map((n) => res.filter((r, i) => i % 2 === n && r.allowed).length);
    t.equal(res.filter((r) => r.allowed).length, 150, `exactly the limit across both (${split.join(' + ')})`);
    t.ok(split[0] >= 50 && split[1] >= 50, 'both instances took from the one limit');

    const id = key();
    const acc = `account:{${id}}`;
    const all = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        instances[i % 2].takeAll([
          { key: acc, limits: { day: 120 } },
          { key: `recipient:{${id}}:${i % 4}`, limits: { second: 25 } },
        ]),
      ),
    );
    t.equal(all.filter((r) => r.allowed).length, 100, 'four recipients of 25 each: 100 taken, all or nothing');
    t.same(await rw2.take(acc, { day: 120 }), { allowed: true, remaining: { day: 19 } }, 'the account counted only the allowed ones');
    t.equal((await rw.take(`recipient:{${id}}:0`, { second: 25 })).allowed, false, 'the other instance sees the full recipient');
  });
});

t.test('redis keys: a key with its own hash tag keeps it', async (t) => {
  t.equal(hasHashTag('recipient:{acc_1}:233'), true);
  t.equal(hasHashTag('plain'), false);
  t.equal(hasHashTag('a{}b{c}'), false, 'Redis takes the first { and the first } after it: an empty tag is no tag');
  t.equal(hasHashTag('a}b{'), false);
  t.equal(hashTagOf('recipient:{acc_1}:233'), 'acc_1');
  t.equal(hashTagOf('a{}b{c}'), 'a{}b{c}');
  const keys = new RedisKeys('p:');
  t.equal(keys.rateWindows('recipient:{acc_1}:233'), 'p:rw:recipient:{acc_1}:233');
  t.equal(keys.rateWindows('account:{acc_1}'), 'p:rw:account:{acc_1}', 'same tag, same slot');
  t.equal(keys.rateWindows('k1'), 'p:{rw:k1}');
});

t.test('memory rate windows keep memory bounded', async (t) => {
  const c = testClock(1_000_000);
  const m = new MemoryRateWindows({ clock: () => c.now, maxKeys: 100 });
  for (let i = 0; i < 1000; i++) {
    await m.take(`s${i}`, { second: 5 });
    c.advance(10);
  }
  t.ok(m.size <= 100, `held ${m.size} keys for 1,000 used`);
  const before = m.size;
  await m.take('refused', { day: 0 });
  t.equal(m.size, before, 'a refused take stores nothing');

  // Live windows survive sweeps of idle keys.
  const m2 = new MemoryRateWindows({ clock: () => c.now, maxKeys: 10 });
  await m2.take('hot', { day: 1 });
  for (let i = 0; i < 100; i++) {
    await m2.take(`idle${i}`, { second: 1 });
    c.advance(1000);
  }
  t.equal((await m2.take('hot', { day: 1 })).allowed, false, 'a live day window is not swept away by idle keys');
});
