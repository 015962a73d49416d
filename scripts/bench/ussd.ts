/**
 * USSD benchmark: sessions walked through Africa's Talking callbacks (3 hops each: open, choose, amount → END) over
 * loopback HTTP against a daemon in this process, first answered by a hosted menu tree, then by a webhook app (a
 * separate process on loopback answering CON/END). Prints hops/s and the hop round-trip latency p50/p95/p99 as the
 * aggregator sees it. On Postgres + Redis when DATABASE_URL and REDIS_URL are set, else embedded (PGlite).
 * Bounded: --sessions per phase and --seconds per phase, whichever comes first.
 *
 *   npm run bench -- ussd [--sessions 2000] [--seconds 20] [--concurrency 32] [--json]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../src/config/load.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { Daemon } from '../../src/daemon.js';
import { createLogger } from '../../src/log.js';
import { Args, UsageError } from './harness/args.js';
import { machineInfo } from './harness/machine.js';
import { fmt, printJson, printTable, type Row } from './harness/report.js';
import { percentiles } from './harness/stats.js';

const FLAGS = ['sessions', 'seconds', 'concurrency', 'json', 'help'];
const USAGE = `usage: npm run bench -- ussd [--sessions 2000] [--seconds 20] [--concurrency 32] [--json]
  --sessions N      sessions per phase at most (default 2,000; 3 hops each)
  --seconds T       each phase at most T seconds (default 20)
  --concurrency C   sessions in flight at once (default 32)
  backend: Postgres + Redis when DATABASE_URL and REDIS_URL are set, else embedded (PGlite)`;

const args = new Args();
let N: number, SECONDS: number, C: number;
try {
  if (args.has('help')) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const unknown = args.unknown(FLAGS);
  if (unknown.length) throw new UsageError(`unknown option ${unknown.join(', ')}`);
  N = args.number('sessions', 2000, { min: 1, max: 1_000_000, integer: true });
  SECONDS = args.number('seconds', 20, { min: 1, max: 600 });
  C = args.number('concurrency', 32, { min: 1, max: 1024, integer: true });
} catch (err) {
  process.stderr.write(`bench ussd: ${(err as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}

const APP_SOURCE = `
import http from 'node:http';
http.createServer((q, s) => {
  let b = '';
  q.on('data', (c) => (b += c));
  q.on('end', () => {
    const t = new URLSearchParams(b).get('text') || '';
    const parts = t ? t.split('*') : [];
    s.writeHead(200, { 'content-type': 'text/plain' });
    s.end(parts.length === 0 ? 'CON Ferry Bank\\n1. Balance\\n2. Send money' : parts.length === 1 ? 'CON Enter amount' : 'END You sent ' + parts[1] + ' GHS');
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(String(this.address().port) + '\\n'); });
`;

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-ussd-'));
const databaseUrl = process.env.DATABASE_URL || null;
const redisUrl = databaseUrl ? process.env.REDIS_URL || null : null;
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_LOG_LEVEL: 'silent',
  FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  ...(redisUrl ? { REDIS_URL: redisUrl, FERRY_REDIS_KEY_PREFIX: `bench-ussd-${process.pid}:` } : {}),
};
const { config } = loadConfig({ env, modules: CHANNEL_MODULES });
const daemon = await Daemon.start(config, createLogger('silent'));
const app = spawn(process.execPath, ['--input-type=module', '-e', APP_SOURCE], { stdio: ['ignore', 'pipe', 'inherit'] });
const appPort = await new Promise<number>((resolve, reject) => {
  app.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
  app.once('exit', (code) => reject(new Error(`app exited ${code}`)));
});

try {
  const api = daemon.addresses.http;
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const admin = async (path: string, body: unknown) => {
    const r = await fetch(daemon.addresses.admin + path, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return ((await r.json()) as { data: Record<string, unknown> }).data;
  };
  // Names of this run only: a shared database may hold an earlier run's.
  const account = `bench-ussd-${process.pid}-${Date.now()}`;
  await admin('/admin/accounts', { name: account });
  const token = (await admin('/admin/keys', { account, scopes: 'all' })).token as string;
  const call = async (path: string, body: unknown) => {
    const r = await fetch(api + path, { method: 'POST', headers: { authorization: `Basic ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const j = (await r.json()) as { success: boolean; code: string; data: Record<string, unknown> };
    if (!j.success) throw new Error(`${path}: ${j.code}`);
    return j.data;
  };
  const tree = {
    start: 'main',
    nodes: {
      main: { type: 'menu', text: 'Ferry Bank', options: [{ key: '1', label: 'Balance', next: 'bal' }, { key: '2', label: 'Send money', next: 'amount' }] },
      bal: { type: 'end', text: 'Your balance is 120.50 GHS' },
      amount: { type: 'input', text: 'Enter amount', pattern: '[0-9]{1,5}', var: 'amount', next: 'sent' },
      sent: { type: 'end', text: 'You sent {amount} GHS' },
    },
  };
  const run = String(Date.now() % 1_000_000);
  const treeCode = `*384*${run}#`;
  const appCode = `*385*${run}#`;
  const menu = await call('/v1/ussd/menus', { name: 'bench', tree });
  await call(`/v1/ussd/menus/${menu.id as string}/publish`, {});
  await call('/v1/ussd/service-codes', { serviceCode: treeCode, menuId: menu.id });
  await call('/v1/ussd/service-codes', { serviceCode: appCode, webhookUrl: `http://127.0.0.1:${appPort}/ussd` });
  const connector = await call('/v1/ussd/connectors', { dialect: 'africastalking' });
  const callback = `${api}/v1/ussd/in/${connector.id as string}?key=${encodeURIComponent(connector.secret as string)}`;

  async function phase(serviceCode: string, tag: string) {
    const latencies = new Float64Array(N * 3);
    let hops = 0;
    let errors = 0;
    let next = 0;
    const started = performance.now();
    const deadline = started + SECONDS * 1000;
    const hop = async (sessionId: string, phone: string, text: string, expect: RegExp) => {
      const t0 = performance.now();
      const r = await fetch(callback, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ sessionId, serviceCode, phoneNumber: phone, networkCode: '62001', text }).toString() });
      const body = await r.text();
      latencies[hops++] = performance.now() - t0;
      if (!expect.test(body)) errors++;
    };
    await Promise.all(
      Array.from({ length: C }, async () => {
        while (next < N && performance.now() < deadline) {
          const i = next++;
          const id = `${tag}-${i}`;
          const phone = `2332${String(i).padStart(8, '0')}`;
          await hop(id, phone, '', /^CON Ferry Bank/);
          await hop(id, phone, '2', /^CON Enter amount$/);
          await hop(id, phone, `2*${(i % 900) + 1}`, new RegExp(`^END You sent ${(i % 900) + 1} GHS$`));
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    return { sessions: next, hops, errors, seconds, hopsPerSecond: hops / seconds, latency: percentiles(latencies.subarray(0, hops)) };
  }

  const hosted = await phase(treeCode, `tree-${run}`);
  const webhook = await phase(appCode, `app-${run}`);
  const machine = machineInfo();
  const backend = databaseUrl ? (redisUrl ? 'postgres+redis' : 'postgres') : 'pglite';
  const row = (name: string, p: typeof hosted): Row[] => [
    { figure: `${name}: sessions / hops / wrong screens`, value: `${fmt.int(p.sessions)} / ${fmt.int(p.hops)} / ${fmt.int(p.errors)}` },
    { figure: `${name}: hop rate (${C} sessions at once)`, value: fmt.rate(p.hopsPerSecond, 'hops/s') },
    { figure: `${name}: hop latency p50 / p95 / p99 / max`, value: fmt.latency(p.latency) },
  ];
  printTable(
    `Ferry bench · ussd · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    [
      `machine: ${machine.cores} × ${machine.model}, Node ${machine.node}; backend ${backend}; daemon and load generator in one process, the webhook app in another`,
      `command: npm run bench -- ussd ${process.argv.slice(2).join(' ')}`.trim(),
      `load: Africa's Talking callbacks over loopback HTTP, 3 hops per session (open, choose, amount → END), at most ${fmt.int(N)} sessions or ${SECONDS} s per phase`,
    ],
    [...row('hosted tree', hosted), ...row('webhook app', webhook)],
  );
  if (args.has('json')) printJson({ scenario: 'ussd', date: new Date().toISOString(), backend, machine, options: { sessions: N, seconds: SECONDS, concurrency: C }, hosted, webhook });
  if (hosted.errors || webhook.errors) process.exitCode = 1;
} finally {
  app.kill();
  await daemon.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
