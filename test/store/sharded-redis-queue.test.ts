// A queue spread over shards (ShardedRedisQueue), each a RedisQueue under its own hash tag: the queue contract on 3
// shards, then what sharding adds: the spread, strict lanes across shards, shard keys, changing the shard count
// without stranding or duplicating items, and what a lease costs. Redis only: the class exists only there.
import t from 'tap';
import { hashTagOf, queueShardName, RedisKeys } from '../../src/store/redis/keys.js';
import { newRedisClient } from '../../src/store/redis/redis-client.js';
import { shardOf, ShardedRedisQueue } from '../../src/store/redis/sharded-redis-queue.js';
import { defineScripts, type ScriptedRedis } from '../../src/store/redis/scripts.js';
import type { Lane, PushItem, Queue, QueueItem } from '../../src/store/types.js';
import { deleteKeys, testClock } from '../helpers/backends.js';
import { REDIS_URL, scanKeys, testKeyPrefix, testRedisClient } from '../helpers/redis.js';
import { queueContract } from './queue-contract.js';
import { redisClusterSkip, startRedisCluster } from '../helpers/redis-cluster.js';

// Its own ports (the CI cluster is on 16600, the harness test on 16620).
const CLUSTER_BASE_PORT = 16680;

const LEASE = 30_000;
const ids = (items: readonly QueueItem[]) => items.map((i) => i.id);

/** Ids (prefix + n) whose shard among `count` is `shard`, found by trying n = 0, 1, … (bounded). */
function idsIn(shard: number, count: number, n: number, prefix: string, key?: (id: string) => string): string[] {
  const out: string[] = [];
  for (let i = 0; i < 10_000 && out.length < n; i++) if (shardOf(key ? key(`${prefix}${i}`) : `${prefix}${i}`, count) === shard) out.push(`${prefix}${i}`);
  if (out.length < n) throw new Error(`not enough ids for shard ${shard}`);
  return out;
}

