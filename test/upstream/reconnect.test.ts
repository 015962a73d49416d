import { Registry } from 'prom-client';
import t from 'tap';
import { CommandStatus } from '../../src/smpp/constants.js';
import { UpstreamMetrics } from '../../src/smpp/upstream/upstream-metrics.js';
import type { SubmitOutcome } from '../../src/smpp/upstream/outbound.js';
import { message, sim, submitUntilDone, testPool, upstreamConfig, waitFor, waitUp } from './upstream-helpers.js';

t.test('binds dropping mid-traffic: in-flight submits come back as retries, binds reconnect, nothing is lost', async (t) => {
  const s = await sim(t, { disconnectAfterSubmits: 25 });
  const { pool, receipts } = testPool(t, [upstreamConfig('a', s.port, { binds: 2, window: 10, reconnect: { initialMs: 50, maxMs: 400 } })]);
  await waitUp(pool, ['a']);
  const msgs = Array.from({ length: 100 }, () => message());
  const results: Array<{ outcome: SubmitOutcome; attempts: SubmitOutcome[] }> = [];
  // 20 workers, like a dispatcher with 20 leases in flight.
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < msgs.length) results.push(await submitUntilDone(pool, msgs[next++], () => ['a'], 15_000));
    }),
  );
  t.equal(results.length, 100, 'every submit resolved (none hanging)');
  t.ok(results.every((r) => r.outcome.kind === 'accepted'), 'every message ends accepted');
  const closedRetries = results.flatMap((r) => r.attempts).filter((a) => a.kind === 'retry' && a.reason === 'bind_closed').length;
  t.ok(s.stats.disconnectsInjected >= 3, `the SMSC dropped binds (${s.stats.disconnectsInjected} times)`);
  t.ok(closedRetries >= s.stats.disconnectsInjected, `the submit a drop swallowed came back as bind_closed (${closedRetries})`);
  const texts = new Set(s.received().map((m) => m.text));
  t.ok(msgs.every((m) => texts.has(m.text!)), 'the SMSC accepted every message at least once');
  const up = pool.get('a')!;
  t.ok(up.binds.every((b) => b.drops >= 1), 'both binds dropped and came back');
  s.setBehaviour({ disconnectAfterSubmits: 0 });
  await waitUp(pool, ['a']);
  // Receipts are at-least-once: one whose deliver_sm_resp a drop swallowed comes again, so count distinct messages.
  const withReceipt = (): number => new Set(receipts.map((r) => r.messageId)).size;
  await waitFor(() => withReceipt() === 100, 5000, 'a receipt for every message').catch(() => undefined);
  t.equal(withReceipt(), 100, 'a receipt for every message');
});

t.test('disconnectAll with submits in flight: they come back as bind_closed at once, not after the response timeout', async (t) => {
  const s = await sim(t, { acceptLatencyMs: 500 });
  const { pool } = testPool(t, [upstreamConfig('a', s.port, { responseTimeoutMs: 5000, reconnect: { initialMs: 50, maxMs: 200 } })]);
  await waitUp(pool, ['a']);
  const started = Date.now();
  const pending = Array.from({ length: 8 }, () => pool.submit(message(), ['a']));
  await waitFor(() => s.stats.submits === 8);
  t.equal(s.disconnectAll(), 1);
  const outcomes = await Promise.all(pending);
  t.ok(Date.now() - started < 2000, 'resolved promptly');
  t.ok(outcomes.every((o) => o.kind === 'retry' && o.reason === 'bind_closed'), 'all 8 requeued as bind_closed');
  t.ok(outcomes.every((o) => o.kind === 'retry' && o.delayMs <= 250), 'with a short delay');
  t.notOk(pool.isUp('a'), 'down until it rebinds');
  await waitUp(pool, ['a'], 2000);
  s.setBehaviour({ acceptLatencyMs: 0 });
  t.equal((await pool.submit(message(), ['a'])).kind, 'accepted', 'bound again and submitting');
});

