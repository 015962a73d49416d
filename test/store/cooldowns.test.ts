import t from 'tap';
import { MemoryCooldowns } from '../../src/store/local/memory-cooldowns.js';
import { cooldownAfter, type CooldownPolicy } from '../../src/store/types.js';
import { openTestBackends, testClock } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';

const env = await openTestBackends();
t.teardown(() => env.cleanup());
const { clock } = env;
const cd = env.backends.cooldowns;
let seq = 0;
const key = () => `smpp-bind:127.0.0.1|sys${++seq}`;
const POLICY: CooldownPolicy = { threshold: 3, firstMs: 1000, maxMs: 5000, forgetMs: 60_000 };

t.test('cooldownAfter: none below the threshold, then doubling up to the cap', async (t) => {
  t.same([1, 2, 3, 4, 5, 6, 7].map((n) => cooldownAfter(n, POLICY)), [0, 0, 1000, 2000, 4000, 5000, 5000]);
  t.equal(cooldownAfter(10_000, POLICY), 5000, 'a huge count stays at the cap');
  t.equal(cooldownAfter(1, { ...POLICY, threshold: 1 }), 1000, 'threshold 1: the first failure starts one');
});

t.test(`failure cool-down contract (${backendLabel})`, async (t) => {
  t.test('failures below the threshold start none; from it on each starts a longer one', async (t) => {
    const k = key();
    t.equal(await cd.remainingMs(k), 0, 'nothing yet');
    t.same(await cd.fail(k, POLICY), { failures: 1, cooldownMs: 0 });
    t.same(await cd.fail(k, POLICY), { failures: 2, cooldownMs: 0 });
    t.equal(await cd.remainingMs(k), 0, 'below the threshold: no cool-down');
    t.same(await cd.fail(k, POLICY), { failures: 3, cooldownMs: 1000 }, 'the threshold starts the first');
    t.equal(await cd.remainingMs(k), 1000);
    clock.advance(400);
    t.equal(await cd.remainingMs(k), 600, 'it runs down with the clock');
    clock.advance(600);
    t.equal(await cd.remainingMs(k), 0, 'and ends');
    t.same(await cd.fail(k, POLICY), { failures: 4, cooldownMs: 2000 }, 'the count survives the cool-down: the next doubles');
    clock.advance(2000);
    t.same(await cd.fail(k, POLICY), { failures: 5, cooldownMs: 4000 });
    clock.advance(4000);
    t.same(await cd.fail(k, POLICY), { failures: 6, cooldownMs: 5000 }, 'capped');
    t.equal(await cd.remainingMs(k), 5000);
  });

  t.test('reset forgets failures and cool-down', async (t) => {
    const k = key();
    for (let i = 0; i < 3; i++) await cd.fail(k, POLICY);
    t.equal(await cd.remainingMs(k), 1000);
    await cd.reset(k);
    t.equal(await cd.remainingMs(k), 0);
    t.same(await cd.fail(k, POLICY), { failures: 1, cooldownMs: 0 }, 'counting starts again');
  });

  t.test('keys are independent', async (t) => {
    const a = key();
    const b = key();
    for (let i = 0; i < 3; i++) await cd.fail(a, POLICY);
    t.equal(await cd.remainingMs(a), 1000);
    t.equal(await cd.remainingMs(b), 0);
    t.same(await cd.fail(b, POLICY), { failures: 1, cooldownMs: 0 });
  });

  t.test('failures are forgotten forgetMs after the last one, or after its cool-down', async (t) => {
    const k = key();
    await cd.fail(k, POLICY);
    await cd.fail(k, POLICY);
    clock.advance(POLICY.forgetMs - 1);
    t.same(await cd.fail(k, POLICY), { failures: 3, cooldownMs: 1000 }, 'still counted just before');
    clock.advance(1000 + POLICY.forgetMs - 1);
    t.same(await cd.fail(k, POLICY), { failures: 4, cooldownMs: 2000 }, 'counted until forgetMs after the cool-down ends');
    clock.advance(2000 + POLICY.forgetMs);
    t.equal(await cd.remainingMs(k), 0);
    t.same(await cd.fail(k, POLICY), { failures: 1, cooldownMs: 0 }, 'forgotten');
  });

  t.test('a running cool-down that ends later is kept', async (t) => {
    const k = key();
    const long = { ...POLICY, threshold: 1, firstMs: 5000 };
    await cd.fail(k, long);
    t.same(await cd.fail(k, { ...POLICY, threshold: 1, firstMs: 100, maxMs: 100 }), { failures: 2, cooldownMs: 100 });
    t.equal(await cd.remainingMs(k), 5000, 'a shorter one does not cut it');
  });

  t.test('parallel failures are each counted', async (t) => {
    const k = key();
    const res = await Promise.all(Array.from({ length: 8 }, () => cd.fail(k, POLICY)));
    t.same(res.map((r) => r.failures).sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8]);
  });
});

t.test('memory cool-downs keep memory bounded', async (t) => {
  const c = testClock(1_000_000);
  const m = new MemoryCooldowns({ clock: () => c.now, maxKeys: 100 });
  for (let i = 0; i < 1000; i++) await m.fail(`k${i}`, POLICY);
  t.ok(m.size <= 125, `held ${m.size} keys for 1,000 used`);
  const m2 = new MemoryCooldowns({ clock: () => c.now, maxKeys: 10 });
  for (let i = 0; i < 3; i++) await m2.fail('hot', POLICY);
  for (let i = 0; i < 100; i++) {
    await m2.fail(`gone${i}`, { ...POLICY, forgetMs: 1 });
    c.advance(2);
  }
  t.ok((await m2.remainingMs('hot')) > 0, 'a key in cool-down is not swept away by forgotten ones');
});