t.test('sharded Redis queue', { skip: REDIS_URL ? false : 'Redis only (REDIS_URL); ShardedRedisQueue exists only on Redis' }, async (t) => {
  const prefix = testKeyPrefix();
  const client = testRedisClient({ lazyConnect: true });
  await client.connect();
  t.teardown(async () => {
    await client.quit();
    await deleteKeys(prefix);
  });
  const scripted = defineScripts(client);
  // Counts the script calls the queues make (the same client underneath).
  const calls = new Map<string, number>();
  const counted = new Proxy(scripted, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const fn = (v as (...a: unknown[]) => unknown).bind(target);
      if (prop !== 'queuePeek' && prop !== 'queueLease' && prop !== 'queuePush' && prop !== 'queueAck' && prop !== 'queueRetry') return fn;
      return (...a: unknown[]) => {
        calls.set(prop, (calls.get(prop) ?? 0) + 1);
        return fn(...a);
      };
    },
  }) as ScriptedRedis;
  const keys = new RedisKeys(prefix);
  const clock = testClock();
  const sharded = <P = unknown>(name: string, shards: number, layoutTtlMs?: number) =>
    new ShardedRedisQueue<P>(counted, keys, name, { clock: () => clock.now, scriptClock: () => clock.now, shards, layoutTtlMs });
  let seq = 0;
  const fresh = <P = unknown>(shards = 3): Queue<P> => sharded<P>(`sq${++seq}`, shards);
  /** Items per shard of a queue, read from Redis (the meta hash of each shard's hash tag). */
  const perShard = async (name: string, count: number): Promise<number[]> =>
    Promise.all(Array.from({ length: count }, (_, s) => client.hlen(keys.queue(queueShardName(name, s)).meta)));

  await t.test('the queue contract on 3 shards', async (t) => queueContract(t, { fresh: <P = unknown>() => fresh<P>(3), clock }));

  await t.test('items spread over every shard, each under its own hash tag; shard 0 keeps the queue keys', async (t) => {
    const q = sharded<number>('spread', 3);
    await q.push(Array.from({ length: 300 }, (_, i) => ({ id: `m${i}`, lane: 'bulk' as const, payload: i })));
    const byTag = new Map<string, number>();
    for (const k of await scanKeys(client, `${prefix}{q:spread*}:meta`)) byTag.set(hashTagOf(k), await client.hlen(k));
    t.same([...byTag.keys()].sort(), ['q:spread', `q:${queueShardName('spread', 1)}`, `q:${queueShardName('spread', 2)}`], 'three hash tags; shard 0 is the unsharded queue');
    t.equal([...byTag.values()].reduce((a, b) => a + b, 0), 300);
    for (const [tag, n] of byTag) t.ok(n >= 60, `${tag} holds ${n} of 300`);
    t.same(await client.smembers(keys.queueShards('spread')).then((m) => m.sort()), ['1', '3'], 'the shard counts are recorded');
  });

  await t.test('every pushed item is leased exactly once and acked, whichever instance acks', async (t) => {
    const a = sharded<number>('once', 3);
    const b = sharded<number>('once', 3);
    const lanes: Lane[] = ['receipt', 'priority', 'bulk'];
    await a.push(Array.from({ length: 600 }, (_, i) => ({ id: `o${i}`, lane: lanes[i % 3], payload: i })));
    const seen = new Map<string, number>();
    const loop = async (q: Queue<number>, acker: Queue<number>) => {
      for (let round = 0; round < 1000; round++) {
        const got = await q.lease(25, LEASE);
        if (got.length === 0) return;
        for (const it of got) seen.set(it.id, (seen.get(it.id) ?? 0) + 1);
        await acker.ack(ids(got));
      }
    };
    // b acks what a leased (it never saw those leases) and the other way round.
    await Promise.all([loop(a, b), loop(b, a), loop(a, a)]);
    t.equal(seen.size, 600);
    t.equal([...seen.values()].filter((n) => n !== 1).length, 0, 'none twice');
    t.same(await perShard('once', 3), [0, 0, 0], 'nothing left in any shard');
    t.equal((await a.stats()).leased, 0);
  });

  await t.test('retry, cancel and get by id work from any instance, shard key or not', async (t) => {
    const a = sharded<string>('byid', 3);
    const other = sharded<string>('byid', 3);
    // A shard key whose shard is not the one of either id: the look-up cannot find them from the id alone.
    const conv = idsIn((shardOf('keyed', 3) + 1) % 3, 3, 1, 'conv-').find(() => true)!;
    await a.push([
      { id: 'plain', lane: 'bulk', payload: 'p' },
      { id: 'keyed', lane: 'bulk', payload: 'k', shardKey: conv },
      { id: 'later', lane: 'priority', payload: 'l', runAt: clock.now + 60_000, shardKey: conv },
    ]);
    t.not(shardOf('keyed', 3), shardOf(conv, 3));
    t.equal((await other.get('keyed'))?.payload, 'k');
    t.equal((await other.get('plain'))?.payload, 'p');
    t.equal(await other.get('nothing'), null);
    t.equal(await other.cancel('later'), true, 'cancel of a keyed item through an instance that never saw it');
    t.equal(await a.get('later'), null);
    t.same(ids(await a.lease(5, LEASE)).sort(), ['keyed', 'plain']);
    t.equal(await other.cancel('keyed'), false, 'leased: not cancelled');
    t.equal(await other.retry('keyed', 1000, 'from other'), 'scheduled', 'retry through an instance that did not lease it');
    t.equal(await a.retry('plain', 1000, 'from a'), 'scheduled');
    t.equal((await a.get('keyed'))?.lastError, 'from other');
    t.equal(await a.retry('keyed', 0, 'stale'), 'scheduled', 'a retry after another instance retried it still finds it');
    t.equal(await other.retry('nothing', 0, 'x'), 'unknown');
    t.same(await perShard('byid', 3).then((n) => n.reduce((x, y) => x + y, 0)), 2);
  });

  await t.test('strict lanes across shards: a due receipt on one shard beats bulk due earlier on another', async (t) => {
    const q = sharded<string>('lanes', 3);
    const [bulkIds, receiptIds, priorityIds] = [idsIn(0, 3, 9, 'b'), idsIn(1, 3, 3, 'r'), idsIn(2, 3, 3, 'p')];
    // Three rounds, so each shard has been first in turn.
    for (let round = 0; round < 3; round++) {
      const now = clock.now;
      await q.push([
        { id: bulkIds[3 * round], lane: 'bulk', payload: 'b', runAt: now - 1000 },
        { id: bulkIds[3 * round + 1], lane: 'bulk', payload: 'b', runAt: now - 900 },
        { id: priorityIds[round], lane: 'priority', payload: 'p', runAt: now - 500 },
        { id: receiptIds[round], lane: 'receipt', payload: 'r', runAt: now - 1 },
      ]);
      t.same(ids(await q.lease(1, LEASE)), [receiptIds[round]], `round ${round}: lease(1) gives the receipt`);
      t.same(ids(await q.lease(2, LEASE)), [priorityIds[round], bulkIds[3 * round]], 'then priority, then the oldest bulk');
      t.same(ids(await q.lease(5, LEASE)), [bulkIds[3 * round + 1]]);
      await q.ack([bulkIds[3 * round], bulkIds[3 * round + 1], priorityIds[round], receiptIds[round]]);
    }

    // A receipt whose lease expired on shard 1 counts as due there: it comes back before the bulk on shard 0.
    const r = receiptIds[0];
    await q.push([{ id: r, lane: 'receipt', payload: 'r2' }]);
    t.same(ids(await q.lease(1, 1000)), [r]);
    await q.push([{ id: bulkIds[8], lane: 'bulk', payload: 'b', runAt: clock.now - 10_000 }]);
    clock.advance(1000);
    const back = await q.lease(1, LEASE);
    t.same(
      back.map((i) => [i.id, i.attempts]),
      [[r, 2]],
      'the expired receipt lease, not the bulk',
    );
  });

  await t.test('the shard served first turns with every lease', async (t) => {
    const q = sharded<number>('turns', 3);
    await q.push([0, 1, 2].flatMap((s) => idsIn(s, 3, 10, `t${s}-`)).map((id, i) => ({ id, lane: 'bulk' as const, payload: i })));
    const served: number[][] = [];
    for (let round = 0; round < 3; round++) served.push([...new Set(ids(await q.lease(5, LEASE)).map((id) => shardOf(id, 3)))]);
    t.ok(
      served.every((s) => s.length === 1),
      'each lease of 5 came from one shard (10 due on each)',
    );
    t.equal(new Set(served.flat()).size, 3, `three leases, three different shards (${JSON.stringify(served)})`);
  });

  await t.test('items with the same shard key come out in push order', async (t) => {
    const q = sharded<number>('fifo', 3);
    // Ids that would spread over every shard by themselves.
    const conv = Array.from({ length: 30 }, (_, i) => `z${(i * 7919) % 1000}-${i}`);
    t.equal(new Set(conv.map((id) => shardOf(id, 3))).size, 3, 'the ids alone would go to three shards');
    const now = clock.now;
    const items: PushItem<number>[] = conv.map((id, i) => ({ id, lane: 'bulk', payload: i, runAt: now - 100 + i, shardKey: 'msg-42' }));
    // Pushed in three batches, as a feeder would.
    for (let i = 0; i < 30; i += 10) await q.push(items.slice(i, i + 10));
    const counts = await perShard('fifo', 3);
    t.same(counts.filter((n) => n > 0), [30], 'all in one shard');
    const got: number[] = [];
    for (let round = 0; round < 40; round++) {
      const one = await q.lease(1, LEASE);
      if (!one.length) break;
      got.push(one[0].payload);
      await q.ack(ids(one));
    }
    t.same(
      got,
      conv.map((_, i) => i),
      'leased one by one, in push order',
    );
  });

  await t.test('a lower shard count strands nothing and queues nothing twice', async (t) => {
    const four = sharded<number>('shrink', 4);
    const items = Array.from({ length: 200 }, (_, i) => ({ id: `s${i}`, lane: 'bulk' as const, payload: i }));
    await four.push(items);
    const before = await perShard('shrink', 4);
    t.ok(before[2] > 0 && before[3] > 0, `shards 2 and 3 hold items (${before.join(', ')})`);
    const two = sharded<number>('shrink', 2);
    await two.push(items);
    t.same(await perShard('shrink', 4), before, 'pushed again by an instance with 2 shards: no id queued twice');
    await two.push([{ id: 'new', lane: 'bulk', payload: -1 }]);
    t.ok(shardOf('new', 2) < 2, 'new ids go to the configured shards');
    t.equal((await two.stats()).lanes[2].due, 201, 'stats count every shard ever used');
    const seen = new Set<string>();
    for (let round = 0; round < 100; round++) {
      const got = await two.lease(50, LEASE);
      if (!got.length) break;
      for (const it of got) seen.add(it.id);
      await two.ack(ids(got));
    }
    t.equal(seen.size, 201, 'the 2-shard instance leases the items of shards 2 and 3 too');
    t.same(await perShard('shrink', 4), [0, 0, 0, 0]);
  });

  await t.test('turning sharding on for a queue in use queues nothing twice', async (t) => {
    const one = sharded<number>('grow', 1, 0);
    const items = Array.from({ length: 100 }, (_, i) => ({ id: `g${i}`, lane: 'bulk' as const, payload: i }));
    await one.push(items);
    t.same(await perShard('grow', 3), [100, 0, 0], 'one shard: the unsharded queue');
    const three = sharded<number>('grow', 3);
    await three.push(items);
    t.same(await perShard('grow', 3), [100, 0, 0], 'pushed again (the reconciler at start) with 3 shards: found in shard 0');
    await three.push(Array.from({ length: 60 }, (_, i) => ({ id: `n${i}`, lane: 'bulk' as const, payload: i })));
    const after = await perShard('grow', 3);
    t.ok(after[1] > 0 && after[2] > 0, `new ids spread (${after.join(', ')})`);
    t.equal((await one.stats()).lanes[2].due, 160, 'the 1-shard instance now serves all three');
  });

  await t.test('stats and dead sum over the shards', async (t) => {
    const q = sharded<number>('sums', 3);
    const dying = [idsIn(0, 3, 1, 'd')[0], idsIn(1, 3, 1, 'd')[0], idsIn(2, 3, 1, 'd')[0]];
    await q.push([
      ...dying.map((id, i) => ({ id, lane: 'bulk' as const, payload: i, maxAttempts: 1 })),
      ...Array.from({ length: 12 }, (_, i) => ({ id: `x${i}`, lane: (['receipt', 'priority'] as const)[i % 2], payload: i, runAt: clock.now + (i < 4 ? 5000 : 0) })),
    ]);
    t.same(await q.stats(), {
      lanes: [
        { lane: 'receipt', due: 4, scheduled: 2, oldestDueAt: clock.now },
        { lane: 'priority', due: 4, scheduled: 2, oldestDueAt: clock.now },
        { lane: 'bulk', due: 3, scheduled: 0, oldestDueAt: clock.now },
      ],
      leased: 0,
      dead: 0,
    });
    t.equal((await q.lease(20, LEASE)).length, 11);
    // They die one after another on three shards: dead lists them newest first across shards.
    for (const id of [dying[1], dying[2], dying[0]]) {
      clock.advance(10);
      t.equal(await q.retry(id, 0, `fail ${id}`), 'dead');
    }
    t.same(ids(await q.dead(10)), [dying[0], dying[2], dying[1]]);
    t.same(ids(await q.dead(2)), [dying[0], dying[2]]);
    t.same(await q.dead(0), []);
    const st = await q.stats();
    t.same([st.leased, st.dead, st.lanes[0].scheduled + st.lanes[1].scheduled], [8, 3, 4]);
  });

  await t.test('expired leases are reclaimed on every shard', async (t) => {
    const q = sharded<number>('reclaim', 3);
    const keep = [0, 1, 2].flatMap((s) => idsIn(s, 3, 2, `k${s}-`));
    const die = [0, 1, 2].map((s) => idsIn(s, 3, 1, `x${s}-`)[0]);
    await q.push([...keep.map((id, i) => ({ id, lane: 'bulk' as const, payload: i })), ...die.map((id, i) => ({ id, lane: 'bulk' as const, payload: i, maxAttempts: 1 }))]);
    t.equal((await q.lease(20, 1000)).length, 9);
    clock.advance(1000);
    const back = await q.lease(20, LEASE);
    t.same(ids(back).sort(), [...keep].sort(), 'every shard’s expired leases are due again');
    t.ok(
      back.every((i) => i.attempts === 2),
      'attempts kept',
    );
    t.same(ids(await q.dead(10)).sort(), [...die].sort(), 'and those on their last attempt died, on every shard');

    // A shard whose only expired lease dies is reclaimed even when the lease takes nothing from it.
    const lone = idsIn(2, 3, 1, 'lone')[0];
    await q.push([{ id: lone, lane: 'bulk', payload: 0, maxAttempts: 1 }]);
    t.same(ids(await q.lease(1, 100)), [lone]);
    await q.push([{ id: idsIn(0, 3, 1, 'fresh')[0], lane: 'receipt', payload: 1 }]);
    clock.advance(100);
    t.equal((await q.lease(1, LEASE)).length, 1);
    t.equal((await q.stats()).dead, 4, 'the lone expired lease died');
  });

  await t.test('cost: script calls per lease', async (t) => {
    const q = sharded<number>('cost', 3);
    await q.stats(); // the shard counts are read once per layoutTtlMs, not per lease
    calls.clear();
    t.same(await q.lease(10, LEASE), []);
    const empty = Object.fromEntries(calls);
    t.same(empty, { queuePeek: 3 }, 'an empty poll: one peek per shard, no lease call');
    // Enough due items on every shard: the shard first in turn gives the whole batch.
    await q.push([0, 1, 2].flatMap((s) => idsIn(s, 3, 10, `c${s}-`)).map((id, i) => ({ id, lane: 'bulk' as const, payload: i })));
    calls.clear();
    t.equal((await q.lease(10, LEASE)).length, 10);
    const full = Object.fromEntries(calls);
    t.same(full, { queuePeek: 3, queueLease: 1 }, 'a full poll: the peeks and one lease call');
    calls.clear();
    t.equal((await q.lease(25, LEASE)).length, 20);
    t.same(Object.fromEntries(calls), { queuePeek: 3, queueLease: 2 }, 'a poll larger than a shard: a lease call per shard it takes from');
    t.comment(`3 shards: empty poll ${JSON.stringify(empty)}, full poll ${JSON.stringify(full)}`);

    const single = sharded<number>('cost1', 1);
    await single.push([{ id: 'a', lane: 'bulk', payload: 1 }]);
    calls.clear();
    await single.lease(10, LEASE);
    await single.lease(10, LEASE);
    t.same(Object.fromEntries(calls), { queueLease: 2 }, 'one shard: exactly RedisQueue, one call per lease');
  });

  t.test('shardOf: stable, and a count change moves only what it must', async (t) => {
    const keysList = Array.from({ length: 2000 }, (_, i) => `msg_${i}`);
    t.same(
      keysList.map((k) => shardOf(k, 4)),
      keysList.map((k) => shardOf(k, 4)),
    );
    t.same([shardOf('abc', 1), shardOf('abc', 0)], [0, 0]);
    let moved = 0;
    let elsewhere = 0;
    for (const k of keysList) {
      const b = shardOf(k, 4);
      if (shardOf(k, 3) !== b) moved++;
      if (shardOf(k, 3) !== b && b !== 3) elsewhere++;
    }
    t.ok(moved > 300 && moved < 700, `3 → 4 shards moved ${moved} of 2000 (about a quarter)`);
    t.equal(elsewhere, 0, 'a key that moves goes to the new shard');
    t.throws(() => sharded('bad', 0), /shards/);
    t.throws(() => sharded('x'.repeat(99), 2), /invalid queue name/, 'a name too long for its shard names fails at construction');
  });
});

