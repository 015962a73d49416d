import t from 'tap';
import { MemoryThrottle } from '../../src/store/local/memory-throttle.js';
import { openTestBackends, testClock } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';

const env = await openTestBackends();
t.teardown(() => env.cleanup());
const { clock } = env;
const th = env.backends.throttle;
let seq = 0;
const key = () => `k${++seq}:{odd}key`;

t.test(`throttle contract (${backendLabel})`, async (t) => {
  t.test('token bucket: burst, then refill at the rate', async (t) => {
    const k = key();
    for (let i = 4; i >= 0; i--) t.same(await th.take(k, 10, 5), { allowed: true, remaining: i, retryAfterMs: 0 }, `burst take leaves ${i}`);
    t.same(await th.take(k, 10, 5), { allowed: false, remaining: 0, retryAfterMs: 100 }, 'empty: one token in 100 ms at 10/s');
    clock.advance(40);
    const r = await th.take(k, 10, 5);
    t.equal(r.allowed, false);
    t.equal(r.retryAfterMs, 60, 'retryAfter counts the refill already made');
    clock.advance(60);
    t.same(await th.take(k, 10, 5), { allowed: true, remaining: 0, retryAfterMs: 0 }, 'one token after 100 ms');
    t.equal((await th.take(k, 10, 5)).allowed, false);

    clock.advance(60_000);
    const burst = [];
    for (let i = 0; i < 6; i++) burst.push((await th.take(k, 10, 5)).allowed);
    t.same(burst, [true, true, true, true, true, false], 'refill is capped at burst');
  });

  t.test('token bucket: cost', async (t) => {
    const k = key();
    t.same(await th.take(k, 2, 10, 7), { allowed: true, remaining: 3, retryAfterMs: 0 });
    t.same(await th.take(k, 2, 10, 5), { allowed: false, remaining: 3, retryAfterMs: 1000 }, 'two tokens short at 2/s');
    t.equal((await th.take(k, 2, 10, 3)).allowed, true, 'a smaller take still fits');
    t.equal((await th.take(k, 2, 10, 11)).allowed, false, 'more than burst never fits');
  });

  t.test('token bucket: concurrent takes are decided in call order, as one after another', async (t) => {
    const k = key();
    const res = await Promise.all([3, 1, 2, 1, 1].map((cost) => th.take(k, 10, 5, cost)));
    t.same(
      res,
      [
        { allowed: true, remaining: 2, retryAfterMs: 0 },
        { allowed: true, remaining: 1, retryAfterMs: 0 },
        { allowed: false, remaining: 1, retryAfterMs: 100 },
        { allowed: true, remaining: 0, retryAfterMs: 0 },
        { allowed: false, remaining: 0, retryAfterMs: 100 },
      ],
      'a take that does not fit takes nothing and leaves the rest to the ones after it',
    );
    const other = key();
    const mixed = await Promise.all([th.take(other, 10, 2), th.take(k, 10, 5), th.take(other, 10, 2), th.take(other, 10, 2)]);
    t.same(
      mixed.map((r) => r.allowed),
      [true, false, true, false],
      'takes on different buckets in one turn stay apart',
    );
  });

  t.test('sliding window: limit, retryAfter, refused hits not counted', async (t) => {
    const k = key();
    const t0 = clock.now;
    t.same(await th.hit(k, 3, 1000), { allowed: true, count: 1, retryAfterMs: 0 });
    clock.advance(100);
    t.same(await th.hit(k, 3, 1000), { allowed: true, count: 2, retryAfterMs: 0 });
    clock.advance(100);
    t.same(await th.hit(k, 3, 1000), { allowed: true, count: 3, retryAfterMs: 0 });
    clock.advance(100);
    t.same(await th.hit(k, 3, 1000), { allowed: false, count: 3, retryAfterMs: t0 + 1000 - clock.now }, 'refused until the first hit leaves');
    t.equal(await th.count(k, 1000), 3, 'the refused hit was not recorded');
    clock.now = t0 + 999;
    t.equal((await th.hit(k, 3, 1000)).allowed, false, '1 ms before the first hit leaves');
    clock.now = t0 + 1000;
    t.equal(await th.count(k, 1000), 2);
    t.same(await th.hit(k, 3, 1000), { allowed: true, count: 3, retryAfterMs: 0 }, 'the first hit has left');
    t.same(await th.hit(k, 3, 1000), { allowed: false, count: 3, retryAfterMs: 100 }, 'next free slot when the second hit leaves');
    clock.advance(5000);
    t.equal(await th.count(k, 1000), 0, 'all hits left');
    t.equal(await th.count(key(), 1000), 0, 'unknown key');
  });

  t.test('reset forgets both kinds of state', async (t) => {
    const k = key();
    await th.hit(k, 1, 60_000);
    t.equal((await th.hit(k, 1, 60_000)).allowed, false);
    await th.take(k, 1, 1);
    t.equal((await th.take(k, 1, 1)).allowed, false);
    await th.reset(k);
    t.equal(await th.count(k, 60_000), 0);
    t.equal((await th.hit(k, 1, 60_000)).allowed, true);
    t.equal((await th.take(k, 1, 1)).allowed, true);
    await th.reset('never-used');
  });

  t.test('keys are independent', async (t) => {
    const a = key();
    const b = key();
    t.equal((await th.hit(a, 1, 60_000)).allowed, true);
    t.equal((await th.hit(a, 1, 60_000)).allowed, false);
    t.equal((await th.hit(b, 1, 60_000)).allowed, true);
    t.equal((await th.take(a, 1, 1)).allowed, true);
    t.equal((await th.take(b, 1, 1)).allowed, true);
  });

  t.test('parallel hits never exceed the limit', async (t) => {
    const k = key();
    const res = await Promise.all(Array.from({ length: 40 }, () => th.hit(k, 7, 60_000)));
    t.equal(res.filter((r) => r.allowed).length, 7);
    t.same(res.filter((r) => r.allowed).map((r) => r.count).sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7]);
    const takes = await Promise.all(Array.from({ length: 40 }, () => th.take(k, 0.001, 9)));
    t.equal(takes.filter((r) => r.allowed).length, 9);
  });
});

t.test('memory throttle keeps memory bounded', async (t) => {
  const c = testClock(1_000_000);
  const m = new MemoryThrottle({ clock: () => c.now, maxKeys: 100 });
  for (let i = 0; i < 1000; i++) {
    await m.take(`b${i}`, 10, 10);
    await m.hit(`w${i}`, 5, 1000);
    c.advance(1);
  }
  t.ok(m.size <= 200, `held ${m.size} keys for 2,000 used`);
  // Live state survives sweeps of idle keys: keys used in the last window are kept.
  const m2 = new MemoryThrottle({ clock: () => c.now, maxKeys: 10 });
  await m2.hit('hot', 1, 10_000_000);
  for (let i = 0; i < 100; i++) {
    await m2.hit(`idle${i}`, 1, 5);
    c.advance(10);
  }
  t.equal((await m2.hit('hot', 1, 10_000_000)).allowed, false, 'a live window is not swept away by idle keys');
});
