/**
 * Outbound pipeline benchmark: N jobs enqueued (in product transactions of --batch jobs), then drained through the
 * pipeline to a loopback HTTP provider (a separate process) answering at once. On Postgres when DATABASE_URL is set,
 * else embedded (PGlite); the pipeline claims its jobs from the database alone (REDIS_URL, when set with it, serves only
 * the rest of the backends). Prints jobs/s and CPU per 1,000 jobs of this process (pipeline, and on the embedded
 * backend the database too) and of the provider.
 *
 *   npm run bench -- outbound [--jobs 20000] [--concurrency 64] [--batch 1000] [--accounts 10] [--no-events] [--json]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Registry } from 'prom-client';
import { pino } from 'pino';
import { registerEventTypes } from '../../src/events/catalogue.js';
import { OutboundPipeline } from '../../src/outbound/outbound-pipeline.js';
import { StateMachine } from '../../src/outbound/state-machine.js';
import { openBackends } from '../../src/store/backends.js';
import { openDb } from '../../src/store/sql/db.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { CORE_TABLES } from '../../src/store/sql/core-tables.js';
import { RangePartitions, type PartitionedTable } from '../../src/store/sql/range-partitions.js';
import { packageRoot } from '../../src/util/paths.js';
import { HttpTestAdapter } from '../../test/outbound/http-test-adapter.js';
import { Args, UsageError } from './harness/args.js';
import { machineInfo } from './harness/machine.js';
import { cpuSeconds } from './harness/proc.js';
import { fmt, printJson, printTable } from './harness/report.js';

const FLAGS = ['jobs', 'concurrency', 'batch', 'accounts', 'partitions', 'no-events', 'json', 'help'];
const USAGE = `usage: npm run bench -- outbound [--jobs 20000] [--concurrency 64] [--batch 1000] [--accounts 10] [--partitions P] [--no-events] [--json]
  --jobs N          jobs to enqueue and drain (default 20,000)
  --concurrency C   requests to the provider at once (default 64; the hold cap is 4 × C)
  --batch B         jobs per product transaction when enqueueing (default 1,000)
  --accounts A      accounts the jobs are spread over (default 10; each may use all C)
  --partitions P    P more ranges of outbound_jobs and its history made ahead first, as a daemon running for the
                    retention's length has them (default 0: as just migrated)
  --no-events       no webhook endpoint subscribes, so no event rows are stored (default: every event stored)
  backend: Postgres when DATABASE_URL is set, else embedded (PGlite)`;

const OUTBOUND_JOBS = CORE_TABLES.find((t) => t.name === 'outbound_jobs') as PartitionedTable;
const args = new Args();
let N: number, C: number, BATCH: number, ACCOUNTS: number, PARTITIONS: number;
try {
  if (args.has('help')) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const unknown = args.unknown(FLAGS);
  if (unknown.length) throw new UsageError(`unknown option ${unknown.join(', ')}`);
  N = args.number('jobs', 20_000, { min: 1, integer: true });
  C = args.number('concurrency', 64, { min: 1, max: 4096, integer: true });
  BATCH = args.number('batch', 1000, { min: 1, integer: true });
  ACCOUNTS = args.number('accounts', 10, { min: 1, integer: true });
  PARTITIONS = args.number('partitions', 0, { min: 0, max: 100, integer: true });
} catch (err) {
  process.stderr.write(`bench outbound: ${(err as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}
const events = !args.has('no-events');
const databaseUrl = process.env.DATABASE_URL || null;
const redisUrl = databaseUrl ? process.env.REDIS_URL || null : null;
const backendName = databaseUrl ? 'postgres' : 'pglite';
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

// Scratch storage, always removed.
const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-outbound-'));
const schema = 'bench_' + randomBytes(4).toString('hex');
const keyPrefix = `ferrybench:${randomBytes(4).toString('hex')}:`;
async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: databaseUrl! });
  await c.connect();
  await c.query(sql).finally(() => c.end());
}
let url: string | null = null;
if (databaseUrl) {
  await admin(`CREATE SCHEMA ${schema}`);
  const u = new URL(databaseUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  url = u.toString();
}

const provider = spawn(process.execPath, ['--import', 'tsx', join(packageRoot, 'scripts/bench/harness/outbound-provider.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise<number>((resolve, reject) => {
  let buf = '';
  provider.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    const m = /port (\d+)/.exec(buf);
    if (m) resolve(Number(m[1]));
  });
  provider.once('exit', () => reject(new Error('the provider exited before listening')));
});

const db = await openDb({ url, dataDir, poolSize: 8 });
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  provider.kill('SIGTERM');
  await db.close().catch(() => undefined);
  if (databaseUrl) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  if (redisUrl) {
    const r = new Redis(redisUrl);
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.unlink(...keys);
    } while (cursor !== '0');
    await r.quit();
  }
  rmSync(dataDir, { recursive: true, force: true });
}
process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));

try {
  await migrate(db);
  // Ranges of one day each from tomorrow on: statements over the jobs then reach as many partitions as in a daemon
  // that has run for the retention's length (their rows do not matter to a plan that probes each index).
  if (PARTITIONS) await new RangePartitions(db, pino({ level: 'warn' })).ensure(OUTBOUND_JOBS, 1, Date.now() + (PARTITIONS - 3) * 86_400_000);
  const backends = await openBackends({ db, redisUrl, keyPrefix });
  registerEventTypes({ 'bench.queued': 'bench job accepted', 'bench.sent': 'bench job sent', 'bench.failed': 'bench job failed' });
  const machine = new StateMachine({
    product: 'bench',
    initial: 'queued',
    sent: 'sent',
    failed: 'failed',
    states: { queued: { rank: 0, event: 'queued' }, sent: { rank: 1, event: 'sent' }, failed: { rank: 2, final: true, event: 'failed' } },
  });
  const adapter = new HttpTestAdapter('bench-http', `http://127.0.0.1:${port}`);
  const pipeline = new OutboundPipeline({
    backends,
    log: pino({ level: 'warn' }),
    products: { bench: { machine, deadlineMs: 3_600_000 } },
    providers: [{ adapter, maxConcurrency: C, sendTimeoutMs: 10_000 }],
    pollMs: 20,
    // As the daemon runs it on the embedded database (src/platform/outbound-registry.ts): idle polls space out.
    ...(db.kind === 'pglite' ? { idlePollMaxMs: 1000 } : {}),
    registry: new Registry(),
  });
  if (events) {
    for (let a = 0; a < ACCOUNTS; a++) {
      await db.query(`INSERT INTO webhook_endpoints (id, account_id, url, events, secret_cipher) VALUES ($1, $2, 'https://example.invalid/h', ARRAY['*'], 'x')`, [`we_b${a}`, `acc_b${a}`]);
    }
  }

  log(`${backendName}: enqueueing ${N.toLocaleString('en')} jobs in transactions of ${BATCH}`);
  const cpu0 = process.cpuUsage();
  const e0 = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const n = Math.min(BATCH, N - i);
    await pipeline.submit(
      Array.from({ length: n }, (_, k) => ({
        product: 'bench',
        provider: 'bench-http',
        accountId: `acc_b${(i + k) % ACCOUNTS}`,
        messageId: `bm_${i + k}`,
        payload: { to: `+4477009${String(i + k).padStart(5, '0')}`, body: 'Your order has shipped.' },
      })),
    );
  }
  const enqueueSecs = (performance.now() - e0) / 1000;
  const enqueueCpu = process.cpuUsage(cpu0);

  log('draining');
  const providerCpu0 = cpuSeconds(provider.pid!) ?? 0;
  const cpu1 = process.cpuUsage();
  const d0 = performance.now();
  pipeline.start();
  // Jobs recorded as done, from the pipeline's own counter (a count(*) every 100 ms would weigh on the embedded database).
  const sent = async () => (await pipeline.metrics!.finished.get()).values.reduce((a, v) => a + v.value, 0);
  let done = 0;
  let maxHeld = 0;
  const budget = d0 + Math.max(120_000, N * 20);
  while (done < N) {
    await new Promise((r) => setTimeout(r, 100));
    maxHeld = Math.max(maxHeld, pipeline.stats().held);
    done = await sent();
    if (performance.now() > budget) throw new Error(`only ${done} of ${N} jobs done after ${Math.round((performance.now() - d0) / 1000)} s`);
  }
  const drainSecs = (performance.now() - d0) / 1000;
  const drainCpu = process.cpuUsage(cpu1);
  const providerCpu = (cpuSeconds(provider.pid!) ?? providerCpu0) - providerCpu0;
  const st = pipeline.stats();
  await pipeline.stop();
  adapter.close();
  await backends.close();
  const failed = Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbound_jobs WHERE state <> 'sent'`)).rows[0].n);
  const storedEvents = Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events`)).rows[0].n);

  const cpuPerK = (u: NodeJS.CpuUsage, n: number) => ((u.user + u.system) / 1e6 / n) * 1000;
  const m = machineInfo();
  const result = {
    backend: backendName,
    jobs: N,
    concurrency: C,
    accounts: ACCOUNTS,
    partitions: PARTITIONS,
    events,
    enqueuePerSec: N / enqueueSecs,
    enqueueCpuPer1000: cpuPerK(enqueueCpu, N),
    drainPerSec: N / drainSecs,
    drainCpuPer1000: cpuPerK(drainCpu, N),
    providerCpuPer1000: (providerCpu / N) * 1000,
    maxHeld: st.maxHeld,
    holdCap: st.holdCap,
    notSent: failed,
    storedEvents,
  };
  printTable(
    `Outbound pipeline (${backendName}), ${N.toLocaleString('en')} jobs, concurrency ${C}, ${ACCOUNTS} accounts, events ${events ? 'stored' : 'off'}${PARTITIONS ? `, ${PARTITIONS} ranges made ahead` : ''}`,
    [`machine: ${m.cores} × ${m.model}, ${m.memoryGiB} GiB, node ${m.node}`, 'CPU: seconds of CPU per 1,000 jobs; "pipeline" is this process (with PGlite, the database too; Postgres and Redis servers not counted)'],
    [
      { figure: 'enqueue (product transactions)', value: fmt.rate(result.enqueuePerSec, 'jobs/s') },
      { figure: 'enqueue CPU per 1,000', value: `${fmt.cpu(result.enqueueCpuPer1000)} s` },
      { figure: 'pipeline → provider → recorded', value: fmt.rate(result.drainPerSec, 'jobs/s') },
      { figure: 'pipeline CPU per 1,000', value: `${fmt.cpu(result.drainCpuPer1000)} s` },
      { figure: 'provider CPU per 1,000', value: `${fmt.cpu(result.providerCpuPer1000)} s` },
      { figure: 'held in memory at most', value: `${st.maxHeld} (cap ${st.holdCap})` },
      { figure: 'not sent', value: fmt.int(failed) },
    ],
  );
  if (args.has('json')) printJson(result);
  if (failed) process.exitCode = 1;
} finally {
  await cleanup();
}