t.test('on a Redis Cluster one queue spreads over the masters', { skip: redisClusterSkip() }, async (t) => {
  const cluster = await startRedisCluster({ basePort: CLUSTER_BASE_PORT });
  t.teardown(() => cluster.stop());
  const client = newRedisClient({ url: cluster.seeds, cluster: true }, { connectionName: 'ferry:test:sharded-queue' });
  client.on('error', () => {});
  await client.connect();
  t.teardown(() => client.quit());
  const keys = new RedisKeys('ferry:');
  const q = new ShardedRedisQueue<number>(defineScripts(client), keys, 'messages', { shards: 6 });
  const lanes: Lane[] = ['receipt', 'priority', 'bulk'];
  await q.push(Array.from({ length: 600 }, (_, i) => ({ id: `m${i}`, lane: lanes[i % 3], payload: i })));

  // Which master serves each shard's slot, and how many items it holds there.
  const ranges = (await client.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
  const perMaster = new Map<number, number>();
  const shardsPerMaster = new Map<number, number>();
  for (let s = 0; s < 6; s++) {
    const meta = keys.queue(queueShardName('messages', s)).meta;
    const slot = Number(await client.cluster('KEYSLOT', meta));
    const master = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1] ?? 0;
    perMaster.set(master, (perMaster.get(master) ?? 0) + (await client.hlen(meta)));
    shardsPerMaster.set(master, (shardsPerMaster.get(master) ?? 0) + 1);
  }
  t.equal([...perMaster.values()].reduce((a, b) => a + b, 0), 600);
  // The shard names are salted onto slots a third apart (queueShardName): 6 shards are 2 per master of 3.
  t.same([...shardsPerMaster.values()], [2, 2, 2], `shards per master: ${JSON.stringify([...shardsPerMaster])}`);
  for (const [master, n] of perMaster) t.ok(n >= 100 && n <= 300, `master :${master} holds ${n} of 600 items (an even share is 200)`);

  const seen = new Set<string>();
  let lastLane = 0;
  let inOrder = true;
  for (let round = 0; round < 100; round++) {
    const got = await q.lease(50, 30_000);
    if (!got.length) break;
    for (const it of got) {
      seen.add(it.id);
      inOrder &&= LANES_ORDER[it.lane] >= lastLane;
      lastLane = LANES_ORDER[it.lane];
    }
    await q.ack(got.map((i) => i.id));
  }
  t.equal(seen.size, 600, 'every item leased, through scripts on every master');
  t.ok(inOrder, 'receipts, then priority, then bulk across the masters');
  t.same((await q.stats()).lanes.map((l) => l.due), [0, 0, 0]);
});

const LANES_ORDER: Record<Lane, number> = { receipt: 0, priority: 1, bulk: 2 };
