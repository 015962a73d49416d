// ApnsClient against ApnsSimulator over real HTTP/2 (TLS) on loopback, and the one APNs error table walked over
// Apple-shaped error bodies (fixtures/apns/<status>-<reason>.json).
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { ApnsAuthKey } from '../../../src/channels/push/credentials.js';
import { APNS_ERRORS } from '../../../src/channels/push/providers/apns-errors.js';
import { ApnsClient, ApnsProviderTokens, apnsPayloadBytes, type ApnsClientOptions } from '../../../src/channels/push/providers/apns.js';
import { INVALIDATING_CODES, PAYLOAD_LIMIT_BYTES, type PushMessage } from '../../../src/channels/push/providers/types.js';
import type { SendResult } from '../../../src/outbound/index.js';
import { ApnsSimulator, PRODUCTION_TOKEN_PREFIX, SANDBOX_TOKEN_PREFIX, type ApnsSimulatorOptions } from '../../../src/sim/push/apns/apns-simulator.js';
import { SIMULATOR_CERT } from '../../../src/sim/push/apns/simulator-tls.js';
import { waitFor } from '../../helpers/wait.js';

const FIXTURES = join(fileURLToPath(new URL('.', import.meta.url)), 'fixtures', 'apns');
const BUNDLE_ID = 'com.example.ferrytest';
const MINUTE = 60_000;

function authKey(keyId = 'ABCDE12345', teamId = 'TEAM123456'): { key: ApnsAuthKey; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    key: { keyId, teamId, bundleId: BUNDLE_ID, environment: 'production', privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() },
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
  };
}

/** A 64-hex device token: `prefix` then `n`. */
function deviceToken(n: number, prefix = 'a1b2c3d4'): string {
  return prefix + n.toString(16).padStart(64 - prefix.length, '0');
}

function alert(token: string, extra: Partial<PushMessage> = {}): PushMessage {
  return { token, platform: 'ios', priority: 'high', notification: { title: 'Hello', body: 'A parcel is on its way' }, ...extra };
}

interface Rig {
  sim: ApnsSimulator;
  client: ApnsClient;
  key: ApnsAuthKey;
  clientFor(key: ApnsAuthKey, options?: Partial<ApnsClientOptions>): ApnsClient;
}

async function rig(t: { teardown(fn: () => unknown): void }, simOptions: ApnsSimulatorOptions = {}, clientOptions: Partial<ApnsClientOptions> = {}): Promise<Rig> {
  const sim = new ApnsSimulator(simOptions);
  await sim.start();
  const { key, publicKeyPem } = authKey();
  sim.addKey({ keyId: key.keyId, teamId: key.teamId, bundleId: BUNDLE_ID, publicKeyPem });
  const clients: ApnsClient[] = [];
  const clientFor = (k: ApnsAuthKey, options: Partial<ApnsClientOptions> = {}) => {
    const c = new ApnsClient({ key: k, environment: 'production', baseUrl: sim.url, ca: SIMULATOR_CERT, ...(simOptions.clock ? { clock: simOptions.clock } : {}), ...options });
    clients.push(c);
    return c;
  };
  const client = clientFor(key, clientOptions);
  t.teardown(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await sim.stop();
  });
  return { sim, client, key, clientFor };
}

function sentAll(results: SendResult[]): boolean {
  return results.every((r) => r.kind === 'sent');
}

