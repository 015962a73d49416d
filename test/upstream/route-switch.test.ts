import { Registry } from 'prom-client';
import t from 'tap';
import { Router, type RouteSwitchEvent } from '../../src/routing/router.js';
import type { SubmitOutcome } from '../../src/smpp/upstream/outbound.js';
import { UpstreamMetrics } from '../../src/smpp/upstream/upstream-metrics.js';
import { message, sim, submitUntilDone, testPool, upstreamConfig, waitFor, waitUp } from './upstream-helpers.js';

t.test('route switch under load: every message accepted by exactly one upstream, later ones on the new upstream', async (t) => {
  const a = await sim(t, { acceptLatencyMs: 2 });
  const b = await sim(t, { acceptLatencyMs: 2 });
  const registry = new Registry();
  const metrics = new UpstreamMetrics(registry);
  const { pool, receipts } = testPool(t, [upstreamConfig('a', a.port, { binds: 2, window: 50 }), upstreamConfig('b', b.port, { binds: 2, window: 50 })], {
    metrics,
  });
  const router = new Router([{ id: 'uk', match: { prefix: ['44'] }, upstreams: ['a'] }], { knowsUpstream: (id) => pool.has(id) });
  metrics.observeRouter(router);
  const switches: RouteSwitchEvent[] = [];
  router.onSwitch((e) => switches.push(e));
  await waitUp(pool, ['a', 'b']);

  const total = 2000;
  const msgs = Array.from({ length: total }, () => message());
  const startedAt = new Map<string, number>();
  const results = new Map<string, SubmitOutcome[]>();
  let accepted = 0;
  let switchedAt = Infinity;
  let next = 0;
  await Promise.all(
    Array.from({ length: 100 }, async () => {
      while (next < total) {
        const m = msgs[next++];
        startedAt.set(m.id, performance.now());
        // Candidates are asked for at each attempt, as the dispatcher does when it leases the message again.
        const r = await submitUntilDone(pool, m, () => router.candidates(m)!.upstreamIds, 20_000);
        results.set(m.id, r.attempts);
        if (r.outcome.kind === 'accepted' && ++accepted === total / 2) {
          router.switchRoute('uk', 'b', 'test');
          switchedAt = performance.now();
        }
      }
    }),
  );

  t.equal(results.size, total, 'every message resolved');
  let onA = 0;
  let onB = 0;
  let lateOnA = 0;
  for (const m of msgs) {
    const attempts = results.get(m.id)!;
    const acceptedBy = attempts.filter((o) => o.kind === 'accepted');
    if (acceptedBy.length !== 1 || acceptedBy[0].kind !== 'accepted') {
      t.fail(`message ${m.id} accepted ${acceptedBy.length} times`);
      continue;
    }
    if (acceptedBy[0].upstreamId === 'a') onA++;
    else onB++;
    if (startedAt.get(m.id)! > switchedAt && acceptedBy[0].upstreamId === 'a') lateOnA++;
  }
  t.equal(onA + onB, total);
  t.ok(onA >= total / 2, `first half on a (${onA})`);
  t.ok(onB > 0 && onB <= total / 2, `the rest on b (${onB})`);
  t.equal(lateOnA, 0, 'no message started after the switch went to a');
  t.equal(a.received().length, onA, 'a got exactly the messages it accepted');
  t.equal(b.received().length, onB, 'b got exactly the messages it accepted');
  t.equal(a.stats.duplicates + b.stats.duplicates, 0, 'no message sent twice');
  t.equal(switches.length, 1);
  t.match(switches[0], { ruleId: 'uk', to: 'b', before: ['a'], after: ['b', 'a'], origin: 'test' });
  t.equal((await metrics.routeSwitches.get()).values[0].value, 1, 'switch counted');

  await waitFor(() => receipts.length === total, 10_000, 'all receipts');
  const byUpstream = new Map(msgs.map((m) => [m.id, (results.get(m.id)!.find((o) => o.kind === 'accepted') as { upstreamId: string }).upstreamId]));
  t.ok(
    receipts.every((r) => byUpstream.get(r.messageId) === r.upstreamId),
    'each receipt correlated to its message, from the upstream that took it',
  );
  t.equal(new Set(receipts.map((r) => r.messageId)).size, total);
});
