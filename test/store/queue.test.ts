import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import t from 'tap';
import { openBackends } from '../../src/store/backends.js';
import type { Queue, QueueItem } from '../../src/store/types.js';
import { openTestBackends } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';
import { REDIS_CLUSTER, REDIS_URL } from '../helpers/redis.js';
import { queueContract } from './queue-contract.js';

// One database / key prefix for the whole file; every test uses its own queue name.
const env = await openTestBackends();
t.teardown(() => env.cleanup());
const { clock } = env;
let seq = 0;
const fresh = <P = unknown>(): Queue<P> => env.backends.queue<P>(`t${++seq}`);
const ids = (items: readonly QueueItem[]) => items.map((i) => i.id);
const LEASE = 30_000;

t.test(`queue contract (${backendLabel})`, async (t) => queueContract(t, { fresh, clock }));

t.test('openBackends', async (t) => {
  t.test('an unreachable Redis fails the start, naming Redis and the URL without its password', async (t) => {
    const err = await openBackends({ db: env.tdb.db, redisUrl: 'redis://ferry:s3cret@127.0.0.1:1/0' }).then(
      () => null,
      (e: Error) => e,
    );
    t.ok(err, 'rejected');
    t.match(err?.message, /Redis/);
    t.match(err?.message, /127\.0\.0\.1:1/);
    t.notMatch(err?.message, /s3cret/);
  });

  t.test('an unreachable Redis Cluster fails the start, naming every seed without the password', async (t) => {
    const err = await openBackends({ db: env.tdb.db, redisUrl: 'redis://ferry:s3cret@127.0.0.1:1,127.0.0.1:2', redisCluster: true }).then(
      () => null,
      (e: Error) => e,
    );
    t.ok(err, 'rejected');
    t.match(err?.message, /Redis unreachable at redis:\/\/ferry:\*\*\*@127\.0\.0\.1:1,127\.0\.0\.1:2/);
    t.notMatch(err?.message, /s3cret/);
  });

  t.test('ping checks the backends', async (t) => {
    await t.resolves(env.backends.ping());
    t.equal(env.backends.kind, REDIS_URL ? 'redis' : 'local');
  });

  t.test('while Redis is down commands fail fast, and work again once it is back', { skip: (!REDIS_URL && 'needs REDIS_URL') || (REDIS_CLUSTER && 'a proxy in front of one node of a Cluster: test/faults/redis-cluster.test.ts kills a master instead') }, async (t) => {
    const target = new URL(REDIS_URL!);
    const sockets = new Set<Socket>();
    const listen = (port: number) =>
      new Promise<Server>((resolve) => {
        const s = createServer((client) => {
          const up = connect(Number(target.port || 6379), target.hostname);
          for (const x of [client, up]) {
            sockets.add(x);
            x.on('close', () => sockets.delete(x));
            x.on('error', () => {});
          }
          client.pipe(up).pipe(client);
        });
        s.listen(port, '127.0.0.1', () => resolve(s));
      });
    let proxy = await listen(0);
    const port = (proxy.address() as AddressInfo).port;
    const url = new URL(REDIS_URL!);
    url.host = `127.0.0.1:${port}`;
    const b = await openBackends({ db: env.tdb.db, redisUrl: url.toString(), keyPrefix: env.keyPrefix! });
    t.teardown(() => b.close());
    const q = b.queue<number>('outage');
    await q.push([{ id: 'before', lane: 'bulk', payload: 1 }]);

    await new Promise<void>((resolve) => {
      proxy.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
    const outcome = await Promise.race([
      q.push([{ id: 'during', lane: 'bulk', payload: 2 }]).then(
        () => 'resolved',
        () => 'rejected',
      ),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3000).unref()),
    ]);
    t.equal(outcome, 'rejected', 'a command while Redis is unreachable is refused, not queued');
    await t.rejects(b.ping());

    proxy = await listen(port);
    t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
    let back = false;
    for (let i = 0; i < 100 && !back; i++) {
      back = await b.ping().then(
        () => true,
        () => false,
      );
      if (!back) await new Promise((r) => setTimeout(r, 100));
    }
    t.ok(back, 'reconnected by itself');
    await q.push([{ id: 'after', lane: 'bulk', payload: 3 }]);
    t.same(ids(await q.lease(10, LEASE)).sort(), ['after', 'before']);
    for (const s of sockets) s.destroy();
  });
});
