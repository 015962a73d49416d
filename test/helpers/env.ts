/**
 * Which backends the suite runs on. CI runs the whole suite twice: once with DATABASE_URL and
 * REDIS_URL pointing at the real services, once with neither (embedded PGlite, SQL queue/OTP,
 * in-process throttle).
 */
export const DATABASE_URL = process.env.DATABASE_URL || null;
export const REDIS_URL = process.env.REDIS_URL || null;
export const backendLabel = `${DATABASE_URL ? 'postgres' : 'pglite'}+${REDIS_URL ? 'redis' : 'local'}`;
/** FERRY_REDIS_CLUSTER=true: REDIS_URL names seed nodes of a Redis Cluster (CI runs the Redis-facing suites on one). */
export const REDIS_CLUSTER = process.env.FERRY_REDIS_CLUSTER === 'true';
/** FERRY_REDIS_QUEUE_SHARDS: shards per Redis queue (the CI run on a Cluster spreads each queue over its masters). */
export const REDIS_QUEUE_SHARDS = Number(process.env.FERRY_REDIS_QUEUE_SHARDS) || undefined;
