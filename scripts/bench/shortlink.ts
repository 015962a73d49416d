/**
 * Short link redirects: GET /{slug} on Ferry's redirect listener with click recording on (batched clicks, rollups and
 * shortlink.click events written as in production), beside a bare Fastify handler answering the same 302 in the same
 * run. autocannon runs in its own process; the servers here, measured one after another in alternating rounds
 * so they do not share the CPU. Checks afterwards that every 302 Ferry answered was recorded as a click.
 *
 *   npm run bench -- shortlink [--seconds 5] [--connections 64] [--rounds 3] [--limited]
 *
 * DATABASE_URL and REDIS_URL select Postgres and Redis; else embedded (PGlite, in-process windows).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import type { ShortlinkService } from '../../src/channels/shortlink/shortlink-service.js';
import { loadConfig } from '../../src/config/load.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { Daemon } from '../../src/daemon.js';
import { createLogger } from '../../src/log.js';
import { packageRoot } from '../../src/util/paths.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(argv[i + 1]) : dflt;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
};
if (argv.includes('--help')) {
  process.stdout.write('usage: npm run bench -- shortlink [--seconds 5 (1-60)] [--connections 64 (1-1000)] [--rounds 3 (1-9)] [--limited: the link has maxClicks] [--no-record: clicks thrown away, to see their cost]\n');
  process.exit(0);
}
const seconds = Math.min(60, flag('seconds', 5));
const connections = Math.min(1000, Math.round(flag('connections', 64)));
const limited = argv.includes('--limited');
const rounds = Math.min(9, Math.round(flag('rounds', 3)));
// For finding where the time goes: the same redirect with clicks thrown away (not a figure to quote).
const noRecord = argv.includes('--no-record');
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';

interface Result {
  rps: number;
  p50: number;
  p99: number;
  redirects: number;
  other: number;
}

/** autocannon in a child process for `seconds` (asynchronously: the servers measured run in this process); 3xx counted apart. */
async function load(url: string, secs = seconds): Promise<Result> {
  const child = spawn(process.execPath, [join(packageRoot, 'node_modules/autocannon/autocannon.js'), '-j', '-c', String(connections), '-d', String(secs), '-H', `user-agent=${UA}`, url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), (secs + 30) * 1000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(killer);
  if (code !== 0) throw new Error(`autocannon failed (${code}): ${err}`);
  const j = JSON.parse(out) as { requests: { average: number }; latency: { p50: number; p99: number }; '3xx': number; '1xx': number; '2xx': number; '4xx': number; '5xx': number; errors: number; timeouts: number };
  return { rps: j.requests.average, p50: j.latency.p50, p99: j.latency.p99, redirects: j['3xx'], other: j['1xx'] + j['2xx'] + j['4xx'] + j['5xx'] + j.errors + j.timeouts };
}

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-shortlink-'));
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_SHORTLINK_PORT: '0',
  FERRY_LOG_LEVEL: 'warn',
  ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, FERRY_REDIS_KEY_PREFIX: `ferry-bench-${process.pid}:` } : {}),
};
const daemon = await Daemon.start(loadConfig({ env, modules: CHANNEL_MODULES }).config, createLogger('warn'));
const bare = Fastify({ logger: false });
try {
  const service = daemon.modules.service<ShortlinkService>('shortlink');
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const admin = async (path: string, body: unknown) => {
    const res = await fetch(daemon.addresses.admin + path, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return ((await res.json()) as { data: Record<string, string> }).data;
  };
  const name = `bench${process.pid}`;
  const account = await admin('/admin/accounts', { name });
  const created = await service.create(account.id, {
    url: 'https://example.com/landing?ref=bench',
    utm: { source: 'bench', medium: 'sms', campaign: 'redirects' },
    ...(limited ? { maxClicks: 1_000_000_000 } : {}),
  });
  if (!created.ok) throw new Error(`link not created: ${created.code}`);
  const link = created.link;
  if (noRecord) service.recorder.record = () => undefined;
  const location = (await fetch(`${service.redirectAddress}/${link.slug}`, { redirect: 'manual', headers: { 'user-agent': UA } })).headers.get('location')!;

  // The bare handler: same status, same Location, nothing else.
  bare.get('/:slug', (_req, reply) => reply.code(302).header('location', location).send());
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

  const storage = `${process.env.DATABASE_URL ? 'postgres' : 'pglite'}+${process.env.REDIS_URL ? 'redis' : 'local'}`;
  process.stdout.write(`shortlink bench: ${seconds} s per run, ${connections} connections, ${limited ? 'a link with maxClicks' : 'a plain link with UTM'}, ${storage}\n`);
  await load(`${bareUrl}/${link.slug}`, 2); // warm-up
  await load(`${service.redirectAddress}/${link.slug}`, 2);
  // Requests autocannon had in flight at its end are answered a moment later.
  await new Promise((r) => setTimeout(r, 500));
  await service.recorder.flush();
  const total = async () =>
    Number((await service.analytics(account.id, { linkId: link.id, groupBy: 'time', interval: 'hour', from: new Date(Date.now() - 7_200_000), to: new Date(Date.now() + 3_600_000), includeBots: true })).total);
  const row = (label: string, r: Result) => `  ${label.padEnd(26)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   302s ${r.redirects}   other ${r.other}`;
  // Rounds alternate bare and Ferry runs, so a neighbour's load on a shared machine falls on both alike; each Ferry
  // run's clicks are written before the next bare run starts. The ratio is of the medians.
  const bares: Result[] = [];
  const ferries: Result[] = [];
  let clicks = 0;
  let before = await total();
  for (let i = 0; i < rounds; i++) {
    bares.push(await load(`${bareUrl}/${link.slug}`));
    process.stdout.write(`${row(`bare Fastify 302 #${i + 1}`, bares[i])}\n`);
    ferries.push(await load(`${service.redirectAddress}/${link.slug}`));
    process.stdout.write(`${row(`Ferry redirect+clicks #${i + 1}`, ferries[i])}\n`);
    await new Promise((r) => setTimeout(r, 500));
    await service.recorder.flush();
    const now = await total();
    clicks += now - before;
    before = now;
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const bareRps = median(bares.map((r) => r.rps));
  const ferryRps = median(ferries.map((r) => r.rps));
  process.stdout.write(`  medians: bare ${bareRps.toFixed(0)} req/s, Ferry ${ferryRps.toFixed(0)} req/s (p99 ${median(ferries.map((r) => r.p99))} ms): Ferry / bare ${((ferryRps / bareRps) * 100).toFixed(0)}% (goal at least 70%)\n`);
  // autocannon stops counting at the end of its time; the requests it had in flight (at most one per connection) are
  // still answered and recorded.
  const redirects = ferries.reduce((n, r) => n + r.redirects, 0);
  const complete = clicks >= redirects && clicks <= redirects + rounds * connections;
  process.stdout.write(`  clicks recorded during the Ferry runs: ${clicks} for ${redirects} redirects counted by autocannon${complete ? ' (every one, plus those in flight at the ends)' : ' (MISMATCH)'}\n`);
  process.exitCode = (complete || noRecord) && ferries.every((r) => r.other === 0) ? 0 : 1;
} finally {
  await bare.close();
  await daemon.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
