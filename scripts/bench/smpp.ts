/**
 * End-to-end SMPP scenario: K customer binds × window W submit M messages (GSM-7, some UCS-2, some 3-part long ones,
 * registered_delivery=1) → Ferry → the SMSC simulator (receipt after a delay) → receipts back on the customer binds.
 * Daemon, simulator and load generator are separate processes on loopback; see harness/scenario.ts.
 *
 *   npm run bench -- smpp [--messages 200000] [--seconds 20] [--binds 4] [--window 100] [--rate R] [--warmup 40000] …
 */
import { machineLoad } from './harness/proc.js';
import { fmt, printJson, printTable, verdict, type Row } from './harness/report.js';
import { LoadGen } from './harness/ipc.js';
import type { SmppLoadConfig, SmppLoadResult } from './harness/loadgen-smpp.js';
import { runScenario } from './harness/scenario.js';
import { histogramQuantile, histogramSince } from './harness/stats.js';
import { preloadBudgetSeconds } from './harness/preload-events.js';
import {
  measureRetention,
  PRELOAD_MESSAGES_FLAGS,
  PRELOAD_MESSAGES_USAGE,
  preloadMessages,
  preloadMessagesBudgetSeconds,
  preloadMessagesOption,
  type MessagePreload,
  type RetentionDrop,
} from './harness/preload-messages.js';
import { checkWebhookOptions, EVENTS_PER_MESSAGE, webhookDaemonEnv, WEBHOOK_FLAGS, WEBHOOKS_USAGE, WebhookBench } from './harness/webhooks.js';

const TARGET_RATE = 20_000;
const TARGET_P99_MS = 10;
const TARGET_P99_AT = 10_000;
const TARGET_CPU = 0.15;
const RECEIPT_ANSWER = 'ferry_upstream_receipt_answer_seconds';

const USAGE = `usage: npm run bench -- smpp [options]

  --messages M     measured submits at most (default 200000)
  --seconds T      measured phase at most T seconds (default 20)
  --binds K        customer transceiver binds (default 4)
  --window W       outstanding submits per bind (default 100)
  --rate R         offer R msg/s over all binds instead of as fast as the windows allow
                   (the latency target is stated at --rate ${TARGET_P99_AT})
  --warmup N       warm-up submits before measuring (default 40000: enough for the JIT to settle,
                   so the measured phase sees the daemon as it runs for days)
${PRELOAD_MESSAGES_USAGE}
${WEBHOOKS_USAGE}`;

