// FCM HTTP v1: the one error table walked over FCM's own error bodies (fixtures/fcm/*.json), then FcmClient against
// FcmSimulator over real sockets on loopback: OAuth2 with an RS256 assertion, the token shared and refreshed once,
// every scripted outcome classified, the payload measured as FCM measures it.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import t, { type Test } from 'tap';
import { parseServiceAccount, type FcmServiceAccount } from '../../../src/channels/push/credentials.js';
import { FcmClient, fcmPayloadBytes } from '../../../src/channels/push/providers/fcm.js';
import { classifyFcmError, classifyFcmTokenError, PUSH_REJECTED } from '../../../src/channels/push/providers/fcm-errors.js';
import { DEVICE_TOKEN_INVALID, DEVICE_UNREGISTERED, INVALIDATING_CODES, PAYLOAD_LIMIT_BYTES, PUSH_CREDENTIALS_REJECTED, type PushMessage } from '../../../src/channels/push/providers/types.js';
import { FcmSimulator } from '../../../src/sim/push/fcm/fcm-simulator.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/fcm/${name}`, import.meta.url), 'utf8'));

t.test('the FCM error table over FCM\'s error bodies', async (t) => {
  const rows: Array<{ file: string; http: number; retryAfterMs?: number; want: Record<string, unknown> }> = [
    { file: 'unregistered.json', http: 404, want: { kind: 'fail', code: DEVICE_UNREGISTERED, providerCode: 'UNREGISTERED' } },
    { file: 'invalid-token.json', http: 400, want: { kind: 'fail', code: DEVICE_TOKEN_INVALID, providerCode: 'INVALID_ARGUMENT' } },
    { file: 'invalid-token-field.json', http: 400, want: { kind: 'fail', code: DEVICE_TOKEN_INVALID, providerCode: 'INVALID_ARGUMENT' } },
    { file: 'invalid-data-value.json', http: 400, want: { kind: 'fail', code: PUSH_REJECTED, providerCode: 'INVALID_ARGUMENT' } },
    { file: 'payload-too-large.json', http: 400, want: { kind: 'fail', code: PUSH_REJECTED, providerCode: 'INVALID_ARGUMENT' } },
    { file: 'sender-id-mismatch.json', http: 403, want: { kind: 'fail', code: DEVICE_TOKEN_INVALID, providerCode: 'SENDER_ID_MISMATCH' } },
    { file: 'quota-exceeded.json', http: 429, retryAfterMs: 30_000, want: { kind: 'retry', code: 'PROVIDER_THROTTLED', throttled: true, retryAfterMs: 30_000, providerCode: 'QUOTA_EXCEEDED' } },
    { file: 'unavailable.json', http: 503, retryAfterMs: 5_000, want: { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', retryAfterMs: 5_000, providerCode: 'UNAVAILABLE' } },
    { file: 'internal.json', http: 500, want: { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', providerCode: 'INTERNAL' } },
    { file: 'unspecified-503.json', http: 503, want: { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', providerCode: 'UNAVAILABLE' } },
    { file: 'third-party-auth-error.json', http: 401, want: { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'THIRD_PARTY_AUTH_ERROR' } },
    { file: 'unauthenticated.json', http: 401, want: { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'UNAUTHENTICATED' } },
    { file: 'permission-denied.json', http: 403, want: { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'PERMISSION_DENIED' } },
  ];
  for (const r of rows) t.match(classifyFcmError(r.http, fixture(r.file), r.retryAfterMs), r.want, r.file);
  t.notOk('throttled' in classifyFcmError(503, fixture('unavailable.json')), 'UNAVAILABLE is a retry, not a throttle');
  t.notOk(INVALIDATING_CODES.has(classifyFcmError(400, fixture('payload-too-large.json')).code), 'a refused message does not invalidate its device');
  t.match(classifyFcmError(502, null), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', providerCode: 'HTTP 502' }, 'a bare 502 (Google\'s HTML page) retries');
  t.match(classifyFcmTokenError(400, fixture('token-invalid-grant.json')), { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'invalid_grant' }, 'token endpoint: invalid_grant');
  t.match(classifyFcmTokenError(401, fixture('token-invalid-client.json')), { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'invalid_client' }, 'token endpoint: invalid_client');
  t.match(classifyFcmTokenError(401, null), { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'HTTP 401' }, 'token endpoint: a bare 401');
  t.match(classifyFcmTokenError(503, null), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' }, 'token endpoint: a 503 retries');
});

function rsaKey() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

const KEY = rsaKey();
const OTHER_KEY = rsaKey();
const PROJECT = 'fake-project-1';
const EMAIL = `ferry-test@${PROJECT}.iam.gserviceaccount.com`;

/** A service account JSON as Firebase downloads it, with obviously fake ids and the key generated above. */
function serviceAccount(sim: FcmSimulator, o: { projectId?: string; privateKeyPem?: string } = {}): FcmServiceAccount {
  const parsed = parseServiceAccount(
    JSON.stringify({
      type: 'service_account',
      project_id: o.projectId ?? PROJECT,
      private_key_id: '0000000000000000000000000000000000000000',
      private_key: o.privateKeyPem ?? KEY.privateKeyPem,
      client_email: EMAIL,
      client_id: '000000000000000000000',
      token_uri: sim.tokenUrl,
    }),
  );
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.value;
}

const push = (token: string, extra: Partial<PushMessage> = {}): PushMessage => ({ token, platform: 'android', priority: 'high', notification: { title: 'Hi', body: 'A test push' }, ...extra });

async function setup(t: Test, simOptions: ConstructorParameters<typeof FcmSimulator>[0] = {}, clientOptions: { clock?: () => number; account?: (sim: FcmSimulator) => FcmServiceAccount } = {}) {
  const sim = new FcmSimulator(simOptions);
  await sim.start();
  sim.addServiceAccount({ clientEmail: EMAIL, projectId: PROJECT, publicKeyPem: KEY.publicKeyPem });
  const client = new FcmClient({ serviceAccount: (clientOptions.account ?? serviceAccount)(sim), baseUrl: sim.url, ...(clientOptions.clock ? { clock: clientOptions.clock } : {}) });
  t.teardown(async () => {
    await client.close();
    await sim.stop();
  });
  return { sim, client };
}

t.test('a send is answered with the message name and carries FCM v1\'s shape', async (t) => {
  const { sim, client } = await setup(t);
  const android = await client.send(push('device-a', { data: { orderId: '42' }, ttlSeconds: 600, collapseKey: 'orders', priority: 'normal', notification: { title: 'Hi', body: 'b', sound: 'chime', badge: 3, image: 'https://img.example/x.png' } }));
  t.match(android, { kind: 'sent', providerId: new RegExp(`^projects/${PROJECT}/messages/.+`) });
  const ios = await client.send(push('device-i', { platform: 'ios', ttlSeconds: 60, collapseKey: 'c1', notification: { title: 'Hi', badge: 7, sound: 'default' } }));
  t.equal(ios.kind, 'sent');
  t.not(android.kind === 'sent' && ios.kind === 'sent' && android.providerId, ios.kind === 'sent' && ios.providerId, 'each message has its own name');
  const [a, i] = sim.received();
  t.same(a.message, {
    token: 'device-a',
    notification: { title: 'Hi', body: 'b', image: 'https://img.example/x.png' },
    data: { orderId: '42' },
    android: { priority: 'NORMAL', ttl: '600s', collapse_key: 'orders', notification: { sound: 'chime', notification_count: 3 } },
  });
  t.equal(a.result, android.kind === 'sent' ? android.providerId : '', 'the simulator recorded the name it answered');
  t.match(i.message, { token: 'device-i', apns: { headers: { 'apns-priority': '10', 'apns-collapse-id': 'c1', 'apns-expiration': /^\d{10}$/ }, payload: { aps: { badge: 7, sound: 'default' } } } });
  t.notOk('android' in i.message, 'an iOS token gets no Android block');
  t.equal(sim.counters.tokensIssued, 1, 'one access token for both sends');
  t.equal(sim.counters.sent, 2);
});

t.test('an access token past its expiry is refreshed once for 100 concurrent sends', async (t) => {
  let now = Date.now();
  const clock = () => now;
  const { sim, client } = await setup(t, { tokenLifetimeSeconds: 600, clock }, { clock });
  t.equal((await client.send(push('warm-up'))).kind, 'sent');
  t.equal(sim.counters.tokensIssued, 1);
  now += 601_000;
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => client.send(push(`device-${i}`))));
  t.equal(results.filter((r) => r.kind === 'sent').length, 100, 'all 100 sent');
  t.equal(sim.counters.tokensIssued, 2, 'one token request for the 100 sends');
  t.notOk(sim.counters.errors.UNAUTHENTICATED, 'no send went out with the expired token');
});

t.test('a token near its expiry keeps serving while one refresh runs in the background', async (t) => {
  let now = Date.now();
  const clock = () => now;
  const { sim, client } = await setup(t, { tokenLifetimeSeconds: 600, clock }, { clock });
  t.equal((await client.send(push('warm-up'))).kind, 'sent');
  now += 550_000; // past the refresh point (90 % of 600 s), before expiry
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => client.send(push(`device-${i}`))));
  t.equal(results.filter((r) => r.kind === 'sent').length, 100, 'all 100 sent');
  for (let i = 0; i < 500 && sim.counters.tokensIssued < 2; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(sim.counters.tokensIssued, 2, 'one new token for the 100 sends');
  now += 100_000; // the first token has expired: the new one serves
  t.equal((await client.send(push('after'))).kind, 'sent');
  t.equal(sim.counters.tokensIssued, 2, 'and no other');
});

t.test('a token FCM stops honouring: 100 concurrent 401s, one refresh, every send retried once', async (t) => {
  const { sim, client } = await setup(t);
  t.equal((await client.send(push('warm-up'))).kind, 'sent');
  sim.revokeTokens();
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => client.send(push(`device-${i}`))));
  t.equal(results.filter((r) => r.kind === 'sent').length, 100, 'all 100 sent after the refresh');
  t.equal(sim.counters.tokensIssued, 2, 'the 401s of one token made one token request');
  t.ok(sim.counters.errors.UNAUTHENTICATED >= 1 && sim.counters.errors.UNAUTHENTICATED <= 100, 'the revoked token was refused');
  t.equal(sim.counters.sent, 101);
});

t.test('a 401 that persists with a fresh token rejects the credentials (one retry, no more)', async (t) => {
  // Every read of the simulator's clock is two seconds later: each token it issues has expired by its first use.
  let simNow = Date.now();
  const { sim, client } = await setup(t, { tokenLifetimeSeconds: 1, clock: () => (simNow += 2000) });
  const r = await client.send(push('device-a'));
  t.match(r, { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'UNAUTHENTICATED' });
  t.equal(sim.counters.tokensIssued, 2, 'the first token and one fresh one');
  t.equal(sim.counters.errors.UNAUTHENTICATED, 2);
});

t.test('each scripted outcome is classified', async (t) => {
  const { sim, client } = await setup(t, { retryAfterSeconds: 7 });
  t.match(await client.send(push('unregistered-1')), { kind: 'fail', code: DEVICE_UNREGISTERED, providerCode: 'UNREGISTERED' }, 'UNREGISTERED');
  t.match(await client.send(push('invalid-1')), { kind: 'fail', code: DEVICE_TOKEN_INVALID, providerCode: 'INVALID_ARGUMENT' }, 'invalid token');
  t.match(await client.send(push('mismatch-1')), { kind: 'fail', code: DEVICE_TOKEN_INVALID, providerCode: 'SENDER_ID_MISMATCH' }, 'another project\'s token');
  t.match(await client.send(push('quota-1')), { kind: 'retry', code: 'PROVIDER_THROTTLED', throttled: true, retryAfterMs: 7000, providerCode: 'QUOTA_EXCEEDED' }, 'quota with Retry-After');
  t.match(await client.send(push('unavailable-1')), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', retryAfterMs: 7000, providerCode: 'UNAVAILABLE' }, 'unavailable with Retry-After');
  t.match(await client.send(push('internal-1')), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', providerCode: 'INTERNAL' }, 'internal');
  t.match(await client.send(push('thirdparty-1')), { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'THIRD_PARTY_AUTH_ERROR' }, 'the app\'s APNs key refused');
  t.equal(sim.counters.tokensIssued, 1, 'THIRD_PARTY_AUTH_ERROR is not a reason to fetch a new access token');

  sim.script(/^flaky-/, 'UNAVAILABLE', 2);
  const flaky = [await client.send(push('flaky-1')), await client.send(push('flaky-2')), await client.send(push('flaky-1'))];
  t.same(flaky.map((r) => r.kind), ['retry', 'retry', 'sent'], 'a script with a count fails the first N, then succeeds');
  sim.script(/^device-9$/, 'UNREGISTERED');
  t.match(await client.send(push('device-9')), { kind: 'fail', code: DEVICE_UNREGISTERED }, 'a script overrides the default for any token');
  t.equal((await client.send(push('device-8'))).kind, 'sent', 'other tokens are untouched');
  t.match(sim.counters.errors, { UNREGISTERED: 2, INVALID_ARGUMENT: 1, QUOTA_EXCEEDED: 1, UNAVAILABLE: 3 });
});

t.test('credentials FCM refuses: PUSH_CREDENTIALS_REJECTED', async (t) => {
  await t.test('an assertion signed by another key', async (t) => {
    const { sim, client } = await setup(t, {}, { account: (sim) => serviceAccount(sim, { privateKeyPem: OTHER_KEY.privateKeyPem }) });
    t.match(await client.send(push('device-a')), { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'invalid_grant', message: /Invalid JWT Signature/ });
    t.equal(sim.counters.tokensIssued, 0);
    t.equal(sim.counters.tokensRefused, 1);
    t.equal(sim.counters.sent + Object.keys(sim.counters.errors).length, 0, 'no send reached FCM');
  });
  await t.test('a service account that may not send for the project', async (t) => {
    const { client } = await setup(t, {}, { account: (sim) => serviceAccount(sim, { projectId: 'fake-project-2' }) });
    t.match(await client.send(push('device-a')), { kind: 'fail', code: PUSH_CREDENTIALS_REJECTED, providerCode: 'PERMISSION_DENIED' });
  });
});

t.test('a token endpoint that does not answer is a retry', async (t) => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const { sim } = await setup(t);
  const client = new FcmClient({ serviceAccount: serviceAccount(sim), baseUrl: sim.url, tokenUrl: `http://127.0.0.1:${port}/token` });
  t.teardown(() => client.close());
  t.match(await client.send(push('device-a')), { kind: 'retry', code: 'PROVIDER_ERROR', message: /ECONNREFUSED/ });
});

t.test('the payload is measured as FCM measures it: 4,096 bytes pass, one more is refused', async (t) => {
  const { sim, client } = await setup(t);
  const notification = { title: 'Ü', body: 'b' }; // title: 5 + 2 bytes, body: 4 + 1
  const at = (size: number): PushMessage => push('device-a', { notification, data: { k: 'x'.repeat(size - 12 - 1) } });
  t.equal(fcmPayloadBytes(at(PAYLOAD_LIMIT_BYTES)), PAYLOAD_LIMIT_BYTES);
  t.equal(fcmPayloadBytes(at(PAYLOAD_LIMIT_BYTES + 1)), PAYLOAD_LIMIT_BYTES + 1);
  t.equal(fcmPayloadBytes(push('device-a', { notification: { title: 'Hi', sound: 'x'.repeat(5000), badge: 3 } })), 7, 'sound and badge are options, not payload');
  t.equal((await client.send(at(PAYLOAD_LIMIT_BYTES))).kind, 'sent', 'at the limit: sent');
  t.match(await client.send(at(PAYLOAD_LIMIT_BYTES + 1)), { kind: 'fail', code: PUSH_REJECTED, providerCode: 'INVALID_ARGUMENT' }, 'one byte over: refused by FCM');
  t.equal(sim.received().at(-1)?.result, 'INVALID_ARGUMENT');
});

t.test('the simulator checks what FCM checks', async (t) => {
  const { sim, client } = await setup(t);
  const bad = await client.send(push('device-a', { data: { n: 12 as unknown as string } }));
  t.match(bad, { kind: 'fail', code: PUSH_REJECTED, message: /message\.data\[0\]\.value/ }, 'a data value that is not a string');
  const reserved = await client.send(push('device-a', { data: { from: 'me' } }));
  t.match(reserved, { kind: 'fail', code: PUSH_REJECTED }, 'a reserved data key');
  const res = await fetch(`${sim.url}/v1/projects/${PROJECT}/messages:send`, { method: 'POST', headers: { authorization: 'Bearer ya29.not-issued' }, body: '{}' });
  t.equal(res.status, 401);
  t.match(await res.json(), { error: { status: 'UNAUTHENTICATED' } });
  const odd = await fetch(`${sim.url}/v1/projects/%E0/messages:send`, { method: 'POST', body: '{}' });
  t.equal(odd.status, 401, 'a project name that does not decode is answered, not a crash');
  await odd.arrayBuffer();
  const token = await fetch(sim.tokenUrl, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials' }) });
  t.equal(token.status, 400);
  t.match(await token.json(), { error: 'unsupported_grant_type' });
});