t.test('a send succeeds with the apns-id and the headers and body APNs expects', async (t) => {
  let now = Date.UTC(2026, 10, 29, 12, 0, 0);
  const { sim, client } = await rig(t, { clock: () => now });
  const message = alert(deviceToken(1), {
    notification: { title: 'Hello', body: 'A parcel is on its way', badge: 3, sound: 'default', image: 'https://img.example.com/p.png' },
    data: { orderId: '42', aps: 'ignored' },
    ttlSeconds: 3600,
    collapseKey: 'order-42',
  });
  const r = await client.send(message);
  const [got] = sim.received();
  t.match(r, { kind: 'sent' });
  t.equal(r.kind === 'sent' && r.providerId, got.apnsId, 'the providerId is the apns-id the simulator answered');
  t.match(got, { token: message.token, topic: BUNDLE_ID, pushType: 'alert', priority: '10', collapseId: 'order-42', expiration: String(now / 1000 + 3600), status: 200 });
  t.same(JSON.parse(got.payload), {
    aps: { alert: { title: 'Hello', body: 'A parcel is on its way' }, badge: 3, sound: 'default', 'mutable-content': 1 },
    orderId: '42',
    image: 'https://img.example.com/p.png',
  });
  t.equal(apnsPayloadBytes(message), Buffer.byteLength(got.payload), 'apnsPayloadBytes measures the body APNs received');

  now += 1000;
  const background = await client.send({ token: deviceToken(2), platform: 'ios', priority: 'high', data: { sync: 'inbox' }, ttlSeconds: 0 });
  t.match(background, { kind: 'sent' });
  const bg = sim.received()[1];
  t.match(bg, { pushType: 'background', priority: '5', expiration: '0' }, 'a data-only push is background at priority 5, now or never');
  t.same(JSON.parse(bg.payload), { aps: { 'content-available': 1 }, sync: 'inbox' });

  const normal = await client.send(alert(deviceToken(3), { priority: 'normal' }));
  t.match(normal, { kind: 'sent' });
  t.match(sim.received()[2], { priority: '5', expiration: undefined }, 'normal priority is 5; no ttl, no apns-expiration');
  t.equal(sim.stats.sent, 3);
});

t.test('the provider token is reused, renewed between 20 and 50 minutes, and not more often', async (t) => {
  let now = Date.UTC(2026, 10, 29, 8, 0, 0);
  const { sim, client, key, clientFor } = await rig(t, { clock: () => now });
  t.match(await client.send(alert(deviceToken(1))), { kind: 'sent' });
  t.equal(sim.stats.providerTokens, 1);
  now += 19 * MINUTE;
  t.match(await client.send(alert(deviceToken(2))), { kind: 'sent' });
  t.equal(sim.stats.providerTokens, 1, 'at 19 minutes the same token');

  // Another client of the same key (another app, or the other environment) shares its token: nothing new is signed.
  const sibling = clientFor(key);
  t.match(await sibling.send(alert(deviceToken(5))), { kind: 'sent' });
  t.equal(sim.stats.providerTokens, 1, 'a second client of the key uses the same token');
  // The simulator enforces Apple's 20-minute floor: a signer that does not share the token (another process) is refused a new one now.
  const eager = clientFor(key, { tokens: new ApnsProviderTokens() });
  t.match(await eager.send(alert(deviceToken(3))), { kind: 'retry', code: 'PROVIDER_THROTTLED', providerCode: 'TooManyProviderTokenUpdates' });
  await eager.close();

  now += 32 * MINUTE; // 51 minutes after the first token
  t.match(await client.send(alert(deviceToken(4))), { kind: 'sent' });
  t.equal(sim.stats.providerTokens, 2, 'past 50 minutes a new token');
  now += 10 * MINUTE;
  const later = await Promise.all(Array.from({ length: 20 }, (_, i) => client.send(alert(deviceToken(100 + i)))));
  t.ok(sentAll(later));
  t.equal(sim.stats.providerTokens, 2, 'ten minutes into the new token, still that token');
  t.equal(sim.stats.byReason.TooManyProviderTokenUpdates, 1, 'only the eager signer was refused');
});

t.test('ExpiredProviderToken: a new token and one more try', async (t) => {
  let now = Date.UTC(2026, 10, 29, 8, 0, 0);
  // Tokens expire at 30 minutes here, before the client's own renewal at 40.
  const { sim, client } = await rig(t, { clock: () => now, tokenMaxAgeMs: 30 * MINUTE });
  t.match(await client.send(alert(deviceToken(1))), { kind: 'sent' });
  now += 31 * MINUTE;
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => client.send(alert(deviceToken(10 + i)))));
  t.ok(sentAll(results), 'every send sent after the renewal');
  t.equal(sim.stats.providerTokens, 2, 'one renewal for all the sends that met the expired token');
  t.ok(sim.stats.byReason.ExpiredProviderToken >= 1);
});

t.test('GOAWAY mid-batch: the sends the old session did not process go on a new one, nothing lost or doubled', async (t) => {
  const { sim, client } = await rig(t);
  sim.closeAfterStreams = 100;
  const results = await Promise.all(Array.from({ length: 500 }, (_, i) => client.send(alert(deviceToken(i)))));
  t.ok(sentAll(results), 'all 500 sent');
  t.equal(sim.stats.sent, 500, 'each notification reached APNs once');
  t.ok(sim.stats.sessionsOpened >= 5, `new sessions after each GOAWAY (${sim.stats.sessionsOpened})`);
  t.equal(new Set(results.map((r) => (r.kind === 'sent' ? r.providerId : ''))).size, 500, 'each its own apns-id');

  sim.closeAfterStreams = null;
  t.match(await client.send(alert(deviceToken(1000))), { kind: 'sent' });
  const before = sim.stats.sessionsOpened;
  sim.goaway();
  const after = await Promise.all(Array.from({ length: 50 }, (_, i) => client.send(alert(deviceToken(2000 + i)))));
  t.ok(sentAll(after), 'sends after a GOAWAY go on');
  t.equal(sim.stats.sessionsOpened, before + 1, 'on one new session');
});

