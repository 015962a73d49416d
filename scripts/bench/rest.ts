/**
 * End-to-end REST scenario: POST /v1/sms/send at concurrency C for T seconds (autocannon; with --rate, paced; Basic auth, recipients
 * varied), then POST /v1/sms/bulk in 1,000-item batches; every message goes on to the SMSC simulator and its
 * receipt back into the ledger before the run counts. Daemon, simulator and load generator are separate processes.
 *
 *   npm run bench -- rest [--seconds 10] [--concurrency 64] [--rate R] [--bulk-batches 10] …
 */
import { machineLoad } from './harness/proc.js';
import { fmt, printJson, printTable, verdict, type Row } from './harness/report.js';
import { LoadGen } from './harness/ipc.js';
import type { BulkPhaseResult, RestLoadConfig, SendPhaseResult } from './harness/loadgen-rest.js';
import { runScenario } from './harness/scenario.js';
import { preloadBudgetSeconds } from './harness/preload-events.js';
import { checkWebhookOptions, EVENTS_PER_MESSAGE, webhookDaemonEnv, WEBHOOK_FLAGS, WEBHOOKS_USAGE, WebhookBench } from './harness/webhooks.js';

const TARGET_SENDS = 10_000;
const TARGET_P99_MS = 20;
const TARGET_P99_AT = 5_000;
const TARGET_BULK = 50_000;

const USAGE = `usage: npm run bench -- rest [options]

  --seconds T          measured /v1/sms/send phase (default 10)
  --messages N         at most N measured send requests (default 1000000)
  --concurrency C      HTTP connections (default 64)
  --rate R             offer R req/s overall, paced evenly over the connections, instead of as fast as they go
                       (latency then counts from when each request was due)
                       (the latency target is stated at --rate ${TARGET_P99_AT})
  --warmup-seconds S   warm-up sends before measuring (default 8: enough for the JIT to settle)
  --bulk-batches N     /v1/sms/bulk requests after the sends (default 10; 0 skips bulk)
  --bulk-size K        items per bulk request (default 1000)
  --bulk-concurrency N bulk requests in flight (default 2)
${WEBHOOKS_USAGE}`;

