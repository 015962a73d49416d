/**
 * Email scenario: a Ferry daemon (this process) sends to the mail simulator (`ferry sim mail`, its own process) over
 * real SMTP on loopback. Messages are accepted through POST /v1/email/bulk (1,000 personalizations per call) and
 * delivered through the outbound pipeline (nodemailer pool, DKIM signing, VERP). Reports messages/s accepted, messages/s
 * delivered (accepted by the simulator's SMTP server), and CPU seconds per 1,000 messages of the daemon process (the
 * bench's own HTTP client included) and of the simulator. Bounded by --messages and --seconds.
 *
 *   npm run bench -- email [--messages 20000] [--seconds 60] [--connections 16] [--concurrency 64]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { loadConfig } from '../../src/config/load.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { Daemon } from '../../src/daemon.js';
import { createLogger } from '../../src/log.js';
import { packageRoot } from '../../src/util/paths.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
};
const MESSAGES = Math.min(arg('messages', 20_000), 500_000);
const SECONDS = Math.min(arg('seconds', 60), 600);
const CONNECTIONS = arg('connections', 16);
const CONCURRENCY = arg('concurrency', 64);
const PER_CALL = 1000;

function cpuOfPid(pid: number): number {
  // utime + stime in clock ticks (100 per second on Linux).
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const sim = spawn(process.execPath, ['--import', 'tsx', join(packageRoot, 'src/cli/index.ts'), 'sim', 'mail', '--port', '0', '--quiet', '--stats-interval-ms', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
const simPort = await new Promise<number>((resolve, reject) => {
  const rl = createInterface({ input: sim.stdout! });
  rl.on('line', (line) => {
    try {
      const j = JSON.parse(line) as { msg?: string; port?: number };
      if (j.msg === 'mail simulator listening' && j.port) resolve(j.port);
    } catch {
      /* not a log line */
    }
  });
  sim.once('exit', (code) => reject(new Error(`the simulator exited (${code})`)));
  setTimeout(() => reject(new Error('the simulator did not start in 30 s')), 30_000).unref();
});

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-email-'));
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_LOG_LEVEL: 'warn',
  FERRY_EMAIL_SMTP_URL: `smtp://127.0.0.1:${simPort}`,
  FERRY_EMAIL_SMTP_ACCEPT_IS_DELIVERY: 'true',
  FERRY_EMAIL_REQUIRE_VERIFIED_DOMAIN: 'false',
  FERRY_EMAIL_SMTP_MAX_CONNECTIONS: String(CONNECTIONS),
  FERRY_EMAIL_MAX_CONCURRENCY: String(CONCURRENCY),
  ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, FERRY_REDIS_KEY_PREFIX: `bench-email-${process.pid}:` } : {}),
};
const { config } = loadConfig({ env, modules: CHANNEL_MODULES });
const daemon = await Daemon.start(config, createLogger('warn'));
const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
const call = async (base: string, method: string, path: string, token: string, body?: unknown) => {
  const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.json()) as { success: boolean; data: any; message: string };
  if (!json.success) throw new Error(`${method} ${path}: ${json.message}`);
  return json.data;
};
const account = await call(daemon.addresses.admin, 'POST', '/admin/accounts', adminToken, { name: `bench${process.pid}` });
const key = await call(daemon.addresses.admin, 'POST', '/admin/keys', adminToken, { account: account.name ?? `bench${process.pid}`, scopes: 'all' });
await call(daemon.addresses.http, 'POST', '/v1/email/domains', key.token, { domain: 'bench.test' });

const count = async () =>
  Number((await daemon.db.query<{ n: string }>(`SELECT count(*) AS n FROM email_messages WHERE account_id = $1 AND status = 'delivered'`, [account.id])).rows[0].n);

const deadline = Date.now() + SECONDS * 1000;
const cpu0 = process.cpuUsage();
const simCpu0 = cpuOfPid(sim.pid!);
const t0 = performance.now();
let accepted = 0;
const calls: Promise<void>[] = [];
const body = (n: number, batch: number) => ({
  from: 'news@bench.test',
  subject: 'Hello {{name}}',
  html: '<html><body><h1>Hello {{name}}</h1><p>This week: <a href="https://bench.test/a">deals</a>.</p></body></html>',
  stream: 'transactional',
  personalizations: Array.from({ length: n }, (_, i) => ({ to: [`user${batch}-${i}@dest.test`], data: { name: `User ${i}` } })),
});
// Two bulk calls in flight at a time.
for (let batch = 0; accepted < MESSAGES && Date.now() < deadline; batch++) {
  const n = Math.min(PER_CALL, MESSAGES - accepted);
  accepted += n;
  calls.push(call(daemon.addresses.http, 'POST', '/v1/email/bulk', key.token, body(n, batch)).then(() => undefined));
  if (calls.length >= 2) await calls.shift();
}
await Promise.all(calls);
const acceptedAt = performance.now();
let delivered = await count();
while (delivered < accepted && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 100));
  delivered = await count();
}
const doneAt = performance.now();
const cpu = process.cpuUsage(cpu0);
const simCpu = cpuOfPid(sim.pid!) - simCpu0;
const perK = (s: number) => ((s / Math.max(1, delivered)) * 1000).toFixed(3);
const out = {
  scenario: 'email',
  backend: `${daemon.db.kind}+${process.env.REDIS_URL ? 'redis' : 'local'}`,
  messages: accepted,
  delivered,
  acceptedPerSecond: Math.round(accepted / ((acceptedAt - t0) / 1000)),
  deliveredPerSecond: Math.round(delivered / ((doneAt - t0) / 1000)),
  seconds: +((doneAt - t0) / 1000).toFixed(2),
  daemonCpuPer1000: perK((cpu.user + cpu.system) / 1e6),
  simulatorCpuPer1000: perK(simCpu),
  smtpConnections: CONNECTIONS,
  concurrency: CONCURRENCY,
  loadavg: (await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' '),
};
process.stdout.write(
  `email: ${accepted} messages, ${out.backend}\n` +
    `  accepted   ${out.acceptedPerSecond} msg/s (POST /v1/email/bulk, 1,000 per call)\n` +
    `  delivered  ${out.deliveredPerSecond} msg/s to the simulator over SMTP (${delivered} of ${accepted} in ${out.seconds} s; goal 1,000 msg/s: ${out.deliveredPerSecond >= 1000 ? 'met' : 'NOT met'})\n` +
    `  CPU / 1,000 messages: daemon ${out.daemonCpuPer1000} s, simulator ${out.simulatorCpuPer1000} s (load average ${out.loadavg})\n` +
    JSON.stringify(out) +
    '\n',
);
await daemon.stop();
sim.kill('SIGTERM');
rmSync(dataDir, { recursive: true, force: true });
process.exit(delivered === accepted ? 0 : 1);