t.test('a refused stream is sent again on a new session', async (t) => {
  const { sim, client } = await rig(t);
  t.match(await client.send(alert(deviceToken(1))), { kind: 'sent' });
  sim.script(/^f00d/, { refuse: true }, 1);
  t.match(await client.send(alert(deviceToken(1, 'f00d0000'))), { kind: 'sent' });
  t.equal(sim.stats.refusedStreams, 1);
  t.equal(sim.stats.sent, 2, 'sent once');
  t.equal(sim.stats.sessionsOpened, 2, 'on a new session');
});

t.test('a dead session is replaced', async (t) => {
  const { sim, client } = await rig(t);
  t.match(await client.send(alert(deviceToken(1))), { kind: 'sent' });
  sim.dropSessions();
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => client.send(alert(deviceToken(10 + i)))));
  t.ok(
    results.every((r) => r.kind === 'sent' || (r.kind === 'retry' && r.code === 'PROVIDER_ERROR')),
    'each send is sent or answers a retry (a stream the server may have processed is not sent twice)',
  );
  t.match(await client.send(alert(deviceToken(99))), { kind: 'sent' }, 'the next send goes on a new session');
  t.equal(sim.stats.sessionsOpened, 2);
});

t.test('an idle session is kept alive with PINGs', async (t) => {
  const { sim, client } = await rig(t, {}, { pingIntervalMs: 20 });
  t.match(await client.send(alert(deviceToken(1))), { kind: 'sent' });
  await waitFor(() => sim.stats.pings >= 2, 5000, 'two PINGs');
  t.match(await client.send(alert(deviceToken(2))), { kind: 'sent' });
  t.equal(sim.stats.sessionsOpened, 1, 'on the same session');
});