await runScenario({
  name: 'smpp',
  flags: ['messages', 'seconds', 'binds', 'window', 'rate', 'warmup', ...PRELOAD_MESSAGES_FLAGS, ...WEBHOOK_FLAGS],
  usage: USAGE,
  validate: (args, common) => {
    preloadMessagesOption(args, common);
    checkWebhookOptions(args, common);
  },
  stackOverrides: (args) => (args.has('webhooks') ? { daemonEnv: webhookDaemonEnv(args) } : {}),
  // Warm-up submits (at most max(10, T) s) and measured ones (T s), each followed by its receipts.
  budgetSeconds: (args, common) =>
    Math.max(10, args.number('seconds', 20)) + args.number('seconds', 20) + 30 + 2 * common.finalTimeoutSeconds + preloadBudgetSeconds(args) + preloadMessagesBudgetSeconds(args),
  async run(ctx) {
    const { args, common, stack, sampler, machine, log, addChild, mark, cpuSince, fail } = ctx;
    const binds = args.number('binds', 4, { min: 1, max: 100, integer: true });
    const window = args.number('window', 100, { min: 1, max: 10_000, integer: true });
    const messages = args.number('messages', 200_000, { min: 1, max: 10_000_000, integer: true });
    const seconds = args.number('seconds', 20, { min: 1, max: 3600 });
    const rate = args.number('rate', 0, { min: 0, max: 1_000_000 });
    const warmupMessages = args.number('warmup', 40_000, { min: 0, max: 1_000_000, integer: true });

    const password = 'bench123';
    const account = await stack.createAccount('bench', password, binds);
    const preloadAsked = preloadMessagesOption(args, common);
    let preloaded: MessagePreload | undefined;
    if (preloadAsked.messages > 0) {
      preloaded = await preloadMessages(stack.dbUrl!, preloadAsked.messages, preloadAsked.days, log);
      log(`preload done: ${preloadLine(preloaded)}`);
    }
    const webhooks = args.has('webhooks') ? await WebhookBench.start(ctx, stack.apiUrl, account) : undefined;
    const config: SmppLoadConfig = {
      host: '127.0.0.1',
      port: stack.ports.smpp,
      systemId: account.systemId,
      password,
      binds,
      window,
      warmupMessages,
      messages,
      seconds,
      rate,
      finalTimeoutSeconds: common.finalTimeoutSeconds,
      gated: webhooks !== undefined,
    };
    const gen = new LoadGen('loadgen-smpp.ts', config, stack.logDir);
    addChild('loadgen', gen.child);
    log(`load generator pid ${gen.pid}: ${binds} binds × window ${window}, warm-up ${warmupMessages}, then ${messages} messages or ${seconds} s${rate ? ` at ${rate} msg/s` : ''}`);

    let warmAccepted = 0;
    if (webhooks) {
      // The warm-up's webhooks are in before measuring, as its receipts are.
      warmAccepted = (await gen.next<{ type: string; accepted: number }>('warmup-done', 120_000 + seconds * 1000)).accepted;
      const warm = await webhooks.drain(warmAccepted * EVENTS_PER_MESSAGE, common.finalTimeoutSeconds * 1000);
      if (warm.doneAt === null) fail(`warm-up: ${warm.stats.distinct} of ${warmAccepted * EVENTS_PER_MESSAGE} webhook events within ${common.finalTimeoutSeconds} s`);
      gen.send({ type: 'go' });
    }
    await gen.next('measure-start', 120_000 + seconds * 1000);
    const measureStartedAt = performance.now();
    const measureFrom = Date.now();
    const cpu0 = mark();
    // Read together: the measured phase is already running.
    const [gc0, wal0, answer0, pg0] = await Promise.all([stack.gc(), stack.walBytes(), stack.histogram(RECEIPT_ANSWER), stack.pgCounters()]);
    log('warm-up done; measuring');
    const submitted = await gen.next<{ type: string; offered: number; accepted: number }>('submitted', (seconds + 90) * 1000);
    const measureTo = Date.now();
    // A soak (`--rate R --seconds 600`): memory and descriptors of the daemon should stay flat over the run.
    const drift = sampler.drift('daemon', measureFrom, measureTo);
    log(`submitted ${submitted.offered}, accepted ${submitted.accepted}; waiting for receipts`);
    await gen.next('measure-end', (common.finalTimeoutSeconds + 30) * 1000);
    // With --webhooks the phase ends when its webhooks are in, so that the CPU figures include delivering them.
    const hooks = webhooks ? await webhooks.drain((warmAccepted + submitted.accepted) * EVENTS_PER_MESSAGE, common.finalTimeoutSeconds * 1000) : undefined;
    const cpu = cpuSince(cpu0);
    const hookStats = hooks && webhooks ? await webhooks.stats(measureFrom, measureTo) : undefined;
    const gc1 = await stack.gc();
    const answer = histogramSince(answer0, await stack.histogram(RECEIPT_ANSWER));
    const wal1 = await stack.walBytes();
    // Postgres publishes its counters within about a second.
    const pg1 = pg0 ? await new Promise((r) => setTimeout(r, 1200)).then(() => stack.pgCounters()) : null;
    const { result } = await gen.next<{ type: string; result: SmppLoadResult }>('result', 30_000);
    await gen.finish();
    const simStats = await stack.freshSimStats();

    // Accounting: every accepted message reached a final state, at the customer and in the ledger.
    const m = result.measured;
    const w = result.warmup;
    const acceptedAll = m.accepted + w.accepted;
    if (stack.dbUrl && (await stack.waitFinal(0, 30_000)) === null) log('ledger still has open messages after 30 s');
    const ledger = await stack.ledgerCounts(preloaded ? account.accountId : undefined);
    // After the rounds: what retention costs on the preloaded history.
    const drops: RetentionDrop[] = preloaded ? await measureRetention(stack.dbUrl!, preloaded.days) : [];
    if (m.final !== m.accepted) fail(`${m.accepted - m.final} of ${m.accepted} accepted messages got no receipt within ${common.finalTimeoutSeconds} s`);
    if (ledger.total !== acceptedAll) fail(`the ledger holds ${ledger.total} messages; the load generator had ${acceptedAll} accepted (warm-up included)`);
    if (ledger.open !== 0) fail(`${ledger.open} messages in the ledger are not final (${JSON.stringify(ledger.byStatus)})`);
    let hooksCounted = true;
    if (hooks) {
      const want = ledger.total * EVENTS_PER_MESSAGE;
      hooksCounted = hooks.doneAt !== null && hooks.stats.distinct === want && hooks.stats.badSignatures === 0 && hooks.stats.badBodies === 0;
      if (hooks.stats.distinct !== want) fail(`the webhook receiver got ${hooks.stats.distinct} distinct events; the ledger's ${ledger.total} messages make ${want}`);
      if (hooks.stats.badSignatures || hooks.stats.badBodies) fail(`${hooks.stats.badSignatures} webhook signatures did not verify, ${hooks.stats.badBodies} bodies did not parse`);
    }
    const counted = m.final === m.accepted && ledger.total === acceptedAll && ledger.open === 0 && hooksCounted;

    const n = Math.max(1, m.accepted);
    // Each long message is 3 parts upstream (approximate when some were refused).
    const expectedParts = acceptedAll + 2 * (m.long + w.long);
    const per1000 = (name: string) => (cpu[name] / n) * 1000;
    const load = machineLoad(cpu, machine.cores);
    const gcPer1000 = (kind: string, f: 'count' | 'seconds') => (((gc1[kind]?.[f] ?? 0) - (gc0[kind]?.[f] ?? 0)) / n) * 1000;
    // WAL per accepted message of the measured phase (receipts included: the phase ends when the last one is in).
    const walPerMessage = wal0 !== null && wal1 !== null ? Number(wal1 - wal0) / n : null;
    // Postgres's own counters over the measured phase, per accepted message (receipts included).
    const pgPerMessage =
      pg0 && pg1
        ? { commits: (pg1.commits - pg0.commits) / n, inserted: (pg1.inserted - pg0.inserted) / n, updated: (pg1.updated - pg0.updated) / n, deleted: (pg1.deleted - pg0.deleted) / n }
        : null;
    const gcSeconds = ['minor', 'major', 'incremental', 'weakcb'].reduce((s, k) => s + gcPer1000(k, 'seconds'), 0);
    const acceptedRate = m.accepted / Math.max(1e-9, m.submitSeconds);
    const finalRate = m.final / Math.max(1e-9, m.finalSeconds);
    const atLatencyTargetRate = rate >= TARGET_P99_AT && acceptedRate >= TARGET_P99_AT * 0.95;
    // How long the simulator's receipts waited for Ferry's deliver_sm_resp (correlated and in the ledger).
    const answerMs = { count: answer.count, mean: (answer.sum / Math.max(1, answer.count)) * 1000, p50: histogramQuantile(answer, 0.5) * 1000, p99: histogramQuantile(answer, 0.99) * 1000 };
    const refused = Object.entries(m.refused).map(([k, v]) => `${k} ${fmt.int(v)}`).join(', ');
    const rows: Row[] = [
      { figure: 'messages offered / accepted / final', value: `${fmt.int(m.offered)} / ${fmt.int(m.accepted)} / ${fmt.int(m.final)}` },
      ...(refused ? [{ figure: 'refused submits', value: refused }] : []),
      {
        figure: rate ? `accepted rate (offered ${fmt.int(rate)} msg/s)` : 'accepted rate (submit_sm_resp OK)',
        value: fmt.rate(acceptedRate),
        target: `≥ ${fmt.int(TARGET_RATE)} msg/s`,
        verdict: rate ? '(without --rate)' : verdict(acceptedRate >= TARGET_RATE),
      },
      { figure: 'final rate (receipts at the customer)', value: fmt.rate(finalRate) },
      {
        figure: 'submit_sm_resp latency p50 / p95 / p99 / max',
        value: fmt.latency(m.respLatency),
        target: `p99 ≤ ${TARGET_P99_MS} ms at ${fmt.int(TARGET_P99_AT)} msg/s`,
        verdict: atLatencyTargetRate ? verdict(m.respLatency.p99 <= TARGET_P99_MS) : `(at --rate ${TARGET_P99_AT})`,
      },
      { figure: `submit → receipt latency (receipt delay ${common.receiptDelayMs} ms)`, value: fmt.latency(m.receiptLatency) },
      {
        figure: "receipt answer to the simulator, mean / p50 / p99 (p's from the metric's buckets)",
        value: answer.count ? `${fmt.ms(answerMs.mean)} / ${fmt.ms(answerMs.p50)} / ${fmt.ms(answerMs.p99)} ms` : '—',
      },
      { figure: 'CPU s per 1,000 messages: daemon', value: fmt.cpu(per1000('daemon')), target: `≤ ${TARGET_CPU}`, verdict: verdict(per1000('daemon') <= TARGET_CPU) },
      {
        figure: 'daemon GC per 1,000 messages: young / full collections, pause s',
        value: `${gcPer1000('minor', 'count').toFixed(1)} / ${gcPer1000('major', 'count').toFixed(2)}, ${fmt.cpu(gcSeconds)}`,
      },
      { figure: 'CPU s per 1,000 messages: simulator / load generator', value: `${fmt.cpu(per1000('simulator'))} / ${fmt.cpu(per1000('loadgen'))}` },
      ...(common.backend === 'redis+postgres'
        ? [{ figure: 'CPU s per 1,000 messages: Postgres / Redis servers (this machine)', value: `${fmt.cpu(per1000('postgres'))} / ${fmt.cpu(per1000('redis'))}` }]
        : []),
      ...(walPerMessage !== null ? [{ figure: 'Postgres WAL bytes per message', value: fmt.int(walPerMessage) }] : []),
      ...(pgPerMessage
        ? [
            {
              figure: 'Postgres per message: commits; rows inserted / updated / deleted',
              value: `${pgPerMessage.commits.toFixed(2)}; ${pgPerMessage.inserted.toFixed(2)} / ${pgPerMessage.updated.toFixed(2)} / ${pgPerMessage.deleted.toFixed(2)}`,
            },
          ]
        : []),
      ...(preloaded ? [{ figure: 'ledger preloaded before the first round (other accounts)', value: preloadLine(preloaded) }] : []),
      ...(drops.length ? [{ figure: 'retention after the rounds, each: rows, seconds', value: drops.map((d) => `${d.partition} ${fmt.int(d.rows)} rows ${d.seconds.toFixed(3)} s`).join('; ') }] : []),
      { figure: 'machine while measured (every process on it)', value: fmt.load(load, machine.cores) },
      ...(hooks && hookStats
        ? WebhookBench.rows(
            hookStats,
            ledger.total * EVENTS_PER_MESSAGE,
            m.accepted,
            hooks.doneAt === null ? NaN : (hooks.doneAt - measureStartedAt) / 1000,
            cpu.receiver ?? 0,
          )
        : []),
      ...(webhooks?.preloadRows() ?? []),
      ...(drift
        ? [
            {
              figure: 'daemon RSS first → last tenth of the run; open fds',
              value: `${drift.rssStartMB.toFixed(0)} → ${drift.rssEndMB.toFixed(0)} MB (${drift.rssChangePct >= 0 ? '+' : ''}${drift.rssChangePct.toFixed(1)}%); ${drift.fdsStart} → ${drift.fdsEnd}`,
              target: 'within 10% (soak)',
              verdict: verdict(Math.abs(drift.rssChangePct) <= 10),
            },
          ]
        : []),
      {
        figure: 'peak RSS MB: daemon / simulator / load generator',
        value: `${fmt.mb(sampler.peakRss.daemon)} / ${fmt.mb(sampler.peakRss.simulator)} / ${fmt.mb(sampler.peakRss.loadgen)}`,
      },
      ...(simStats
        ? [
            {
              figure: 'simulator (warm-up included)',
              value:
                `${fmt.int(simStats.submits)} submits for ${fmt.int(expectedParts)} parts` +
                `${simStats.submits > expectedParts ? ` (${fmt.int(simStats.submits - expectedParts)} sent again)` : ''}; ` +
                `receipts ${fmt.int(simStats.receiptsAcked)} acknowledged, ${fmt.int(simStats.receiptsFailed)} refused by Ferry`,
            },
          ]
        : []),
      {
        figure: 'ledger (warm-up included)',
        value: `${fmt.int(ledger.total)} rows: ${Object.entries(ledger.byStatus).map(([s, c]) => `${s} ${fmt.int(c)}`).join(', ')}`,
      },
      { figure: 'accounting', value: counted ? 'OK: every accepted message reached a final state' : 'FAILED (see below)' },
    ];
    const command = `npm run bench -- smpp ${process.argv.slice(2).join(' ')}`.trim();
    printTable(
      `Ferry bench · smpp · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      [
        `machine: ${machine.cores} × ${machine.model}, ${machine.memoryGiB} GiB, Node ${machine.node}; backend ${common.backend}; daemon and simulator via ${stack.runtime}`,
        `command: ${command}`,
        `load: ${binds} transceiver binds × window ${window}; ${fmt.int(m.offered)} messages in ${m.submitSeconds.toFixed(1)} s ` +
          `(${fmt.int(m.ucs2)} UCS-2, ${fmt.int(m.long)} 3-part long, the rest GSM-7); registered_delivery=1; ` +
          `Ferry → simulator ${common.upstreamBinds} binds × window ${common.upstreamWindow}, receipt delay ${common.receiptDelayMs} ms`,
      ],
      rows,
    );
    if (common.json) {
      printJson({
        scenario: 'smpp',
        date: new Date().toISOString(),
        backend: common.backend,
        runtime: stack.runtime,
        machine,
        options: { binds, window, messages, seconds, rate, warmupMessages, receiptDelayMs: common.receiptDelayMs, upstreamBinds: common.upstreamBinds, upstreamWindow: common.upstreamWindow },
        messages: { offered: m.offered, accepted: m.accepted, final: m.final, refused: m.refused, ucs2: m.ucs2, long: m.long },
        rate: { acceptedPerSec: acceptedRate, finalPerSec: finalRate, submitSeconds: m.submitSeconds, finalSeconds: m.finalSeconds },
        latencyMs: { submitResp: m.respLatency, submitToReceipt: m.receiptLatency, receiptAnswer: answerMs },
        cpuSeconds: cpu,
        cpuSecondsPer1000: Object.fromEntries(Object.keys(cpu).map((p) => [p, per1000(p)])),
        daemonGcPer1000: { young: gcPer1000('minor', 'count'), full: gcPer1000('major', 'count'), pauseSeconds: gcSeconds },
        postgresWalBytesPerMessage: walPerMessage,
        postgresPerMessage: pgPerMessage,
        preloadedMessages: preloaded ?? null,
        retentionDrops: drops,
        machineLoad: load ?? null,
        peakRssMB: Object.fromEntries(Object.entries(sampler.peakRss).map(([k, v]) => [k, v / 2 ** 20])),
        daemonDrift: drift ?? null,
        receiptStates: m.receiptStates,
        ledger,
        webhooks: hookStats
          ? { ...hookStats, allInSeconds: hooks?.doneAt ? (hooks.doneAt - measureStartedAt) / 1000 : null, preloaded: webhooks?.preloadJson() ?? null }
          : null,
        simulator: simStats,
        warmup: { offered: w.offered, accepted: w.accepted, final: w.final },
        unmatchedReceipts: result.unmatchedReceipts,
        duplicateReceipts: result.duplicateReceipts,
        targets: { acceptedPerSec: TARGET_RATE, submitRespP99Ms: TARGET_P99_MS, atRate: TARGET_P99_AT, daemonCpuPer1000: TARGET_CPU },
        counted,
      });
    }
  },
});

function preloadLine(p: MessagePreload): string {
  const where = p.partitions ? `${p.partitions} partitions` : 'one table';
  return `${fmt.int(p.messages)} messages over ${p.days} days in ${where}, ${fmt.mb(p.totalBytes)} MB with history; loaded in ${p.loadSeconds.toFixed(0)} s, VACUUM (ANALYZE) ${p.vacuumSeconds.toFixed(0)} s`;
}
