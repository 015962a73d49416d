import { Registry } from 'prom-client';
import t from 'tap';
import { CommandStatus } from '../../src/smpp/constants.js';
import { SmppServer } from '../../src/smpp/server.js';
import { MemoryThrottle } from '../../src/store/local/memory-throttle.js';
import type { SubmitOutcome } from '../../src/smpp/upstream/outbound.js';
import { UpstreamMetrics } from '../../src/smpp/upstream/upstream-metrics.js';
import { message, sim, submitUntilDone, testPool, upstreamConfig, waitFor, waitUp, type Teardown } from './upstream-helpers.js';

/** An SMSC that answers every submit_sm with one fixed status. */
async function fixedStatusSmsc(t: Teardown, status: number): Promise<SmppServer> {
  const server = new SmppServer({ onRequest: (pdu) => (pdu.command === 'submit_sm' ? { command_status: status, message_id: status ? '' : 'abc' } : {}) });
  await server.listen(0, '127.0.0.1');
  t.teardown(() => server.close());
  return server;
}

t.test('the window per bind is never exceeded; capacity() is false while every window is full', async (t) => {
  const s = await sim(t, { acceptLatencyMs: 300 });
  const { pool } = testPool(t, [upstreamConfig('a', s.port, { binds: 2, window: 5 })]);
  await waitUp(pool, ['a']);
  const up = pool.get('a')!;
  t.ok(pool.capacity(['a']), 'room before');
  let maxPerBind = 0;
  const sampler = setInterval(() => {
    for (const b of up.binds) maxPerBind = Math.max(maxPerBind, b.windowInUse);
  }, 2);
  const pending = Array.from({ length: 30 }, () => pool.submit(message(), ['a']));
  await new Promise((r) => setTimeout(r, 100));
  t.equal(s.stats.submits, 10, 'the SMSC holds exactly 2 binds × window 5');
  t.equal(up.windowInUse, 10);
  t.notOk(pool.capacity(['a']), 'no capacity while every window is full');
  const outcomes = await Promise.all(pending);
  clearInterval(sampler);
  t.equal(outcomes.filter((o) => o.kind === 'accepted').length, 10);
  const pushedBack = outcomes.filter((o) => o.kind === 'retry' && o.reason === 'window_full');
  t.equal(pushedBack.length, 20, 'the rest pushed back at once, not queued');
  t.ok(maxPerBind <= 5, `at most 5 in flight per bind (saw ${maxPerBind})`);
  t.equal(maxPerBind, 5, 'and the window was used fully');
  await waitFor(() => pool.capacity(['a']), 2000, 'capacity back');
});

t.test('ESME_RTHROTTLED → retry with a delay, and the upstream pauses before sending more', async (t) => {
  const s = await sim(t, { throttleRatio: 1 });
  const registry = new Registry();
  const metrics = new UpstreamMetrics(registry);
  const { pool } = testPool(t, [upstreamConfig('a', s.port)], { metrics, upstream: { throttledPauseMs: 300 } });
  await waitUp(pool, ['a']);
  const o = await pool.submit(message(), ['a']);
  t.match(o, { kind: 'retry', reason: 'throttled', status: CommandStatus.ESME_RTHROTTLED, upstreamId: 'a' });
  t.ok(o.kind === 'retry' && o.delayMs >= 500, 'retry delay of at least half the 1 s base');
  t.notOk(pool.capacity(['a']), 'paused: no capacity');
  const during = await pool.submit(message(), ['a']);
  t.match(during, { kind: 'retry', reason: 'throttled' });
  t.equal(s.stats.submits, 1, 'nothing sent during the pause');
  s.setBehaviour({ throttleRatio: 0 });
  await waitFor(() => pool.capacity(['a']), 2000, 'pause over');
  t.equal((await pool.submit(message(), ['a'])).kind, 'accepted');
  const throttled = (await metrics.throttled.get()).values.find((v) => v.labels.by === 'upstream');
  t.equal(throttled?.value, 1, 'counted as throttled by the upstream');
  const retries = (await metrics.retries.get()).values.find((v) => v.labels.reason === 'throttled');
  t.equal(retries?.value, 2);
});

t.test('ESME_RMSGQFUL → retry; a permanent error → failed with that status', async (t) => {
  const full = await fixedStatusSmsc(t, CommandStatus.ESME_RMSGQFUL);
  const bad = await fixedStatusSmsc(t, CommandStatus.ESME_RINVDSTADR);
  const { pool } = testPool(t, [upstreamConfig('full', full.port), upstreamConfig('bad', bad.port)]);
  await waitUp(pool, ['full', 'bad']);
  t.match(await pool.submit(message(), ['full']), { kind: 'retry', reason: 'queue_full', status: CommandStatus.ESME_RMSGQFUL });
  const failed = await pool.submit(message(), ['bad']);
  t.same(failed, { kind: 'failed', status: CommandStatus.ESME_RINVDSTADR, statusName: 'ESME_RINVDSTADR', upstreamId: 'bad', parts: [] });
  t.equal((await pool.submit(message({ text: 'x'.repeat(40_000) }), ['bad'])).kind, 'failed', 'a text over 255 parts fails without being sent');
});

t.test('a submit that gets no response comes back as a timeout retry', async (t) => {
  const s = await sim(t, { neverRespond: true });
  const { pool } = testPool(t, [upstreamConfig('a', s.port, { responseTimeoutMs: 200 })]);
  await waitUp(pool, ['a']);
  const started = Date.now();
  const outcomes = await Promise.all(Array.from({ length: 3 }, () => pool.submit(message(), ['a'])));
  for (const o of outcomes) t.match(o, { kind: 'retry', reason: 'timeout' });
  t.ok(Date.now() - started < 2000, 'resolved by the response timeout, not hanging');
  t.equal(pool.get('a')!.windowInUse, 0, 'window slots released');
});

t.test('maxTps is respected (token bucket shared through the Throttle interface)', async (t) => {
  const s = await sim(t);
  const maxTps = 40;
  const { pool } = testPool(t, [upstreamConfig('a', s.port, { maxTps, window: 100 })], {
    throttle: new MemoryThrottle(),
    upstream: { maxTpsWaitMs: 500 },
  });
  await waitUp(pool, ['a']);
  const started = Date.now();
  const results = await Promise.all(Array.from({ length: 80 }, () => submitUntilDone(pool, message(), () => ['a'], 10_000)));
  const elapsed = Date.now() - started;
  t.ok(results.every((r) => r.outcome.kind === 'accepted'), 'all 80 accepted');
  t.ok(
    results.some((r) => r.attempts.some((a: SubmitOutcome) => a.kind === 'retry' && a.reason === 'tps_limit')),
    'submits beyond the wait were handed back as tps_limit',
  );
  const times = s.received().map((m) => m.receivedAt).sort((a, b) => a - b);
  t.equal(times.length, 80);
  let worst = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i] - times[j] >= 1000) j++;
    worst = Math.max(worst, i - j + 1);
  }
  // rate 40/s with a burst of 2 (50 ms of traffic); one more for arrival jitter over loopback.
  t.ok(worst <= maxTps + 3, `at most ${maxTps + 3} submits in any second at the SMSC (saw ${worst})`);
  t.ok(elapsed >= 1500, `80 submits at 40/s take about 2 s (took ${elapsed} ms)`);
});
