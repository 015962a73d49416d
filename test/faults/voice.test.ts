// Voice calls across a crash. The SIP trunk simulator runs in this process, not in the daemon (whose embedded one would
// die with it), so the far end outlives the SIGKILL and tells what it saw. A call accepted while no instance runs the
// media role survives the daemon's death and is dialled by its restart; a call answered when its daemon is killed is
// ended by the restart as failed OWNER_LOST at the owner's last renewal, billed up to then, and says so in its history
// and events.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { openDb } from '../../src/store/sql/db.js';
import { VoiceTrunkSimulator } from '../../src/sim/voice/trunk-simulator.js';
import { call, startDaemon, startDaemonProcess, testEnv, type DaemonProcess, type TestDaemon } from '../helpers/daemon.js';
import { backendLabel, DATABASE_URL, REDIS_URL } from '../helpers/env.js';
import { until } from '../helpers/wait.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// Two daemon starts per case (one a child process), each call a few seconds.
t.setTimeout(300_000);

const FROM = '+233200000101';
const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
/** The default owner lease: the owner renews its claim every quarter of it (5 s). */
const LEASE_SECONDS = 20;
const RENEW_MS = (LEASE_SECONDS * 1000) / 4;
const PRICE_PER_MINUTE = 0.06;
const SPLIT = DATABASE_URL && REDIS_URL;

/** The trunk simulator in this process, on its own RTP ports, stopped at teardown. */
async function trunk(t: { teardown(fn: () => unknown): void }): Promise<VoiceTrunkSimulator> {
  const sim = new VoiceTrunkSimulator();
  await sim.start({ host: '127.0.0.1', port: 0, transport: 'udp', mediaPortRange: { min: 46900, max: 46999 } });
  t.teardown(() => sim.stop());
  return sim;
}

/** A config file naming the simulator as the daemon's only trunk. */
function trunkConfig(t: { teardown(fn: () => unknown): void }, sim: VoiceTrunkSimulator): string {
  const file = join(tmpdir(), `ferry-voice-faults-${process.pid}-${Math.random().toString(36).slice(2)}.yaml`);
  const trunks = [{ name: 'far-end', host: '127.0.0.1', port: sim.port, transport: 'udp', optionsIntervalSeconds: 0 }];
  writeFileSync(file, stringify({ voice: { trunks } }));
  t.teardown(() => rmSync(file, { force: true }));
  return file;
}

const ports = (min: number) => ({ FERRY_VOICE_MEDIA_PORT_MIN: String(min), FERRY_VOICE_MEDIA_PORT_MAX: String(min + 99) });

interface KilledVoice {
  proc: DaemonProcess;
  token: string;
  accountId: string;
  events: WebhookReceiver;
  /** The database URL on Postgres (a second connection may read it while the child runs), else null. */
  url: string | null;
  /** A daemon in this process (all roles) on the killed one's storage and data folder. */
  restart(extra: Record<string, string>): Promise<TestDaemon>;
}

/**
 * A daemon as a child process (to SIGKILL) on private storage, its only trunk the simulator, calls priced per second;
 * an account with a caller ID, credit and a webhook to a receiver here (it outlives the daemon).
 */
async function voiceDaemon(t: { teardown(fn: () => unknown): void }, sim: VoiceTrunkSimulator, extra: Record<string, string>): Promise<KilledVoice> {
  const { env, store } = await testEnv({
    FERRY_CONFIG: trunkConfig(t, sim),
    FERRY_VOICE_SIMULATOR: 'off',
    FERRY_VOICE_OWNER_LEASE_SECONDS: String(LEASE_SECONDS),
    FERRY_VOICE_PRICES_DEFAULT_PER_MINUTE: String(PRICE_PER_MINUTE),
    FERRY_VOICE_PRICES_MINIMUM_SECONDS: '1',
    FERRY_VOICE_PRICES_INCREMENT_SECONDS: '1',
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
    ...extra,
  });
  let restarted: TestDaemon | null = null;
  t.teardown(async () => {
    if (restarted) await restarted.stop();
    else await store.cleanup();
  });
  const proc = await startDaemonProcess(env);
  t.teardown(() => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
  });
  const adminToken = readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim();
  const admin = async (method: string, path: string, body?: unknown) => {
    const r = await call(proc.admin, method, path, { body, headers: { authorization: `Bearer ${adminToken}` } });
    if (!r.json?.success) throw new Error(`${method} ${path}: HTTP ${r.status} ${r.text}`);
    return r.json.data;
  };
  const account = await admin('POST', '/admin/accounts', { name: 'voicefault' });
  const key = await admin('POST', '/admin/keys', { account: 'voicefault', scopes: 'all' });
  await admin('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await admin('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });
  const events = await WebhookReceiver.start();
  t.teardown(() => events.close());
  const hook = await call(proc.api, 'POST', '/v1/webhooks', { token: key.token, body: { url: events.url, events: ['*'] } });
  if (hook.status !== 200) throw new Error(`webhook: HTTP ${hook.status} ${hook.text}`);
  return { proc, token: key.token as string, accountId: account.id as string, events, url: store.url, restart: async (more) => (restarted = await startDaemon(more, { env, store })) };
}

