/**
 * Chat: messages/s fanned out over Socket.IO and send → receive latency p50/p99, 1,000 clients in 100 channels.
 *
 *   npm run bench -- chat [--clients 1000] [--channels 100] [--rate 2000] [--seconds 10]
 *
 * A daemon in this process (DATABASE_URL and REDIS_URL select Postgres and Redis, else embedded) and the clients in a
 * process of their own (bench-clients.ts): one socket.io-client per user on /chat-sdk, every user a member of one
 * channel of clients/channels members. Sends are paced at --rate messages/s for --seconds, spread over the users, each
 * a `message.send` with an ack; every other member of the channel receives it (`message.new`), timed from the send.
 * Offline push is not in this path (every member is online).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHANNEL_MODULES } from '../index.js';
import { loadConfig } from '../../config/load.js';
import { Daemon } from '../../daemon.js';
import { createLogger } from '../../log.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number, max: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(argv[i + 1]) : dflt;
  if (!Number.isInteger(v) || v <= 0 || v > max) throw new Error(`--${name} must be an integer in 1..${max}`);
  return v;
};
if (argv.includes('--help')) {
  process.stdout.write('usage: npm run bench -- chat [--clients 1000 (≤ 5,000)] [--channels 100] [--rate 2000 (messages/s, ≤ 20,000)] [--seconds 10 (≤ 120)]\n');
  process.exit(0);
}
const CLIENTS = flag('clients', 1000, 5000);
const CHANNELS = flag('channels', 100, CLIENTS);
const RATE = flag('rate', 2000, 20_000);
const SECONDS = flag('seconds', 10, 120);

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-chat-'));
const env: Record<string, string> = {
  FERRY_DATA_DIR: dataDir,
  FERRY_HTTP_PORT: '0',
  FERRY_ADMIN_PORT: '0',
  FERRY_SMPP_PORT: '0',
  FERRY_SHORTLINK_PORT: '0',
  FERRY_LOG_LEVEL: 'warn',
  // The bench's own users send faster than an app's would; the limit is not what is measured.
  FERRY_CHAT_MESSAGES_PER_SECOND: '1000',
  FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
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
  const name = `chatbench${process.pid}`;
  await admin('/admin/accounts', { name });
  const key = await admin('/admin/keys', { account: name, scopes: 'all' });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(daemon.addresses.http + path, {
      method,
      headers: { authorization: `Basic ${key.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as { success: boolean; data: Record<string, unknown>; code: string };
    if (!json.success) throw new Error(`${method} ${path}: ${json.code}`);
    return json.data;
  };

  const run = process.pid.toString(36);
  const users: { userId: string; token: string; channelId: string }[] = [];
  const perChannel = Math.ceil(CLIENTS / CHANNELS);
  for (let c = 0; c < CHANNELS; c++) {
    const members: string[] = [];
    for (let i = c * perChannel; i < Math.min(CLIENTS, (c + 1) * perChannel); i++) members.push(`u${run}-${i}`);
    const channelId = `bench-${run}-${c}`;
    await api('POST', '/v1/chat-sdk/channels', { type: 'messaging', id: channelId, members });
    for (const userId of members) {
      const t = await api('POST', '/v1/chat-sdk/users/token', { userId });
      users.push({ userId, token: t.token as string, channelId });
    }
  }

  const storage = `${process.env.DATABASE_URL ? 'postgres' : 'pglite'}+${process.env.REDIS_URL ? 'redis' : 'local'}`;
  process.stdout.write(`chat bench: ${storage}, ${CLIENTS} clients in ${CHANNELS} channels (${perChannel} members each), ${RATE} messages/s for ${SECONDS} s\n`);
  const child = spawn(process.execPath, ['--import', 'tsx', join(dirname(fileURLToPath(import.meta.url)), 'bench-clients.ts')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const out: Buffer[] = [];
  // The daemon's CPU while the messages flow, from the clients' first line (all connected) on.
  let cpu0 = process.cpuUsage();
  child.stdout!.on('data', (b: Buffer) => {
    if (!out.length) cpu0 = process.cpuUsage();
    out.push(b);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.stdin!.end(JSON.stringify({ url: daemon.addresses.http, users, ratePerSecond: RATE, seconds: SECONDS }) + '\n');
  const killer = setTimeout(() => child.kill('SIGKILL'), (SECONDS + 180) * 1000);
  const code = await exited;
  clearTimeout(killer);
  const cpu = process.cpuUsage(cpu0);
  if (code !== 0) throw new Error(`the clients exited with ${code}`);
  const r = JSON.parse(Buffer.concat(out).toString('utf8').trim().split('\n').pop()!) as Record<string, number>;
  const expected = r.sent * (perChannel - 1);
  const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : 'n/a');
  process.stdout.write(
    '| sent | sent/s | deliveries (to other members) | delivered/s | lost | ack p50 / p99 | send → receive p50 / p99 / max | daemon CPU per message |\n|---|---|---|---|---|---|---|---|\n' +
      `| ${r.sent} (${r.ackFailures} refused) | ${Math.round(r.sent / r.sendSeconds)} | ${r.receivedByOthers} of ${expected} | ${Math.round(r.receivedByOthers / r.elapsed)} | ${expected - r.receivedByOthers} | ` +
      `${ms(r.ackP50)} / ${ms(r.ackP99)} | ${ms(r.p50)} / ${ms(r.p99)} / ${ms(r.max)} | ${((cpu.user + cpu.system) / Math.max(1, r.sent)).toFixed(0)} µs |\n`,
  );
} finally {
  await daemon.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
