import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

/** A client of a single Redis or of a Redis Cluster: the daemon's code speaks to either through the same commands. */
export type RedisClient = Redis | Cluster;

/** Where the daemon's Redis is: a URL (a Cluster: one or more seed nodes, comma-separated) and whether it is a Cluster. */
export interface RedisTarget {
  url: string;
  /** redis.cluster (FERRY_REDIS_CLUSTER): the URL names seed nodes of a Redis Cluster. */
  cluster: boolean;
}

/** Every Redis client of the daemon: fail fast while Redis is down, never queue commands for later. */
export const REDIS_CLIENT_OPTIONS: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: 5000,
  // A command that gets no answer (server hung, link black-holed) fails instead of hanging its caller.
  commandTimeout: 10_000,
  retryStrategy: (times) => Math.min(100 * times, 2000),
  // Commands issued in the same tick (every concurrent request's throttle, queue and OTP calls) leave in one
  // write: one syscall instead of one per command. On a Cluster they are grouped per node.
  enableAutoPipelining: true,
};

/** What a caller may choose per client: its connection name and whether commands wait while disconnected. */
export interface RedisClientChoice {
  /** CLIENT SETNAME, e.g. `ferry:shortlink:pubsub` (seen in CLIENT LIST). */
  connectionName: string;
  /** Queue commands sent while disconnected (default false: they fail at once). A subscriber needs it. */
  offlineQueue?: boolean;
  /** On a Cluster: one subscriber connection per master for SSUBSCRIBE (sharded pub/sub). */
  shardedSubscriber?: boolean;
}

/**
 * The one place a Redis connection is made: the core's option set plus the caller's name. Returns a lazy client (the
 * caller connects): a `Redis`, or a `Cluster` when the target is one.
 */
export function newRedisClient(target: RedisTarget | string, choice: RedisClientChoice): RedisClient {
  const t = typeof target === 'string' ? { url: target, cluster: false } : target;
  const offline = choice.offlineQueue ?? false;
  if (!t.cluster) return new Redis(t.url, { ...REDIS_CLIENT_OPTIONS, connectionName: choice.connectionName, enableOfflineQueue: offline });
  const { seeds, auth } = clusterSeeds(t.url);
  const { lazyConnect, enableAutoPipelining, retryStrategy, enableOfflineQueue: _o, ...perNode } = REDIS_CLIENT_OPTIONS;
  const options: ClusterOptions = {
    lazyConnect,
    enableAutoPipelining,
    enableOfflineQueue: offline,
    clusterRetryStrategy: retryStrategy as ClusterOptions['clusterRetryStrategy'],
    // While a master is lost and its replica not yet promoted, commands for its slots are retried for about this long
    // (retryDelayOnFailover × maxRedirections) before they fail and the caller backs off.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    // A node that restarts without slot changes (a replica) is reconnected; masters move by MOVED and the refresh.
    clusterNodeRetryStrategy: (times) => Math.min(100 * times, 2000),
    slotsRefreshTimeout: 2000,
    shardedSubscribers: choice.shardedSubscriber ?? false,
    redisOptions: { ...perNode, ...auth, connectionName: choice.connectionName },
  };
  return new Cluster(seeds, options);
}

/**
 * Seed nodes of a Cluster from `redis://[user:pass@]host:port[,host:port|,redis://host:port…]`; the credentials of the
 * first URL apply to every node. `rediss://` turns TLS on.
 */
export function clusterSeeds(url: string): { seeds: { host: string; port: number }[]; auth: Pick<RedisOptions, 'username' | 'password' | 'tls'> } {
  const parts = url
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!parts.length) throw new Error('redis.url names no Cluster seed node');
  const first = new URL(/^rediss?:\/\//.test(parts[0]) ? parts[0] : `redis://${parts[0]}`);
  const auth: Pick<RedisOptions, 'username' | 'password' | 'tls'> = {};
  if (first.username) auth.username = decodeURIComponent(first.username);
  if (first.password) auth.password = decodeURIComponent(first.password);
  if (first.protocol === 'rediss:') auth.tls = {};
  const seeds = parts.map((p) => {
    const u = /^rediss?:\/\//.test(p) ? new URL(p) : new URL(`redis://${p}`);
    return { host: u.hostname, port: u.port ? Number(u.port) : 6379 };
  });
  return { seeds, auth };
}

/** Whether the client is a Cluster (commands that must reach every master, sharded pub/sub). */
export function isCluster(client: RedisClient): client is Cluster {
  return (client as Cluster).isCluster === true;
}