await runScenario({
  name: 'rest',
  flags: ['seconds', 'messages', 'concurrency', 'rate', 'warmup-seconds', 'bulk-batches', 'bulk-size', 'bulk-concurrency', ...WEBHOOK_FLAGS],
  usage: USAGE,
  validate: checkWebhookOptions,
  stackOverrides: (args) => (args.has('webhooks') ? { daemonEnv: webhookDaemonEnv(args) } : {}),
  budgetSeconds: (args, common) => args.number('seconds', 10) + args.number('warmup-seconds', 8) + 60 + 3 * common.finalTimeoutSeconds + preloadBudgetSeconds(args),
  async run(ctx) {
    const { args, common, stack, sampler, machine, log, addChild, mark, cpuSince, fail } = ctx;
    const config: RestLoadConfig = {
      apiUrl: stack.apiUrl,
      token: '',
      connections: args.number('concurrency', 64, { min: 1, max: 10_000, integer: true }),
      warmupSeconds: args.number('warmup-seconds', 8, { min: 0, max: 600 }),
      seconds: args.number('seconds', 10, { min: 1, max: 3600 }),
      maxRequests: args.number('messages', 1_000_000, { min: 1, max: 100_000_000, integer: true }),
      rate: args.number('rate', 0, { min: 0, max: 1_000_000 }),
      bulkBatches: args.number('bulk-batches', 10, { min: 0, max: 1000, integer: true }),
      bulkSize: args.number('bulk-size', 1000, { min: 1, max: 10_000, integer: true }),
      bulkConcurrency: args.number('bulk-concurrency', 2, { min: 1, max: 64, integer: true }),
    };
    const account = await stack.createAccount('bench', 'bench123', 4);
    config.token = account.token;
    const webhooks = args.has('webhooks') ? await WebhookBench.start(ctx, stack.apiUrl, account) : undefined;
    const gen = new LoadGen('loadgen-rest.ts', config, stack.logDir);
    addChild('loadgen', gen.child);
    log(
      `load generator pid ${gen.pid}: ${config.connections} connections, warm-up ${config.warmupSeconds} s, then ${config.seconds} s of sends` +
        `${config.rate ? ` at ${config.rate} req/s` : ''}, then ${config.bulkBatches} bulk batches of ${config.bulkSize}`,
    );
    const finalMs = common.finalTimeoutSeconds * 1000;
    let acceptedSoFar = 0; // 200 answers seen by the load generator
    let cutOff = 0; // requests in flight when a phase stopped: accepted or not, only the ledger knows
    /** performance.now() when the last webhook of the phase settled so far arrived (--webhooks). */
    let hooksDoneAt = NaN;
    /** Waits until every accepted message is final (and its webhooks are in); the performance.now() when it was final, or null. */
    const settle = async (what: string): Promise<number | null> => {
      const at = await stack.waitFinal(acceptedSoFar, finalMs);
      if (at === null) log(`${what}: not every accepted message was final within ${common.finalTimeoutSeconds} s`);
      if (!webhooks) return at;
      // With --webhooks a phase ends when its webhooks are in too (at least three events per accepted message).
      const hooks = await webhooks.drain(acceptedSoFar * EVENTS_PER_MESSAGE, finalMs);
      if (hooks.doneAt === null) log(`${what}: ${hooks.stats.distinct} of at least ${acceptedSoFar * EVENTS_PER_MESSAGE} webhook events within ${common.finalTimeoutSeconds} s`);
      hooksDoneAt = hooks.doneAt ?? NaN;
      return at;
    };

    const warm = await gen.next<{ type: string; accepted: number; cutOff: number }>('warmup-done', (config.warmupSeconds + 60) * 1000);
    acceptedSoFar += warm.accepted;
    cutOff += warm.cutOff;
    await settle('warm-up');
    log(`warm-up: ${warm.accepted} accepted and final; measuring sends`);

    let cpu0 = mark();
    const wal0 = await stack.walBytes();
    gen.send({ type: 'go' });
    const sendsStarted = performance.now();
    const sendsFrom = Date.now();
    const sends = (await gen.next<{ type: string; result: SendPhaseResult }>('sends-done', (config.seconds + 90) * 1000)).result;
    acceptedSoFar += sends.accepted;
    cutOff += sends.cutOff;
    log(`sends: ${sends.accepted} accepted of ${sends.offered}; waiting for their receipts`);
    const sendsFinalAt = await settle('sends');
    const sendsHooksDoneAt = hooksDoneAt;
    const sendsFinalSeconds = sendsFinalAt === null ? NaN : (sendsFinalAt - sendsStarted) / 1000;
    const sendsCpu = cpuSince(cpu0);
    const wal1 = await stack.walBytes();
    const sendsHooks = webhooks ? await webhooks.stats(sendsFrom, sendsFrom + sends.seconds * 1000) : undefined;

    let bulk: BulkPhaseResult | undefined;
    let bulkCpu: Record<string, number> = {};
    let bulkFinalSeconds = NaN;
    if (config.bulkBatches > 0) {
      cpu0 = mark();
      gen.send({ type: 'go' });
      const bulkStarted = performance.now();
      bulk = (await gen.next<{ type: string; result: BulkPhaseResult }>('bulk-done', 600_000)).result;
      acceptedSoFar += bulk.accepted;
      cutOff += bulk.unknownItems;
      log(`bulk: ${bulk.accepted} of ${bulk.items} accepted in ${bulk.seconds.toFixed(2)} s; waiting for their receipts`);
      const bulkFinalAt = await settle('bulk');
      bulkFinalSeconds = bulkFinalAt === null ? NaN : (bulkFinalAt - bulkStarted) / 1000;
      bulkCpu = cpuSince(cpu0);
    }
    await gen.finish();
    const simStats = await stack.freshSimStats();

    // Accounting. Ferry's accepted messages are its ledger rows: every one must be final, and they must be the 200s
    // this side saw plus at most the requests cut off in flight at the end of a phase.
    const ledger = await stack.ledgerCounts();
    if (ledger.open !== 0) fail(`${ledger.open} accepted messages are not final (${JSON.stringify(ledger.byStatus)})`);
    if (ledger.total < acceptedSoFar || ledger.total > acceptedSoFar + cutOff) {
      fail(`the ledger holds ${ledger.total} messages; the load generator saw ${acceptedSoFar} accepted and ${cutOff} cut off in flight (warm-up included)`);
    }
    let hooksCounted = true;
    const finalHooks = webhooks ? await webhooks.stats() : undefined;
    if (finalHooks) {
      const want = ledger.total * EVENTS_PER_MESSAGE;
      hooksCounted = finalHooks.distinct === want && finalHooks.badSignatures === 0 && finalHooks.badBodies === 0;
      if (finalHooks.distinct !== want) fail(`the webhook receiver got ${finalHooks.distinct} distinct events; the ledger's ${ledger.total} messages make ${want}`);
      if (finalHooks.badSignatures || finalHooks.badBodies) fail(`${finalHooks.badSignatures} webhook signatures did not verify, ${finalHooks.badBodies} bodies did not parse`);
    }
    const counted = ledger.open === 0 && ledger.total >= acceptedSoFar && ledger.total <= acceptedSoFar + cutOff && hooksCounted;
    const sendsFinalCount = counted ? sends.accepted : NaN;

    const per1000 = (cpu: Record<string, number>, name: string, n: number) => (cpu[name] / Math.max(1, n)) * 1000;
    const sendsLoad = machineLoad(sendsCpu, machine.cores);
    const bulkLoad = bulk ? machineLoad(bulkCpu, machine.cores) : undefined;
    const walPerSend = wal0 !== null && wal1 !== null ? Number(wal1 - wal0) / Math.max(1, sends.accepted) : null;
    const sendRate = sends.accepted / Math.max(1e-9, sends.seconds);
    const atLatencyTargetRate = config.rate >= TARGET_P99_AT && sendRate >= TARGET_P99_AT * 0.95;
    const non200 = Object.entries(sends.byStatus)
      .filter(([code]) => code !== '200')
      .map(([code, c]) => `HTTP ${code} ${fmt.int(c)}`)
      .concat(sends.errors ? [`errors ${fmt.int(sends.errors)} (timeouts ${fmt.int(sends.timeouts)})`] : [])
      .concat(sends.cutOff ? [`at most ${fmt.int(sends.cutOff)} cut off in flight when the phase stopped`] : []);
    const rows: Row[] = [
      { figure: 'sends offered / accepted / final', value: `${fmt.int(sends.offered)} / ${fmt.int(sends.accepted)} / ${fmt.int(sendsFinalCount)}` },
      ...(non200.length ? [{ figure: 'sends not answered 200', value: non200.join(', ') }] : []),
      {
        figure: config.rate ? `send rate (offered ${fmt.int(config.rate)} req/s)` : `send rate (${config.connections} connections)`,
        value: fmt.rate(sendRate, 'sends/s'),
        target: `≥ ${fmt.int(TARGET_SENDS)} sends/s`,
        verdict: config.rate ? '(without --rate)' : verdict(sendRate >= TARGET_SENDS),
      },
      { figure: 'sends final rate (receipts in the ledger)', value: Number.isFinite(sendsFinalSeconds) ? fmt.rate(sends.accepted / sendsFinalSeconds) : 'not all final' },
      {
        figure: 'send latency p50 / p95 / p99 / max',
        value: fmt.latency(sends.latency),
        target: `p99 ≤ ${TARGET_P99_MS} ms at ${fmt.int(TARGET_P99_AT)} req/s`,
        verdict: atLatencyTargetRate ? verdict(sends.latency.p99 <= TARGET_P99_MS) : `(at --rate ${TARGET_P99_AT})`,
      },
      {
        figure: 'sends: CPU s per 1,000: daemon / simulator / load generator',
        value: ['daemon', 'simulator', 'loadgen'].map((p) => fmt.cpu(per1000(sendsCpu, p, sends.accepted))).join(' / '),
      },
      ...(common.backend === 'redis+postgres'
        ? [{ figure: 'sends: CPU s per 1,000: Postgres / Redis servers (this machine)', value: ['postgres', 'redis'].map((p) => fmt.cpu(per1000(sendsCpu, p, sends.accepted))).join(' / ') }]
        : []),
      ...(walPerSend !== null ? [{ figure: 'sends: Postgres WAL bytes per send', value: fmt.int(walPerSend) }] : []),
      { figure: 'sends: machine while measured (every process on it)', value: fmt.load(sendsLoad, machine.cores) },
      ...(sendsHooks && finalHooks
        ? WebhookBench.rows({ ...finalHooks, window: sendsHooks.window }, ledger.total * EVENTS_PER_MESSAGE, sends.accepted, (sendsHooksDoneAt - sendsStarted) / 1000, sendsCpu.receiver ?? 0)
        : []),
      ...(webhooks?.preloadRows() ?? []),
    ];
    if (bulk) {
      const bulkRate = bulk.accepted / Math.max(1e-9, bulk.seconds);
      const failed = Object.entries(bulk.failedBatches).map(([k, c]) => `${k} ${c}`);
      rows.push(
        {
          figure: `bulk: ${bulk.batches} × ${config.bulkSize} items accepted / final`,
          value: `${fmt.int(bulk.accepted)} / ${counted ? fmt.int(bulk.accepted) : '—'}${failed.length ? ` (failed batches: ${failed.join(', ')})` : ''}`,
        },
        { figure: 'bulk accepted rate', value: fmt.rate(bulkRate), target: `≥ ${fmt.int(TARGET_BULK)} msg/s`, verdict: verdict(bulkRate >= TARGET_BULK) },
        { figure: 'bulk final rate (receipts in the ledger)', value: fmt.rate(bulk.accepted / bulkFinalSeconds) },
        { figure: 'bulk request latency p50 / p95 / p99 / max', value: fmt.latency(bulk.latency) },
        {
          figure: 'bulk: CPU s per 1,000: daemon / simulator / load generator',
          value: ['daemon', 'simulator', 'loadgen'].map((p) => fmt.cpu(per1000(bulkCpu, p, bulk!.accepted))).join(' / '),
        },
        { figure: 'bulk: machine while measured', value: fmt.load(bulkLoad, machine.cores) },
      );
    }
    rows.push(
      {
        figure: 'peak RSS MB: daemon / simulator / load generator',
        value: `${fmt.mb(sampler.peakRss.daemon)} / ${fmt.mb(sampler.peakRss.simulator)} / ${fmt.mb(sampler.peakRss.loadgen)}`,
      },
      {
        figure: 'ledger (warm-up included)',
        value: `${fmt.int(ledger.total)} rows (${fmt.int(acceptedSoFar)} answered 200, at most ${fmt.int(cutOff)} cut off in flight): ${Object.entries(ledger.byStatus).map(([s, c]) => `${s} ${fmt.int(c)}`).join(', ')}`,
      },
      { figure: 'accounting', value: counted ? 'OK: every accepted message reached a final state' : 'FAILED (see below)' },
    );
    const command = `npm run bench -- rest ${process.argv.slice(2).join(' ')}`.trim();
    printTable(
      `Ferry bench · rest · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      [
        `machine: ${machine.cores} × ${machine.model}, ${machine.memoryGiB} GiB, Node ${machine.node}; backend ${common.backend}; daemon and simulator via ${stack.runtime}`,
        `command: ${command}`,
        `load: ${config.rate ? `${config.rate} req/s paced over ${config.connections} connections (latency from when each was due)` : `autocannon, ${config.connections} connections`}, ${sends.seconds.toFixed(1)} s of /v1/sms/send (one segment each, 10% UCS-2), then ` +
          `${config.bulkBatches} /v1/sms/bulk × ${config.bulkSize} (${config.bulkConcurrency} in flight); Ferry → simulator ` +
          `${common.upstreamBinds} binds × window ${common.upstreamWindow}, receipt delay ${common.receiptDelayMs} ms`,
      ],
      rows,
    );
    if (common.json) {
      printJson({
        scenario: 'rest',
        date: new Date().toISOString(),
        backend: common.backend,
        runtime: stack.runtime,
        machine,
        options: { ...config, token: undefined, apiUrl: undefined, receiptDelayMs: common.receiptDelayMs },
        messages: { offered: sends.offered, accepted: sends.accepted, final: sendsFinalCount, byStatus: sends.byStatus, errors: sends.errors, cutOff: sends.cutOff },
        rate: { acceptedPerSec: sendRate, finalPerSec: sends.accepted / sendsFinalSeconds, seconds: sends.seconds },
        latencyMs: { send: sends.latency },
        cpuSeconds: sendsCpu,
        cpuSecondsPer1000: Object.fromEntries(['daemon', 'simulator', 'loadgen', 'postgres', 'redis'].map((p) => [p, per1000(sendsCpu, p, sends.accepted)])),
        postgresWalBytesPerSend: walPerSend,
        machineLoad: sendsLoad ?? null,
        bulk: bulk
          ? {
              ...bulk,
              acceptedPerSec: bulk.accepted / Math.max(1e-9, bulk.seconds),
              finalPerSec: bulk.accepted / bulkFinalSeconds,
              cpuSeconds: bulkCpu,
              cpuSecondsPer1000: Object.fromEntries(['daemon', 'simulator', 'loadgen'].map((p) => [p, per1000(bulkCpu, p, bulk!.accepted)])),
              machineLoad: bulkLoad ?? null,
            }
          : null,
        peakRssMB: Object.fromEntries(Object.entries(sampler.peakRss).map(([k, v]) => [k, v / 2 ** 20])),
        ledger,
        webhooks: sendsHooks ? { sends: sendsHooks, final: finalHooks, preloaded: webhooks?.preloadJson() ?? null } : null,
        simulator: simStats,
        targets: { sendsPerSec: TARGET_SENDS, sendP99Ms: TARGET_P99_MS, atRate: TARGET_P99_AT, bulkPerSec: TARGET_BULK },
        counted,
      });
    }
  },
});
