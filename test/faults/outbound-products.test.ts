// Email and messenger through whole daemons where work used to be lost on its way to a sender (issue 42, when the
// outbound pipeline had a queue in Redis beside its table): jobs committed with no wake after the commit, the daemon's
// Redis flushed while every job waits for a retry, a SIGKILL mid-retry with Redis restarted empty. The workers claim
// due jobs straight from outbound_jobs, so each case must end with every accepted message delivered, and the
// simulators count each recipient's sends (once here: nothing reached them before). The relay and the platform sit
// behind a loopback TCP proxy the test cuts ("down") and restores.
import { Redis } from 'ioredis';
import Pg from 'pg';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { MessengerModuleService } from '../../src/channels/messenger/index.js';
import { MailSimulator } from '../../src/sim/mail/simulator.js';
import { call, startDaemon, startDaemonProcess, testEnv, type TestDaemon } from '../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL, backendLabel } from '../helpers/env.js';
import { sleep } from './common.js';
import { PrivateRedis, freePort } from './redis-server.js';
import { TcpProxy } from './tcp-proxy.js';

t.setTimeout(120_000);

const N = 4;

/** The relay and the platform behind proxies: email to the test's own mail simulator, messenger to the embedded one. */
async function products(t: { teardown(fn: () => unknown): void }) {
  const mail = new MailSimulator({ port: 0 });
  await mail.listen();
  const relay = new TcpProxy(mail.port);
  const platform = new TcpProxy();
  await relay.up();
  await platform.up();
  // The proxies first; the mail server's close waits for its connections (up to its 30 s close timeout), and a
  // connection left there keeps the test process alive: closed here, the wait bounded.
  t.teardown(async () => {
    await relay.down();
    await platform.down();
    const smtp = (mail as unknown as { server: { connections: Set<{ close(): void }> } }).server;
    for (const c of smtp.connections) c.close();
    await Promise.race([mail.close(), sleep(1000)]);
  });
  const env = {
    // Every messenger send through the workers' claim too (no inline first attempt), like every email.
    FERRY_MESSENGER_INLINE_ATTEMPT_MS: '0',
    FERRY_EMAIL_SMTP_URL: `smtp://${relay.url}`,
    FERRY_EMAIL_SMTP_ACCEPT_IS_DELIVERY: 'true',
    FERRY_EMAIL_REQUIRE_VERIFIED_DOMAIN: 'false',
    FERRY_MESSENGER_SIMULATOR: 'on',
    FERRY_MESSENGER_BASE_URL: `http://${platform.url}`,
    FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '10',
    FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
  };
  return { mail, relay, platform, env };
}

/** The daemon's embedded messenger simulator becomes the platform behind the proxy. */
function platformOf(d: TestDaemon, platform: TcpProxy) {
  const sim = d.daemon.modules.service<MessengerModuleService>('messenger').simulator!;
  platform.target = Number(new URL(sim.url).port);
  return sim;
}

let numbers = 0;

interface Accepted {
  email: Array<{ id: string; to: string }>;
  messenger: Array<{ id: string; to: string }>;
}

/** N emails and N messenger templates, each to its own recipient; every one must be accepted. */
async function accept(t: Test, api: string, token: string, tag: string, domain: string): Promise<Accepted> {
  const to = Array.from({ length: N }, (_, i) => `${tag}-${i}@dest.test`);
  const r = await call(api, 'POST', '/v1/email/send', { token, body: { from: `app@${domain}.test`, to, subject: 'Kept', text: 'Nothing accepted is stuck' } });
  t.equal(r.status, 200, r.text);
  const email = (r.json?.data?.messages ?? []).map((m: any, i: number) => ({ id: m.messageId as string, to: to[i] }));
  const messenger: Accepted['messenger'] = [];
  for (let i = 0; i < N; i++) {
    const number = `4479${String(process.pid % 10000).padStart(4, '0')}${String(++numbers).padStart(4, '0')}`;
    const m = await call(api, 'POST', '/v1/messenger/send', { token, body: { to: number, type: 'template', template: { name: 'hello_world', language: 'en_US' } } });
    t.equal(m.status, 200, m.text);
    messenger.push({ id: m.json?.data?.messageId, to: number });
  }
  return { email, messenger };
}