/** The owner's last renewal of a call as the database holds it now (its claim less a lease). */
async function lastRenewal(url: string, id: string): Promise<Date> {
  const db = await openDb({ url, dataDir: tmpdir(), poolSize: 1 });
  try {
    const { rows } = await db.query<{ at: Date | string }>(`SELECT owner_until - make_interval(secs => $2::float8) AS at FROM voice_calls WHERE id = $1`, [id, LEASE_SECONDS]);
    return new Date(rows[0].at);
  } finally {
    await db.close();
  }
}

async function kill(proc: DaemonProcess): Promise<number> {
  const at = Date.now();
  proc.child.kill('SIGKILL');
  await proc.exited;
  return at;
}

const place = (api: string, token: string, to: string, more: Record<string, unknown> = {}) =>
  call(api, 'POST', '/v1/voice/calls', { token, body: { from: FROM, to, script: [{ pause: { seconds: 1 } }], ...more } });
const get = async (api: string, token: string, id: string) => (await call(api, 'GET', `/v1/voice/calls/${id}`, { token })).json?.data;
const final = (api: string, token: string, id: string, ms: number) => until(() => get(api, token, id), (c) => FINAL.includes(c?.status), ms);

t.test(`a call accepted with no instance dialling survives a SIGKILL and is dialled by the restart (${backendLabel})`, async (t) => {
  const sim = await trunk(t);
  // Postgres and Redis: an API-only instance, nobody to dial. Embedded storage runs every role in one process: there
  // the account's one call slot is taken by a call that rings until canceled, so the call under test waits queued.
  const d = await voiceDaemon(t, sim, { ...ports(46000), ...(SPLIT ? { FERRY_ROLE: 'api' } : { FERRY_VOICE_MAX_CONCURRENT_CALLS_PER_ACCOUNT: '1' }) });
  let blocker: string | null = null;
  if (!SPLIT) {
    const r = await place(d.proc.api, d.token, '+14155550480', { timeoutSeconds: 600 });
    t.equal(r.status, 202, r.text);
    blocker = r.json.data.callId as string;
    await until(() => get(d.proc.api, d.token, blocker!), (c) => c.status === 'ringing');
  }
  const r = await place(d.proc.api, d.token, '+14155550130');
  t.equal(r.status, 202, r.text);
  t.equal(r.json.data.status, 'queued');
  const id = r.json.data.callId as string;
  // A moment in which a dialler would have dialled it.
  await new Promise((res) => setTimeout(res, 1500));
  t.equal((await get(d.proc.api, d.token, id)).status, 'queued', SPLIT ? 'still queued: no instance runs the media role' : 'still queued: the account is at its limit');
  t.equal(sim.calls().filter((c) => c.to.endsWith('14155550130')).length, 0, 'the trunk has not seen it');

  const killedAt = await kill(d.proc);
  const restarted = await d.restart({ ...ports(46100), FERRY_ROLE: 'all' });
  const readyAt = Date.now();
  const done = await final(restarted.api, d.token, id, 60_000);
  const finishedAt = Date.now();
  t.equal(done.status, 'completed', JSON.stringify(done));
  t.same(
    done.history.map((h: { status: string }) => h.status),
    ['queued', 'initiated', 'ringing', 'in-progress', 'completed'],
    'dialled once, from its queued row',
  );
  t.equal(done.trunk, 'far-end');
  const far = sim.calls().filter((c) => c.to.endsWith('14155550130'));
  t.equal(far.length, 1, 'the trunk simulator got exactly one INVITE for it');
  t.equal(far[0]?.status, 200, 'answered at the far end');
  await until(() => Promise.resolve(far[0].state), (s) => s === 'ended');
  t.equal(far[0].endedBy, 'caller', 'and Ferry hung up (BYE) at the script end');
  const kinds = await until(
    () => Promise.resolve(d.events.received.filter((e) => e.json?.data?.callId === id).map((e) => e.json.type as string)),
    (k) => k.includes('voice.call.completed'),
    30_000,
  );
  t.same(kinds, ['voice.call.initiated', 'voice.call.ringing', 'voice.call.answered', 'voice.call.completed'], 'its events, sent by the restart');
  if (blocker) {
    const b = await final(restarted.api, d.token, blocker, 30_000);
    t.match(b, { status: 'failed', error: { code: 'OWNER_LOST' }, cost: 0 }, 'the ringing call the killed daemon carried ended OWNER_LOST, unbilled');
  }
  t.comment(`voice, queued across a kill: backend=${backendLabel} restart ${readyAt - killedAt} ms after the kill, the call completed ${finishedAt - readyAt} ms after the restart was ready`);
});

