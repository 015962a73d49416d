/**
 * Child process of test/store/queue-crash.test.ts: pushes batches into a queue in a loop and prints
 * "ok <batch>" after each push resolved; also leases (never acks) part of each batch, so work in
 * flight is on disk too when the parent SIGKILLs it.
 * Env: PUSHER_DB_URL or PUSHER_DATA_DIR, PUSHER_REDIS_URL, PUSHER_KEY_PREFIX, PUSHER_QUEUE,
 *      PUSHER_BATCH, PUSHER_MAX_BATCHES, PUSHER_MAX_MS.
 */
import { openBackends } from '../../src/store/backends.js';
import { openDb } from '../../src/store/sql/db.js';
import type { Lane } from '../../src/store/types.js';

const env = process.env;
const batch = Number(env.PUSHER_BATCH ?? 50);
const maxBatches = Number(env.PUSHER_MAX_BATCHES ?? 2000);
const deadline = Date.now() + Number(env.PUSHER_MAX_MS ?? 20_000);
const lanes: Lane[] = ['receipt', 'priority', 'bulk'];

const db = await openDb({ url: env.PUSHER_DB_URL || null, dataDir: env.PUSHER_DATA_DIR ?? '', poolSize: 2 });
const backends = await openBackends({ db, redisUrl: env.PUSHER_REDIS_URL || null, redisCluster: env.FERRY_REDIS_CLUSTER === 'true', keyPrefix: env.PUSHER_KEY_PREFIX || undefined });
const q = backends.queue<{ b: number; i: number }>(env.PUSHER_QUEUE ?? 'crash');
process.stdout.write('ready\n');

for (let b = 0; b < maxBatches && Date.now() < deadline; b++) {
  const items = Array.from({ length: batch }, (_, i) => ({ id: `b${b}-i${i}`, lane: lanes[(b + i) % 3], payload: { b, i } }));
  await q.push(items);
  process.stdout.write(`ok ${b}\n`);
  // In flight at the kill: leased, not acked; these must come back after the lease ends.
  await q.lease(Math.floor(batch / 5), 60_000);
}
process.stdout.write('done\n');
await backends.close();
await db.close();
