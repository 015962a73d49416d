// The outbound pipeline's contract, over a real loopback HTTP provider that fails on demand, on the backends the
// environment selects (Postgres + Redis, or PGlite and local stores; the pipeline itself uses only the database). Time
// is the test's clock: retries, Retry-After, breaker periods, claims and deadlines move only when the test advances it;
// no assertion is about wall-clock time.
import t from 'tap';
import { OutboundPipeline } from '../../src/outbound/outbound-pipeline.js';
import { StateMachine } from '../../src/outbound/state-machine.js';
import { openTestBackends } from '../helpers/backends.js';
import { backendLabel } from '../helpers/env.js';
import { FailOnDemandProvider, OK } from './fail-on-demand-provider.js';
import { countsOf, DEMO, demoJob, eventsOf, jobState, makePipeline, pause, providerName, silent, subscribeAll, until } from './harness.js';
import { HttpTestAdapter } from './http-test-adapter.js';

const env = await openTestBackends();
t.teardown(() => env.cleanup());
const { backends, clock } = env;
const provider = await FailOnDemandProvider.start();
t.teardown(() => provider.close());
provider.stamp = () => clock.now;
await subscribeAll(backends, 'acc_1');

const stateOf = async (p: OutboundPipeline, id: string) => (await p.store.get(id))!;

