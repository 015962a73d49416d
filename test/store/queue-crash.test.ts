import { fileURLToPath } from 'node:url';
import t from 'tap';
import { handedStorage, testClock } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';
import { runUntilKilled } from '../helpers/kill-after.js';

const PUSHER = fileURLToPath(new URL('../helpers/queue-pusher.ts', import.meta.url));
const BATCH = 50;
// The kill comes once this many batches were acknowledged (or when the child ends by itself).
const KILL_AFTER = 30;

t.test(`SIGKILL while items are queued loses none of them (${backendLabel})`, async (t) => {
  const storage = await handedStorage(t);
  // PGlite: the child must own the data folder alone.
  await storage.release();

  const run = await runUntilKilled(
    PUSHER,
    {
      ...storage.env('PUSHER_'),
      PUSHER_QUEUE: 'crash',
      PUSHER_BATCH: String(BATCH),
      PUSHER_MAX_BATCHES: '5000',
      PUSHER_MAX_MS: '30000',
    },
    KILL_AFTER,
  );
  const { signal, stderr } = run;
  const acked = run.acked.map(Number);
  t.equal(signal, 'SIGKILL', `the pusher was killed mid-run ${stderr ? `(stderr: ${stderr.slice(0, 500)})` : ''}`);
  t.ok(acked.length >= KILL_AFTER, `${acked.length} batches acknowledged before the kill`);

  await storage.reopen();
  // Past every lease the child took, so work it had in flight is due again.
  const clock = testClock(Date.now() + 120_000);
  const backends = await storage.backends(t, clock);
  const q = backends.queue<{ b: number; i: number }>('crash');

  const expected = new Set<string>();
  for (const b of acked) for (let i = 0; i < BATCH; i++) expected.add(`b${b}-i${i}`);
  const seen = new Map<string, number>();
  for (;;) {
    const got = await q.lease(500, 60_000);
    if (got.length === 0) break;
    for (const it of got) {
      seen.set(it.id, (seen.get(it.id) ?? 0) + 1);
      if (`b${it.payload.b}-i${it.payload.i}` !== it.id) t.fail(`payload of ${it.id} does not match`);
    }
  }
  const missing = [...expected].filter((id) => !seen.has(id));
  t.same(missing.slice(0, 10), [], `every acknowledged item is there (${expected.size} expected, ${missing.length} missing)`);
  t.equal([...seen.values()].filter((n) => n !== 1).length, 0, 'and leased exactly once');
});