t.test('410 and BadDeviceToken invalidate the device; other answers as the table says', async (t) => {
  const { sim, client, clientFor } = await rig(t);
  const dead = await client.send(alert(deviceToken(1, 'dead0000')));
  t.match(dead, { kind: 'fail', code: 'DEVICE_UNREGISTERED', providerCode: 'Unregistered' });
  const bad = await client.send(alert(deviceToken(1, 'bad00000')));
  t.match(bad, { kind: 'fail', code: 'DEVICE_TOKEN_INVALID', providerCode: 'BadDeviceToken' });
  const sandboxToken = await client.send(alert(deviceToken(1, SANDBOX_TOKEN_PREFIX)));
  t.match(sandboxToken, { kind: 'fail', code: 'DEVICE_TOKEN_INVALID', providerCode: 'BadDeviceToken' }, 'a sandbox token sent to production');
  const notHex = await client.send(alert('not-a-device-token'));
  t.match(notHex, { kind: 'fail', code: 'DEVICE_TOKEN_INVALID', providerCode: 'BadDeviceToken' });
  const otherApp = await client.send(alert(deviceToken(1, '70b1c000')));
  t.match(otherApp, { kind: 'fail', code: 'DEVICE_TOKEN_INVALID', providerCode: 'DeviceTokenNotForTopic' });
  for (const r of [dead, bad, sandboxToken, notHex, otherApp]) t.ok(r.kind === 'fail' && INVALIDATING_CODES.has(r.code), `${r.kind === 'fail' ? r.providerCode : r.kind} invalidates`);
  t.same(
    sim.received().map((r) => [r.status, r.reason]),
    [[410, 'Unregistered'], [400, 'BadDeviceToken'], [400, 'BadDeviceToken'], [400, 'BadDeviceToken'], [400, 'DeviceTokenNotForTopic']],
  );

  t.match(await client.send(alert(deviceToken(1, PRODUCTION_TOKEN_PREFIX))), { kind: 'sent' }, 'a production token in production');
  const throttled = await client.send(alert(deviceToken(1, 'ba5e0000')));
  t.match(throttled, { kind: 'retry', code: 'PROVIDER_THROTTLED', providerCode: 'TooManyRequests', providerHealthy: true }, 'per device: only this message waits');
  t.match(await client.send(alert(deviceToken(1, '5e000000'))), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', providerCode: 'ServiceUnavailable' });
  t.match(await client.send(alert(deviceToken(1, 'e5000000'))), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', providerCode: 'InternalServerError' });

  sim.script(/^cafe/, { status: 503, reason: 'Shutdown' }, 1);
  t.match(await client.send(alert(deviceToken(1, 'cafe0000'))), { kind: 'retry', providerCode: 'Shutdown' }, 'scripted once');
  t.match(await client.send(alert(deviceToken(1, 'cafe0000'))), { kind: 'sent' }, 'then sent');

  const stranger = clientFor(authKey('ZZZZZ99999').key);
  t.match(await stranger.send(alert(deviceToken(1))), { kind: 'fail', code: 'PUSH_CREDENTIALS_REJECTED', providerCode: 'InvalidProviderToken' }, 'an unknown key');
  const otherBundle = clientFor({ ...authKey().key, keyId: 'ABCDE12345' });
  t.match(await otherBundle.send(alert(deviceToken(1))), { kind: 'fail', code: 'PUSH_CREDENTIALS_REJECTED', providerCode: 'InvalidProviderToken' }, 'a known key id signed by another key');
  t.match(await client.send(alert('ab\ud800cd')), { kind: 'fail', code: 'PUSH_REJECTED' }, 'a token that cannot be put in a path fails, never throws');
  const long = await client.send(alert(deviceToken(5), { collapseKey: 'x'.repeat(65) }));
  t.match(long, { kind: 'fail', code: 'PUSH_REJECTED', providerCode: 'BadCollapseId' }, 'a collapse key over 64 bytes is refused before sending');
});

t.test('a topic the key may not push to', async (t) => {
  const { sim } = await rig(t);
  const { key, publicKeyPem } = authKey('KEY2222222');
  sim.addKey({ keyId: key.keyId, teamId: key.teamId, bundleId: 'com.example.other', publicKeyPem });
  const client = new ApnsClient({ key, environment: 'production', baseUrl: sim.url, ca: SIMULATOR_CERT });
  t.teardown(() => client.close());
  t.match(await client.send(alert(deviceToken(1))), { kind: 'fail', code: 'PUSH_REJECTED', providerCode: 'TopicDisallowed' });
});

t.test('413 for a payload over 4,096 bytes; exactly 4,096 is sent', async (t) => {
  const { sim, client } = await rig(t);
  const base = alert(deviceToken(1), { data: { blob: '' } });
  const fill = PAYLOAD_LIMIT_BYTES - apnsPayloadBytes(base);
  const exact = alert(deviceToken(1), { data: { blob: 'x'.repeat(fill) } });
  t.equal(apnsPayloadBytes(exact), PAYLOAD_LIMIT_BYTES);
  t.match(await client.send(exact), { kind: 'sent' });
  const over = alert(deviceToken(2), { data: { blob: 'é'.repeat(fill) } });
  t.ok(apnsPayloadBytes(over) > PAYLOAD_LIMIT_BYTES, 'bytes, not characters');
  t.match(await client.send(over), { kind: 'fail', code: 'PAYLOAD_TOO_LARGE', providerCode: 'PayloadTooLarge' });
  t.equal(sim.stats.byReason.PayloadTooLarge, 1);
});

t.test("many concurrent sends share one session within the server's stream limit", async (t) => {
  const { sim, client } = await rig(t, { maxConcurrentStreams: 50 });
  const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => client.send(alert(deviceToken(i)))));
  t.ok(sentAll(results), 'all 1,000 sent');
  t.equal(sim.stats.sessionsOpened, 1, 'one session');
  t.ok(sim.stats.peakStreams <= 50, `never more streams than the server allows (peak ${sim.stats.peakStreams})`);
  t.ok(sim.stats.peakStreams > 1, 'multiplexed');
});

t.test('the wait for a stream is bounded', async (t) => {
  const { sim, client } = await rig(t, { maxConcurrentStreams: 5 }, { maxQueued: 20 });
  t.match(await client.send(alert(deviceToken(1000))), { kind: 'sent' }, 'connected, with the server limit known');
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => client.send(alert(deviceToken(i)))));
  const sent = results.filter((r) => r.kind === 'sent').length;
  const busy = results.filter((r) => r.kind === 'retry' && r.code === 'PROVIDER_BUSY' && r.providerHealthy).length;
  t.equal(sent, 25, '5 on streams at once and 20 waiting are sent');
  t.equal(busy, 175, 'the others are told to come back');
  t.equal(sim.stats.sent, 26);
});

