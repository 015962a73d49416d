/**
 * Redis Cluster scenario: the smpp load on a loopback 3-master/3-replica cluster with queueShards=N and with 1.
 *
 * Starts its own cluster (scripts/ci/redis-cluster.sh on 127.0.0.1:16660–16665, stopped and removed at the end
 * whatever happens), then one run per queueShards value, each its own process (harness/cluster-run.ts: a daemon with
 * FERRY_REDIS_CLUSTER=true, Postgres from DATABASE_URL, the SMSC simulator, the smpp scenario's load with receipts).
 * Each master's INFO commandstats and total_commands_processed are read when the measured phase starts and when its
 * last receipt is in and the ledger is final; the table shows each master's share of the daemon's commands against
 * an even share, commands per message, msg/s and the daemon's CPU per 1,000 messages, for both runs side by side.
 *
 *   npm run bench -- cluster [--shards 3] [--messages 20000] [--seconds 60] [--binds 4] [--window 100] [--warmup 2000]
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import calculateSlot from 'cluster-key-slot';
import { packageRoot } from '../../src/util/paths.js';
import { queueShardName } from '../../src/store/redis/keys.js';
import { Args, UsageError } from './harness/args.js';
import type { ClusterRunResult } from './harness/cluster-run.js';
import { machineInfo } from './harness/machine.js';
import { machineLoad } from './harness/proc.js';
import { BenchCluster, HOUSEKEEPING, redisMajorVersion, slotIn, workload } from './harness/redis-cluster.js';
import { fmt, printJson, verdict } from './harness/report.js';
import { COMMON_FLAGS, COMMON_USAGE } from './harness/scenario.js';

/** The cluster's ports: 16660–16665 (bus 26660–26665), this scenario's alone. */
const BASE_PORT = 16660;
/** Each master's share of the daemon's commands should stay within this of an even share (with shards ≥ 3). */
const TARGET_SPREAD_PCT = 20;
/** The queue the SMS pipeline runs on (src/gateway.ts). */
const SMS_QUEUE = 'messages';

const USAGE = `usage: npm run bench -- cluster [options]

  --shards N       FERRY_REDIS_QUEUE_SHARDS of the measured run (default 3); a second run with 1 follows, for
                   comparison (not with --shards 1 or --no-baseline)
  --no-baseline    only the --shards run
  --messages M     measured submits per run at most (default 20000)
  --seconds T      measured phase per run at most T seconds (default 60)
  --binds K        customer transceiver binds (default 4)
  --window W       outstanding submits per bind (default 100)
  --warmup N       warm-up submits per run before measuring (default 2000)

Needs Postgres: DATABASE_URL or --database-url names the server (each run creates a database of its own there and
drops it). Redis is the scenario's own cluster on 127.0.0.1:${BASE_PORT}–${BASE_PORT + 5} (needs redis-server and
redis-cli 7+; prints one skip line without them); REDIS_URL, --redis-url and --backend do not apply.`;

const SCENARIO_FLAGS = ['shards', 'no-baseline', 'messages', 'seconds', 'binds', 'window', 'warmup'];

const log = (line: string): void => {
  process.stderr.write(`bench: ${line}\n`);
};

const args = new Args();
let databaseUrl: string;
let shards: number;
let withBaseline: boolean;
try {
  if (args.has('help')) {
    process.stdout.write(`${USAGE}\n\n${COMMON_USAGE}\n`);
    process.exit(0);
  }
  const unknown = args.unknown([...COMMON_FLAGS, ...SCENARIO_FLAGS]);
  if (unknown.length) throw new UsageError(`unknown option ${unknown.join(', ')}`);
  if (args.has('backend') || args.has('redis-url')) throw new UsageError('--backend and --redis-url do not apply: the scenario runs on Postgres and its own Redis Cluster');
  const db = args.string('database-url') ?? process.env.DATABASE_URL;
  if (!db) throw new UsageError('needs Postgres: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres) or pass --database-url');
  databaseUrl = db;
  shards = args.number('shards', 3, { min: 1, max: 64, integer: true });
  withBaseline = shards !== 1 && !args.has('no-baseline');
  for (const f of ['messages', 'seconds', 'binds', 'window', 'warmup']) args.number(f, 1, { min: 0 });
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`bench cluster: ${err.message}\n\n${USAGE}\n\n${COMMON_USAGE}\n`);
    process.exit(2);
  }
  throw err;
}
if (redisMajorVersion() < 7) {
  process.stdout.write('bench cluster: skipped: needs redis-server and redis-cli 7+ and timeout (apt-get install redis-server)\n');
  process.exit(0);
}