t.test(`an answered call whose daemon is SIGKILLed ends failed OWNER_LOST at the last renewal, billed up to it (${backendLabel})`, async (t) => {
  const sim = await trunk(t);
  const d = await voiceDaemon(t, sim, ports(46200));
  const r = await place(d.proc.api, d.token, '+14155550140', { script: [{ pause: { seconds: 60 } }, { pause: { seconds: 60 } }], timeLimit: 600 });
  t.equal(r.status, 202, r.text);
  const id = r.json.data.callId as string;
  const live = await until(() => get(d.proc.api, d.token, id), (c) => c.status === 'in-progress', 30_000);
  const far = await sim.waitFor((c) => c.to.endsWith('14155550140') && c.state === 'answered', 5000);
  // Up longer than a renewal period, so that the owner renewed its claim after the answer.
  await new Promise((res) => setTimeout(res, 1.5 * RENEW_MS));
  // On Postgres the claim is read just before the kill: the last renewal is this one or a later one.
  const renewedBy = d.url ? await lastRenewal(d.url, id) : null;
  const killedAt = await kill(d.proc);
  t.equal(far.state, 'answered', 'the far end is still in the call: nobody could send it a BYE');
  t.equal(far.endedAt, null);

  const restarted = await d.restart(ports(46300));
  const readyAt = Date.now();
  const done = await final(restarted.api, d.token, id, 60_000);
  const finishedAt = Date.now();
  t.equal(done.status, 'failed', JSON.stringify(done));
  t.equal(done.error?.code, 'OWNER_LOST');
  t.match(done.error?.message, /instance carrying the call .* stopped/, 'the reason says the instance stopped');
  const answeredAt = Date.parse(done.answeredAt);
  const endedAt = Date.parse(done.endedAt);
  t.equal(done.answeredAt, live.answeredAt);
  t.ok(endedAt <= killedAt + LEASE_SECONDS * 1000, `ended at most a lease after the kill (${endedAt - killedAt} ms from it)`);
  t.ok(endedAt <= killedAt, `ended at a renewal before the kill, not at the restart (${killedAt - endedAt} ms before it)`);
  t.ok(endedAt > answeredAt, `ended after the answer: at a renewal ${endedAt - answeredAt} ms into the call, not at its start`);
  // The owner renewed every RENEW_MS until it died (2 s more for a late timer in a loaded child). A time taken from the
  // restart instead (its claim moved to "now", less a lease) would land a lease before the restart: well before this.
  t.ok(endedAt >= killedAt - RENEW_MS - 2000, `at the last renewal before the kill, within a renewal period of it (${killedAt - endedAt} ms before the kill)`);
  if (renewedBy) t.ok(endedAt >= renewedBy.getTime(), `not before the renewal read just before the kill (${endedAt - renewedBy.getTime()} ms after it)`);
  const seconds = Math.ceil((endedAt - answeredAt) / 1000);
  t.equal(done.billableSeconds, seconds, `billed per second up to the last renewal: ${seconds} s`);
  t.equal(done.cost, Math.ceil((PRICE_PER_MINUTE * 1e6 * seconds) / 60) / 1e6, 'its cost');
  const account = (await call(restarted.admin, 'GET', `/admin/accounts/${d.accountId}`, { headers: { authorization: `Bearer ${restarted.adminToken}` } })).json.data;
  t.equal(account.balance, Math.round((10 - done.cost) * 1e6) / 1e6, 'the hold settled: the rest of the credit back');

  const last = done.history.at(-1);
  t.same(
    done.history.map((h: { status: string }) => h.status),
    ['queued', 'initiated', 'ringing', 'in-progress', 'failed'],
    'its history',
  );
  t.match(last.detail, { owner: String }, 'the history names the lost owner');
  t.equal(Date.parse(last.detail.lastRenewal), endedAt, 'and its last renewal, where the call was ended');
  const failed = await until(
    () => Promise.resolve(d.events.received.find((e) => e.json?.type === 'voice.call.failed' && e.json.data.callId === id)),
    (e) => e !== undefined,
    30_000,
  );
  t.match(failed!.json.data, { status: 'failed', error: { code: 'OWNER_LOST' }, billableSeconds: seconds }, 'a voice.call.failed event says so');
  t.equal(far.state, 'answered', 'the far end was told nothing (the dialog died with the daemon)');
  sim.bye(far.id);
  t.comment(
    `voice, answered across a kill: backend=${backendLabel} up ${killedAt - answeredAt} ms before the kill; restart ready ${readyAt - killedAt} ms after it; ` +
      `OWNER_LOST seen ${finishedAt - readyAt} ms after the restart (${finishedAt - killedAt} ms after the kill); ended ${killedAt - endedAt} ms before the kill; billed ${seconds} s`,
  );
});