t.test('no APNs: sends answer retry, never throw', async (t) => {
  const sim = new ApnsSimulator();
  await sim.start();
  const url = sim.url;
  await sim.stop();
  const client = new ApnsClient({ key: authKey().key, environment: 'production', baseUrl: url, ca: SIMULATOR_CERT });
  t.teardown(() => client.close());
  const results = await Promise.all(Array.from({ length: 5 }, (_, i) => client.send(alert(deviceToken(i)))));
  t.ok(results.every((r) => r.kind === 'retry' && r.code === 'PROVIDER_ERROR'), 'retry PROVIDER_ERROR');
  const aborted = new AbortController();
  aborted.abort();
  t.match(await client.send(alert(deviceToken(9)), aborted.signal), { kind: 'retry', code: 'PROVIDER_TIMEOUT' });
});

t.test('the APNs error table over Apple-shaped error bodies', async (t) => {
  const expected: Record<string, Record<string, unknown>> = {
    '400-BadCollapseId': { kind: 'fail', code: 'PUSH_REJECTED' },
    '400-BadDeviceToken': { kind: 'fail', code: 'DEVICE_TOKEN_INVALID' },
    '400-BadExpirationDate': { kind: 'fail', code: 'PUSH_REJECTED' },
    '400-BadPriority': { kind: 'fail', code: 'PUSH_REJECTED' },
    '400-BadTopic': { kind: 'fail', code: 'PUSH_REJECTED' },
    '400-DeviceTokenNotForTopic': { kind: 'fail', code: 'DEVICE_TOKEN_INVALID' },
    '400-IdleTimeout': { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' },
    '400-MissingTopic': { kind: 'fail', code: 'PUSH_REJECTED' },
    '400-PayloadEmpty': { kind: 'fail', code: 'PUSH_REJECTED' },
    '400-TopicDisallowed': { kind: 'fail', code: 'PUSH_REJECTED' },
    '403-BadCertificate': { kind: 'fail', code: 'PUSH_CREDENTIALS_REJECTED' },
    '403-ExpiredProviderToken': { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' },
    '403-InvalidProviderToken': { kind: 'fail', code: 'PUSH_CREDENTIALS_REJECTED' },
    '403-MissingProviderToken': { kind: 'fail', code: 'PUSH_CREDENTIALS_REJECTED' },
    '405-MethodNotAllowed': { kind: 'fail', code: 'PUSH_REJECTED' },
    '410-ExpiredToken': { kind: 'fail', code: 'DEVICE_UNREGISTERED' },
    '410-Unregistered': { kind: 'fail', code: 'DEVICE_UNREGISTERED' },
    '413-PayloadTooLarge': { kind: 'fail', code: 'PAYLOAD_TOO_LARGE' },
    '429-TooManyProviderTokenUpdates': { kind: 'retry', code: 'PROVIDER_THROTTLED' },
    '429-TooManyRequests': { kind: 'retry', code: 'PROVIDER_THROTTLED', providerHealthy: true },
    '500-InternalServerError': { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' },
    '503-ServiceUnavailable': { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' },
    '503-Shutdown': { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' },
  };
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));
  t.same(files.map((f) => f.slice(0, -5)).sort(), Object.keys(expected).sort(), 'every fixture has a row and every row a fixture');
  for (const file of files) {
    const name = file.slice(0, -5);
    const body = JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as { reason: string };
    const httpStatus = Number(name.split('-')[0]);
    t.equal(body.reason, name.slice(name.indexOf('-') + 1), `${file} names its reason`);
    t.ok(APNS_ERRORS.rule(body.reason), `${body.reason} is in the table`);
    t.match(APNS_ERRORS.classify({ providerCode: body.reason, httpStatus }), { ...expected[name], providerCode: body.reason }, file);
  }
  t.match(APNS_ERRORS.classify({ providerCode: 'SomethingNew', httpStatus: 400 }), { kind: 'fail', code: 'PROVIDER_REJECTED', providerCode: 'SomethingNew' }, 'an unknown 4xx reason fails, kept');
  t.match(APNS_ERRORS.classify({ providerCode: undefined, httpStatus: 502 }), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE' }, 'a 5xx without a body retries');
});
