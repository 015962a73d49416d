/**
 * Push: notifications/s delivered to the FCM and the APNs simulators, and send → last device for a large topic.
 *
 *   npm run bench -- push [--devices 20000] [--topic 100000] [--rounds 2] [--split]
 *
 * A daemon in this process with its embedded simulators (push.simulator on), or with --split the simulators in a
 * process of their own (bench-simulators.ts; the app names them as its endpoints, as a relay would be named, with
 * their CA as push.caFile): FCM and APNs do not share the daemon's CPU in production. DATABASE_URL and REDIS_URL select
 * Postgres and Redis, else embedded. Devices and subscriptions are written to the tables in bulk as the setup (the
 * bench measures sends, not registrations). Each round sends one topic of `--devices` Android devices (FCM) and one of
 * `--devices` iOS devices (APNs), then one topic of `--topic` devices of both kinds, each timed from the request to
 * its completion, with the peak RSS during the large one. Every count is checked against the simulators.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CHANNEL_MODULES } from '../index.js';
import { loadConfig } from '../../config/load.js';
import { Daemon } from '../../daemon.js';
import { createLogger } from '../../log.js';
import type { PushModuleService } from './index.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number, max: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(argv[i + 1]) : dflt;
  if (!Number.isInteger(v) || v <= 0 || v > max) throw new Error(`--${name} must be an integer in 1..${max}`);
  return v;
};
if (argv.includes('--help')) {
  process.stdout.write('usage: npm run bench -- push [--devices 20000 (≤ 200,000)] [--topic 100000 (≤ 500,000)] [--rounds 2 (≤ 5)] [--split: simulators in their own process]\n');
  process.exit(0);
}
const DEVICES = flag('devices', 20_000, 200_000);
const TOPIC = flag('topic', 100_000, 500_000);
const ROUNDS = flag('rounds', 2, 5);
// Every wait below is bounded.
const LIMIT_MS = 300_000;

const SPLIT = argv.includes('--split');

interface Outside {
  fcm: string;
  oauthToken: string;
  apns: string;
  ca: string;
  serviceAccount: Record<string, string>;
  apnsKey: Record<string, string>;
}
/** The simulators' process (--split), its first line, and its counters on request. */
async function outsideSimulators() {
  const child = spawn(process.execPath, ['--import', 'tsx', join(dirname(fileURLToPath(import.meta.url)), 'bench-simulators.ts')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const next = () =>
    new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('the simulators did not answer within 60 s')), 60_000);
      lines.once('line', (l) => {
        clearTimeout(t);
        resolve(l);
      });
    });
  const info = JSON.parse(await next()) as Outside;
  return {
    info,
    async counters(): Promise<{ fcm: number; apns: number }> {
      const answer = next();
      child.stdin!.write('stats\n');
      return JSON.parse(await answer) as { fcm: number; apns: number };
    },
    stop: () => new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.stdin!.end();
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    }),
  };
}
const outside = SPLIT ? await outsideSimulators() : null;

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-push-'));
if (outside) writeFileSync(join(dataDir, 'simulators-ca.pem'), outside.info.ca);
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_SHORTLINK_PORT: '0',
  FERRY_LOG_LEVEL: 'warn',
  FERRY_PUSH_SIMULATOR: outside ? 'off' : 'on',
  ...(outside ? { FERRY_PUSH_CA_FILE: join(dataDir, 'simulators-ca.pem'), FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' } : {}),
  ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, FERRY_REDIS_KEY_PREFIX: `ferry-bench-${process.pid}:` } : {}),
};
const daemon = await Daemon.start(loadConfig({ env, modules: CHANNEL_MODULES }).config, createLogger('warn'));
try {
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const admin = async (path: string, body: unknown) => {
    const res = await fetch(daemon.addresses.admin + path, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return ((await res.json()) as { data: Record<string, string> }).data;
  };
  const name = `pushbench${process.pid}`;
  const account = await admin('/admin/accounts', { name });
  const key = await admin('/admin/keys', { account: name, scopes: 'all' });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(daemon.addresses.http + path, {
      method,
      headers: { authorization: `Basic ${key.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return (await res.json()) as { success: boolean; data: Record<string, unknown>; code: string };
  };
  const app = await api(
    'POST',
    '/v1/push/apps',
    outside
      ? { name: 'bench', fcm: { serviceAccount: outside.info.serviceAccount }, apns: outside.info.apnsKey, endpoints: { fcm: outside.info.fcm, oauthToken: outside.info.oauthToken, apns: outside.info.apns } }
      : { name: 'bench' },
  );
  if (!app.success) throw new Error(`app: ${app.code} ${JSON.stringify(app.data)}`);
  const appId = app.data.id as string;
  const db = daemon.db;
  const sims = daemon.modules.service<PushModuleService>('push').simulators;

  /** A topic of `n` devices of `platform`, written in bulk (tokens the simulators answer 200). */
  const topicOf = async (topic: string, n: number, platform: 'android' | 'ios' | 'mixed') => {
    for (let from = 0; from < n; from += 20_000) {
      const count = Math.min(20_000, n - from);
      await db.query(
        `INSERT INTO push_devices (id, account_id, app_id, token, platform)
         SELECT $1 || lpad(g::text, 9, '0'), $2, $3,
           CASE WHEN $5 = 'ios' OR ($5 = 'mixed' AND g % 2 = 0) THEN lpad(to_hex(g), 8, '0') || md5($1) || left(md5($1 || 'apns'), 24) ELSE 'bench-' || $1 || g END,
           CASE WHEN $5 = 'ios' OR ($5 = 'mixed' AND g % 2 = 0) THEN 'ios' ELSE 'android' END
         FROM generate_series($4::int, $4::int + $6::int - 1) g`,
        [`pdev_${topic}_`, account.id, appId, from, platform, count],
      );
      await db.query(
        `INSERT INTO push_topic_subscriptions (account_id, topic, device_id) SELECT $1, $2, $3 || lpad(g::text, 9, '0') FROM generate_series($4::int, $4::int + $5::int - 1) g`,
        [account.id, topic, `pdev_${topic}_`, from, count],
      );
    }
    await db.query(`INSERT INTO push_topics (account_id, name, size) VALUES ($1, $2, $3)`, [account.id, topic, n]);
  };

  const received = async () => (outside ? await outside.counters() : { fcm: sims!.fcm.counters.sent, apns: sims!.apns.production.stats.sent });
  const sendTopic = async (topic: string) => {
    const before = await received();
    let peakRss = process.memoryUsage().rss;
    const started = performance.now();
    const r = await api('POST', '/v1/push/send', { to: { topic }, notification: { title: 'Bench', body: 'a notification' }, data: { k: 'v' } });
    if (!r.success) throw new Error(`send: ${r.code}`);
    const pushId = r.data.pushId as string;
    for (;;) {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      const s = await api('GET', `/v1/push/sends/${pushId}?limit=1`);
      if (s.data.status === 'completed') {
        const ms = performance.now() - started;
        const after = await received();
        return { ms, sent: s.data.sent as number, failed: s.data.failed as number, fcm: after.fcm - before.fcm, apns: after.apns - before.apns, peakRss };
      }
      if (performance.now() - started > LIMIT_MS) throw new Error(`${topic} not completed within ${LIMIT_MS} ms: ${JSON.stringify(s.data)}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  };

  const storage = `${process.env.DATABASE_URL ? 'postgres' : 'pglite'}+${process.env.REDIS_URL ? 'redis' : 'local'}`;
  process.stdout.write(`push bench: ${storage}, simulators ${outside ? 'in their own process' : 'in this process'}, ${ROUNDS} round(s): ${DEVICES} FCM devices, ${DEVICES} APNs devices, a topic of ${TOPIC}\n`);
  let cpuUs = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    // Names unique to this run: a database kept from an earlier run keeps its devices.
    const run = `${process.pid.toString(36)}${round}`;
    await topicOf(`fcm${run}`, DEVICES, 'android');
    await topicOf(`apns${run}`, DEVICES, 'ios');
    await topicOf(`big${run}`, TOPIC, 'mixed');
    const cpu0 = process.cpuUsage();
    const fcm = await sendTopic(`fcm${run}`);
    const apns = await sendTopic(`apns${run}`);
    const big = await sendTopic(`big${run}`);
    const cpu = process.cpuUsage(cpu0);
    cpuUs += cpu.user + cpu.system;
    const line = (label: string, r: Awaited<ReturnType<typeof sendTopic>>, n: number) =>
      `| ${round} | ${label} | ${n.toLocaleString('en')} | ${Math.round((n / r.ms) * 1000).toLocaleString('en')}/s | ${(r.ms / 1000).toFixed(2)} s | ` +
      `${r.sent}/${r.failed} | fcm ${r.fcm}, apns ${r.apns} | ${Math.round(r.peakRss / 1048576)} MB |\n`;
    if (round === 1) process.stdout.write('| round | send | devices | notifications/s | send → last device | sent/failed | at the simulators | peak RSS |\n|---|---|---|---|---|---|---|---|\n');
    process.stdout.write(line('topic → FCM', fcm, DEVICES) + line('topic → APNs', apns, DEVICES) + line('topic, both', big, TOPIC));
    if (fcm.sent !== DEVICES || apns.sent !== DEVICES || big.sent !== TOPIC || fcm.fcm !== DEVICES || apns.apns !== DEVICES) throw new Error('a count did not match');
  }
  const total = ROUNDS * (2 * DEVICES + TOPIC);
  process.stdout.write(`this process's CPU while sending (the daemon${outside ? '' : ' and the simulators'}; not the database server): ${(cpuUs / total).toFixed(0)} µs per notification\n`);
} finally {
  await daemon.stop();
  await outside?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
