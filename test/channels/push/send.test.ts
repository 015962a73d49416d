// Sends through a real daemon and the embedded FCM and APNs simulators, over real sockets, on both backends: one
// device answered with its outcome, a user's devices, a topic fanned out in pages and batches, an invalidated token,
// a retry round after Retry-After, an idempotent retry, the payload limit per platform, and two accounts isolated.
import t from 'tap';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { FcmSimulator } from '../../../src/sim/push/fcm/fcm-simulator.js';
import { accountWithKey, call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import type { PushModuleService } from '../../../src/channels/push/index.js';

t.setTimeout(240_000);

const pushOf = (d: TestDaemon) => d.daemon.modules.service<PushModuleService>('push');
const apnsToken = (prefix = '') => (prefix + randomBytes(32).toString('hex')).slice(0, 64);

async function appWithDevices(d: TestDaemon, token: string, devices: Array<{ token: string; platform: string; userId?: string }>) {
  const app = await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'Bench app' } });
  if (app.status !== 200 && app.status !== 201) throw new Error(`app: ${app.text}`);
  const appId = app.json.data.id as string;
  const ids: string[] = [];
  for (const dev of devices) {
    const r = await call(d.api, 'POST', '/v1/push/devices', { token, body: { appId, ...dev } });
    if (r.status !== 200 && r.status !== 201) throw new Error(`device: ${r.text}`);
    ids.push(r.json.data.id ?? r.json.data.device?.id);
  }
  return { appId, ids };
}

const sendDone = async (d: TestDaemon, token: string, pushId: string) => {
  try {
    return await until(
      async () => (await call(d.api, 'GET', `/v1/push/sends/${pushId}?limit=1000`, { token })).json.data,
      (s) => s?.status === 'completed',
      30_000,
    );
  } catch (err) {
    const { rows } = await d.daemon.db.query(`SELECT provider, state, attempts, ferry_error, error_message, next_attempt_at, claimed_until, payload FROM outbound_jobs WHERE message_id = $1`, [pushId]);
    throw new Error(`${(err as Error).message}; jobs: ${JSON.stringify(rows).slice(0, 1500)}`);
  }
};

