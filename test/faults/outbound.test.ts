// The outbound pipeline under faults: a process killed mid-dispatch (SIGKILL while requests are in flight and results
// unrecorded) loses nothing and repeats at most what it held. This measures the duplicate window docs/outbound.md
// states. (The provider-down backlog of 100,000 is in test/outbound/backlog.test.ts; the in-process crash, breaker and
// Retry-After cases in test/outbound/pipeline.test.ts.)
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { openBackends } from '../../src/store/backends.js';
import { handedStorage, testClock } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';
import { REDIS_URL } from '../helpers/redis.js';
import { FailOnDemandProvider } from '../outbound/fail-on-demand-provider.js';
import { demoJob, makePipeline, providerName, until } from '../outbound/harness.js';

const CHILD = fileURLToPath(new URL('../outbound/crash-child.ts', import.meta.url));

t.test(`SIGKILL mid-dispatch: every job sent, duplicates at most what the killed process held (${backendLabel})`, async (t) => {
  const provider = await FailOnDemandProvider.start();
  t.teardown(() => provider.close());
  // Answers take a while, so requests are in flight (and answered ones await their record) when the kill comes.
  provider.fallback = () => ({ status: 200, delayMs: 15 });
  const storage = await handedStorage(t);
  const name = providerName('kill');
  const N = 2000;
  const CONCURRENCY = 16;
  {
    const clock = testClock();
    const backends = await openBackends({ db: storage.db, redisUrl: REDIS_URL, keyPrefix: storage.keyPrefix ?? undefined });
    const h = makePipeline(backends, clock, provider.url, { name, start: false });
    await h.pipeline.submit(Array.from({ length: N }, (_, i) => demoJob(name, `kill-${i}`)));
    h.adapter.close();
    await backends.close();
  }
  // PGlite: the child must own the data folder alone.
  await storage.release();

  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: {
      ...process.env,
      ...storage.env('OB_'),
      OB_PROVIDER_URL: provider.url,
      OB_PROVIDER_NAME: name,
      OB_CONCURRENCY: String(CONCURRENCY),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_c, s) => resolve(s)));
  // Kill once a third of the jobs reached the provider.
  await until('the child sending', async () => provider.requests.length, (n) => n >= N / 3 || child.exitCode !== null, 60_000);
  child.kill('SIGKILL');
  const signal = await exited;
  t.equal(signal, 'SIGKILL', `killed mid-run ${stderr ? `(stderr: ${stderr.slice(0, 300)})` : ''}`);
  const beforeRestart = provider.requests.length;

  const db = await storage.reopen();
  // Past every lease and claim the child took.
  const clock = testClock(Date.now() + 60_000);
  const backends = await storage.backends(t, clock);
  provider.fallback = () => ({ status: 200 });
  const h = makePipeline(backends, clock, provider.url, { name, provider: { maxConcurrency: CONCURRENCY } });
  t.teardown(() => h.stop());
  const sent = async () => Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbound_jobs WHERE provider = $1 AND state = 'sent'`, [name])).rows[0].n);
  await until('every job sent after the restart', sent, (n) => n === N, 120_000);

  const counts = new Map<string, number>();
  for (const r of provider.requests) counts.set(r.to, (counts.get(r.to) ?? 0) + 1);
  const duplicates = [...counts.values()].reduce((a, n) => a + n - 1, 0);
  const holdCap = 4 * CONCURRENCY;
  t.equal(counts.size, N, 'every job reached the provider');
  t.ok(duplicates <= holdCap, `${duplicates} duplicates: at most the ${holdCap} jobs the killed process could hold`);
  t.ok([...counts.values()].every((n) => n <= 2), 'none sent more than twice');
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(DISTINCT job_id)::int AS n FROM outbound_history WHERE (detail->>'possibleDuplicate')::bool AND job_id IN (SELECT id FROM outbound_jobs WHERE provider = $1)`,
    [name],
  );
  t.ok(rows[0].n >= duplicates, `${rows[0].n} jobs flagged possibleDuplicate cover the ${duplicates} the provider saw twice`);
  t.comment(`outbound SIGKILL (${backendLabel}): ${beforeRestart} requests before the kill, ${duplicates} duplicates after the restart (bound ${holdCap}), ${rows[0].n} flagged, 0 lost`);
});