/** This process's argv for a run: the options as given, minus the ones this file answers, plus the run's storage. */
function runArgs(runShards: number, seedUrl: string): string[] {
  const argv = process.argv.slice(2);
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--shards' || argv[i] === '--database-url') i++;
    else if (argv[i] !== '--no-baseline') out.push(argv[i]);
  }
  return [...out, '--shards', String(runShards), '--backend', 'redis+postgres', '--database-url', databaseUrl, '--redis-url', seedUrl, '--cluster-port', String(BASE_PORT)];
}

let current: ReturnType<typeof spawn> | undefined;

/** One run as its own process; its result over IPC, or why there is none. */
function runOnce(runShards: number, seedUrl: string): Promise<{ result?: ClusterRunResult; error?: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(packageRoot, 'scripts/bench/harness/cluster-run.ts'), ...runArgs(runShards, seedUrl)], {
      cwd: packageRoot,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    current = child;
    let result: ClusterRunResult | undefined;
    child.on('message', (m: { type?: string }) => {
      if (m.type === 'result') result = m as ClusterRunResult;
    });
    child.once('error', (err) => resolve({ error: `could not start the run: ${err.message}` }));
    child.once('exit', (code, signal) => {
      current = undefined;
      if (code === 0 && result) resolve({ result });
      else resolve({ result, error: `the queueShards=${runShards} run exited ${code ?? signal}${result ? '' : ' without figures'}` });
    });
  });
}

let cluster: BenchCluster | undefined;
let stopping = false;
/** A signal: the running run cleans itself up (SIGTERM), then the cluster goes. */
const interrupted = (signal: NodeJS.Signals, code: number) => () => {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping the run and the cluster`);
  const hardStop = setTimeout(() => process.exit(code), 60_000);
  void (async () => {
    if (current && current.exitCode === null) {
      const gone = new Promise((r) => current!.once('exit', r));
      current.kill('SIGTERM');
      await gone;
    }
    await cluster?.stop().catch((err: Error) => log(err.message));
    clearTimeout(hardStop);
    process.exit(code);
  })();
};
process.once('SIGINT', interrupted('SIGINT', 130));
process.once('SIGTERM', interrupted('SIGTERM', 143));

const machine = machineInfo();
const results: ClusterRunResult[] = [];
const failures: string[] = [];
try {
  log(`starting a Redis Cluster (3 masters, 3 replicas) on 127.0.0.1:${BASE_PORT}–${BASE_PORT + 5}`);
  cluster = await BenchCluster.start(BASE_PORT);
  for (const n of withBaseline ? [shards, 1] : [shards]) {
    if (stopping) break;
    const { result, error } = await runOnce(n, cluster.seedUrl);
    if (result) results.push(result);
    if (error) failures.push(error);
  }
} catch (err) {
  failures.push(`the run broke: ${(err as Error).message}`);
} finally {
  if (!stopping) {
    log('stopping the cluster');
    await cluster?.stop().catch((err: Error) => failures.push(`could not stop the cluster: ${err.message}`));
  }
}
if (stopping) await new Promise(() => undefined); // the signal handler exits

/** A run's figures, in the order the table shows them. */
function figures(r: ClusterRunResult) {
  const m = r.measured;
  const n = Math.max(1, m.accepted);
  const perMaster = r.masters.map((x) => workload(x.counters));
  const total = perMaster.reduce((a, b) => a + b, 0);
  const even = total / r.masters.length;
  const deviation = perMaster.map((c) => (even > 0 ? ((c - even) / even) * 100 : NaN));
  const maxDeviation = Math.max(...deviation.map(Math.abs));
  return {
    accepted: m.accepted,
    acceptedPerSec: m.accepted / Math.max(1e-9, m.submitSeconds),
    finalPerSec: m.final / Math.max(1e-9, m.finalSeconds),
    daemonCpuPer1000: (r.cpu.daemon / n) * 1000,
    perMaster,
    total,
    deviation,
    maxDeviation,
    commandsPerMessage: total / n,
    // Redis counts every command a script runs under its own name; the script calls are the daemon's round trips' bulk.
    scriptCallsPerMessage: r.masters.reduce((sum, x) => sum + (x.counters.calls.evalsha ?? 0) + (x.counters.calls.eval ?? 0), 0) / n,
    processed: r.masters.map((x) => x.counters.processed),
    redisCpuPer1000: r.masters.map((x) => (x.counters.cpuSeconds / n) * 1000),
  };
}

const signed = (pct: number): string => (Number.isFinite(pct) ? `${pct >= 0 ? '+' : '−'}${Math.abs(pct).toFixed(1)}%` : '—');

/** A Markdown table, columns padded (as harness/report.ts prints). */
function grid(header: string[], body: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) => `| ${header.map((_, i) => (cells[i] ?? '').padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line), ''];
}

