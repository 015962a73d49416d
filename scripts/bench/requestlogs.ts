/**
 * Request logging cost: the same REST load against a daemon with request logs on and one with them off, in one run.
 * Each daemon is its own process (embedded storage unless DATABASE_URL is set; the per-key rate limit off); the load
 * generator (autocannon) runs here. Two phases per daemon: GET /v1/account/balance (a cheap read, where the logging
 * share is largest) and POST /v1/sms/send. Figures: req/s, p50/p99 latency, daemon CPU per 1,000 requests, and for
 * logs on, the rows written and dropped (every request must be in the logs; none dropped).
 *
 *   npm run bench -- requestlogs [--seconds 5] [--connections 32] [--warmup-seconds 2]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../src/util/paths.js';
import { cpuSeconds, freePort } from './harness/proc.js';

const autocannon: any = createRequire(import.meta.url)('autocannon');

const argv = process.argv.slice(2);
if (argv.includes('--help')) {
  process.stdout.write('usage: npm run bench -- requestlogs [--seconds 5] [--connections 32] [--warmup-seconds 2]\n');
  process.exit(0);
}
const flag = (name: string, dflt: number, max: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(argv[i + 1]) : dflt;
  if (!Number.isFinite(v) || v <= 0 || v > max) throw new Error(`--${name} must be a number in (0, ${max}]`);
  return v;
};
const seconds = flag('seconds', 5, 120);
const connections = flag('connections', 32, 1000);
const warmup = flag('warmup-seconds', 2, 60);

interface Daemon {
  pid: number;
  api: string;
  admin: string;
  adminToken: string;
  stop(): Promise<void>;
}

async function startDaemon(logsOn: boolean): Promise<Daemon> {
  const dataDir = mkdtempSync(join(tmpdir(), `ferry-bench-logs-${logsOn ? 'on' : 'off'}-`));
  const [http, adminPort, smpp] = [await freePort(), await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FERRY_DATA_DIR: dataDir,
    FERRY_HTTP_PORT: String(http),
    FERRY_ADMIN_PORT: String(adminPort),
    FERRY_SMPP_PORT: String(smpp),
    // No access log line per request in either run (they would cost more than what is measured).
    FERRY_LOG_LEVEL: 'warn',
    FERRY_LOGS_ENABLED: String(logsOn),
    FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
  };
  const child = spawn(process.execPath, ['--import', 'tsx', join(packageRoot, 'src/cli/index.ts'), 'start'], { cwd: packageRoot, env, stdio: ['ignore', 'ignore', 'inherit'] });
  let gone = false;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      gone = true;
      resolve();
    }),
  );
  const d: Daemon = {
    pid: child.pid!,
    api: `http://127.0.0.1:${http}`,
    admin: `http://127.0.0.1:${adminPort}`,
    adminToken: '',
    async stop() {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const until = Date.now() + 60_000;
  for (;;) {
    if (gone) throw new Error('the daemon exited before it started');
    const up = await fetch(`${d.admin}/livez`).then((r) => r.ok, () => false);
    if (up && (await fetch(`${d.api}/v1/account/balance`).then(() => true, () => false))) break;
    if (Date.now() > until) {
      await d.stop();
      throw new Error('the daemon did not start within 60 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  d.adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return d;
}

async function admin(d: Daemon, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(d.admin + path, {
    method,
    headers: { authorization: `Bearer ${d.adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as { success: boolean; data: unknown; code: string };
  if (!json.success) throw new Error(`${method} ${path}: ${json.code}`);
  return json.data;
}

async function metric(d: Daemon, name: string): Promise<number> {
  const res = await fetch(`${d.admin}/metrics`, { headers: { authorization: `Bearer ${d.adminToken}` } });
  const text = await res.text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && !line.startsWith('#')) sum += Number(line.split(' ').pop());
  return sum;
}

interface Phase {
  requests: number;
  non2xx: number;
  rps: number;
  p50: number;
  p99: number;
  cpuPer1000: number;
}

function load(d: Daemon, token: string, kind: 'balance' | 'send', secs: number): Promise<Omit<Phase, 'cpuPer1000'>> {
  let i = 0;
  const request =
    kind === 'balance'
      ? { method: 'GET', path: '/v1/account/balance' }
      : {
          method: 'POST',
          path: '/v1/sms/send',
          setupRequest: (r: Record<string, unknown>) => ({ ...r, body: JSON.stringify({ to: `23324${String(1_000_000 + (i++ % 8_000_000)).slice(-7)}`, from: 'Bench', message: 'request log bench' }) }),
        };
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: d.api,
        connections,
        duration: secs,
        timeout: 30,
        headers: { authorization: `Basic ${token}`, 'content-type': 'application/json' },
        requests: [request],
      },
      (err: Error | null, r: any) => {
        if (err) return reject(err);
        resolve({ requests: r.requests.total, non2xx: r.non2xx, rps: r.requests.total / secs, p50: r.latency.p50, p99: r.latency.p99 });
      },
    );
  });
}

async function measure(logsOn: boolean): Promise<Record<string, Phase | number>> {
  const d = await startDaemon(logsOn);
  try {
    // A fresh account per run: with DATABASE_URL both daemons (and earlier runs) share the database.
    const name = `bench-${logsOn ? 'on' : 'off'}-${Date.now().toString(36)}`;
    await admin(d, 'POST', '/admin/accounts', { name, defaultCountry: 'GH' });
    await admin(d, 'POST', `/admin/accounts/${name}/credit`, { amount: 1_000_000_000 });
    const key = await admin(d, 'POST', '/admin/keys', { account: name, scopes: 'all' });
    const out: Record<string, Phase | number> = {};
    let total = 0;
    for (const kind of ['balance', 'send'] as const) {
      const w = await load(d, key.token, kind, warmup);
      total += w.requests;
      const cpu0 = cpuSeconds(d.pid) ?? NaN;
      const r = await load(d, key.token, kind, seconds);
      total += r.requests;
      const cpu = (cpuSeconds(d.pid) ?? NaN) - cpu0;
      out[kind] = { ...r, cpuPer1000: (cpu / Math.max(1, r.requests)) * 1000 };
    }
    if (logsOn) {
      // Every request answered is written (batches a fraction of a second later); none dropped. The daemon answers (and
      // logs) a few more than the load generator counts: those in flight when a phase's time ran out, and the start probe.
      const until = Date.now() + 30_000;
      while ((await metric(d, 'ferry_request_logs_written_total')) < total && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
      out.written = await metric(d, 'ferry_request_logs_written_total');
      out.dropped = await metric(d, 'ferry_request_logs_dropped_total');
      out.requests = total;
    }
    return out;
  } finally {
    await d.stop();
  }
}

const storage = process.env.DATABASE_URL ? 'Postgres' : 'embedded PGlite';
process.stdout.write(`requestlogs: ${connections} connections, ${warmup} s warm-up + ${seconds} s per phase, ${storage}, the per-key limit off\n`);
const on = await measure(true);
const off = await measure(false);
const p = (x: Phase | number) => x as Phase;
const line = (label: string, a: string, b: string, c: string) => `${label.padEnd(34)} ${a.padStart(14)} ${b.padStart(14)} ${c.padStart(10)}`;
const rows = [line('figure', 'logs on', 'logs off', 'on/off')];
for (const kind of ['balance', 'send'] as const) {
  const name = kind === 'balance' ? 'GET /v1/account/balance' : 'POST /v1/sms/send';
  const a = p(on[kind]);
  const b = p(off[kind]);
  rows.push(line(`${name} req/s`, a.rps.toFixed(0), b.rps.toFixed(0), (a.rps / b.rps).toFixed(3)));
  rows.push(line(`${name} p50 / p99 ms`, `${a.p50} / ${a.p99}`, `${b.p50} / ${b.p99}`, ''));
  rows.push(line(`${name} daemon CPU s / 1,000`, a.cpuPer1000.toFixed(3), b.cpuPer1000.toFixed(3), (a.cpuPer1000 / b.cpuPer1000).toFixed(3)));
  if (a.non2xx || b.non2xx) rows.push(line(`${name} non-2xx`, String(a.non2xx), String(b.non2xx), ''));
}
rows.push(`requests counted by the load generator ${on.requests}, rows written ${on.written} (with those cut off in flight), dropped ${on.dropped}`);
process.stdout.write(rows.join('\n') + '\n');
const ok = (on.written as number) >= (on.requests as number) && on.dropped === 0;
process.stdout.write(ok ? 'every request answered with logs on is in the request logs\n' : 'NOT every request answered is in the request logs\n');
process.exit(ok ? 0 : 1);
