// §8 messenger limits: the three windows of /send exactly, with a test clock, over two instances' RateWindows sharing
// Redis (one in-process store on the embedded backend); then over HTTP with two daemons sharing Postgres and Redis.
import { testRedisClient } from '../../helpers/redis.js';
import t from 'tap';
import { MESSENGER_RATE_LIMITS } from '../../../src/limits/messenger-rate-limits.js';
import { RatePolicy } from '../../../src/limits/rate-policy.js';
import { RedisKeys } from '../../../src/store/redis/keys.js';
import { RedisRateWindows } from '../../../src/store/redis/redis-rate-windows.js';
import { defineScripts } from '../../../src/store/redis/scripts.js';
import type { RateWindows } from '../../../src/store/types.js';
import { openTestBackends } from '../../helpers/backends.js';
import { startDaemon } from '../../helpers/daemon.js';
import { backendLabel, REDIS_URL } from '../../helpers/env.js';
import { api, customer, newNumber } from './helpers.js';

// Many sends through a whole daemon and its simulator: bounded above the suite's default on a loaded 2-core machine.
t.setTimeout(300_000);

const DAY = 86_400_000;

t.test(`the /send windows: 80/s, 3,000/min, 100,000/day, exact across instances (${backendLabel})`, async (t) => {
  const env = await openTestBackends();
  t.teardown(() => env.cleanup());
  const { clock } = env;
  const windows: RateWindows[] = [env.backends.rateWindows];
  if (REDIS_URL) {
    const other = testRedisClient({ lazyConnect: true, enableAutoPipelining: true });
    await other.connect();
    t.teardown(() => other.quit());
    windows.push(new RedisRateWindows(defineScripts(other), new RedisKeys(env.keyPrefix!), { scriptClock: () => clock.now }));
  }
  const policies = windows.map((w) => new RatePolicy(w, MESSENGER_RATE_LIMITS));
  const caller = { accountId: 'acc_rl' };
  let n = 0;
  /** One /send take on the instances in turn. */
  const take = (cost = 1) => policies[n++ % policies.length].take('messenger.send', caller, cost);

  clock.now = Math.ceil(clock.now / DAY) * DAY + DAY; // a fresh UTC day
  // second: 100 concurrent takes on both instances within one second: exactly 80 pass
  const results = await Promise.all(Array.from({ length: 100 }, () => take()));
  t.equal(results.filter((r) => r.allowed).length, 80, '80 in the second');
  const refused = results.find((r) => !r.allowed);
  t.match(refused, { allowed: false, window: 'second', limit: 80 });
  // minute: 80 per second for the rest of the minute: 3,000 pass in all
  let allowedInMinute = 80;
  for (let s = 1; s < 60; s++) {
    clock.now += 1000;
    for (let i = 0; i < 80; i++) {
      const r = await take();
      if (r.allowed) allowedInMinute++;
      else {
        t.match(r, { window: 'minute', limit: 3000 }, 'refused by the minute');
        break;
      }
    }
    if (allowedInMinute >= 3000) break;
  }
  t.equal(allowedInMinute, 3000, '3,000 in the minute');
  const r = await take();
  t.match(r, { allowed: false, window: 'minute' });
  // day: whole minutes of 3,000 (in takes of cost 80 spread over the seconds) until the day refuses
  let allowedInDay = allowedInMinute;
  let dayRefusal = null;
  for (let m = 1; m < 40 && !dayRefusal; m++) {
    clock.now = Math.floor(clock.now / 60_000) * 60_000 + 60_000;
    for (let s = 0; s < 38 && !dayRefusal; s++) {
      const cost = Math.min(80, 3000 - (s * 80));
      if (cost <= 0) break;
      const x = await take(cost);
      if (x.allowed) allowedInDay += cost;
      else dayRefusal = x;
      clock.now += 1000;
    }
  }
  t.match(dayRefusal, { allowed: false, window: 'day', limit: 100_000 }, 'the day refuses');
  t.ok(allowedInDay <= 100_000 && allowedInDay > 100_000 - 80, `100,000 in the day (${allowedInDay})`);
});

t.test(`over HTTP: WA005 with Retry-After and the window; two daemons share the limit (${backendLabel})`, async (t) => {
  const secret = 'ab'.repeat(32);
  const d1 = await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret });
  t.teardown(() => d1.stop());
  const shared = process.env.DATABASE_URL && REDIS_URL;
  const d2 = shared
    ? await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret, DATABASE_URL: d1.reuse.env.DATABASE_URL, FERRY_REDIS_KEY_PREFIX: d1.reuse.env.FERRY_REDIS_KEY_PREFIX })
    : d1;
  if (shared) t.teardown(() => d2.stopKeepingStore());
  const acme = await customer(d1, 'acme');
  const apis = [api(d1, acme.token), api(d2, acme.token)];
  // The second's 80 are used up through the first instance's windows (as 80 sends there would); a send over HTTP
  // to the second daemon within the same second is refused. A second that rolls over in between is tried again.
  const policy = new RatePolicy(d1.daemon.backends.rateWindows, MESSENGER_RATE_LIMITS);
  const to = newNumber();
  let refused = null;
  for (let i = 0; i < 20 && !refused; i++) {
    for (let k = 0; k < 81 && (await policy.take('messenger.send', { accountId: acme.accountId })).allowed; k++);
    const r = await apis[1].send({ to, type: 'template', template: { name: 'hello_world', language: 'en_US' } });
    if (r.status === 429) refused = r;
    else t.equal(r.status, 200, 'the second rolled over: accepted');
  }
  t.ok(refused, 'refused within the second');
  t.equal(refused!.json.code, 'WA005');
  t.equal(refused!.json.data.window, 'second');
  t.equal(refused!.json.data.limit, 80);
  t.ok(Number(refused!.headers.get('retry-after')) >= 1, 'Retry-After');
  // Concurrent sends over both daemons: none answered other than accepted or WA005.
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => apis[i % 2].send({ to, type: 'template', template: { name: 'hello_world', language: 'en_US' } })));
  const others = answers.filter((a) => a.status !== 200 && a.json.code !== 'WA005');
  t.same(others.map((a) => `${a.status} ${JSON.stringify(a.json)}`), [], 'accepted or WA005');
});
