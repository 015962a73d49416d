// ctx.pubsub across two instances (two ModulePlatforms, as two daemons would build them) on one Redis and key prefix:
// a module hears its own channel from the other instance, never another module's or another prefix's; embedded, the
// one process is the deployment. ctx.redis: named clients from one factory, closed by the core.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { ModulePlatform } from '../../src/platform/module-platform.js';
import { TargetGuard } from '../../src/security/target-guard.js';
import type { Db } from '../../src/store/types.js';
import { REDIS_CLUSTER, REDIS_URL, testKeyPrefix } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const log = createLogger('silent');
const platform = (redisUrl: string | null, keyPrefix: string) =>
  new ModulePlatform({ db: {} as Db, master: randomBytes(32), redisUrl, redisCluster: REDIS_CLUSTER, keyPrefix, http: new TargetGuard(false), log });

t.test('embedded: in-process pub/sub, namespaced per module; no Redis clients', async (t) => {
  const p = platform(null, 'ferry:');
  t.teardown(() => p.close());
  const a = p.forModule({ name: 'shortlink' });
  const b = p.forModule({ name: 'chat' });
  const got: string[] = [];
  const off = await a.pubsub.subscribe('invalidate', (m) => got.push(`shortlink ${m}`));
  await b.pubsub.subscribe('invalidate', (m) => got.push(`chat ${m}`));
  await a.pubsub.publish('invalidate', 'x1');
  await b.pubsub.publish('invalidate', 'y1');
  await off();
  await a.pubsub.publish('invalidate', 'x2');
  t.same(got, ['shortlink x1', 'chat y1'], 'each module hears its own channel; none after unsubscribing');
  t.equal(a.redis.configured, false);
  t.equal(a.redis.client('anything'), null, 'the factory says there is no Redis');
  t.equal(a.redis.subscriber('anything'), null);
  await t.rejects(a.pubsub.subscribe('has space', () => undefined), /a non-empty name without spaces/);
});

t.test('Redis: two instances hear each other on a module channel, not other modules or prefixes', { skip: !REDIS_URL && 'REDIS_URL not set' }, async (t) => {
  const prefix = testKeyPrefix();
  const one = platform(REDIS_URL, prefix);
  const two = platform(REDIS_URL, prefix);
  const elsewhere = platform(REDIS_URL, testKeyPrefix());
  t.teardown(async () => {
    await one.close();
    await two.close();
    await elsewhere.close();
  });
  const heard: string[] = [];
  await two.forModule({ name: 'shortlink' }).pubsub.subscribe('invalidate', (m) => heard.push(`two/shortlink ${m}`));
  await two.forModule({ name: 'chat' }).pubsub.subscribe('invalidate', (m) => heard.push(`two/chat ${m}`));
  await elsewhere.forModule({ name: 'shortlink' }).pubsub.subscribe('invalidate', (m) => heard.push(`elsewhere ${m}`));
  await one.forModule({ name: 'shortlink' }).pubsub.subscribe('invalidate', (m) => heard.push(`one/shortlink ${m}`));
  await one.forModule({ name: 'shortlink' }).pubsub.publish('invalidate', 'abc');
  await one.forModule({ name: 'chat' }).pubsub.publish('invalidate', 'room-1');
  await waitFor(() => heard.length >= 3, 5000);
  // One more round trip on the same connection: anything else would have arrived by now.
  await one.forModule({ name: 'shortlink' }).pubsub.publish('invalidate', 'end');
  await waitFor(() => heard.includes('two/shortlink end'), 5000);
  t.same(heard.filter((h) => !h.endsWith(' end')).sort(), ['one/shortlink abc', 'two/chat room-1', 'two/shortlink abc']);

  // The channel is `<prefix><module>:<channel>` on Redis: what the short-link cache used before the platform's pub/sub.
  // On a Cluster it is a sharded channel (SSUBSCRIBE hears it; a classic SUBSCRIBE would not).
  const raw = one.redis.create('test', 'raw', true, true)!;
  await raw.connect();
  const got = new Promise<string>((resolve) => raw.on(REDIS_CLUSTER ? 'smessage' : 'message', (_c: string, m: string) => resolve(m)));
  if (REDIS_CLUSTER) await raw.ssubscribe(`${prefix}shortlink:invalidate`);
  else await raw.subscribe(`${prefix}shortlink:invalidate`);
  await two.forModule({ name: 'shortlink' }).pubsub.publish('invalidate', 'same-channel');
  t.equal(await got, 'same-channel');
});

t.test('Redis: clients from one factory are named per module and purpose, and closed by the core', { skip: !REDIS_URL && 'REDIS_URL not set' }, async (t) => {
  const p = platform(REDIS_URL, testKeyPrefix());
  const redis = p.forModule({ name: 'ussd' }).redis;
  t.equal(redis.configured, true);
  const c = redis.client('live-sessions')!;
  await c.connect();
  t.equal(await c.client('GETNAME'), 'ferry:ussd:live-sessions');
  await t.rejects(redis.client('offline')!.get('k'), /enableOfflineQueue options is false/, 'no offline queue unless asked: fails at once while not connected');
  const s = redis.subscriber('feed')!;
  await s.subscribe('ch');
  t.equal(s.status, 'ready', 'a subscriber waits for its connection');
  await p.close();
  t.equal(c.status, 'end');
  t.equal(s.status, 'end');
});
