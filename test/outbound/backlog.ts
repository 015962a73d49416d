// A backlog of N jobs against a dead provider, then its recovery: what the pipeline holds in memory stays under its
// hold cap throughout (asserted through stats(), not RSS), the open breaker keeps the work in the table (nothing
// claimed), and after the recovery the backlog drains.
import type { Test } from 'tap';
import type { TestBackends } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';
import type { FailOnDemandProvider } from './fail-on-demand-provider.js';
import { countsOf, demoJob, makePipeline, pause, until } from './harness.js';

export interface BacklogOptions {
  n: number;
  /** Jobs to see sent after the recovery (all of them by default). */
  drain?: number;
}

export async function backlogCase(t: Test, env: TestBackends, provider: FailOnDemandProvider, o: BacklogOptions): Promise<void> {
  const { backends, clock } = env;
  const maxConcurrency = 32;
  const threshold = 5;
  const h = makePipeline(backends, clock, provider.url, { provider: { maxConcurrency, breaker: { failureThreshold: threshold, openMs: 10_000 } }, start: false });
  t.teardown(() => h.stop());
  const name = h.adapter.name;
  const tag = `bl${o.n}-`;
  provider.fallback = (r) => (r.to.startsWith(tag) ? { status: 503 } : { status: 200 });
  t.teardown(() => (provider.fallback = () => ({ status: 200 })));

  const started = Date.now();
  const CHUNK = 10_000;
  for (let i = 0; i < o.n; i += CHUNK) {
    const jobs = Array.from({ length: Math.min(CHUNK, o.n - i) }, (_, k) => demoJob(name, `${tag}${i + k}`, 'acc_backlog'));
    // The product's transaction: one multi-row insert per few thousand jobs.
    await h.pipeline.submit(jobs);
  }
  const enqueueMs = Date.now() - started;
  const depth = async () => {
    const c = await countsOf(h.pipeline, name);
    return c.due + c.scheduled + c.claimed;
  };
  t.equal(await depth(), o.n, `${o.n} jobs committed in ${enqueueMs} ms`);

  h.pipeline.start();
  await until('breaker open', async () => h.pipeline.breakerState(name, h.adapter.endpointOf()), (s) => s === 'open');
  await until('in-flight requests settled', async () => h.pipeline.stats().held, (n) => n === 0);
  const failed = provider.matching(tag).length;
  t.ok(failed >= threshold && failed < threshold + maxConcurrency, `${failed} requests reached the dead provider (threshold ${threshold}, ${maxConcurrency} at once)`);
  await pause(300);
  t.equal(provider.matching(tag).length, failed, 'none while the breaker is open');
  const stats = h.pipeline.stats();
  t.equal(stats.held, 0, 'nothing held in memory while the provider is dead');
  t.ok(stats.maxHeld <= stats.holdCap, `at most ${stats.maxHeld} jobs held at once (cap ${stats.holdCap})`);
  t.equal(await depth(), o.n, 'the backlog waits in the table');
  t.equal((await countsOf(h.pipeline, name)).claimed, 0, 'none of it claimed while the breaker is open');

  // Recovery: the provider answers again; the probe closes the breaker and the backlog drains.
  provider.fallback = () => ({ status: 200 });
  clock.advance(10_000);
  const want = o.drain ?? o.n;
  const drainStart = Date.now();
  // The pipeline's own counter while waiting (a count(*) over 100,000 rows every few ms would compete with it for the
  // embedded database); the table is checked once at the end.
  const finished = async () => (await h.pipeline.metrics!.finished.get()).values.reduce((a, v) => a + v.value, 0);
  let peak = 0;
  await until(
    `${want} sent`,
    async () => {
      peak = Math.max(peak, h.pipeline.stats().held);
      // Retried jobs come due as time passes.
      clock.advance(100);
      return finished();
    },
    (n) => n >= want,
    240_000,
  );
  const drainMs = Date.now() - drainStart;
  const sent = (await backends.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbound_jobs WHERE provider = $1 AND state = 'sent'`, [name])).rows[0].n;
  t.ok(sent >= want, `${sent} recorded as sent`);
  const after = h.pipeline.stats();
  t.ok(after.maxHeld <= after.holdCap, `while draining, at most ${after.maxHeld} held at once (cap ${after.holdCap}; sampled peak ${peak})`);
  t.comment(
    `backlog ${o.n} (${backendLabel}): enqueue ${enqueueMs} ms, ${failed} requests to the dead provider, maxHeld ${after.maxHeld}/${after.holdCap}, ` +
      `drained ${want} in ${drainMs} ms`,
  );
}
