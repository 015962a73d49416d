/**
 * End-to-end OTP scenario: C concurrent users each POST /v1/otp/request (a new phone every time), read the code
 * from the SMS at the simulator (its tap port), then POST /v1/otp/verify. Counts request+verify pairs per second;
 * every OTP SMS must also reach a final state in the ledger. Separate processes as in harness/scenario.ts.
 *
 *   npm run bench -- otp [--pairs 100000] [--seconds 15] [--concurrency 64] [--warmup 8000] …
 */
import { machineLoad } from './harness/proc.js';
import { fmt, printJson, printTable, verdict, type Row } from './harness/report.js';
import { LoadGen } from './harness/ipc.js';
import type { OtpLoadConfig, OtpPhaseResult } from './harness/loadgen-otp.js';
import { runScenario } from './harness/scenario.js';

const TARGET_PAIRS = 3_000;

const USAGE = `usage: npm run bench -- otp [options]

  --pairs N          measured request+verify pairs at most (default 100000)
  --seconds T        measured phase at most T seconds (default 15)
  --concurrency C    users requesting and verifying at once (default 64)
  --warmup N         warm-up pairs (default 8000: enough for the JIT to settle)
  --code-timeout S   a code not at the simulator within S seconds is a failure (default 30)`;

await runScenario({
  name: 'otp',
  flags: ['pairs', 'seconds', 'concurrency', 'warmup', 'code-timeout'],
  usage: USAGE,
  stackOverrides: () => ({ simTap: true }),
  budgetSeconds: (args, common) => args.number('seconds', 15) + 60 + 2 * args.number('code-timeout', 30) + common.finalTimeoutSeconds,
  async run({ args, common, stack, sampler, machine, log, addChild, mark, cpuSince, fail }) {
    const config: OtpLoadConfig = {
      apiUrl: stack.apiUrl,
      token: '',
      tapPort: stack.ports.simTap,
      concurrency: args.number('concurrency', 64, { min: 1, max: 10_000, integer: true }),
      warmupPairs: args.number('warmup', 8000, { min: 0, max: 1_000_000, integer: true }),
      pairs: args.number('pairs', 100_000, { min: 1, max: 10_000_000, integer: true }),
      seconds: args.number('seconds', 15, { min: 1, max: 3600 }),
      codeTimeoutSeconds: args.number('code-timeout', 30, { min: 1, max: 600 }),
    };
    config.token = (await stack.createAccount('bench', 'bench123', 4)).token;
    const gen = new LoadGen('loadgen-otp.ts', config, stack.logDir);
    addChild('loadgen', gen.child);
    log(`load generator pid ${gen.pid}: ${config.concurrency} users, warm-up ${config.warmupPairs} pairs, then ${config.pairs} pairs or ${config.seconds} s`);

    const warm = await gen.next<{ type: string; requested: number; verified: number; codesMissing: number }>('warmup-done', (120 + config.codeTimeoutSeconds) * 1000);
    let requested = warm.requested;
    if (warm.requested > 0 && warm.verified === 0) throw new Error(`warm-up: ${warm.requested} OTPs requested, none verified (${warm.codesMissing} codes never reached the simulator)`);
    if ((await stack.waitFinal(requested, common.finalTimeoutSeconds * 1000)) === null) log('warm-up: not every OTP SMS was final in time');
    log(`warm-up: ${warm.verified} of ${warm.requested} pairs verified; measuring`);

    const cpu0 = mark();
    const wal0 = await stack.walBytes();
    gen.send({ type: 'go' });
    const started = performance.now();
    const m = (await gen.next<{ type: string; result: OtpPhaseResult }>('pairs-done', (config.seconds + 60 + config.codeTimeoutSeconds) * 1000)).result;
    requested += m.requested;
    log(`pairs: ${m.verified} verified of ${m.offered}; waiting for the OTP SMS receipts`);
    const finalAt = await stack.waitFinal(requested, common.finalTimeoutSeconds * 1000);
    const cpu = cpuSince(cpu0);
    const wal1 = await stack.walBytes();
    await gen.finish();
    const simStats = await stack.freshSimStats();

    const ledger = await stack.ledgerCounts();
    if (m.verified !== m.requested) fail(`${m.requested - m.verified} of ${m.requested} OTPs were not verified (${m.codesMissing} codes never reached the simulator)`);
    if (warm.verified !== warm.requested) fail(`warm-up: ${warm.requested - warm.verified} of ${warm.requested} OTPs were not verified`);
    if (ledger.total !== requested) fail(`the ledger holds ${ledger.total} messages; ${requested} OTPs were sent (warm-up included)`);
    if (ledger.open !== 0) fail(`${ledger.open} OTP messages are not final (${JSON.stringify(ledger.byStatus)})`);
    const counted = m.verified === m.requested && warm.verified === warm.requested && ledger.total === requested && ledger.open === 0;

    const pairRate = m.verified / Math.max(1e-9, m.seconds);
    const per1000 = (name: string) => (cpu[name] / Math.max(1, m.verified)) * 1000;
    const load = machineLoad(cpu, machine.cores);
    const walPerPair = wal0 !== null && wal1 !== null ? Number(wal1 - wal0) / Math.max(1, m.verified) : null;
    const failures = Object.entries(m.failures).map(([k, c]) => `${k} ${fmt.int(c)}`);
    const rows: Row[] = [
      { figure: 'pairs offered / requested / verified', value: `${fmt.int(m.offered)} / ${fmt.int(m.requested)} / ${fmt.int(m.verified)}` },
      ...(failures.length || m.codesMissing ? [{ figure: 'failures', value: [...failures, ...(m.codesMissing ? [`code never arrived ${fmt.int(m.codesMissing)}`] : [])].join(', ') }] : []),
      { figure: `pair rate (${config.concurrency} users)`, value: fmt.rate(pairRate, 'pairs/s'), target: `≥ ${fmt.int(TARGET_PAIRS)} pairs/s`, verdict: verdict(pairRate >= TARGET_PAIRS) },
      { figure: 'request → verified latency p50 / p95 / p99 / max', value: fmt.latency(m.pairLatency) },
      { figure: 'POST /v1/otp/request latency', value: fmt.latency(m.requestLatency) },
      { figure: 'code at the simulator after the request answer', value: fmt.latency(m.codeLatency) },
      { figure: 'POST /v1/otp/verify latency', value: fmt.latency(m.verifyLatency) },
      { figure: 'OTP SMS final (receipts in the ledger) after', value: finalAt === null ? 'not all final' : `${((finalAt - started) / 1000).toFixed(1)} s` },
      { figure: 'CPU s per 1,000 pairs: daemon / simulator / load generator', value: ['daemon', 'simulator', 'loadgen'].map((p) => fmt.cpu(per1000(p))).join(' / ') },
      ...(common.backend === 'redis+postgres'
        ? [{ figure: 'CPU s per 1,000 pairs: Postgres / Redis servers (this machine)', value: `${fmt.cpu(per1000('postgres'))} / ${fmt.cpu(per1000('redis'))}` }]
        : []),
      ...(walPerPair !== null ? [{ figure: 'Postgres WAL bytes per pair', value: fmt.int(walPerPair) }] : []),
      { figure: 'machine while measured (every process on it)', value: fmt.load(load, machine.cores) },
      {
        figure: 'peak RSS MB: daemon / simulator / load generator',
        value: `${fmt.mb(sampler.peakRss.daemon)} / ${fmt.mb(sampler.peakRss.simulator)} / ${fmt.mb(sampler.peakRss.loadgen)}`,
      },
      {
        figure: 'ledger (warm-up included)',
        value: `${fmt.int(ledger.total)} rows: ${Object.entries(ledger.byStatus).map(([s, c]) => `${s} ${fmt.int(c)}`).join(', ')}`,
      },
      { figure: 'accounting', value: counted ? 'OK: every OTP verified, every OTP SMS final' : 'FAILED (see below)' },
    ];
    const command = `npm run bench -- otp ${process.argv.slice(2).join(' ')}`.trim();
    printTable(
      `Ferry bench · otp · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      [
        `machine: ${machine.cores} × ${machine.model}, ${machine.memoryGiB} GiB, Node ${machine.node}; backend ${common.backend}; daemon via ${stack.runtime}, simulator via tsx (with its code tap)`,
        `command: ${command}`,
        `load: ${config.concurrency} users, request (new phone each) → code read at the simulator → verify; ${fmt.int(m.offered)} pairs in ${m.seconds.toFixed(1)} s; ` +
          `Ferry → simulator ${common.upstreamBinds} binds × window ${common.upstreamWindow}, receipt delay ${common.receiptDelayMs} ms`,
      ],
      rows,
    );
    if (common.json) {
      printJson({
        scenario: 'otp',
        date: new Date().toISOString(),
        backend: common.backend,
        runtime: stack.runtime,
        machine,
        options: { ...config, token: undefined, apiUrl: undefined, tapPort: undefined, receiptDelayMs: common.receiptDelayMs },
        pairs: { offered: m.offered, requested: m.requested, verified: m.verified, codesMissing: m.codesMissing, failures: m.failures },
        rate: { pairsPerSec: pairRate, seconds: m.seconds, finalSeconds: finalAt === null ? null : (finalAt - started) / 1000 },
        latencyMs: { pair: m.pairLatency, request: m.requestLatency, code: m.codeLatency, verify: m.verifyLatency },
        cpuSeconds: cpu,
        cpuSecondsPer1000: { daemon: per1000('daemon'), simulator: per1000('simulator'), loadgen: per1000('loadgen'), postgres: per1000('postgres'), redis: per1000('redis') },
        postgresWalBytesPerPair: walPerPair,
        machineLoad: load ?? null,
        peakRssMB: Object.fromEntries(Object.entries(sampler.peakRss).map(([k, v]) => [k, v / 2 ** 20])),
        ledger,
        simulator: simStats,
        warmup: warm,
        targets: { pairsPerSec: TARGET_PAIRS },
        counted,
      });
    }
  },
});
