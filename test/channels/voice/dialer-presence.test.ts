// The browser dialer's presence in Redis, between two instances' DialerPresence objects on one Redis (no daemon): a
// registration is written with its lifetime as TTL and found by the other instance, never by its own; a release only
// deletes the identity while it still names the releasing instance (a newer registration elsewhere stays); an instance
// that stopped heartbeating is not found; Redis being down fails nothing and finds nobody.
import pino from 'pino';
import t from 'tap';
import { dialerPresenceKeys, DialerPresence, INSTANCE_LIVE_MS } from '../../../src/channels/voice/browser/dialer-presence.js';
import { hashTagOf } from '../../../src/store/redis/keys.js';
import { newRedisClient } from '../../../src/store/redis/redis-client.js';
import { REDIS_URL, testKeyPrefix, testRedisClient } from '../../helpers/redis.js';

const log = pino({ level: 'silent' });
const ACCOUNT = 'acc_presence1';

t.test('dialer presence keys: one Cluster hash tag per identity, accounts never confused', async (t) => {
  const keys = dialerPresenceKeys('ferry:');
  const key = keys.identity('acc_1', 'alice');
  t.equal(key, 'ferry:voice:dialer:{5:acc_1:alice}');
  t.equal(hashTagOf(key), '5:acc_1:alice', 'the whole identity is the hash tag');
  t.not(keys.identity('a:b', 'c'), keys.identity('a', 'b:c'), 'the account id is length-prefixed');
  t.equal(hashTagOf(keys.instance('host:1:abc')), 'host:1:abc');
});

t.test('dialer presence across two instances', { skip: REDIS_URL ? false : 'needs REDIS_URL' }, async (t) => {
  const prefix = testKeyPrefix();
  const keys = dialerPresenceKeys(prefix);
  const key = keys.identity(ACCOUNT, 'alice');
  const look = testRedisClient();
  t.teardown(() => look.quit());
  const instance = async (id: string, port: number) => {
    const redis = testRedisClient({ lazyConnect: true });
    t.teardown(() => redis.quit());
    const presence = new DialerPresence({ redis, keyPrefix: prefix, instanceId: id, sip: () => ({ host: '127.0.0.1', port }), log });
    await presence.connect();
    return presence;
  };
  const a = await instance('instance-a', 5071);
  const b = await instance('instance-b', 5072);

  await t.test('a registration is written with its lifetime as TTL, and found by the other instance only', async (t) => {
    await a.claim(ACCOUNT, 'alice', 30_000);
    t.same(await look.hgetall(key), { instance: 'instance-a', host: '127.0.0.1', port: '5071' });
    const ttl = await look.pttl(key);
    t.ok(ttl > 28_000 && ttl <= 30_000, `TTL is the registration's lifetime (${ttl} ms)`);
    t.same(await b.find(ACCOUNT, 'alice'), { instanceId: 'instance-a', host: '127.0.0.1', port: 5071 }, 'B finds it on A');
    t.equal(await a.find(ACCOUNT, 'alice'), null, 'A does not send calls to itself');
    t.equal(await b.find('acc_other', 'alice'), null, "another account's alice is not this one");
    t.equal(await b.find(ACCOUNT, 'bob'), null, 'nobody registered as bob');
    await a.claim(ACCOUNT, 'alice', 120_000);
    t.ok((await look.pttl(key)) > 100_000, 'a re-REGISTER renews the TTL');
  });

  await t.test('an instance that stopped heartbeating is not found', async (t) => {
    const live = await look.pttl(keys.instance('instance-a'));
    t.ok(live > 0 && live <= INSTANCE_LIVE_MS, `the heartbeat expires (${live} ms left)`);
    await look.del(keys.instance('instance-a'));
    t.equal(await b.find(ACCOUNT, 'alice'), null, "A's heartbeat lapsed: its browsers are not sent calls");
    await a.heartbeat();
    t.match(await b.find(ACCOUNT, 'alice'), { instanceId: 'instance-a' }, 'found again once A heartbeats');
  });

  await t.test('a release never deletes a newer registration on another instance', async (t) => {
    await a.claim(ACCOUNT, 'alice', 60_000);
    await b.claim(ACCOUNT, 'alice', 60_000);
    await a.release(ACCOUNT, 'alice');
    t.same(await look.hgetall(key), { instance: 'instance-b', host: '127.0.0.1', port: '5072' }, "A's browser leaving leaves B's newer registration");
    t.match(await a.find(ACCOUNT, 'alice'), { instanceId: 'instance-b', port: 5072 }, 'A now sends calls for alice to B');
    await b.release(ACCOUNT, 'alice');
    t.equal(await look.exists(key), 0, 'B letting go of its own deletes it');
    t.equal(await a.find(ACCOUNT, 'alice'), null);
  });

  await t.test('a release with a browser left here keeps the identity for that browser only', async (t) => {
    await a.claim(ACCOUNT, 'alice', 120_000);
    await a.release(ACCOUNT, 'alice', 5_000);
    t.equal((await look.hgetall(key)).instance, 'instance-a', 'still A');
    const ttl = await look.pttl(key);
    t.ok(ttl > 0 && ttl <= 5_000, `for the remaining registration's lifetime (${ttl} ms)`);
  });

  await t.test('a stopping instance lets go of its identities and its heartbeat at once', async (t) => {
    await a.claim(ACCOUNT, 'alice', 60_000);
    await a.claim(ACCOUNT, 'carol', 60_000);
    await b.claim(ACCOUNT, 'dave', 60_000);
    await a.stop([{ accountId: ACCOUNT, identity: 'alice' }, { accountId: ACCOUNT, identity: 'carol' }, { accountId: ACCOUNT, identity: 'dave' }]);
    // One key a command: on a Cluster the two live in different slots.
    t.same([await look.exists(key), await look.exists(keys.identity(ACCOUNT, 'carol'))], [0, 0], "A's identities are gone");
    t.equal((await look.hgetall(keys.identity(ACCOUNT, 'dave'))).instance, 'instance-b', "B's are not A's to delete");
    t.equal(await look.exists(keys.instance('instance-a')), 0, "A's heartbeat is gone");
  });
});

t.test('Redis down: a registration still succeeds locally, a lookup finds nobody', async (t) => {
  // Port 1 on loopback: nothing listens, every command fails at once (no offline queue, as the daemon's clients).
  const redis = newRedisClient('redis://127.0.0.1:1', { connectionName: 'ferrytest:dialer-presence-down' });
  t.teardown(() => redis.disconnect());
  redis.on('error', () => undefined);
  const presence = new DialerPresence({ redis, keyPrefix: testKeyPrefix(), instanceId: 'instance-x', sip: () => ({ host: '127.0.0.1', port: 5073 }), log });
  await t.resolves(presence.claim(ACCOUNT, 'alice', 30_000), 'claim does not throw');
  await t.resolves(presence.release(ACCOUNT, 'alice'), 'release does not throw');
  t.equal(await presence.find(ACCOUNT, 'alice'), null);
});
