/**
 * Which backends the suite runs on. CI runs the whole suite twice: once with DATABASE_URL and
 * REDIS_URL pointing at the real services, once with neither (embedded PGlite, SQL queue/OTP,
 * in-process throttle).
 */
export const DATABASE_URL = process.env.DATABASE_URL || null;
export const REDIS_URL = process.env.REDIS_URL || null;
export const backendLabel = `${DATABASE_URL ? 'postgres' : 'pglite'}+${REDIS_URL ? 'redis' : 'local'}`;
