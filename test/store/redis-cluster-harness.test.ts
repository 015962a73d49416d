// The Redis Cluster the cluster tests run against (scripts/ci/redis-cluster.sh through test/helpers/redis-cluster.ts)
// is what it claims: three masters with a replica each serving all 16384 slots, reachable through ioredis' Cluster
// client; a killed master's replica takes over its slots with the data it had acknowledged, and the killed node comes
// back as a replica. Its own base port (16620), so it never meets the CI cluster on 16600.
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { Cluster } from 'ioredis';
import t from 'tap';
import { redisClusterSkip, startRedisCluster } from '../helpers/redis-cluster.js';

const BASE_PORT = 16620;
const KEYS_PER_TAG = 20;

/** CLUSTER SLOTS as [from, to, [host, port, id], ...replicas]. */
type SlotRange = [number, number, ...[string, number, string][]];

interface Coverage {
  slots: number;
  /** Master port → how many slots it serves. */
  masters: Map<number, number>;
  /** Master port → its replicas' ports. */
  replicasOf: Map<number, number[]>;
  ownerOf(slot: number): number;
}

async function coverage(client: Cluster): Promise<Coverage> {
  const ranges = (await client.cluster('SLOTS')) as unknown as SlotRange[];
  const masters = new Map<number, number>();
  const replicasOf = new Map<number, number[]>();
  let slots = 0;
  for (const [from, to, master, ...replicas] of ranges) {
    slots += to - from + 1;
    masters.set(master[1], (masters.get(master[1]) ?? 0) + to - from + 1);
    replicasOf.set(
      master[1],
      replicas.map((r) => r[1]),
    );
  }
  const ownerOf = (slot: number): number => ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1] ?? 0;
  return { slots, masters, replicasOf, ownerOf };
}

t.test('a Redis Cluster of three masters with a replica each, and a failover', { skip: redisClusterSkip() }, async (t) => {
  const cluster = await startRedisCluster({ basePort: BASE_PORT });
  const startupNodes = cluster.seeds.split(',').map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) }));
  const client = new Cluster(startupNodes, { redisOptions: { connectTimeout: 2000 }, slotsRefreshTimeout: 2000 });
  // The client first: quit() could wait for a node that is down; disconnect() does not.
  t.teardown(async () => {
    client.disconnect();
    await cluster.stop();
  });
  await Promise.race([
    new Promise((resolve) => client.once('ready', resolve)),
    new Promise((_, reject) => setTimeout(() => reject(new Error('the Cluster client was not ready within 15 s')), 15_000).unref()),
  ]);

  const masters = await cluster.masters();
  const replicas = await cluster.replicas();
  t.equal(masters.length, 3, 'three masters');
  t.equal(replicas.length, 3, 'three replicas');
  t.same(
    masters.map((m) => replicas.filter((r) => r.masterPort === m.port).length),
    [1, 1, 1],
    'each master has one replica',
  );
  t.equal(new Set([...masters, ...replicas].map((n) => n.pid)).size, 6, 'six processes');

  const before = await coverage(client);
  t.equal(before.slots, 16384, 'every slot is served');
  t.same([...before.masters.keys()].sort(), masters.map((m) => m.port), 'by the three masters (as the client sees them)');
  for (const [port, served] of before.replicasOf) t.equal(served.length, 1, `master ${port}: one replica in CLUSTER SLOTS`);

  // One hash tag per master: every key of a tag lives in one slot, so MGET works and a tag's keys die with its master.
  const tagOf = new Map<number, string>();
  for (let i = 0; i < 1000 && tagOf.size < 3; i++) {
    const tag = `ferry-harness-${i}`;
    const owner = before.ownerOf(Number(await client.cluster('KEYSLOT', `{${tag}}`)));
    if (!tagOf.has(owner)) tagOf.set(owner, tag);
  }
  t.equal(tagOf.size, 3, 'a hash tag on each master');
  const keysOf = (tag: string): string[] => Array.from({ length: KEYS_PER_TAG }, (_, i) => `{${tag}}:k${i}`);
  const valueOf = (key: string): string => `v:${key}`;
  for (const tag of tagOf.values()) {
    const pipeline = client.pipeline();
    for (const key of keysOf(tag)) pipeline.set(key, valueOf(key));
    await pipeline.exec();
  }
  for (const [port, tag] of tagOf) t.same(await client.mget(...keysOf(tag)), keysOf(tag).map(valueOf), `read back from master ${port}`);
  // WAIT on the connections that wrote: each master's replica has acknowledged every write before a master dies.
  for (const node of client.nodes('master')) t.equal(Number(await node.call('WAIT', '1', '5000')), 1, `${node.options.port}: the replica has the writes`);

  const victim = masters[0].port;
  const replicaOfVictim = replicas.find((r) => r.masterPort === victim)!.port;
  const failover = await cluster.killMaster(victim);
  t.comment(`failover: master ${failover.killed} killed, replica ${failover.promoted} serving its slots after ${failover.seconds} s`);
  t.equal(failover.killed, victim, 'the master asked for was killed');
  t.equal(failover.promoted, replicaOfVictim, 'its replica took over');

  const mastersAfter = await cluster.masters();
  t.same(
    mastersAfter.map((m) => m.port),
    masters
      .map((m) => (m.port === victim ? replicaOfVictim : m.port))
      .sort((a, b) => a - b),
    'three masters: the survivors and the promoted replica',
  );
  const after = await coverage(client);
  t.equal(after.slots, 16384, 'every slot is served again');
  t.equal(after.masters.get(replicaOfVictim), before.masters.get(victim), 'the promoted replica serves the killed master\'s slots');
  t.notOk(after.masters.has(victim), 'the killed master serves nothing');

  // The same client, never told about the failover.
  for (const [port, tag] of tagOf) {
    const label = port === victim ? `written to the killed master ${port}, read from the promoted replica` : `written to the surviving master ${port}`;
    t.same(await client.mget(...keysOf(tag)), keysOf(tag).map(valueOf), label);
  }
  const victimTag = tagOf.get(victim)!;
  await client.set(`{${victimTag}}:after`, 'written after the failover');
  t.equal(await client.get(`{${victimTag}}:after`), 'written after the failover', 'the promoted replica takes writes');

  await cluster.restartNode(victim);
  const replicasAfter = await cluster.replicas();
  t.same(
    replicasAfter.find((r) => r.port === victim)?.masterPort,
    replicaOfVictim,
    'the killed node is back, as the replica of the one that took over',
  );
  t.equal(replicasAfter.length, 3, 'three replicas again');
  t.same((await coverage(client)).replicasOf.get(replicaOfVictim), [victim], 'CLUSTER SLOTS lists it as the new master\'s replica');

  client.disconnect();
  await cluster.stop();
  t.notOk(existsSync(`/tmp/ferry-redis-cluster-${BASE_PORT}`), 'stop() removed the cluster\'s folder');
  const stillUp = await Promise.all(
    cluster.ports.map(
      (port) =>
        new Promise<boolean>((resolve) => {
          const socket = connect({ host: '127.0.0.1', port }, () => (socket.destroy(), resolve(true)));
          socket.on('error', () => resolve(false));
        }),
    ),
  );
  t.same(stillUp, [false, false, false, false, false, false], 'no node answers after stop()');
});
