// The browser dialer across two instances on one Postgres and Redis, both running every role: a browser signs in to
// A; a carrier's INVITE for a number routed to its identity reaches B, which answers 302 with A's SIP address and the
// ferry-hop marker, and the carrier's second INVITE rings the browser on A. A hop-marked INVITE to B is refused with
// 480 (never redirected again); the presence in Redis has the registration's lifetime and goes when the browser
// unregisters or its WebSocket closes. The browser is a WebSocket speaking SIP by hand (register, unregister, decline),
// then, where Debian's chromium is installed, the /dialer page answering with audio; SIPp is a second, independent
// carrier where sip-tester is installed. Each part skips with one line where its tool is missing.
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { stringify } from 'yaml';
import { analyzeAudio } from '../../../src/audio/analysis.js';
import { dialerPresenceKeys } from '../../../src/channels/voice/browser/dialer-presence.js';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { launchBrowser, screenshotPath } from '../../helpers/browser.js';
import { accountWithKey, call, startDaemon, startSecondInstance, type TestDaemon } from '../../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL } from '../../helpers/env.js';
import { testRedisClient } from '../../helpers/redis.js';
import { until } from '../../helpers/wait.js';
import { HAVE_SIPP, freePort, runSipp } from '../../sip/sipp.js';
import { trunkCaller } from './helpers/trunk-caller.js';
import { wsPhone } from './helpers/ws-phone.js';

t.setTimeout(300_000);

const skip = DATABASE_URL && REDIS_URL ? false : 'two instances need DATABASE_URL and REDIS_URL (embedded storage is a single process)';
const FROM = '+233200000602';
/** Routed to the dialer identity alice; the SIPp scenario calls it too. */
const ROUTED = '+233200000603';
const CALLER = '+14155550399';
// runSipp reads scenarios from test/sip/fixtures/sipp; this one lives beside this file.
const SIPP_SCENARIO = relative(fileURLToPath(new URL('../../sip/fixtures/sipp/', import.meta.url)), fileURLToPath(new URL('./fixtures/sipp/uac-redirected-decline.xml', import.meta.url)));

/** An assertion's name, with the answer's body when the status is not the one expected. */
const answered = (what: string, r: { status: number; text: string }) => (r.status < 300 ? what : `${what}: ${r.text}`);

