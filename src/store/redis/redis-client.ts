import { Redis, type RedisOptions } from 'ioredis';

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
  // write: one syscall instead of one per command.
  enableAutoPipelining: true,
};

/** What a caller may choose per client: its connection name and whether commands wait while disconnected. */
export interface RedisClientChoice {
  /** CLIENT SETNAME, e.g. `ferry:shortlink:pubsub` (seen in CLIENT LIST). */
  connectionName: string;
  /** Queue commands sent while disconnected (default false: they fail at once). A subscriber needs it. */
  offlineQueue?: boolean;
}

/**
 * The one place a Redis connection is made: the core's option set plus the caller's name. Returns a lazy client (the
 * caller connects). Written so a Cluster can be returned from here later (one option set, one constructor).
 */
export function newRedisClient(url: string, choice: RedisClientChoice): Redis {
  return new Redis(url, { ...REDIS_CLIENT_OPTIONS, connectionName: choice.connectionName, enableOfflineQueue: choice.offlineQueue ?? false });
}