t.test(`push sends (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_PUSH_SIMULATOR: 'on', FERRY_PUSH_BATCH_SIZE: '50', FERRY_PUSH_FAN_OUT_PAGE_SIZE: '120', FERRY_PUSH_RETRY_BASE_MS: '200' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'push-sender');
  const sims = pushOf(d).simulators!;
  t.ok(sims, 'the simulators run (push.simulator on)');

  await t.test('one device: the answer carries the outcome and the service\'s id', async (t) => {
    const ios = apnsToken();
    const { ids } = await appWithDevices(d, token, [{ token: 'android-ok-1', platform: 'android' }, { token: ios, platform: 'ios' }]);
    const a = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: ids[0] }, notification: { title: 'Hi', body: 'There' }, data: { orderId: '42' } } });
    t.equal(a.status, 200, a.text);
    t.equal(a.json.code, 'PUSH_SENT');
    t.equal(a.json.data.status, 'sent');
    t.match(a.json.data.providerId, /^projects\/.+\/messages\/.+/, 'FCM\'s message name');
    const got = sims.fcm.received().find((r) => r.token === 'android-ok-1');
    t.ok(got, 'the FCM simulator got it');
    t.same((got!.message as { data?: unknown }).data, { orderId: '42' });
    const b = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: ids[1] }, notification: { title: 'Hi', body: 'iOS' }, collapseKey: 'k1' } });
    t.equal(b.status, 200, b.text);
    t.equal(b.json.data.status, 'sent');
    t.match(b.json.data.providerId, /^[0-9A-Fa-f-]{36}$/, 'the apns-id');
    t.ok(sims.apns.production.received().some((r) => r.token === ios), 'the APNs simulator got it');
    const view = await sendDone(d, token, b.json.data.pushId);
    t.match(view, { targeted: 1, sent: 1, failed: 0, invalidated: 0, pending: 0, target: { kind: 'device', value: ids[1] } });
    t.equal(view.outcomes.length, 1);
    t.equal(view.outcomes[0].providerId, b.json.data.providerId);
  });

  await t.test('a dead token invalidates its device, with push.device.invalidated', async (t) => {
    const { ids } = await appWithDevices(d, token, [{ token: 'unregistered-1', platform: 'android' }]);
    const r = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: ids[0] }, notification: { title: 'x' } } });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.data.status, 'invalidated');
    t.equal(r.json.data.error.code, 'DEVICE_UNREGISTERED');
    t.equal(r.json.data.error.providerCode, 'UNREGISTERED');
    const dev = await call(d.api, 'GET', `/v1/push/devices/${ids[0]}`, { token });
    t.equal(dev.json.data.status, 'invalid');
    const again = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: ids[0] }, notification: { title: 'x' } } });
    t.equal(again.status, 422);
    t.equal(again.json.code, 'DEVICE_INVALID');
  });

  await t.test('a user\'s devices: 202, then counts and every device\'s outcome', async (t) => {
    const hook = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url: 'http://127.0.0.1:9/hook', events: ['push.sent', 'push.device.invalidated'] } });
    t.equal(hook.status, 200, hook.text);
    const { ids } = await appWithDevices(d, token, [
      { token: 'android-user-1', platform: 'android', userId: 'user-7' },
      { token: apnsToken(), platform: 'ios', userId: 'user-7' },
      { token: 'unregistered-user-7', platform: 'android', userId: 'user-7' },
    ]);
    const r = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { userId: 'user-7' }, notification: { title: 'Yours' } } });
    t.equal(r.status, 202, r.text);
    t.equal(r.json.data.targeted, 3);
    const view = await sendDone(d, token, r.json.data.pushId);
    t.match(view, { targeted: 3, sent: 2, invalidated: 1, failed: 0, pending: 0 });
    t.equal(view.outcomes.length, 3, 'a user send lists every device');
    t.equal(view.outcomes.find((o: { deviceId: string }) => o.deviceId === ids[2]).status, 'invalidated');
    // The account subscribes to both: each is stored for its endpoint (events nobody subscribes to are not kept).
    const events = await until(
      async () =>
        (await d.daemon.db.query<{ type: string; payload: Record<string, unknown> }>(`SELECT type, payload FROM webhook_events WHERE type IN ('push.sent', 'push.device.invalidated')`)).rows,
      (rows) => rows.some((e) => e.type === 'push.sent' && e.payload.pushId === r.json.data.pushId) && rows.some((e) => e.type === 'push.device.invalidated' && e.payload.deviceId === ids[2]),
      10_000,
    );
    const sentEvent = events.find((e) => e.type === 'push.sent' && e.payload.pushId === r.json.data.pushId)!;
    t.match(sentEvent.payload, { targeted: 3, sent: 2, invalidated: 1, failed: 0, target: { kind: 'user', value: 'user-7' } }, 'push.sent with the counts');
  });

  await t.test('a topic: pages and batches, failures listed, the rest counted, a retry round after Retry-After', async (t) => {
    const N = 400;
    const devices = Array.from({ length: N }, (_, i) => ({ token: i % 100 === 7 ? `unregistered-topic-${i}` : i % 100 === 9 ? `quota-topic-${i}` : `topic-ok-${i}`, platform: 'android' }));
    const { ids } = await appWithDevices(d, token, devices);
    for (let i = 0; i < ids.length; i += 100) {
      const s = await call(d.api, 'POST', '/v1/push/topics/news/subscriptions', { token, body: { deviceIds: ids.slice(i, i + 100) } });
      t.equal(s.status, 200, s.text);
    }
    // The quota tokens answer 429 twice, then go through.
    sims.fcm.script(/^quota-topic-/, 'QUOTA_EXCEEDED', 8);
    const before = sims.fcm.received().length;
    const r = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { topic: 'news' }, notification: { title: 'Breaking' } } });
    t.equal(r.status, 202, r.text);
    t.equal(r.json.data.targeted, N);
    const view = await sendDone(d, token, r.json.data.pushId);
    t.match(view, { targeted: N, sent: N - 4, invalidated: 4, failed: 0, pending: 0 });
    t.equal(view.outcomes.length, 4, 'only the invalidated devices have rows');
    t.ok(view.outcomes.every((o: { status: string }) => o.status === 'invalidated'));
    t.ok(sims.fcm.received().length > before, 'the simulator got them');
  });

  await t.test('an idempotent retry of /send sends once', async (t) => {
    const { ids } = await appWithDevices(d, token, [{ token: 'android-idem', platform: 'android' }]);
    const body = { to: { deviceId: ids[0] }, notification: { title: 'once' } };
    const a = await call(d.api, 'POST', '/v1/push/send', { token, body, headers: { 'idempotency-key': 'push-once-1' } });
    const b = await call(d.api, 'POST', '/v1/push/send', { token, body, headers: { 'idempotency-key': 'push-once-1' } });
    t.equal(a.status, 200);
    t.equal(b.status, 200);
    t.equal(b.headers.get('idempotent-replayed'), 'true');
    t.equal(b.json.data.pushId, a.json.data.pushId);
    t.equal(sims.fcm.received().filter((x) => x.token === 'android-idem').length, 1, 'the device got it once');
  });

  await t.test('the payload limit, measured per platform', async (t) => {
    const { ids } = await appWithDevices(d, token, [{ token: 'android-big', platform: 'android' }, { token: apnsToken(), platform: 'ios' }]);
    const big = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: ids[0] }, data: { blob: 'x'.repeat(4093) } } });
    t.equal(big.status, 413, big.text);
    t.equal(big.json.code, 'PAYLOAD_TOO_LARGE');
    t.equal(big.json.data.platform, 'fcm');
    const ios = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: ids[1] }, data: { blob: 'x'.repeat(4070) } } });
    t.equal(ios.status, 413, ios.text);
    t.equal(ios.json.data.platform, 'apns', 'APNs counts the whole JSON body');
  });

  await t.test('two accounts: another account\'s device and send are not found', async (t) => {
    const other = await accountWithKey(d, 'push-other');
    const { ids } = await appWithDevices(d, token, [{ token: 'android-mine', platform: 'android' }]);
    const mine = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: ids[0] }, notification: { title: 'mine' } } });
    t.equal(mine.status, 200);
    const theirs = await call(d.api, 'POST', '/v1/push/send', { token: other.token, body: { to: { deviceId: ids[0] }, notification: { title: 'not yours' } } });
    t.equal(theirs.status, 404);
    t.equal(theirs.json.code, 'DEVICE_NOT_FOUND');
    const read = await call(d.api, 'GET', `/v1/push/sends/${mine.json.data.pushId}`, { token: other.token });
    t.equal(read.status, 404);
    t.equal(read.json.code, 'PUSH_NOT_FOUND');
    const topic = await call(d.api, 'POST', '/v1/push/send', { token: other.token, body: { to: { topic: 'news' }, notification: { title: 'x' } } });
    t.equal(topic.status, 404);
    t.equal(topic.json.code, 'TOPIC_NOT_FOUND');
  });
});

t.test(`the SSRF guard on (as in a deployment): an app's own endpoints on loopback are refused (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'false', FERRY_PUSH_SIMULATOR: 'on' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'push-guarded');
  for (const endpoints of [{ fcm: 'http://127.0.0.1:8080' }, { oauthToken: 'https://10.1.2.3/token' }, { apns: 'https://169.254.169.254' }]) {
    const r = await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'relay', endpoints } });
    t.equal(r.status, 400, `${JSON.stringify(endpoints)}: ${r.text}`);
    t.equal(r.json.code, 'VALIDATION_ERROR');
    t.match(r.json.data.errors[0].field, /^endpoints\./);
  }
  // Without endpoints of its own an app talks to the simulators (push.simulator on), whatever the guard says.
  const app = await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'plain' } });
  t.equal(app.status, 201, app.text);
  const dev = await call(d.api, 'POST', '/v1/push/devices', { token, body: { appId: app.json.data.id, token: 'guarded-ok', platform: 'android' } });
  const sent = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: dev.json.data.id ?? dev.json.data.device?.id }, notification: { title: 'hi' } } });
  t.equal(sent.json.data.status, 'sent', sent.text);
});

