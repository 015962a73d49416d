// Push apps, devices and topics through a real daemon (both backends): credentials checked on upload, sealed in the
// credential store only and never returned or logged; devices upserted by (app, token) within the per-user limit;
// topic sizes exact after adds, removes, device and app deletions and concurrent subscriptions; and two accounts on
// one daemon that never see each other's apps, devices or topics (404, not 403).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import t from 'tap';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

/** A service-account JSON shaped like Firebase's download, with a fresh RSA key and obviously fake ids. */
function serviceAccount(project = 'ferry-test-project') {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  return {
    type: 'service_account',
    project_id: project,
    private_key_id: randomBytes(20).toString('hex'),
    private_key: pem,
    client_email: `ferry-test@${project}.iam.gserviceaccount.com`,
    client_id: '000000000000000000000',
    token_uri: 'https://oauth2.googleapis.com/token',
  };
}

/** An APNs auth key as the developer portal gives it: a P-256 key in PKCS#8 PEM, with made-up ids. */
function apnsKey(environment: 'sandbox' | 'production' = 'sandbox') {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), keyId: 'FAKEKEY001', teamId: 'FAKETEAM01', bundleId: 'com.example.ferrytest', environment };
}

/** The base64 body of a PEM: what would show if a key leaked anywhere. */
const keyBody = (pem: string) => pem.split('\n').filter((l) => l && !l.startsWith('-----')).join('').slice(0, 40);

const fcmToken = () => `fcm-${randomBytes(24).toString('base64url')}`;
const apnsToken = () => randomBytes(32).toString('hex');

