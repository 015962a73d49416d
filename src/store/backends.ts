import { MemoryCooldowns } from './local/memory-cooldowns.js';
import { MemoryRateWindows } from './local/memory-rate-windows.js';
import { MemoryThrottle } from './local/memory-throttle.js';
import { SqlOtpStore } from './local/sql-otp-store.js';
import { SqlQueue } from './local/sql-queue.js';
import { RedisCooldowns } from './redis/redis-cooldowns.js';
import { RedisKeys } from './redis/keys.js';
import { newRedisClient, type RedisClient } from './redis/redis-client.js';
import { RedisOtpStore } from './redis/redis-otp-store.js';
import { RedisRateWindows } from './redis/redis-rate-windows.js';
import { RedisThrottle } from './redis/redis-throttle.js';
import { ShardedRedisQueue } from './redis/sharded-redis-queue.js';
import { defineScripts } from './redis/scripts.js';
import { redactUrl, StorageUnavailableError } from './sql/db.js';
import type { Backends, Db, FailureCooldowns, OtpStore, Queue, RateWindows, Throttle } from './types.js';

export interface BackendOptions {
  db: Db;
  /**
   * Redis for the queue, throttles, rate windows, OTPs and failure cool-downs; absent → embedded (SQL queue and OTP
   * store, in-process throttle, rate windows and cool-downs).
   */
  redisUrl?: string | null;
  /** redis.cluster: redisUrl names seed nodes of a Redis Cluster. */
  redisCluster?: boolean;
  /**
   * Shards per Redis queue (redis.queueShards, default 1), each under its own hash tag. Every Redis queue is a
   * ShardedRedisQueue, with one shard too, so that lowering the count back to 1 still serves the higher shards.
   */
  queueShards?: number;
  /** Prefix of every Redis key (default "ferry:"). */
  keyPrefix?: string;
  /** Epoch-ms clock for queue and throttle times, tests only (they move it); on Redis the scripts otherwise go by the server's TIME. */
  clock?: () => number;
  /** Redis connection errors after start (ioredis reconnects by itself); default: ignored. */
  onRedisError?: (err: Error) => void;
}

export async function openBackends(opts: BackendOptions): Promise<Backends> {
  const clock = opts.clock ?? Date.now;
  if (!opts.redisUrl) {
    const queues = new Map<string, Queue<unknown>>();
    const queueOf = (name: string) => {
      let q = queues.get(name);
      if (!q) queues.set(name, (q = new SqlQueue(opts.db, name, { clock })));
      return q;
    };
    return new StoreBackends(
      'local',
      opts.db,
      new MemoryThrottle({ clock }),
      new MemoryRateWindows({ clock }),
      new SqlOtpStore(opts.db, { clock }),
      new MemoryCooldowns({ clock }),
      queueOf,
      null,
    );
  }

  // The Redis scripts go by the server's TIME; a clock given here (tests only) moves their time instead.
  const redisClock = opts.clock ? { clock, scriptClock: clock } : { clock };
  const redis = await connectRedis(opts.redisUrl, opts.redisCluster ?? false, opts.onRedisError);
  const scripted = defineScripts(redis);
  const keys = new RedisKeys(opts.keyPrefix);
  const queues = new Map<string, Queue<unknown>>();
  const queueOf = (name: string) => {
    let q = queues.get(name);
    if (!q) queues.set(name, (q = new ShardedRedisQueue(scripted, keys, name, { ...redisClock, shards: opts.queueShards ?? 1 })));
    return q;
  };
  return new StoreBackends(
    'redis',
    opts.db,
    new RedisThrottle(scripted, keys, redisClock),
    new RedisRateWindows(scripted, keys, redisClock),
    new RedisOtpStore(scripted, keys, redisClock),
    new RedisCooldowns(scripted, keys, redisClock),
    queueOf,
    redis,
  );
}

/** The core's Redis client options (src/store/redis/redis-client.ts, where every connection is made). */
export { REDIS_CLIENT_OPTIONS } from './redis/redis-client.js';

/**
 * Connects eagerly so a wrong URL fails the start, not the first message.
 *
 * While Redis is down after start, commands fail fast instead of waiting: `enableOfflineQueue: false`
 * rejects anything sent while disconnected, and `maxRetriesPerRequest: 1` flushes commands that were
 * in flight when the link dropped after one reconnect attempt (they are not silently replayed later,
 * when their caller has long given up). Callers see an error at once and answer with back-pressure
 * (ESME_RTHROTTLED / 503); ioredis keeps reconnecting in the background and traffic resumes by itself.
 */
async function connectRedis(url: string, cluster: boolean, onError?: (err: Error) => void): Promise<RedisClient> {
  const redis = newRedisClient({ url, cluster }, { connectionName: 'ferry:core:backends' });
  // Without a listener ioredis prints every reconnect error; the owner decides whether to log.
  let lastError: Error | null = null;
  redis.on('error', (err: Error) => {
    lastError = err;
    onError?.(err);
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    // connect() rejects with "Connection is closed"; the socket error says why (ECONNREFUSED, ENOTFOUND, auth).
    const why = (lastError ?? (err as Error)).message;
    throw new StorageUnavailableError(`Redis unreachable at ${redactUrl(url)}: ${why}`, { cause: lastError ?? err });
  }
  return redis;
}

/** The Redis roles on one side (Redis or embedded), plus the caller's db. */
class StoreBackends implements Backends {
  constructor(
    readonly kind: 'redis' | 'local',
    readonly db: Db,
    readonly throttle: Throttle,
    readonly rateWindows: RateWindows,
    readonly otp: OtpStore,
    readonly cooldowns: FailureCooldowns,
    private readonly queueOf: (name: string) => Queue<unknown>,
    private readonly redis: RedisClient | null,
  ) {}

  queue<P = unknown>(name: string): Queue<P> {
    return this.queueOf(name) as Queue<P>;
  }

  async ping(): Promise<void> {
    await this.db.ping();
    if (this.redis) await this.redis.ping();
  }

  /** Closes Redis; the db belongs to the caller. */
  async close(): Promise<void> {
    if (!this.redis) return;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }
}