t.test('a refusing SMSC is retried with exponential backoff (no storm) while traffic fails over', async (t) => {
  const refusing = await sim(t, { refuseBinds: CommandStatus.ESME_RBINDFAIL });
  const good = await sim(t);
  const registry = new Registry();
  const metrics = new UpstreamMetrics(registry);
  const { pool } = testPool(
    t,
    [upstreamConfig('bad', refusing.port, { reconnect: { initialMs: 100, maxMs: 800 } }), upstreamConfig('good', good.port)],
    { metrics },
  );
  await waitUp(pool, ['good']);
  const o = await pool.submit(message(), ['bad', 'good']);
  t.match(o, { kind: 'accepted', upstreamId: 'good' }, 'failover to the second candidate');
  t.ok(pool.capacity(['bad', 'good']), 'capacity through the failover');
  t.match(await pool.submit(message(), ['bad']), { kind: 'retry', reason: 'no_upstream' }, 'no live candidate');
  t.notOk(pool.capacity(['bad']));

  await new Promise((r) => setTimeout(r, 3000));
  // Counted between attempts (waiting out a back-off): read during one, the SMSC and the bind may be an attempt apart.
  const bind = pool.get('bad')!.binds[0];
  for (let i = 0; i < 400 && bind.state !== 'waiting'; i++) await new Promise((r) => setTimeout(r, 5));
  const attempts = refusing.stats.bindsRefused;
  // Delays (equal jitter): 50–100, 100–200, 200–400, 400–800, then 400–800 each: 6 to 10 attempts in ~3 s.
  t.ok(attempts >= 5 && attempts <= 12, `bind attempts in 3 s follow the backoff (${attempts})`);
  t.equal(bind.connectAttempts, attempts, 'every attempt reached the SMSC');
  t.equal(bind.state, 'waiting');
  t.match(bind.lastError, /ESME_RBINDFAIL/);
  const reconnects = (await metrics.reconnects.get()).values.find((v) => v.labels.upstream === 'bad')?.value;
  t.equal(reconnects, attempts - 1, 'reconnect attempts counted');

  refusing.setBehaviour({ refuseBinds: 0 });
  await waitUp(pool, ['bad'], 2000);
  t.match(await pool.submit(message(), ['bad', 'good']), { kind: 'accepted', upstreamId: 'bad' }, 'primary again once it binds');
});

t.test('failover when the first candidate goes down; runtime replace keeps other upstreams and drains in-flight', async (t) => {
  const a = await sim(t, { acceptLatencyMs: 200 });
  const b = await sim(t);
  const { pool } = testPool(t, [upstreamConfig('a', a.port), upstreamConfig('b', b.port)]);
  await waitUp(pool, ['a', 'b']);

  // Replace 'a' (new window) with submits in flight on both upstreams.
  const onA = Array.from({ length: 5 }, () => pool.submit(message(), ['a']));
  const onB = Array.from({ length: 5 }, () => pool.submit(message(), ['b']));
  const oldA = pool.get('a')!;
  t.equal(pool.upsert(upstreamConfig('a', a.port, { window: 20 })), 'replaced');
  t.equal(pool.upsert(upstreamConfig('b', b.port)), 'unchanged');
  t.not(pool.get('a'), oldA, 'a new upstream object took over');
  const outcomes = await Promise.all([...onA, ...onB]);
  t.ok(outcomes.every((o) => o.kind === 'accepted'), 'in-flight submits of the replaced upstream drained, the others untouched');
  await waitUp(pool, ['a']);
  await waitFor(() => oldA.bindsUp === 0, 3000, 'old binds closed');
  t.equal(pool.get('a')!.config.window, 20);

  await a.close();
  await waitFor(() => !pool.isUp('a'), 2000, 'a down');
  t.match(await pool.submit(message(), ['a', 'b']), { kind: 'accepted', upstreamId: 'b' }, 'failover to b');
  t.equal(pool.remove('b'), true);
  t.match(await pool.submit(message(), ['a', 'b']), { kind: 'retry', reason: 'no_upstream' });
  t.same(pool.ids(), ['a']);
});