t.test(
  `an answered call whose daemon is SIGKILLed and not restarted: another instance ends it once the claim lapses (${backendLabel})`,
  { skip: SPLIT ? false : 'another instance needs DATABASE_URL and REDIS_URL (embedded storage is a single process)' },
  async (t) => {
    const sim = await trunk(t);
    // Instances sharing a database share the key API secrets are hashed with (the other has its own data folder).
    const d = await voiceDaemon(t, sim, { ...ports(46600), FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('hex') });
    const r = await place(d.proc.api, d.token, '+14155550150', { script: [{ pause: { seconds: 60 } }, { pause: { seconds: 60 } }], timeLimit: 600 });
    t.equal(r.status, 202, r.text);
    const id = r.json.data.callId as string;
    await until(() => get(d.proc.api, d.token, id), (c) => c.status === 'in-progress', 30_000);
    await new Promise((res) => setTimeout(res, 1.5 * RENEW_MS));
    const renewedBy = await lastRenewal(d.url!, id);
    const killedAt = await kill(d.proc);
    const otherDir = mkdtempSync(join(tmpdir(), 'ferry-voice-other-'));
    t.teardown(() => rmSync(otherDir, { recursive: true, force: true }));
    const other = await d.restart({ ...ports(46700), FERRY_DATA_DIR: otherDir });
    const readyAt = Date.now();
    const done = await final(other.api, d.token, id, 120_000);
    const finishedAt = Date.now();
    t.match(done, { status: 'failed', error: { code: 'OWNER_LOST', message: /stopped/ } }, JSON.stringify(done.error));
    const endedAt = Date.parse(done.endedAt);
    t.ok(endedAt >= renewedBy.getTime() && endedAt <= killedAt, `at the last renewal: ${endedAt - renewedBy.getTime()} ms after the one read before the kill, ${killedAt - endedAt} ms before the kill`);
    t.equal(done.billableSeconds, Math.ceil((endedAt - Date.parse(done.answeredAt)) / 1000), 'billed up to it');
    t.ok(finishedAt - killedAt >= LEASE_SECONDS * 1000 - RENEW_MS - 2000, 'not before the claim could lapse');
    t.comment(
      `voice, owner lost without a restart: backend=${backendLabel} other instance ready ${readyAt - killedAt} ms after the kill; OWNER_LOST seen ${finishedAt - killedAt} ms after the kill ` +
        `(lease ${LEASE_SECONDS} s, sweep every 5 s, the dead instance's hold on the cluster job lapsing too)`,
    );
  },
);