t.test(`outbound pipeline contract (${backendLabel})`, async (t) => {
  t.test('success: the provider id is kept; history, events and the job counts agree', async (t) => {
    const h = makePipeline(backends, clock, provider.url);
    t.teardown(() => h.stop());
    const name = h.adapter.name;
    const [job] = await h.pipeline.submit([demoJob(name, 'ok-1')]);
    const row = await jobState(h.pipeline, job.id, (j) => j.state === 'sent');
    t.match(row.providerId, /^pm_\d+$/, 'the provider id');
    t.equal(row.attempts, 1);
    t.equal(row.pending, false);
    t.equal(row.claimedUntil, null, 'the claim ended with the result');
    t.same((await h.pipeline.store.history(job.id)).map((x) => [x.kind, x.state]), [['state', 'queued'], ['state', 'sent']]);
    const events = await eventsOf(backends, 'dm_ok-1');
    t.same(events.map((e) => e.type), ['demo.queued', 'demo.sent']);
    t.match(events[1].payload, { messageId: 'dm_ok-1', jobId: job.id, status: 'sent', provider: name, providerMessageId: row.providerId, error: null, attempts: 1, to: 'ok-1' });
    t.same(await countsOf(h.pipeline, name), { due: 0, scheduled: 0, claimed: 0 }, 'nothing pending');
    const metrics = await h.registry.metrics();
    t.match(metrics, new RegExp(`ferry_outbound_requests_total\\{provider="${name}"\\} 1`));
    t.match(metrics, new RegExp(`ferry_outbound_results_total\\{provider="${name}",class="sent"\\} 1`));
    t.match(metrics, new RegExp(`ferry_outbound_request_seconds_count\\{provider="${name}"\\} 1`));
    t.match(metrics, new RegExp(`ferry_outbound_breakers\\{provider="${name}",state="closed"\\} 1`));
    t.match(metrics, new RegExp(`ferry_outbound_queue_depth\\{provider="${name}",state="due"\\} 0`));
    t.match(metrics, new RegExp(`ferry_outbound_queue_depth\\{provider="${name}",state="claimed"\\} 0`));
    t.match(metrics, new RegExp(`ferry_outbound_queue_oldest_seconds\\{provider="${name}"\\} 0`));
  });

  t.test('retryable then success: backoff between attempts, every attempt in the history', async (t) => {
    const h = makePipeline(backends, clock, provider.url);
    t.teardown(() => h.stop());
    provider.on('retry-1', { status: 500 }, { status: 503 }, OK);
    const [job] = await h.pipeline.submit([demoJob(h.adapter.name, 'retry-1')]);
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 2; attempt++) {
      const row = await jobState(h.pipeline, job.id, (j) => j.attempts === attempt);
      t.equal(row.state, 'queued', `attempt ${attempt} failed; still queued`);
      t.equal(row.ferryError, 'PROVIDER_UNAVAILABLE');
      delays.push(row.nextAttemptAt - clock.now);
      clock.advance(row.nextAttemptAt - clock.now);
    }
    const row = await jobState(h.pipeline, job.id, (j) => j.state === 'sent');
    t.equal(row.attempts, 3);
    t.ok(delays[0] >= 800 && delays[0] <= 1200, `first delay ${delays[0]} ms: 1 s ± 20%`);
    t.ok(delays[1] >= 1600 && delays[1] <= 2400, `second delay ${delays[1]} ms: 2 s ± 20%`);
    const hist = await h.pipeline.store.history(job.id);
    t.same(hist.map((x) => x.kind), ['state', 'attempt', 'attempt', 'state']);
    t.match(hist[1].detail, { attempt: 1, error: 'PROVIDER_UNAVAILABLE', providerError: 'server_error' });
    t.equal(provider.countFor('retry-1'), 3);
    t.same((await eventsOf(backends, 'dm_retry-1')).map((e) => e.type), ['demo.queued', 'demo.sent'], 'retries are not events');
  });

  t.test('idle polls space out (embedded): a retry and a scheduled job still wake the worker when due', async (t) => {
    // An hour between idle polls: past the first few, the worker looks again only when something wakes it.
    const h = makePipeline(backends, clock, provider.url, { idlePollMaxMs: 3_600_000 });
    t.teardown(() => h.stop());
    const store = h.pipeline.store;
    const claimDue = store.claimDue.bind(store);
    let polls = 0;
    store.claimDue = (...args: Parameters<typeof claimDue>) => {
      if (args[0] === h.adapter.name) polls++;
      return claimDue(...args);
    };
    await pause(1000);
    t.ok(polls <= 12, `${polls} polls in an idle second (10 ms doubling; 100 at a fixed 10 ms)`);

    provider.on('idle-retry', { status: 500 }, OK);
    const [retried] = await h.pipeline.submit([demoJob(h.adapter.name, 'idle-retry')]);
    const failedOnce = await jobState(h.pipeline, retried.id, (j) => j.attempts === 1);
    clock.advance(failedOnce.nextAttemptAt - clock.now);
    await jobState(h.pipeline, retried.id, (j) => j.state === 'sent', 'the retry, claimed when due without a poll');

    const [scheduled] = await h.pipeline.submit([demoJob(h.adapter.name, 'idle-later', 'acc_1', { notBefore: clock.now + 500 })]);
    await pause(100);
    t.equal(provider.countFor('idle-later'), 0, 'not sent before it is due');
    clock.advance(500);
    await jobState(h.pipeline, scheduled.id, (j) => j.state === 'sent', 'the scheduled job, claimed when due without a poll');
  });

  t.test('Retry-After is honoured: the next attempt is not made before it', async (t) => {
    const h = makePipeline(backends, clock, provider.url);
    t.teardown(() => h.stop());
    provider.on('ra-1', { status: 429, retryAfter: '30' }, OK);
    const t0 = clock.now;
    const [job] = await h.pipeline.submit([demoJob(h.adapter.name, 'ra-1')]);
    const row = await jobState(h.pipeline, job.id, (j) => j.attempts === 1);
    t.equal(row.ferryError, 'PROVIDER_THROTTLED');
    t.ok(row.nextAttemptAt >= t0 + 30_000, `next attempt at +${row.nextAttemptAt - t0} ms, not before +30000`);
    t.ok(row.nextAttemptAt <= t0 + 33_000, 'and spread by at most 10%');
    t.equal(row.claimedUntil, null, 'the claim ended in the same write');
    t.same(await countsOf(h.pipeline, h.adapter.name), { due: 0, scheduled: 1, claimed: 0 }, 'scheduled, not due before then');
    t.match((await h.pipeline.store.history(job.id))[1].detail, { retryAfterMs: 30_000, throttled: true, nextAttemptAt: row.nextAttemptAt });
    t.equal(h.pipeline.breakerState(h.adapter.name, h.adapter.endpointOf()), 'open', 'the throttled endpoint pauses');
    clock.advance(29_000);
    await pause(100);
    t.equal(provider.countFor('ra-1'), 1, 'nothing sent 1 s early');
    clock.advance(row.nextAttemptAt - clock.now);
    await jobState(h.pipeline, job.id, (j) => j.state === 'sent');
    const reqs = provider.matching('ra-1');
    t.equal(reqs.length, 2);
    t.ok(reqs[1].at - reqs[0].at >= 30_000, `second request ${reqs[1].at - reqs[0].at} ms (test clock) after the first`);
    t.equal(h.pipeline.breakerState(h.adapter.name, h.adapter.endpointOf()), 'closed', 'the probe closed it again');
  });

  t.test('permanent failure: final state and event, the provider code kept verbatim beside Ferry code', async (t) => {
    const h = makePipeline(backends, clock, provider.url);
    t.teardown(() => h.stop());
    provider.on('perm-1', { status: 400, code: 'E131026', message: 'Message undeliverable' });
    const [job] = await h.pipeline.submit([demoJob(h.adapter.name, 'perm-1')]);
    const row = await jobState(h.pipeline, job.id, (j) => j.state === 'failed');
    t.equal(row.ferryError, 'RECIPIENT_UNREACHABLE');
    t.equal(row.providerError, 'E131026');
    t.equal(row.errorMessage, 'Message undeliverable');
    t.equal(row.attempts, 1, 'not retried');
    t.equal(provider.countFor('perm-1'), 1);
    const events = await eventsOf(backends, 'dm_perm-1');
    t.same(events.map((e) => e.type), ['demo.queued', 'demo.failed']);
    t.match(events[1].payload, { status: 'failed', error: 'RECIPIENT_UNREACHABLE', providerError: 'E131026' });
    t.equal(h.pipeline.breakerState(h.adapter.name, h.adapter.endpointOf()), 'closed', 'a permanent error is not a provider failure');
  });

  t.test("'later': only that message waits; the endpoint goes on and the breaker does not count it", async (t) => {
    const h = makePipeline(backends, clock, provider.url, { provider: { breaker: { failureThreshold: 1 } } });
    t.teardown(() => h.stop());
    provider.on('later-1', { status: 400, code: 'E_PAIR_LIMIT' }, OK);
    const [job] = await h.pipeline.submit([demoJob(h.adapter.name, 'later-1')]);
    const row = await jobState(h.pipeline, job.id, (j) => j.attempts === 1);
    t.match(row, { state: 'queued', ferryError: 'PAIR_RATE_LIMITED', providerError: 'E_PAIR_LIMIT' });
    t.equal(h.pipeline.breakerState(h.adapter.name, h.adapter.endpointOf()), 'closed', 'one failure would have opened it');
    const [other] = await h.pipeline.submit([demoJob(h.adapter.name, 'later-2')]);
    await jobState(h.pipeline, other.id, (j) => j.state === 'sent');
    clock.advance(row.nextAttemptAt - clock.now);
    await jobState(h.pipeline, job.id, (j) => j.state === 'sent');
  });

  t.test('deadline: retries stop at the product deadline, then the final failed state and its event', async (t) => {
    const h = makePipeline(backends, clock, provider.url, { deadlineMs: 5000 });
    t.teardown(() => h.stop());
    provider.on('dl-1', { status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }, { status: 500 });
    const [job] = await h.pipeline.submit([demoJob(h.adapter.name, 'dl-1')]);
    let row = await stateOf(h.pipeline, job.id);
    for (let i = 0; i < 10 && row.state !== 'failed'; i++) {
      const attempts = row.attempts;
      row = await jobState(h.pipeline, job.id, (j) => j.attempts > attempts);
      if (row.state === 'queued') clock.advance(row.nextAttemptAt - clock.now);
    }
    t.equal(row.state, 'failed');
    t.equal(row.ferryError, 'DEADLINE_EXCEEDED');
    t.equal(row.providerError, 'server_error', 'the last provider error is kept');
    t.match(row.errorMessage, /last error: PROVIDER_UNAVAILABLE/);
    t.ok(row.attempts >= 2 && row.attempts <= 4, `${row.attempts} attempts within 5 s of backoff`);
    const events = await eventsOf(backends, 'dm_dl-1');
    t.same(events.map((e) => e.type), ['demo.queued', 'demo.failed']);
    t.match(events[1].payload, { error: 'DEADLINE_EXCEEDED', providerError: 'server_error' });

    // A job whose deadline passes while it waits is failed when claimed, without a request.
    const [late] = await h.pipeline.submit([demoJob(h.adapter.name, 'dl-2', 'acc_1', { notBefore: clock.now + 10_000, deadlineAt: clock.now + 5000 })]);
    clock.advance(10_000);
    const lateRow = await jobState(h.pipeline, late.id, (j) => j.state === 'failed');
    t.equal(lateRow.ferryError, 'DEADLINE_EXCEEDED');
    t.equal(provider.countFor('dl-2'), 0, 'never sent');
  });

  t.test('breaker opens after consecutive failures, nothing reaches the dead provider, a half-open probe recovers it', async (t) => {
    const h = makePipeline(backends, clock, provider.url, { provider: { maxConcurrency: 1, breaker: { failureThreshold: 3, openMs: 10_000 } } });
    t.teardown(() => h.stop());
    const name = h.adapter.name;
    provider.fallback = (r) => (r.to.startsWith('br-') ? { status: 500 } : OK);
    t.teardown(() => (provider.fallback = () => OK));
    const jobs = await h.pipeline.submit(Array.from({ length: 10 }, (_, i) => demoJob(name, `br-${i}`)));
    await until('breaker open', async () => h.pipeline.breakerState(name, h.adapter.endpointOf()), (s) => s === 'open');
    const seen = provider.matching('br-').length;
    t.equal(seen, 3, 'three consecutive failures opened it');
    await pause(200);
    t.equal(provider.matching('br-').length, seen, 'no request while open');
    t.equal(h.pipeline.stats().held, 0, 'its work waits in the table, not in memory');
    const counts = await countsOf(h.pipeline, name);
    t.same({ pending: counts.due + counts.scheduled, claimed: counts.claimed }, { pending: 10, claimed: 0 }, 'all ten pending, none claimed');
    const metrics = await h.registry.metrics();
    t.match(metrics, new RegExp(`ferry_outbound_breakers\\{provider="${name}",state="open"\\} 1`));
    t.match(metrics, new RegExp(`ferry_outbound_queue_depth\\{provider="${name}",state="due"\\} ${counts.due}\n`));
    t.match(metrics, new RegExp(`ferry_outbound_queue_depth\\{provider="${name}",state="scheduled"\\} ${counts.scheduled}\n`));

    clock.advance(9_999);
    await pause(100);
    t.equal(provider.matching('br-').length, seen, 'still nothing 1 ms before the probe');
    provider.fallback = () => OK;
    clock.advance(1);
    for (const j of jobs) await jobState(h.pipeline, j.id, (r) => r.state === 'sent', `job ${j.messageId} sent after recovery`);
    t.equal(h.pipeline.breakerState(name, h.adapter.endpointOf()), 'closed');
    t.equal(provider.matching('br-').length, 13, 'the three failures, then each job once');
    t.match(await h.registry.metrics(), new RegExp(`ferry_outbound_breaker_transitions_total\\{provider="${name}",to="half-open"\\} 1`));
  });

  t.test('crash mid-dispatch: claims held until they run out, then sent again and flagged; nothing lost, duplicates at most the in-flight requests', async (t) => {
    const name = providerName('crash');
    provider.fallback = (r) => (r.to.startsWith('crash-') ? { hang: true } : OK);
    const a = makePipeline(backends, clock, provider.url, { name, provider: { maxConcurrency: 4, sendTimeoutMs: 60_000, leaseMs: 90_000 } });
    const jobs = await a.pipeline.submit(Array.from({ length: 10 }, (_, i) => demoJob(name, `crash-${i}`)));
    await until('four requests in flight', async () => provider.hungCount, (n) => n === 4);
    const inFlight = provider.hungCount;
    await a.pipeline.abandon(); // the crash: nothing more is recorded, the claims stay as they were
    provider.fallback = () => OK;
    provider.releaseHung(); // the provider took those four: they count as sent there
    a.adapter.close();
    for (const j of jobs) t.equal((await stateOf(a.pipeline, j.id)).state, 'queued', `${j.messageId} not recorded as sent`);
    const claimed: typeof jobs = [];
    for (const j of jobs) if ((await stateOf(a.pipeline, j.id)).claimedUntil !== null) claimed.push(j);
    t.equal(claimed.length, inFlight, 'the crashed instance claimed only what it was sending');

    // Another instance, before the dead one's claims ran out: it sends the rest and leaves the claimed ones alone.
    const b = makePipeline(backends, clock, provider.url, { name });
    t.teardown(() => b.stop());
    const rest = jobs.filter((j) => !claimed.includes(j));
    for (const j of rest) await jobState(b.pipeline, j.id, (r) => r.state === 'sent', `${j.messageId} sent by the other instance`);
    clock.advance(89_000);
    await pause(200);
    for (const j of claimed) t.equal((await stateOf(b.pipeline, j.id)).state, 'queued', `${j.messageId} left alone while its claim runs`);
    t.equal(provider.matching('crash-').length, jobs.length, 'each sent once so far');

    clock.advance(1000); // the crashed instance's claims run out
    for (const j of claimed) await jobState(b.pipeline, j.id, (r) => r.state === 'sent', `${j.messageId} sent after its claim ran out`);
    const perRecipient = jobs.map((j) => provider.countFor(j.messageId.slice(3)));
    const duplicates = perRecipient.reduce((a, n) => a + (n - 1), 0);
    t.equal(duplicates, inFlight, `the provider saw ${duplicates} duplicates: the ${inFlight} requests in flight at the crash`);
    t.ok(perRecipient.every((n) => n >= 1 && n <= 2), 'none lost, none sent more than twice');
    const flagged = [];
    for (const j of jobs) if ((await b.pipeline.store.history(j.id)).some((x) => x.detail?.possibleDuplicate === true)) flagged.push(j.id);
    t.equal(flagged.length, inFlight, 'the resent ones are flagged possibleDuplicate in their history');
    t.comment(`crash mid-dispatch (${backendLabel}): in flight ${inFlight}, duplicates seen by the provider ${duplicates}, lost 0`);
  });

  t.test('two instances claiming the same provider share the work: every job sent exactly once', async (t) => {
    const name = providerName('two');
    const a = makePipeline(backends, clock, provider.url, { name, provider: { maxConcurrency: 8 } });
    const b = makePipeline(backends, clock, provider.url, { name, provider: { maxConcurrency: 8 } });
    t.teardown(() => Promise.all([a.stop(), b.stop()]));
    provider.fallback = (r) => (r.to.startsWith('two-') ? { status: 200, delayMs: 2 } : OK);
    t.teardown(() => (provider.fallback = () => OK));
    const jobs = await a.pipeline.submit(Array.from({ length: 200 }, (_, i) => demoJob(name, `two-${i}`)));
    for (const j of jobs) await jobState(a.pipeline, j.id, (r) => r.state === 'sent');
    t.equal(provider.matching('two-').length, 200, 'no job sent twice');
    const sentBy = (await a.registry.getSingleMetricAsString('ferry_outbound_requests_total')).match(/ (\d+)$/m)?.[1];
    const sentByB = (await b.registry.getSingleMetricAsString('ferry_outbound_requests_total')).match(/ (\d+)$/m)?.[1];
    t.equal(Number(sentBy) + Number(sentByB), 200);
    t.comment(`instance a sent ${sentBy}, instance b ${sentByB}`);
  });

  t.test('per-account concurrency cap: the provider never sees more than N at once for one account', async (t) => {
    const h = makePipeline(backends, clock, provider.url, { provider: { maxConcurrency: 8, maxPerAccount: 2 } });
    t.teardown(() => h.stop());
    provider.fallback = (r) => (r.to.startsWith('cap-') ? { status: 200, delayMs: 25 } : OK);
    t.teardown(() => (provider.fallback = () => OK));
    const jobs = await h.pipeline.submit([
      ...Array.from({ length: 16 }, (_, i) => demoJob(h.adapter.name, `cap-a${i}`, 'acc_cap_a')),
      ...Array.from({ length: 6 }, (_, i) => demoJob(h.adapter.name, `cap-b${i}`, 'acc_cap_b')),
    ]);
    // Jobs past an account's share of the hold go back to the queue for about a request's time: let time pass.
    const ticker = setInterval(() => clock.advance(50), 10);
    t.teardown(() => clearInterval(ticker));
    for (const j of jobs) await jobState(h.pipeline, j.id, (r) => r.state === 'sent');
    clearInterval(ticker);
    t.ok(provider.maxConcurrentFor('acc_cap_a') <= 2, `account a: at most ${provider.maxConcurrentFor('acc_cap_a')} at once`);
    t.ok(provider.maxConcurrentFor('acc_cap_b') <= 2, `account b: at most ${provider.maxConcurrentFor('acc_cap_b')} at once`);
    t.equal(provider.matching('cap-').length, 22, 'each sent once');
  });

  t.test('provider callbacks: states never move backwards; a late update is history, not a demotion', async (t) => {
    const h = makePipeline(backends, clock, provider.url);
    t.teardown(() => h.stop());
    const name = h.adapter.name;
    const [job] = await h.pipeline.submit([demoJob(name, 'cb-1')]);
    const sent = await jobState(h.pipeline, job.id, (j) => j.state === 'sent');
    const byPid = { provider: name, providerId: sent.providerId! };
    t.same(await h.pipeline.applyStatus([{ ...byPid, state: 'delivered', detail: { ts: 1 } }]), ['changed']);
    t.same(await h.pipeline.applyStatus([{ jobId: job.id, state: 'read' }]), ['changed']);
    t.same(await h.pipeline.applyStatus([{ ...byPid, state: 'delivered' }, { ...byPid, state: 'read' }, { ...byPid, state: 'bounced' }]), ['late', 'unchanged', 'invalid']);
    t.same(await h.pipeline.applyStatus([{ provider: name, providerId: 'pm_unknown', state: 'read' }, { jobId: 'job_nope', state: 'read' }]), ['not_found', 'not_found']);
    const row = await stateOf(h.pipeline, job.id);
    t.equal(row.state, 'read', 'read stays');
    t.same((await h.pipeline.store.history(job.id)).map((x) => [x.kind, x.state]), [
      ['state', 'queued'],
      ['state', 'sent'],
      ['state', 'delivered'],
      ['state', 'read'],
      ['late', 'delivered'],
    ]);
    t.match((await h.pipeline.store.history(job.id))[4].detail, { current: 'read', source: 'callback' });
    t.same((await eventsOf(backends, 'dm_cb-1')).map((e) => e.type), ['demo.queued', 'demo.sent', 'demo.delivered', 'demo.read'], 'no event for the late one');

    // A callback may overtake the send's record: delivered first, then the sent result is late but keeps the provider id.
    provider.on('cb-2', { status: 200, delayMs: 150 });
    const [job2] = await h.pipeline.submit([demoJob(name, 'cb-2')]);
    await until('request in flight', async () => provider.countFor('cb-2'), (n) => n === 1);
    t.same(await h.pipeline.applyStatus([{ jobId: job2.id, state: 'delivered' }]), ['changed']);
    const row2 = await jobState(h.pipeline, job2.id, (j) => j.providerId !== null);
    t.equal(row2.state, 'delivered');
    t.same((await h.pipeline.store.history(job2.id)).map((x) => [x.kind, x.state]), [['state', 'queued'], ['state', 'delivered'], ['late', 'sent']]);

    // A failure status from the provider keeps its codes like a send's failure.
    const [job3] = await h.pipeline.submit([demoJob(name, 'cb-3')]);
    const s3 = await jobState(h.pipeline, job3.id, (j) => j.state === 'sent');
    t.same(await h.pipeline.applyStatus([{ provider: name, providerId: s3.providerId!, state: 'failed', error: { code: 'RECIPIENT_UNREACHABLE', providerCode: '131026', message: 'undeliverable' } }]), ['changed']);
    const r3 = await stateOf(h.pipeline, job3.id);
    t.match(r3, { state: 'failed', ferryError: 'RECIPIENT_UNREACHABLE', providerError: '131026' });
    t.match((await eventsOf(backends, 'dm_cb-3')).at(-1), { type: 'demo.failed', payload: { error: 'RECIPIENT_UNREACHABLE', providerError: '131026' } });
  });

  t.test('the product updates its own row in the same transaction (onChange), and resultState picks its state', async (t) => {
    await backends.db.query(`CREATE TABLE IF NOT EXISTS demo_messages (id text PRIMARY KEY, status text NOT NULL)`);
    const machine = new StateMachine({
      product: 'demo',
      initial: 'queued',
      sent: 'sent',
      failed: 'failed',
      states: { ...Object.fromEntries(DEMO.stateNames().map((s) => [s, { rank: DEMO.rank(s)!, final: DEMO.isFinal(s), event: DEMO.eventOf(s)!.slice(5) }])) },
    });
    const name = providerName('hook');
    const adapter = new HttpTestAdapter(name, provider.url);
    const pipeline = new OutboundPipeline({
      backends,
      log: silent,
      clock: () => clock.now,
      pollMs: 10,
      products: {
        demo: {
          machine,
          deadlineMs: 60_000,
          resultState: (_job, r) => (r.kind === 'sent' && r.providerId ? 'delivered' : undefined),
          onChange: async (q, changes) => {
            for (const c of changes) await q.query(`UPDATE demo_messages SET status = $2 WHERE id = $1`, [c.job.messageId, c.to]);
          },
        },
      },
      providers: [{ adapter }],
    });
    pipeline.start();
    t.teardown(async () => {
      await pipeline.stop();
      adapter.close();
    });
    const [job] = await pipeline.submit([demoJob(name, 'hook-1')], async (q) => {
      await q.query(`INSERT INTO demo_messages (id, status) VALUES ('dm_hook-1', 'queued')`);
    });
    await jobState(pipeline, job.id, (j) => j.state === 'delivered');
    t.same((await backends.db.query(`SELECT status FROM demo_messages WHERE id = 'dm_hook-1'`)).rows, [{ status: 'delivered' }]);
  });

  t.test('an enqueue rolled back leaves nothing; a committed job nobody woke for is claimed at the next poll; the reconciler fails overdue jobs', async (t) => {
    const h = makePipeline(backends, clock, provider.url);
    t.teardown(() => h.stop());
    const name = h.adapter.name;
    await t.rejects(
      backends.db.tx(async (q) => {
        await h.pipeline.enqueue(q, [demoJob(name, 'rb-1')]);
        throw new Error('the product refused it');
      }),
      /refused/,
    );
    t.same((await backends.db.query(`SELECT id FROM outbound_jobs WHERE message_id = 'dm_rb-1'`)).rows, [], 'no job row');
    t.same(await eventsOf(backends, 'dm_rb-1'), [], 'no event');

    // Committed and never woken for (as when the instance that accepted it crashed right after the commit, or when
    // another instance accepted it): the idle worker's poll finds it.
    const [unwoken] = await backends.db.tx((q) => h.pipeline.enqueue(q, [demoJob(name, 'unwoken-1')]));
    await jobState(h.pipeline, unwoken.id, (j) => j.state === 'sent');
    t.equal(provider.countFor('unwoken-1'), 1, 'sent once');

    // Past its deadline while nobody could claim it (its provider's workers stopped): the periodic pass fails it, with
    // its event; a job still in time is left alone.
    await h.pipeline.stop();
    const [overdue, inTime] = await backends.db.tx((q) =>
      h.pipeline.enqueue(q, [demoJob(name, 'od-1', 'acc_1', { deadlineAt: clock.now + 1000 }), demoJob(name, 'od-2', 'acc_1', { deadlineAt: clock.now + 60_000 })]),
    );
    clock.advance(2000);
    // The pass covers every provider's jobs in the database, those other subtests left included: only what it did to
    // this subtest's two is checked.
    t.ok((await h.reconciler.periodic()) >= 1, 'the pass failed the overdue one');
    const row = await stateOf(h.pipeline, overdue.id);
    t.match(row, { state: 'failed', ferryError: 'DEADLINE_EXCEEDED', pending: false });
    t.same((await eventsOf(backends, 'dm_od-1')).map((e) => e.type), ['demo.queued', 'demo.failed']);
    t.equal(provider.countFor('od-1'), 0);
    t.match(await stateOf(h.pipeline, inTime.id), { state: 'queued', pending: true }, 'the one in time waits');
  });

  t.test('jobs committed before any instance runs are claimed once one starts: nothing to load or repair first', async (t) => {
    const adapter = new HttpTestAdapter(providerName('early'), provider.url);
    t.teardown(() => adapter.close());
    // One request at a time, so the order the provider sees is the claim's.
    const opts = { backends, log: silent, clock: () => clock.now, pollMs: 10, products: { demo: { machine: DEMO, deadlineMs: 60_000 } }, providers: [{ adapter, maxConcurrency: 1 }] };
    const before = new OutboundPipeline(opts);
    const jobs = await backends.db.tx((q) => before.enqueue(q, [demoJob(adapter.name, 'early-1'), demoJob(adapter.name, 'early-2', 'acc_1', { priority: true })]));
    await pause(100);
    t.equal(provider.matching('early-').length, 0, 'nothing sends them while no pipeline runs');
    const pipeline = new OutboundPipeline(opts);
    pipeline.start();
    t.teardown(() => pipeline.stop());
    for (const j of jobs) await jobState(pipeline, j.id, (r) => r.state === 'sent');
    t.same(provider.matching('early-').map((r) => r.to), ['early-2', 'early-1'], 'each sent once, the priority lane first');
  });

  t.test('a product with an unregistered event type, or an unknown provider, is refused', async (t) => {
    const machine = new StateMachine({ product: 'nope', initial: 'queued', sent: 'sent', failed: 'failed', states: { queued: { rank: 0 }, sent: { rank: 1, event: 'sent' }, failed: { rank: 2, final: true } } });
    const adapter = new HttpTestAdapter(providerName(), provider.url);
    t.throws(() => new OutboundPipeline({ backends, log: silent, products: { nope: { machine, deadlineMs: 1000 } }, providers: [{ adapter }] }), /nope\.sent is not registered/);
    const h = makePipeline(backends, clock, provider.url, { start: false });
    await t.rejects(h.pipeline.submit([demoJob('no-such-provider', 'x')]), /unknown provider/);
    await t.rejects(h.pipeline.submit([{ ...demoJob(h.adapter.name, 'x'), product: 'fax' }]), /unknown product/);
    adapter.close();
    h.adapter.close();
  });
});
