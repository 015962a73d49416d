/**
 * Child process of the outbound fault test: runs the pipeline (wall clock) against the fail-on-demand provider on
 * jobs the parent enqueued, until the parent SIGKILLs it mid-dispatch.
 * Env: OB_DB_URL or OB_DATA_DIR, OB_REDIS_URL, OB_KEY_PREFIX, OB_PROVIDER_URL, OB_PROVIDER_NAME, OB_CONCURRENCY.
 */
import { openBackends } from '../../src/store/backends.js';
import { openDb } from '../../src/store/sql/db.js';
import { makePipeline } from './harness.js';

const env = process.env;
const db = await openDb({ url: env.OB_DB_URL || null, dataDir: env.OB_DATA_DIR ?? '', poolSize: 4 });
const backends = await openBackends({ db, redisUrl: env.OB_REDIS_URL || null, redisCluster: env.FERRY_REDIS_CLUSTER === 'true', keyPrefix: env.OB_KEY_PREFIX || undefined });
const clock = {
  get now() {
    return Date.now();
  },
  advance(): number {
    throw new Error('the child runs on the wall clock');
  },
};
makePipeline(backends, clock, env.OB_PROVIDER_URL!, { name: env.OB_PROVIDER_NAME!, provider: { maxConcurrency: Number(env.OB_CONCURRENCY ?? 16), sendTimeoutMs: 5000, leaseMs: 30_000 } });
process.stdout.write('ready\n');
// Runs until killed (the parent's bound ends it otherwise).
setTimeout(() => process.exit(3), 60_000);