async function customer(api: string, admin: string, adminToken: string, tag: string): Promise<string> {
  const headers = { authorization: `Bearer ${adminToken}` };
  await call(admin, 'POST', '/admin/accounts', { body: { name: tag }, headers });
  const key = await call(admin, 'POST', '/admin/keys', { body: { account: tag, scopes: 'all' }, headers });
  const token = key.json.data.token as string;
  const dom = await call(api, 'POST', '/v1/email/domains', { token, body: { domain: `${tag}.test` } });
  if (dom.status >= 300) throw new Error(`domain: ${dom.text}`);
  return token;
}

/** Every accepted message's job, by product: its state and attempts (the SQL truth). */
async function jobs(d: TestDaemon, a: Accepted) {
  const ids = [...a.email, ...a.messenger].map((m) => m.id);
  const { rows } = await d.daemon.db.query<{ message_id: string; state: string; pending: boolean; attempts: number }>(
    `SELECT message_id, state, pending, attempts FROM outbound_jobs WHERE message_id = ANY($1::text[])`,
    [ids],
  );
  return rows;
}

/** Waits (bounded) until every accepted message ended (sent on: delivered / read, or failed), then checks each was sent once. */
async function settled(t: Test, d: TestDaemon, a: Accepted, mail: MailSimulator, limitMs = 40_000): Promise<void> {
  const sim = d.daemon.modules.service<MessengerModuleService>('messenger').simulator!;
  const until = Date.now() + limitMs;
  let rows = await jobs(d, a);
  while (Date.now() < until && !(rows.length === 2 * N && rows.every((r) => !r.pending))) {
    await sleep(200);
    rows = await jobs(d, a);
  }
  t.equal(rows.length, 2 * N, 'every accepted message has its job');
  t.same(rows.filter((r) => r.pending).map((r) => `${r.message_id} ${r.state} after ${r.attempts} attempts`), [], 'none is still pending');
  t.same(rows.filter((r) => r.state === 'failed').map((r) => r.message_id), [], 'none failed (the deadline is hours away)');
  for (const m of a.email) t.equal(mail.received(m.to).length, 1, `email to ${m.to} reached the relay once`);
  for (const m of a.messenger) t.equal(sim.sent.filter((s) => s.to === m.to).length, 1, `messenger to ${m.to} reached the platform once`);
}

/** Jobs being sent by a worker now, over every provider. */
async function claimed(d: TestDaemon): Promise<number> {
  return Object.values(await d.daemon.outbound!.jobCounts()).reduce((n, c) => n + c.claimed, 0);
}

/**
 * (a) No wake after the commits (what a push lost after its commit was: the instance that accepted them gone right
 * after, or another instance's jobs): the workers' poll finds them.
 */
async function noWake(t: Test, d: TestDaemon, token: string, mail: MailSimulator): Promise<void> {
  const pipeline = d.daemon.outbound!;
  let skipped = 0;
  pipeline.wake = () => void skipped++;
  t.teardown(() => void Reflect.deleteProperty(pipeline, 'wake'));
  const a = await accept(t, d.api, token, 'nowake', 'acme');
  t.ok(skipped >= 2, `no wake after the commits (${skipped} skipped)`);
  await settled(t, d, a, mail);
}

/** (b) Relay and platform down, every job tried once and waiting for its retry; the daemon's Redis flushed; both up. */
async function flushedRedis(t: Test, d: TestDaemon, token: string, p: Awaited<ReturnType<typeof products>>, redisUrl: string): Promise<void> {
  await p.relay.down();
  await p.platform.down();
  const a = await accept(t, d.api, token, 'flush', 'acme');
  const until = Date.now() + 20_000;
  let rows = await jobs(d, a);
  while (Date.now() < until && !(rows.length === 2 * N && rows.every((r) => r.attempts >= 1) && (await claimed(d)) === 0)) {
    await sleep(100);
    rows = await jobs(d, a);
  }
  t.ok(rows.length === 2 * N && rows.every((r) => r.attempts >= 1 && r.pending), 'every job failed an attempt and waits for its retry');
  const r = new Redis(redisUrl);
  await r.flushall();
  t.equal(await r.dbsize(), 0, 'Redis holds nothing');
  r.disconnect();
  await p.relay.up();
  await p.platform.up();
  await settled(t, d, a, p.mail);
}

