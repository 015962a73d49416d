import { randomBytes } from 'node:crypto';
import { Cluster, type Redis, type RedisOptions } from 'ioredis';
import { newRedisClient, type RedisClient } from '../../src/store/redis/redis-client.js';
import { REDIS_CLUSTER, REDIS_QUEUE_SHARDS, REDIS_URL } from './env.js';

/** A key prefix private to one test, so parallel test files never share Redis keys. */
export function testKeyPrefix(): string {
  return `ferrytest:${randomBytes(5).toString('hex')}:`;
}

export { REDIS_CLUSTER, REDIS_QUEUE_SHARDS, REDIS_URL };

/**
 * A client of the test environment's Redis (a Cluster when FERRY_REDIS_CLUSTER=true), for tests that look at or
 * change keys beside the daemon. Unlike the daemon's own clients it queues commands until connected.
 */
export function testRedisClient(o: Pick<RedisOptions, 'lazyConnect' | 'enableAutoPipelining'> = {}): RedisClient {
  if (!REDIS_URL) throw new Error('testRedisClient: REDIS_URL is not set');
  const client = newRedisClient({ url: REDIS_URL, cluster: REDIS_CLUSTER }, { connectionName: 'ferrytest', offlineQueue: true });
  const options = (client as Cluster).isCluster ? (client as Cluster).options : (client as Redis).options;
  options.lazyConnect = o.lazyConnect ?? false;
  options.enableAutoPipelining = o.enableAutoPipelining ?? false;
  if (!options.lazyConnect) client.connect().catch(() => undefined);
  return client;
}

/** Every key matching the pattern: SCAN on a single Redis, on each master of a Cluster. */
export async function scanKeys(client: RedisClient, pattern: string): Promise<string[]> {
  // A Cluster knows its masters once it is ready (the slots are read at connect).
  if ((client as Cluster).isCluster && client.status !== 'ready') {
    const ready = new Promise((resolve) => client.once('ready', resolve));
    if (client.status === 'wait') await client.connect();
    await ready;
  }
  const nodes: Redis[] = (client as Cluster).isCluster ? (client as Cluster).nodes('master') : [client as Redis];
  const out: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      out.push(...keys);
    } while (cursor !== '0');
  }
  return out;
}
