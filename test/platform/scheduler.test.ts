import t from 'tap';
import pino from 'pino';
import { Registry } from 'prom-client';
import { RedisJobLease, SqlJobLease, type JobLease } from '../../src/platform/job-lease.js';
import { Scheduler, type JobSpec } from '../../src/platform/scheduler.js';
import { testDb } from '../helpers/db.js';
import { REDIS_URL, testKeyPrefix, testRedisClient } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const log = pino({ level: 'silent' });

/** Leases to test: the SQL one always (Postgres or the embedded database), the Redis one when REDIS_URL is set. */
async function leases(): Promise<Array<{ name: string; lease: JobLease; done(): Promise<void> }>> {
  const db = await testDb();
  const out = [{ name: `sql (${db.url ? 'postgres' : 'pglite'})`, lease: new SqlJobLease(db.db) as JobLease, done: () => db.cleanup() }];
  if (REDIS_URL) {
    const redis = testRedisClient();
    out.push({ name: 'redis', lease: new RedisJobLease(redis, testKeyPrefix()), done: async () => void redis.disconnect() });
  }
  return out;
}

async function counterValue(registry: Registry, job: string, outcome: string): Promise<number> {
  const m = await registry.getSingleMetric('ferry_job_runs_total')!.get();
  return m.values.find((v) => v.labels.job === job && v.labels.outcome === outcome)?.value ?? 0;
}

t.test('job lease contract', async (t) => {
  for (const { name, lease, done } of await leases()) {
    t.teardown(done);
    t.test(name, async (t) => {
      t.ok(await lease.take('a', 'h1', 60_000), 'a free lease is taken');
      t.notOk(await lease.take('a', 'h2', 60_000), 'another holder is refused while it lasts');
      t.ok(await lease.take('a', 'h1', 60_000), 'the holder renews it');
      t.ok(await lease.take('b', 'h2', 60_000), 'leases are per name');
      await lease.release('a', 'h2');
      t.notOk(await lease.take('a', 'h2', 60_000), "releasing another's lease does nothing");
      await lease.release('a', 'h1');
      t.ok(await lease.take('a', 'h2', 60_000), 'a released lease is taken by another');
      t.ok(await lease.take('c', 'h1', 1), 'a short lease');
      await new Promise((r) => setTimeout(r, 20));
      t.ok(await lease.take('c', 'h2', 60_000), 'a lease that ran out is taken by another (a crashed holder)');
    });
  }
});

t.test('two schedulers on one store: a cluster job runs on one at a time, an instance job on both', async (t) => {
  for (const { name, lease, done } of await leases()) {
    t.teardown(done);
    t.test(name, async (t) => {
      const runs = { a: 0, b: 0 };
      const instanceRuns = { a: 0, b: 0 };
      let concurrent = 0;
      let maxConcurrent = 0;
      const clusterJob = (who: 'a' | 'b'): JobSpec => ({
        name: 'test.cluster',
        everyMs: 10,
        scope: 'cluster',
        run: async () => {
          concurrent++;
          maxConcurrent = Math.max(maxConcurrent, concurrent);
          runs[who]++;
          await new Promise((r) => setTimeout(r, 5));
          concurrent--;
        },
      });
      const instanceJob = (who: 'a' | 'b'): JobSpec => ({ name: 'test.instance', everyMs: 10, scope: 'instance', run: async () => void instanceRuns[who]++ });
      const registry = new Registry();
      const a = new Scheduler({ lease, log, registry });
      const b = new Scheduler({ lease, log });
      a.add(clusterJob('a'));
      a.add(instanceJob('a'));
      b.add(clusterJob('b'));
      b.add(instanceJob('b'));
      a.start();
      await waitFor(() => runs.a >= 3, 10_000, 'the first scheduler runs the cluster job');
      b.start();
      await waitFor(() => instanceRuns.a >= 3 && instanceRuns.b >= 3, 10_000, 'the instance job runs on both');
      await waitFor(() => runs.a >= 10, 10_000, 'the holder keeps running it');
      t.equal(runs.b, 0, 'the other scheduler never ran the cluster job while the holder lived');
      t.equal(maxConcurrent, 1, 'never two runs at once');
      t.ok((await counterValue(registry, 'test.cluster', 'ok')) >= 9, 'runs are counted');
      await a.stop();
      const before = runs.a;
      await waitFor(() => runs.b >= 3, 10_000, 'the other scheduler takes the job over once the holder stopped');
      t.equal(runs.a, before, 'a stopped scheduler runs nothing');
      await b.stop();
      t.equal(maxConcurrent, 1, 'never two runs at once');
    });
  }
});

t.test('a job never overlaps itself; errors are logged and counted; stop waits for the running job', async (t) => {
  const db = await testDb();
  t.teardown(() => db.cleanup());
  const registry = new Registry();
  const s = new Scheduler({ lease: new SqlJobLease(db.db), log, registry });
  let running = 0;
  let overlapped = false;
  let calls = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let finished = false;
  let aborted = false;
  s.add({
    name: 'test.slow',
    everyMs: 1,
    scope: 'instance',
    runAtStart: true,
    run: async (signal) => {
      calls++;
      if (running) overlapped = true;
      running++;
      if (calls === 1) {
        await gate;
        aborted = signal.aborted;
        finished = true;
      }
      running--;
      if (calls === 2) throw new Error('boom');
    },
  });
  s.start();
  await waitFor(() => calls === 1);
  await new Promise((r) => setTimeout(r, 30));
  t.equal(calls, 1, 'no second run while the first one runs');
  release();
  await waitFor(() => calls >= 3, 5000, 'it runs again after');
  
  t.notOk(overlapped);
  t.equal(await counterValue(registry, 'test.slow', 'error'), 1, 'the failed run is counted');

  // stop() waits for a run in progress and aborts its signal.
  const s2 = new Scheduler({ lease: new SqlJobLease(db.db), log });
  let release2!: () => void;
  const gate2 = new Promise<void>((r) => (release2 = r));
  let started2 = false;
  s2.add({ name: 'test.stop', everyMs: 1, scope: 'cluster', runAtStart: true, run: async (signal) => ((started2 = true), await gate2, (aborted = signal.aborted)) });
  s2.start();
  await waitFor(() => started2);
  let stopped = false;
  const stopping = s2.stop().then(() => (stopped = true));
  await new Promise((r) => setTimeout(r, 20));
  t.notOk(stopped, 'stop waits for the running job');
  release2();
  await stopping;
  t.ok(aborted, 'the running job saw the abort');
  t.ok(finished);
  await s.stop();
  t.throws(() => s.add({ name: 'test.slow', everyMs: 1, scope: 'instance', run: async () => 0 }), /declared twice/);
});
