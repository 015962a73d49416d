/**
 * Short link redirects: GET /{slug} on Ferry's redirect listener with click recording on (batched clicks, rollups and
 * shortlink.click events written as in production), beside a bare Fastify handler answering the same 302 in the same
 * run. autocannon runs in its own process; the servers here, measured one after another (bare, Ferry, bare again)
 * so they do not share the CPU. Checks afterwards that every 302 Ferry answered was recorded as a click.
 *
 *   npm run bench -- shortlink [--seconds 5] [--connections 64] [--limited]
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
  process.stdout.write('usage: npm run bench -- shortlink [--seconds 5 (1-60)] [--connections 64 (1-1000)] [--limited: the link has maxClicks]\n');
  process.exit(0);
}
const seconds = Math.min(60, flag('seconds', 5));
const connections = Math.min(1000, Math.round(flag('connections', 64)));
const limited = argv.includes('--limited');
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
const daemon = await Daemon.start(loadConfig({ env }).config, createLogger('warn'));
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
  const before = Number((await service.analytics(account.id, { linkId: link.id, groupBy: 'time', interval: 'hour', from: new Date(Date.now() - 7_200_000), to: new Date(Date.now() + 3_600_000), includeBots: true })).total);

  const bare1 = await load(`${bareUrl}/${link.slug}`);
  const ferry = await load(`${service.redirectAddress}/${link.slug}`);
  // The Ferry run's clicks are written before the second bare run, so that writing does not slow it down.
  await new Promise((r) => setTimeout(r, 500));
  await service.recorder.flush();
  const after = Number((await service.analytics(account.id, { linkId: link.id, groupBy: 'time', interval: 'hour', from: new Date(Date.now() - 7_200_000), to: new Date(Date.now() + 3_600_000), includeBots: true })).total);
  const bare2 = await load(`${bareUrl}/${link.slug}`);

  const bareRps = (bare1.rps + bare2.rps) / 2;
  const row = (label: string, r: Result) => `  ${label.padEnd(26)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   302s ${r.redirects}   other ${r.other}`;
  process.stdout.write(`${row('bare Fastify 302 (before)', bare1)}\n${row('Ferry redirect + clicks', ferry)}\n${row('bare Fastify 302 (after)', bare2)}\n`);
  const ratio = ferry.rps / bareRps;
  process.stdout.write(`  Ferry / bare: ${(ratio * 100).toFixed(0)}% (goal at least 70%)\n`);
  // autocannon stops counting at the end of its time; the requests it had in flight (at most one per connection) are
  // still answered and recorded.
  const clicks = after - before;
  const complete = clicks >= ferry.redirects && clicks <= ferry.redirects + connections;
  process.stdout.write(`  clicks recorded during the Ferry run: ${clicks} for ${ferry.redirects} redirects counted by autocannon${complete ? ' (every one, plus those in flight at its end)' : ' (MISMATCH)'}\n`);
  process.exitCode = complete && ferry.other === 0 ? 0 : 1;
} finally {
  await bare.close();
  await daemon.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