t.test(`push apps, devices and topics (${backendLabel})`, async (t) => {
  // Endpoints on loopback and unresolvable names are this test's relays: allowed as on a developer machine (send.test.ts has the guard on).
  const d = await startDaemon({ FERRY_PUSH_MAX_DEVICES_PER_USER: '3', FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => d.stop());
  const a = await accountWithKey(d, 'push-a');
  const b = await accountWithKey(d, 'push-b');
  const as = (token: string) => (method: string, path: string, body?: unknown) => call(d.api, method, path, { token, body });
  const apiA = as(a.token);
  const apiB = as(b.token);
  const db = d.daemon.db;
  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string | number }>(sql, params)).rows[0].n);

  const sa = serviceAccount();
  const apns = apnsKey();
  let appId = '';

  t.test('an app with both credentials shows who they name and their fingerprints, never the keys', async (t) => {
    const r = await apiA('POST', '/v1/push/apps', { name: 'Ferry test app', fcm: { serviceAccount: sa }, apns });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.code, 'PUSH_APP_CREATED');
    const app = r.json.data;
    t.match(app.id, /^papp_/);
    appId = app.id;
    t.match(app.fcm, { projectId: 'ferry-test-project', clientEmail: sa.client_email, fingerprint: /^hmac-sha256:[0-9a-f]{16}$/, updatedAt: String });
    t.match(app.apns, { keyId: 'FAKEKEY001', teamId: 'FAKETEAM01', bundleId: 'com.example.ferrytest', environment: 'sandbox', fingerprint: /^hmac-sha256:/ });
    t.notOk('privateKey' in app.apns);
    t.notMatch(r.text, /PRIVATE KEY/);
    t.notOk(r.text.includes(keyBody(sa.private_key)) || r.text.includes(keyBody(apns.privateKey)), 'neither key in the answer');
    t.same(app.paused, null);
    const g = await apiA('GET', `/v1/push/apps/${app.id}`);
    t.same(g.json.data, app, 'GET shows the same');
    t.notMatch(g.text, /PRIVATE KEY/);

    // The service account as its text works too; an app may have no credentials at all.
    const asText = await apiA('POST', '/v1/push/apps', { name: 'From text', fcm: { serviceAccount: JSON.stringify(serviceAccount('ferry-text-project')) } });
    t.equal(asText.status, 201, asText.text);
    t.equal(asText.json.data.fcm.projectId, 'ferry-text-project');
    t.same(asText.json.data.apns, null);
    const bare = await apiA('POST', '/v1/push/apps', { name: 'No credentials yet' });
    t.equal(bare.status, 201, bare.text);
    t.same([bare.json.data.fcm, bare.json.data.apns], [null, null]);

    const p1 = await apiA('GET', '/v1/push/apps?limit=2');
    t.same(p1.json.data.apps.map((x: { id: string }) => x.id), [bare.json.data.id, asText.json.data.id], 'newest first');
    const p2 = await apiA('GET', `/v1/push/apps?limit=2&cursor=${p1.json.data.nextCursor}`);
    t.same(p2.json.data.apps.map((x: { id: string }) => x.id), [app.id]);
    t.equal(p2.json.data.nextCursor, null);
    t.same(p2.json.data.apps[0].fcm, app.fcm, 'the list shows the same summaries');
  });

  t.test('the keys are in the credential store only: not in push_apps, not in the request log', async (t) => {
    const row = (await db.query<{ j: string }>(`SELECT row_to_json(a)::text AS j FROM push_apps a WHERE id = $1`, [appId])).rows[0].j;
    t.notMatch(row, /PRIVATE KEY|private_key|FAKEKEY001/, 'push_apps holds no credential');
    t.notOk(row.includes(keyBody(sa.private_key)));
    const sealed = (await db.query<{ name: string; sealed: string }>(`SELECT name, sealed FROM provider_credentials WHERE module = 'push' AND account_id = $1 ORDER BY name`, [a.account.id])).rows;
    t.ok(sealed.some((c) => c.name === `app:${appId}:fcm`) && sealed.some((c) => c.name === `app:${appId}:apns`), 'both sealed under app:<id>:<service>');
    for (const c of sealed) t.notMatch(c.sealed, /PRIVATE KEY|service_account/, `${c.name} is sealed`);

    // Request logs are written in batches a fraction of a second after the answer: wait for the create's row (bounded).
    let logged: Array<{ request_body: string | null; response_body: string | null }> = [];
    for (let i = 0; i < 100 && !logged.length; i++) {
      logged = (await db.query<{ request_body: string | null; response_body: string | null }>(`SELECT request_body, response_body FROM request_logs WHERE account_id = $1 AND method = 'POST' AND path = '/v1/push/apps'`, [a.account.id])).rows;
      if (!logged.length) await new Promise((r) => setTimeout(r, 100));
    }
    t.ok(logged.length >= 1, 'the creates are in the request log');
    for (const l of logged) {
      const text = `${l.request_body ?? ''} ${l.response_body ?? ''}`;
      t.notMatch(text, /PRIVATE KEY/);
      t.notOk(text.includes(keyBody(sa.private_key)) || text.includes(keyBody(apns.privateKey)), 'no key body in the log');
    }
  });

  t.test('a malformed credential is refused with its code and nothing is stored', async (t) => {
    const apps = await count(`SELECT count(*) AS n FROM push_apps`);
    const creds = await count(`SELECT count(*) AS n FROM provider_credentials WHERE module = 'push'`);
    const notPem = await apiA('POST', '/v1/push/apps', { name: 'bad', fcm: { serviceAccount: { ...serviceAccount(), private_key: 'not a key' } } });
    t.equal(notPem.status, 400, notPem.text);
    t.equal(notPem.json.code, 'INVALID_FCM_CREDENTIALS');
    t.match(notPem.json.message, /private_key/);
    const notJson = await apiA('POST', '/v1/push/apps', { name: 'bad', fcm: { serviceAccount: '{not json' } });
    t.equal(notJson.json.code, 'INVALID_FCM_CREDENTIALS');
    const rsaForApns = await apiA('POST', '/v1/push/apps', { name: 'bad', apns: { ...apnsKey(), privateKey: sa.private_key } });
    t.equal(rsaForApns.status, 400);
    t.equal(rsaForApns.json.code, 'INVALID_APNS_CREDENTIALS');
    t.match(rsaForApns.json.message, /P-256/);
    const badKeyId = await apiA('POST', '/v1/push/apps', { name: 'bad', fcm: { serviceAccount: sa }, apns: { ...apnsKey(), keyId: 'short' } });
    t.equal(badKeyId.json.code, 'INVALID_APNS_CREDENTIALS', 'one bad credential refuses the whole app');
    const before = (await apiA('GET', `/v1/push/apps/${appId}`)).json.data;
    const badRotate = await apiA('PATCH', `/v1/push/apps/${appId}`, { fcm: { serviceAccount: { ...sa, type: 'authorized_user' } } });
    t.equal(badRotate.json.code, 'INVALID_FCM_CREDENTIALS');
    t.same((await apiA('GET', `/v1/push/apps/${appId}`)).json.data, before, 'the app is unchanged');
    t.equal(await count(`SELECT count(*) AS n FROM push_apps`), apps, 'no app stored');
    t.equal(await count(`SELECT count(*) AS n FROM provider_credentials WHERE module = 'push'`), creds, 'no credential stored');
  });

  t.test('PATCH rotates a credential and ends its pause, removes one with null, checks endpoints', async (t) => {
    await db.query(`UPDATE push_apps SET paused_service = 'fcm', paused_reason = 'UNAUTHENTICATED', paused_at = now() WHERE id = $1`, [appId]);
    const paused = (await apiA('GET', `/v1/push/apps/${appId}`)).json.data;
    t.match(paused.paused, { service: 'fcm', reason: 'UNAUTHENTICATED' });
    const rotated = await apiA('PATCH', `/v1/push/apps/${appId}`, { fcm: { serviceAccount: serviceAccount('ferry-rotated') } });
    t.equal(rotated.status, 200, rotated.text);
    t.equal(rotated.json.data.fcm.projectId, 'ferry-rotated');
    t.not(rotated.json.data.fcm.fingerprint, paused.fcm.fingerprint, 'a new fingerprint');
    t.same(rotated.json.data.paused, null, 'the pause ended with the new credentials');
    t.same(rotated.json.data.apns, paused.apns, 'APNs untouched');

    const removed = await apiA('PATCH', `/v1/push/apps/${appId}`, { apns: null, name: 'Renamed' });
    t.same(removed.json.data.apns, null);
    t.equal(removed.json.data.name, 'Renamed');
    t.equal(await count(`SELECT count(*) AS n FROM provider_credentials WHERE module = 'push' AND name = $1`, [`app:${appId}:apns`]), 0, 'the key is gone from the store');

    const badUrl = await apiA('PATCH', `/v1/push/apps/${appId}`, { endpoints: { fcm: 'ftp://relay.example/fcm', apns: 'not a url' } });
    t.equal(badUrl.status, 400);
    t.equal(badUrl.json.code, 'VALIDATION_ERROR');
    t.equal(badUrl.json.data.errors[0].field, 'endpoints.fcm');
    const withUser = await apiA('PATCH', `/v1/push/apps/${appId}`, { endpoints: { fcm: 'https://user:pw@relay.example' } });
    t.equal(withUser.json.code, 'VALIDATION_ERROR');
    const ok = await apiA('PATCH', `/v1/push/apps/${appId}`, { endpoints: { fcm: 'http://127.0.0.1:9/fcm/', oauthToken: 'https://relay.example/token', apns: 'https://relay.example' } });
    t.equal(ok.status, 200, ok.text);
    t.same(ok.json.data.endpoints, { fcm: 'http://127.0.0.1:9/fcm', oauthToken: 'https://relay.example/token', apns: 'https://relay.example' });
    const empty = await apiA('PATCH', `/v1/push/apps/${appId}`, {});
    t.equal(empty.json.code, 'VALIDATION_ERROR', 'a PATCH changes something');
  });

  t.test('devices: upsert by app and token, a token moves to its new user, an invalid one comes back', async (t) => {
    const token = fcmToken();
    const r = await apiA('POST', '/v1/push/devices', { token, platform: 'android', appId, userId: 'u1', locale: 'pt-BR', timezone: 'America/Sao_Paulo', tags: ['beta', 'beta', 'vip'] });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.code, 'DEVICE_REGISTERED');
    const dev = r.json.data;
    t.match(dev, { id: /^pdev_/, appId, token, platform: 'android', environment: null, userId: 'u1', locale: 'pt-BR', timezone: 'America/Sao_Paulo', tags: ['beta', 'vip'], status: 'active', invalidReason: null, invalidatedAt: null });
    t.same(dev.dropped, []);

    const moved = await apiA('POST', '/v1/push/devices', { token, platform: 'android', appId, userId: 'u2' });
    t.equal(moved.status, 200, moved.text);
    t.equal(moved.json.code, 'DEVICE_UPDATED');
    t.equal(moved.json.data.id, dev.id, 'the same device');
    t.equal(moved.json.data.userId, 'u2', 'moved to the new user');
    t.same(moved.json.data.tags, ['beta', 'vip'], 'fields not given stay');

    await db.query(`UPDATE push_devices SET status = 'invalid', invalid_reason = 'DEVICE_UNREGISTERED', invalidated_at = now() WHERE id = $1`, [dev.id]);
    t.match((await apiA('GET', `/v1/push/devices/${dev.id}`)).json.data, { status: 'invalid', invalidReason: 'DEVICE_UNREGISTERED', invalidatedAt: String });
    const back = await apiA('POST', '/v1/push/devices', { token, platform: 'android', appId });
    t.match(back.json.data, { id: dev.id, status: 'active', invalidReason: null, invalidatedAt: null, userId: 'u2' });

    const patched = await apiA('PATCH', `/v1/push/devices/${dev.id}`, { tags: ['x'], locale: null });
    t.equal(patched.status, 200, patched.text);
    t.match(patched.json.data, { tags: ['x'], locale: null, timezone: 'America/Sao_Paulo' });
    t.same((await apiA('GET', `/v1/push/devices/${dev.id}`)).json.data, (({ dropped: _dropped, ...rest }) => rest)(patched.json.data));
  });

  t.test('device validation: APNs tokens, environments, locales, time zones, unknown apps', async (t) => {
    const upper = apnsToken().toUpperCase();
    const ios = await apiA('POST', '/v1/push/devices', { token: upper, platform: 'ios', appId, environment: 'sandbox' });
    t.equal(ios.status, 201, ios.text);
    t.equal(ios.json.data.token, upper.toLowerCase(), 'APNs tokens are kept in lower case');
    const again = await apiA('POST', '/v1/push/devices', { token: upper.toLowerCase(), platform: 'ios', appId });
    t.equal(again.json.data.id, ios.json.data.id, 'the same device whatever the case');
    t.equal(again.json.data.environment, 'sandbox');
    const bad = async (body: Record<string, unknown>, field: string, code = 'VALIDATION_ERROR') => {
      const r = await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId, ...body });
      t.equal(r.json.code, code, `${JSON.stringify(body)}: ${r.text}`);
      if (code === 'VALIDATION_ERROR') t.match(r.json.data.errors[0].field, field);
    };
    await bad({ platform: 'ios', token: 'abc123' }, 'token');
    await bad({ platform: 'ios', token: 'g'.repeat(64) }, 'token');
    await bad({ token: 'has space' }, 'token');
    await bad({ token: 'x'.repeat(4097) }, 'token');
    await bad({ environment: 'sandbox' }, 'environment');
    await bad({ locale: 'not a locale' }, 'locale');
    await bad({ timezone: 'Mars/Olympus_Mons' }, 'timezone');
    await bad({ platform: 'windows' }, 'platform');
    await bad({ appId: 'papp_nope' }, '', 'APP_NOT_FOUND');
  });

  t.test('a user keeps at most push.maxDevicesPerUser devices: the oldest are dropped, invalid ones first', async (t) => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: i === 2 ? 'web' : 'android', appId, userId: 'limited' });
      t.same(r.json.data.dropped, [], `device ${i} fits`);
      ids.push(r.json.data.id);
    }
    const fourth = await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId, userId: 'limited' });
    t.equal(fourth.status, 201);
    t.same(fourth.json.data.dropped, [ids[0]], 'the oldest dropped');
    t.equal((await apiA('GET', `/v1/push/devices/${ids[0]}`)).status, 404, 'and deleted');
    await db.query(`UPDATE push_devices SET status = 'invalid', invalid_reason = 'DEVICE_UNREGISTERED', invalidated_at = now() WHERE id = $1`, [ids[2]]);
    const fifth = await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId, userId: 'limited' });
    t.same(fifth.json.data.dropped, [ids[2]], 'an invalid device goes before older active ones');
    const mine = await apiA('GET', '/v1/push/devices?userId=limited');
    t.same(mine.json.data.devices.map((x: { id: string }) => x.id), [fifth.json.data.id, fourth.json.data.id, ids[1]]);

    // Moving a device to the user (PATCH) counts too.
    const other = await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId, userId: 'someone-else' });
    const patched = await apiA('PATCH', `/v1/push/devices/${other.json.data.id}`, { userId: 'limited' });
    t.same(patched.json.data.dropped, [ids[1]]);
  });

  t.test('device lists filter by app, user, platform, status and tag, and page by cursor', async (t) => {
    const app2 = (await apiA('POST', '/v1/push/apps', { name: 'Second app' })).json.data.id;
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'web', appId: app2, tags: ['listed', `n${i}`] })).json.data.id);
    const p1 = await apiA('GET', `/v1/push/devices?appId=${app2}&limit=2`);
    t.same(p1.json.data.devices.map((x: { id: string }) => x.id), [made[2], made[1]]);
    const p2 = await apiA('GET', `/v1/push/devices?appId=${app2}&limit=2&cursor=${p1.json.data.nextCursor}`);
    t.same(p2.json.data.devices.map((x: { id: string }) => x.id), [made[0]]);
    t.equal(p2.json.data.nextCursor, null);
    t.same((await apiA('GET', '/v1/push/devices?tag=n1')).json.data.devices.map((x: { id: string }) => x.id), [made[1]]);
    t.ok((await apiA('GET', '/v1/push/devices?platform=ios')).json.data.devices.every((x: { platform: string }) => x.platform === 'ios'));
    const invalid = (await apiA('GET', '/v1/push/devices?status=invalid')).json.data.devices;
    t.ok(invalid.every((x: { status: string }) => x.status === 'invalid'));
    t.equal((await apiA('GET', '/v1/push/devices?status=gone')).json.code, 'VALIDATION_ERROR');
    t.equal((await apiA('GET', '/v1/push/devices?limit=0')).json.code, 'VALIDATION_ERROR');
  });

  t.test('topics: sizes stay exact through adds, removes, device deletions and concurrent subscriptions', async (t) => {
    const devs: string[] = [];
    for (let i = 0; i < 6; i++) devs.push((await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId, userId: i < 2 ? 'topic-user' : undefined })).json.data.id);
    const exact = async (name: string) => {
      const topic = (await apiA('GET', `/v1/push/topics/${name}`)).json.data;
      t.equal(topic.size, await count(`SELECT count(*) AS n FROM push_topic_subscriptions WHERE account_id = $1 AND topic = $2`, [a.account.id, name]), `${name}: size ${topic.size} is the count`);
      return topic.size as number;
    };
    const s1 = await apiA('POST', '/v1/push/topics/news/subscriptions', { deviceIds: [devs[2], devs[3]] });
    t.equal(s1.status, 200, s1.text);
    t.match(s1.json.data, { name: 'news', size: 2, added: 2, createdAt: String });
    const s2 = await apiA('POST', '/v1/push/topics/news/subscriptions', { deviceIds: [devs[2], devs[3], devs[4], devs[4]] });
    t.match(s2.json.data, { size: 3, added: 1 }, 'already subscribed devices do not count');
    const byUser = await apiA('POST', '/v1/push/topics/news/subscriptions', { userId: 'topic-user' });
    t.match(byUser.json.data, { size: 5, added: 2 });
    t.equal(await exact('news'), 5);

    const u1 = await apiA('DELETE', '/v1/push/topics/news/subscriptions', { deviceIds: [devs[2]] });
    t.match(u1.json.data, { size: 4, removed: 1 });
    const u2 = await apiA('DELETE', '/v1/push/topics/news/subscriptions', { deviceIds: [devs[2]] });
    t.match(u2.json.data, { size: 4, removed: 0 });
    await apiA('POST', '/v1/push/topics/sports/subscriptions', { deviceIds: [devs[3], devs[5]] });
    t.equal((await apiA('DELETE', `/v1/push/devices/${devs[3]}`)).status, 200);
    t.equal(await exact('news'), 3, 'a deleted device leaves its topics');
    t.equal(await exact('sports'), 1);

    // Overlapping subscriptions and unsubscriptions at once: the size counts only rows actually inserted or deleted.
    const pool = [devs[0], devs[1], devs[4], devs[5]];
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        apiA(i % 3 === 2 ? 'DELETE' : 'POST', '/v1/push/topics/busy/subscriptions', { deviceIds: [pool[i % 4], pool[(i + 1) % 4]] }).then((r) =>
          i % 3 === 2 && r.status === 404 ? r : t.equal(r.status, 200, r.text),
        ),
      ),
    );
    await exact('busy');
    await Promise.all([apiA('DELETE', `/v1/push/devices/${devs[5]}`), apiA('POST', '/v1/push/topics/busy/subscriptions', { deviceIds: [devs[0], devs[1]] })]);
    await exact('busy');
    t.equal(await exact('sports'), 0, 'the last device of sports deleted');

    const missing = await apiA('POST', '/v1/push/topics/news/subscriptions', { deviceIds: [devs[0], 'pdev_nope'] });
    t.equal(missing.status, 404);
    t.equal(missing.json.code, 'DEVICE_NOT_FOUND');
    t.same(missing.json.data.deviceIds, ['pdev_nope']);
    t.equal(await exact('news'), 3, 'nothing changed');
    t.equal((await apiA('POST', '/v1/push/topics/news/subscriptions', { deviceIds: [devs[0]], userId: 'x' })).json.code, 'VALIDATION_ERROR', 'one of deviceIds and userId');
    t.equal((await apiA('POST', '/v1/push/topics/bad%20name/subscriptions', { deviceIds: [devs[0]] })).json.code, 'VALIDATION_ERROR');
    t.equal((await apiA('GET', '/v1/push/topics/nothing-here')).json.code, 'TOPIC_NOT_FOUND');
    t.equal((await apiA('DELETE', '/v1/push/topics/nothing-here/subscriptions', { deviceIds: [devs[0]] })).json.code, 'TOPIC_NOT_FOUND');
    const long = 'a.b~c_d-e%25'.repeat(20).slice(0, 200);
    const longName = decodeURIComponent(long);
    const l = await apiA('POST', `/v1/push/topics/${encodeURIComponent(longName)}/subscriptions`, { deviceIds: [devs[0]] });
    t.equal(l.status, 200, l.text);

    const p1 = await apiA('GET', '/v1/push/topics?limit=2');
    const p2 = await apiA('GET', `/v1/push/topics?limit=2&cursor=${encodeURIComponent(p1.json.data.nextCursor)}`);
    const names = [...p1.json.data.topics, ...p2.json.data.topics].map((x: { name: string }) => x.name);
    t.same(names.slice(0, 4), [...names.slice(0, 4)].sort(), 'by name');
    t.ok(names.includes('news') && names.includes('busy'));
  });

  t.test('deleting an app deletes its devices, their subscriptions and its credentials; topic sizes follow', async (t) => {
    const gone = (await apiA('POST', '/v1/push/apps', { name: 'Short-lived', fcm: { serviceAccount: serviceAccount('ferry-gone') } })).json.data.id;
    const d1 = (await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId: gone })).json.data.id;
    const d2 = (await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId: gone })).json.data.id;
    const kept = (await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId })).json.data.id;
    t.match((await apiA('POST', '/v1/push/topics/farewell/subscriptions', { deviceIds: [d1, d2, kept] })).json.data, { size: 3 });
    const del = await apiA('DELETE', `/v1/push/apps/${gone}`);
    t.equal(del.status, 200, del.text);
    t.equal((await apiA('GET', `/v1/push/apps/${gone}`)).json.code, 'APP_NOT_FOUND');
    t.equal((await apiA('GET', `/v1/push/devices/${d1}`)).status, 404);
    t.equal((await apiA('GET', '/v1/push/topics/farewell')).json.data.size, 1);
    t.equal(await count(`SELECT count(*) AS n FROM provider_credentials WHERE module = 'push' AND name LIKE $1`, [`app:${gone}:%`]), 0);
    t.equal((await apiA('DELETE', `/v1/push/apps/${gone}`)).json.code, 'APP_NOT_FOUND');
  });

  t.test("two accounts never see each other's apps, devices or topics (404, not 403)", async (t) => {
    const devA = (await apiA('POST', '/v1/push/devices', { token: fcmToken(), platform: 'android', appId, userId: 'shared-user-id', tags: ['shared-tag'] })).json.data;
    await apiA('POST', '/v1/push/topics/shared-name/subscriptions', { deviceIds: [devA.id] });
    const sizeA = (await apiA('GET', '/v1/push/topics/shared-name')).json.data.size;

    const expect404 = async (method: string, path: string, code: string, body?: unknown) => {
      const r = await apiB(method, path, body);
      t.equal(r.status, 404, `${method} ${path}: ${r.text}`);
      t.equal(r.json.code, code);
    };
    await expect404('GET', `/v1/push/apps/${appId}`, 'APP_NOT_FOUND');
    await expect404('PATCH', `/v1/push/apps/${appId}`, 'APP_NOT_FOUND', { name: 'taken over' });
    await expect404('PATCH', `/v1/push/apps/${appId}`, 'APP_NOT_FOUND', { fcm: { serviceAccount: serviceAccount('ferry-intruder') } });
    await expect404('DELETE', `/v1/push/apps/${appId}`, 'APP_NOT_FOUND');
    await expect404('POST', '/v1/push/devices', 'APP_NOT_FOUND', { token: devA.token, platform: 'android', appId });
    await expect404('GET', `/v1/push/devices/${devA.id}`, 'DEVICE_NOT_FOUND');
    await expect404('PATCH', `/v1/push/devices/${devA.id}`, 'DEVICE_NOT_FOUND', { userId: 'intruder' });
    await expect404('DELETE', `/v1/push/devices/${devA.id}`, 'DEVICE_NOT_FOUND');
    await expect404('POST', '/v1/push/topics/shared-name/subscriptions', 'DEVICE_NOT_FOUND', { deviceIds: [devA.id] });
    await expect404('GET', '/v1/push/topics/shared-name', 'TOPIC_NOT_FOUND');
    await expect404('DELETE', '/v1/push/topics/shared-name/subscriptions', 'TOPIC_NOT_FOUND', { deviceIds: [devA.id] });

    // B's own of everything, with A's names: lists hold only B's, A's stay as they were.
    const appB = (await apiB('POST', '/v1/push/apps', { name: 'B app' })).json.data.id;
    const devB = (await apiB('POST', '/v1/push/devices', { token: devA.token, platform: 'android', appId: appB, userId: 'shared-user-id', tags: ['shared-tag'] })).json.data;
    t.not(devB.id, devA.id, 'the same token in another account is another device');
    const subB = await apiB('POST', '/v1/push/topics/shared-name/subscriptions', { userId: 'shared-user-id' });
    t.match(subB.json.data, { size: 1, added: 1 }, "B's user is B's devices only");
    t.same((await apiB('GET', '/v1/push/apps')).json.data.apps.map((x: { id: string }) => x.id), [appB]);
    t.same((await apiB('GET', '/v1/push/devices')).json.data.devices.map((x: { id: string }) => x.id), [devB.id]);
    t.same((await apiB('GET', '/v1/push/devices?userId=shared-user-id')).json.data.devices.map((x: { id: string }) => x.id), [devB.id]);
    t.same((await apiB('GET', '/v1/push/devices?tag=shared-tag')).json.data.devices.map((x: { id: string }) => x.id), [devB.id]);
    t.same((await apiB('GET', '/v1/push/topics')).json.data.topics.map((x: { name: string }) => x.name), ['shared-name']);
    t.equal((await apiA('GET', '/v1/push/topics/shared-name')).json.data.size, sizeA, "A's topic did not move");
    t.match((await apiA('GET', `/v1/push/devices/${devA.id}`)).json.data, { userId: 'shared-user-id', status: 'active' }, "A's device untouched");
    t.equal((await apiA('GET', `/v1/push/apps/${appId}`)).json.data.name, 'Renamed', "A's app untouched");
    t.notOk((await apiA('GET', '/v1/push/apps?limit=200')).json.data.apps.some((x: { id: string }) => x.id === appB));
  });

  t.test('the operator lists apps and devices across accounts (ferry push apps|devices), never a key', async (t) => {
    const apps = (await d.adminCall('GET', '/admin/push/apps?account=push-a')).items;
    t.ok(apps.length >= 1 && apps.every((x: { accountId: string }) => x.accountId === a.account.id), "only push-a's apps");
    const shown = await d.adminCall('GET', `/admin/push/apps/${appId}`);
    t.match(shown, { accountId: a.account.id, id: appId, fcm: { projectId: 'ferry-rotated' } });
    t.notMatch(JSON.stringify({ apps, shown }), /PRIVATE KEY/);
    const invalid = (await d.adminCall('GET', '/admin/push/devices?account=push-a&status=invalid')).items;
    t.ok(invalid.every((x: { status: string }) => x.status === 'invalid'));
    const bApps = (await d.adminCall('GET', '/admin/push/devices?account=push-b')).items;
    t.ok(bApps.every((x: { accountId: string }) => x.accountId === b.account.id));
    await t.rejects(d.adminCall('GET', '/admin/push/devices/pdev_nope'), { code: 'DEVICE_NOT_FOUND' });
  });

  t.test('every push endpoint wants push:manage', async (t) => {
    const sendOnly = await d.adminCall('POST', '/admin/keys', { account: 'push-a', scopes: ['push:send'] });
    for (const [method, path] of [['GET', '/v1/push/apps'], ['GET', '/v1/push/devices'], ['GET', '/v1/push/topics'], ['POST', '/v1/push/apps']] as const) {
      const r = await call(d.api, method, path, { token: sendOnly.token, body: method === 'POST' ? { name: 'x' } : undefined });
      t.equal(r.status, 403, `${method} ${path}`);
      t.equal(r.json.code, 'INSUFFICIENT_SCOPE');
    }
  });
});