t.test(`outbound products lose no accepted message (${backendLabel})`, async (t) => {
  const p = await products(t);
  if (!REDIS_URL || !DATABASE_URL) {
    t.comment('embedded storage: (b) and (c) need REDIS_URL and DATABASE_URL (a Redis to flush, a daemon process to kill beside this one)');
    const d = await startDaemon(p.env);
    t.teardown(() => d.stop());
    platformOf(d, p.platform);
    const token = await customer(d.api, d.admin, d.adminToken, 'acme');
    await t.test('(a) jobs committed with no wake after the commit are found by the poll', (t) => noWake(t, d, token, p.mail));
    return;
  }
  const redis = new PrivateRedis(await freePort());
  await redis.start();
  t.teardown(() => redis.kill());
  const { env: full, store } = await testEnv({ ...p.env, REDIS_URL: redis.url });
  let d: TestDaemon | null = null;
  t.teardown(async () => {
    if (d) await d.stop();
    else await store.cleanup();
  });

  // (c) A daemon process accepts while relay and platform are down, is SIGKILLed, and Redis restarts without its data:
  // the daemon started next on the same storage delivers each message once.
  await p.relay.down();
  await p.platform.down();
  const proc = await startDaemonProcess(full);
  t.teardown(() => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
  });
  const adminToken = readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim();
  const token = await customer(proc.api, proc.admin, adminToken, 'acme');
  const crashed = await accept(t, proc.api, token, 'crash', 'acme');
  // Killed while every job waits for its retry, none in the middle of a send: a job claimed by the dead process would
  // wait out its claim (the send timeout plus a minute) before another instance may send it. Frozen (SIGSTOP) while
  // the rows are read, so no claim starts between the look and the kill.
  const pg = new Pg.Client({ connectionString: store.url! });
  await pg.connect();
  const ids = [...crashed.email, ...crashed.messenger].map((m) => m.id);
  let ready = false;
  for (const until = Date.now() + 20_000; !ready && Date.now() < until; ) {
    proc.child.kill('SIGSTOP');
    const { rows } = await pg.query<{ tried: number; claimed: number }>(
      `SELECT count(*) FILTER (WHERE attempts >= 1)::int AS tried, count(*) FILTER (WHERE claimed_until > $2)::int AS claimed FROM outbound_jobs WHERE message_id = ANY($1::text[])`,
      [ids, Date.now()],
    );
    ready = rows[0].tried === ids.length && rows[0].claimed === 0;
    if (!ready) {
      proc.child.kill('SIGCONT');
      await sleep(100);
    }
  }
  await pg.end();
  t.ok(ready, 'every job was tried once and none is being sent');
  proc.child.kill('SIGKILL');
  t.equal((await proc.exited).signal, 'SIGKILL', 'killed right after the answers');
  await redis.kill();
  await redis.start();
  await p.relay.up();
  d = await startDaemon({}, { env: full, store });
  const daemon = d;
  // The platform is the new daemon's embedded simulator: reachable once its port is known.
  platformOf(daemon, p.platform);
  await p.platform.up();
  await t.test('(c) SIGKILL mid-retry, Redis restarted empty: the next daemon delivers each once', (t) => settled(t, daemon, crashed, p.mail));
  await t.test('(a) jobs committed with no wake after the commit are found by the poll', (t) => noWake(t, daemon, token, p.mail));
  await t.test("(b) the daemon's Redis flushed while jobs wait for a retry", (t) => flushedRedis(t, daemon, token, p, redis.url));
});