if (results.length) {
  const first = results[0];
  const masters = first.masters;
  const f = results.map(figures);
  const label = (r: ClusterRunResult) => `queueShards=${r.shards}`;
  const row = (figure: string, cell: (x: ReturnType<typeof figures>, r: ClusterRunResult) => string, target = '', verdictOf?: (x: ReturnType<typeof figures>) => boolean) => [
    figure,
    ...results.map((r, i) => cell(f[i], r)),
    target,
    verdictOf && first.shards >= masters.length ? verdict(verdictOf(f[0])) : '',
  ];
  const body = [
    row('messages accepted / final', (_, r) => `${fmt.int(r.measured.accepted)} / ${fmt.int(r.measured.final)}`),
    row('accepted rate (submit_sm_resp OK)', (x) => fmt.rate(x.acceptedPerSec)),
    row('final rate (receipts at the customer)', (x) => fmt.rate(x.finalPerSec)),
    row('submit_sm_resp latency p50 / p99', (_, r) => `${fmt.ms(r.measured.respLatency.p50)} / ${fmt.ms(r.measured.respLatency.p99)} ms`),
    row('CPU s per 1,000 messages: daemon', (x) => fmt.cpu(x.daemonCpuPer1000)),
    row('Redis commands per message (all masters)', (x) => x.commandsPerMessage.toFixed(2)),
    row('of which script calls (EVALSHA, EVAL) per message', (x) => x.scriptCallsPerMessage.toFixed(3)),
    ...masters.map((mm, k) => row(`commands on :${mm.port} (vs an even share)`, (x) => `${fmt.int(x.perMaster[k])} (${signed(x.deviation[k])})`)),
    row('largest deviation from an even share', (x) => `±${x.maxDeviation.toFixed(1)}%`, `≤ ±${TARGET_SPREAD_PCT}%`, (x) => x.maxDeviation <= TARGET_SPREAD_PCT),
    row(`every master within ±${TARGET_SPREAD_PCT}% of an even share`, (x) => (x.maxDeviation <= TARGET_SPREAD_PCT ? 'yes' : 'no')),
    row(`total_commands_processed ${masters.map((mm) => `:${mm.port}`).join(' / ')}`, (x) => x.processed.map(fmt.int).join(' / ')),
    row(`CPU s per 1,000 messages: masters ${masters.map((mm) => `:${mm.port}`).join(' / ')}`, (x) => x.redisCpuPer1000.map(fmt.cpu).join(' / ')),
    row('CPU s per 1,000 messages: simulator / load generator', (_, r) => [r.cpu.simulator, r.cpu.loadgen].map((c) => fmt.cpu((c / Math.max(1, r.measured.accepted)) * 1000)).join(' / ')),
    row('machine while measured (every process on it)', (_, r) => fmt.load(machineLoad(r.cpu, machine.cores), machine.cores)),
  ];

  // Where each queue shard's hash tag lives: the placement the spread depends on.
  const placement = (n: number) =>
    Array.from({ length: n }, (_, s) => {
      const name = queueShardName(SMS_QUEUE, s);
      const slot = calculateSlot(`q:${name}`);
      const owner = masters.find((mm) => slotIn(slot, mm.slots));
      return `{q:${name}} slot ${slot} → :${owner?.port ?? '?'}`;
    }).join(', ');

  const lines: string[] = ['', `Ferry bench · cluster · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`, ''];
  lines.push(
    `machine: ${machine.cores} × ${machine.model}, ${machine.memoryGiB} GiB, Node ${machine.node}; Postgres and a loopback Redis Cluster on this machine; daemon and simulator via ${first.runtime}`,
    `command: ${`npm run bench -- cluster ${process.argv.slice(2).join(' ')}`.trim()}`,
    `cluster: 127.0.0.1:${BASE_PORT}–${BASE_PORT + 5}, masters ${masters.map((mm) => `:${mm.port} (slots ${mm.slots.join(',')})`).join(', ')}, one replica each`,
    `load: per run ${args.number('binds', 4)} transceiver binds × window ${args.number('window', 100)}, warm-up ${fmt.int(args.number('warmup', 2000))}, then at most ` +
      `${fmt.int(args.number('messages', 20_000))} messages or ${args.number('seconds', 60)} s (the smpp mix: 10% UCS-2, 5% 3-part long); registered_delivery=1`,
    `counted: each master's INFO commandstats from the measured phase's start until its last receipt is in and the ledger is final, ` +
      `without ${[...HOUSEKEEPING].join(', ')} (replication and the bench's reads); a script's own commands count each under its name ` +
      `(as Redis counts them), the script call once more as evalsha; per message = per accepted message`,
    ...results.map((r) => `queue "${SMS_QUEUE}" with ${label(r)}: ${placement(r.shards)}`),
    '',
  );
  lines.push(...grid(['figure', ...results.map(label), 'target', ''], body));

  // Per command and master: what the daemon asked of each.
  for (const [i, r] of results.entries()) {
    const names = new Set<string>();
    for (const mm of r.masters) for (const c of Object.keys(mm.counters.calls)) if (!HOUSEKEEPING.has(c)) names.add(c);
    const total = (c: string) => r.masters.reduce((s, mm) => s + (mm.counters.calls[c] ?? 0), 0);
    const sorted = [...names].sort((a, b) => total(b) - total(a));
    const n = Math.max(1, r.measured.accepted);
    lines.push(`${label(r)}: commands by master (${fmt.int(f[i].total)} in all, ${f[i].commandsPerMessage.toFixed(2)} per message)`, '');
    lines.push(
      ...grid(
        ['command', ...r.masters.map((mm) => `:${mm.port}`), 'all masters', 'per message'],
        sorted.map((c) => [c, ...r.masters.map((mm) => fmt.int(mm.counters.calls[c] ?? 0)), fmt.int(total(c)), (total(c) / n).toFixed(3)]),
      ),
    );
  }
  process.stdout.write(lines.join('\n') + '\n');

  if (args.has('json')) {
    printJson({
      scenario: 'cluster',
      date: new Date().toISOString(),
      machine,
      options: {
        shards,
        baseline: withBaseline,
        messages: args.number('messages', 20_000),
        seconds: args.number('seconds', 60),
        binds: args.number('binds', 4),
        window: args.number('window', 100),
        warmup: args.number('warmup', 2000),
      },
      runs: results.map((r, i) => ({
        shards: r.shards,
        messages: { offered: r.measured.offered, accepted: r.measured.accepted, final: r.measured.final, refused: r.measured.refused },
        acceptedPerSec: f[i].acceptedPerSec,
        finalPerSec: f[i].finalPerSec,
        daemonCpuPer1000: f[i].daemonCpuPer1000,
        commandsPerMessage: f[i].commandsPerMessage,
        scriptCallsPerMessage: f[i].scriptCallsPerMessage,
        maxDeviationPct: f[i].maxDeviation,
        masters: r.masters.map((mm, k) => ({
          port: mm.port,
          slots: mm.slots,
          commands: f[i].perMaster[k],
          deviationPct: f[i].deviation[k],
          totalCommandsProcessed: mm.counters.processed,
          cpuSeconds: mm.counters.cpuSeconds,
          calls: mm.counters.calls,
        })),
        cpuSeconds: r.cpu,
        counted: r.counted,
      })),
      targets: { spreadPct: TARGET_SPREAD_PCT },
    });
  }
}
for (const why of failures) process.stdout.write(`FAIL: ${why}\n`);
process.exit(failures.length ? 1 : 0);