t.test('the browser dialer across two instances: presence in Redis, a 302 to the instance the browser is on', { skip }, async (t) => {
  const config = join(tmpdir(), `ferry-dialer-instances-${process.pid}.yaml`);
  // The carrier (this process, SIPp) calls from 127.0.0.1: a configured trunk's address, which both instances accept.
  writeFileSync(config, stringify({ voice: { trunks: [{ name: 'carrier', host: '127.0.0.1', port: 9, transport: 'udp', optionsIntervalSeconds: 0 }] } }));
  t.teardown(() => rmSync(config, { force: true }));
  const a = await startDaemon({
    FERRY_CONFIG: config,
    FERRY_VOICE_SIMULATOR: 'off',
    FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
    // Instances sharing a database share the key API secrets are hashed and dialer tokens signed with.
    FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('hex'),
    FERRY_VOICE_MEDIA_PORT_MIN: '49100',
    FERRY_VOICE_MEDIA_PORT_MAX: '49149',
    FERRY_VOICE_DIALER_PORT_MIN: '49200',
    FERRY_VOICE_DIALER_PORT_MAX: '49249',
  });
  // B on its own data folder, as a second machine would be.
  const b = await startSecondInstance(
    t,
    a,
    { FERRY_VOICE_MEDIA_PORT_MIN: '49150', FERRY_VOICE_MEDIA_PORT_MAX: '49199', FERRY_VOICE_DIALER_PORT_MIN: '49250', FERRY_VOICE_DIALER_PORT_MAX: '49299' },
    'ferry-dialer-b-',
  );
  const aId = readFileSync(join(a.reuse.store.dataDir, 'voice-calls.holder'), 'utf8').trim();
  const phoneOf = (d: TestDaemon) => d.daemon.modules.service<VoiceModuleService>('voice').browserPhone()!;
  // The SIP ports the instances picked (port 0): a fixed port can be taken, e.g. as a Postgres connection's local port.
  const A_SIP = a.daemon.modules.service<VoiceModuleService>('voice').sipPort()!;
  const B_SIP = b.daemon.modules.service<VoiceModuleService>('voice').sipPort()!;
  const HOP = `sip:${ROUTED}@127.0.0.1:${A_SIP};ferry-hop=1`;

  const { account, token } = await accountWithKey(a, 'voice-dialer-instances', ['voice:calls', 'voice:agents']);
  await a.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await a.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: ROUTED });
  await a.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });
  const routed = await call(b.api, 'PUT', `/v1/voice/numbers/${encodeURIComponent(ROUTED)}`, { token, body: { dialerIdentity: 'alice' } });
  t.equal(routed.status, 200, answered('the number is routed to alice', routed));
  const minted = await call(a.api, 'POST', '/v1/voice/dialer/token', { token, body: { identity: 'alice', ttlSeconds: 1800 } });
  t.equal(minted.status, 201, answered('a dialer token for alice', minted));
  const dialerToken = minted.json.data.token as string;

  const redis = testRedisClient();
  t.teardown(() => redis.quit());
  const presenceKey = dialerPresenceKeys(a.reuse.env.FERRY_REDIS_KEY_PREFIX).identity(account.id, 'alice');
  const presence = () => redis.hgetall(presenceKey);
  const gone = () => until(() => redis.exists(presenceKey), (n) => n === 0, 10_000).then(() => true, () => false);
  const carrier = await trunkCaller(t, { ferrySipPort: B_SIP, from: CALLER, mediaPorts: { min: 49300, max: 49349 } });
  /** A carrier's call to B for the routed number, its outcome and the redirects it followed. */
  const callB = async (o: Parameters<typeof carrier.call>[1] = {}) => {
    const c = await carrier.call(ROUTED, o);
    const outcome = await c.outcome;
    await c.media.stop();
    return { code: outcome.code, redirects: c.redirects };
  };

  await t.test('a registration on A is published, B redirects its calls there, a hop-marked INVITE is never redirected', async (t) => {
    t.same(await callB(), { code: 480, redirects: [] }, 'before anyone signs in: 480 at B, as with one instance');
    const phone = await wsPhone(t, a.api, dialerToken);
    t.equal(await phone.register(300), 200, 'the browser registers with A');
    t.equal(phoneOf(a).registrations('alice'), 1);
    t.equal(phoneOf(b).registrations('alice'), 0, 'B holds no registration of its own');
    t.same(await presence(), { instance: aId, host: '127.0.0.1', port: String(A_SIP) }, "the presence names A and A's SIP address");
    const ttl = await redis.pttl(presenceKey);
    t.ok(ttl > 290_000 && ttl <= 300_000, `with the registration's lifetime as TTL (${ttl} ms)`);

    const followed = await callB();
    t.same(followed.redirects, [{ code: 302, uri: HOP }], "B answered 302 with A's address and the hop marker; the carrier followed it");
    t.equal(phone.invites.length, 1, 'the browser on A was rung');
    t.equal(followed.code, 486, "the browser's decline reached the carrier from A");

    const unfollowed = await callB({ followRedirect: false });
    t.equal(unfollowed.code, 302, 'without the marker B redirects');
    const hopped = await callB({ followRedirect: false, requestUri: `sip:${ROUTED}@127.0.0.1:${B_SIP};ferry-hop=1` });
    t.same(hopped, { code: 480, redirects: [] }, 'with the marker B answers 480 itself: no second redirect, no loop');
    t.equal(phone.invites.length, 1, 'neither rang the browser');

    t.equal(await phone.register(0), 200, 'the browser unregisters (Expires: 0), its WebSocket still open');
    t.ok(await gone(), 'the presence is deleted');
    t.same(await callB(), { code: 480, redirects: [] }, 'B no longer redirects: 480');

    t.equal(await phone.register(300), 200, 'registered again');
    t.equal((await presence()).instance, aId);
    phone.drop();
    t.ok(await gone(), 'the WebSocket closing without an unregister deletes the presence');
    t.equal(phoneOf(a).registrations('alice'), 0);
  });

  await t.test('a registration on B replaces A\'s, and A\'s browser leaving does not take it away', async (t) => {
    const onA = await wsPhone(t, a.api, dialerToken);
    t.equal(await onA.register(300), 200);
    const onB = await wsPhone(t, b.api, dialerToken);
    t.equal(await onB.register(300), 200);
    t.equal((await presence()).port, String(B_SIP), 'the latest registration wins: B');
    onA.drop();
    await until(async () => phoneOf(a).registrations('alice'), (n) => n === 0, 10_000);
    // A's release ran (its registration is gone); a compare-and-delete keeps B's newer one.
    await phoneOf(a).departed();
    t.equal((await presence()).port, String(B_SIP), "A's browser leaving kept B's registration");
    t.equal((await callB()).code, 486, 'a call to B rings the browser on B (it declines)');
    t.equal(onB.invites.length, 1);
    t.equal(await onB.register(0), 200);
    t.ok(await gone());
  });

  await t.test('SIPp as the carrier follows B\'s 302 to A', { skip: HAVE_SIPP ? false : 'needs sipp (Debian sip-tester)' }, async (t) => {
    const phone = await wsPhone(t, a.api, dialerToken);
    t.equal(await phone.register(300), 200);
    const result = await runSipp({ scenario: SIPP_SCENARIO, port: await freePort(), remote: `127.0.0.1:${B_SIP}` }).done;
    const what = "SIPp got 302 from B with A's address and the marker, then 486 from A";
    t.equal(result.code, 0, result.code === 0 ? what : `${what}: exit ${result.code}\n${result.errors}\n${result.output.slice(-1500)}`);
    t.equal(phone.invites.length, 1, 'the browser on A was rung by the call SIPp redirected');
    t.equal(await phone.register(0), 200);
    t.ok(await gone());
  });

  await t.test('in chromium: the page signs in to A, a call reaching B is answered on the page, with audio', async (t) => {
    const browser = await launchBrowser({ skip: (m) => t.plan(0, m), teardown: (fn) => t.teardown(fn) }, { fakeMedia: true });
    if (!browser) return;
    const context = await browser.newContext({ viewport: { width: 900, height: 900 } });
    await context.grantPermissions(['microphone'], { origin: a.api });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // Polled from here (the page's CSP has no unsafe-eval, which waitForFunction needs).
    const status = (want: (text: string) => boolean, ms: number) => until(async () => (await page.textContent('#status')) ?? '', want, ms);
    await page.goto(`${a.api}/dialer#token=${dialerToken}`);
    await status((s) => s === 'Ready', 20_000);
    t.equal(phoneOf(a).registrations('alice'), 1, 'the page registered with A');
    t.equal((await presence()).instance, aId, 'the presence names A');

    const incoming = await carrier.call(ROUTED);
    await status((s) => s === `Incoming call from ${CALLER}`, 20_000);
    t.same(incoming.redirects, [{ code: 302, uri: HOP }], 'the carrier was redirected from B to A');
    await page.click('#answer');
    t.same(await incoming.outcome, { answered: true, code: 200 }, "the carrier's call was answered once the page answered");
    await status((s) => s.startsWith(`In call with ${CALLER}`), 15_000);
    await page.screenshot({ path: screenshotPath('voice-dialer-instances-in-call') });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    incoming.sip.bye();
    await status((s) => s === 'Call ended', 15_000);
    const { recording } = await incoming.media.stop();
    const heard = analyzeAudio(recording ?? new Int16Array(0), 8000);
    t.ok(heard.nonSilentShare > 0.05, `the carrier heard the browser's microphone through A (${(heard.nonSilentShare * 100).toFixed(0)}% of frames)`);

    const listed = (await call(b.api, 'GET', '/v1/voice/calls', { token })).json.data.calls.find((c: { direction: string; status: string }) => c.direction === 'inbound' && (c.status === 'in-progress' || c.status === 'completed'));
    t.match(listed, { direction: 'inbound', to: ROUTED, from: CALLER, reference: 'dialer:alice' }, 'an inbound call of the account, read through B');
    const done = await until(async () => (await call(b.api, 'GET', `/v1/voice/calls/${listed.callId}`, { token })).json.data, (c) => c.status === 'completed', 15_000);
    t.equal(done.status, 'completed');
    t.equal(done.error, null, 'the caller hanging up is a normal end');
    const owner = (await a.daemon.db.query<{ owner: string | null }>('SELECT owner FROM voice_calls WHERE id = $1', [listed.callId])).rows[0]?.owner;
    t.equal(owner, aId, 'carried by A, where the browser is');

    t.same(await callB({ followRedirect: false, requestUri: `sip:${ROUTED}@127.0.0.1:${B_SIP};ferry-hop=1` }), { code: 480, redirects: [] }, 'a hop-marked INVITE to B: 480, not redirected');
    await page.close();
    t.ok(await gone(), 'the page closing deletes the presence');
    t.same(await callB(), { code: 480, redirects: [] }, 'and B answers 480 again');
    t.same(pageErrors, [], 'no script error on the page');
  });
});