/** A service-account JSON with a key made here and obviously fake ids. */
function serviceAccount(email: string) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    json: { type: 'service_account', project_id: 'fake-project', private_key_id: 'fake', client_email: email, private_key: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), token_uri: 'https://oauth2.googleapis.com/token' },
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
  };
}

t.test(`credentials refused: the app's sends wait, a metric and /readyz say so, new credentials resume them (${backendLabel})`, async (t) => {
  // FCM is a simulator in this process that knows only the second service account: the first is refused (invalid_grant).
  const fcm = new FcmSimulator();
  await fcm.start();
  t.teardown(() => fcm.stop());
  const refused = serviceAccount('refused@fake-project.iam.gserviceaccount.com');
  const good = serviceAccount('good@fake-project.iam.gserviceaccount.com');
  fcm.addServiceAccount({ clientEmail: good.json.client_email, projectId: 'fake-project', publicKeyPem: good.publicKeyPem });

  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_PUSH_SIMULATOR: 'off', FERRY_PUSH_PAUSED_RECHECK_SECONDS: '1', FERRY_PUSH_RETRY_BASE_MS: '200' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'push-paused');
  const app = await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'paused', fcm: { serviceAccount: refused.json }, endpoints: { fcm: fcm.url, oauthToken: fcm.tokenUrl } } });
  t.equal(app.status, 201, app.text);
  const appId = app.json.data.id as string;
  const dev = await call(d.api, 'POST', '/v1/push/devices', { token, body: { appId, token: 'paused-device', platform: 'android' } });
  const deviceId = dev.json.data.id ?? dev.json.data.device?.id;

  const sent = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId }, notification: { title: 'waits' } } });
  t.equal(sent.status, 200, sent.text);
  t.equal(sent.json.data.status, 'queued', 'refused credentials: the device waits, it does not fail');
  const pushId = sent.json.data.pushId as string;

  const pausedApp = await until(async () => (await call(d.api, 'GET', `/v1/push/apps/${appId}`, { token })).json.data, (a) => a?.paused !== null && a?.paused !== undefined, 20_000);
  t.match(JSON.stringify(pausedApp.paused), /fcm/, 'the app shows the pause');
  const metrics = await until(async () => (await fetch(`${d.admin}/metrics`)).text(), (m) => /ferry_push_apps_paused\{service="fcm"\} 1/.test(m), 20_000);
  t.match(metrics, /ferry_push_apps_paused\{service="fcm"\} 1/, 'the gauge counts it');
  const ready = await until(async () => (await (await fetch(`${d.admin}/readyz`)).json()) as { warnings?: string[] }, (r) => JSON.stringify(r).includes(appId), 20_000);
  t.ok(JSON.stringify(ready).includes(appId), '/readyz names the app');
  const waiting = (await call(d.api, 'GET', `/v1/push/sends/${pushId}`, { token })).json.data;
  t.match(waiting, { status: 'sending', sent: 0, failed: 0, pending: 1 });
  t.equal(fcm.received().length, 0, 'nothing reached FCM');

  const fixed = await call(d.api, 'PATCH', `/v1/push/apps/${appId}`, { token, body: { fcm: { serviceAccount: good.json } } });
  t.equal(fixed.status, 200, fixed.text);
  const done = await sendDone(d, token, pushId);
  t.match(done, { status: 'completed', sent: 1, failed: 0 }, 'with new credentials the send goes on');
  t.equal(fcm.received().filter((r) => r.token === 'paused-device').length, 1, 'the device got it once');
  await until(async () => (await fetch(`${d.admin}/metrics`)).text(), (m) => /ferry_push_apps_paused\{service="fcm"\} 0/.test(m), 20_000);
});

t.test(`APNs: 410 Unregistered invalidates the device through the daemon (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_PUSH_SIMULATOR: 'on' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'push-apns-dead');
  const { ids } = await appWithDevices(d, token, [{ token: apnsToken('dead0000'), platform: 'ios' }, { token: apnsToken('bad00000'), platform: 'ios' }]);
  for (const id of ids) {
    const r = await call(d.api, 'POST', '/v1/push/send', { token, body: { to: { deviceId: id }, notification: { title: 'gone' } } });
    t.equal(r.json.data.status, 'invalidated', r.text);
    t.match(r.json.data.error.code, /^DEVICE_(UNREGISTERED|TOKEN_INVALID)$/);
    t.equal((await call(d.api, 'GET', `/v1/push/devices/${id}`, { token })).json.data.status, 'invalid');
  }
});
