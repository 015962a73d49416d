import t from 'tap';
import { accountWithKey, call, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

t.test(`API authentication, scopes and the envelope (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_AUTH_FAILURE_LIMIT: '1000' });
  t.teardown(() => d.stop());
  const { token, key } = await accountWithKey(d, 'acme', ['sms:send', 'account:read']);

  t.test('health with valid credentials: 200, envelope, request id', async (t) => {
    const r = await call(d.api, 'GET', '/v1/health', { token });
    t.equal(r.status, 200);
    t.equal(r.json.success, true);
    t.equal(r.json.code, 'HEALTHY');
    t.match(r.json.requestId, /^req_[0-9a-z]{26}$/);
    t.equal(r.headers.get('x-request-id'), r.json.requestId, 'X-Request-Id header carries the same id');
    t.equal(r.json.data.keyId, key.keyId);
    const head = await call(d.api, 'HEAD', '/v1/health', { token });
    t.equal(head.status, 200, 'HEAD works with credentials');
    const headBad = await call(d.api, 'HEAD', '/v1/health');
    t.equal(headBad.status, 401, 'HEAD without credentials is 401');
  });

  t.test('Bearer form of the same key', async (t) => {
    const viaBase64 = await call(d.api, 'GET', '/v1/health', { headers: { authorization: `Bearer ${token}` } });
    t.equal(viaBase64.status, 200);
    const viaPair = await call(d.api, 'GET', '/v1/health', { headers: { authorization: `Bearer ${key.keyId}:${key.secret}` } });
    t.equal(viaPair.status, 200);
  });

  t.test('distinct codes for each failure cause', async (t) => {
    const missing = await call(d.api, 'GET', '/v1/health');
    t.equal(missing.status, 401);
    t.equal(missing.json.code, 'AUTH_HEADER_MISSING');
    t.equal(missing.json.success, false);
    t.match(missing.json.requestId, /^req_/);

    for (const header of ['Basic', 'Token abc', 'Basic !!!notbase64', `Basic ${Buffer.from('nocolon').toString('base64')}`]) {
      const r = await call(d.api, 'GET', '/v1/health', { headers: { authorization: header } });
      t.equal(r.status, 401, header);
      t.equal(r.json.code, 'AUTH_HEADER_MALFORMED', header);
    }

    const wrongSecret = await call(d.api, 'GET', '/v1/health', { token: Buffer.from(`${key.keyId}:sk_wrong`).toString('base64') });
    t.equal(wrongSecret.status, 401);
    t.equal(wrongSecret.json.code, 'INVALID_CREDENTIALS');
    const unknownKey = await call(d.api, 'GET', '/v1/health', { token: Buffer.from(`ak_live_aaaaaaaaaaaaaaaaaaaa:${key.secret}`).toString('base64') });
    t.equal(unknownKey.json.code, 'INVALID_CREDENTIALS', 'unknown key looks the same as a wrong secret');
  });

  t.test('scope checks name the missing scope', async (t) => {
    const balance = await call(d.api, 'GET', '/v1/account/balance', { token });
    t.equal(balance.status, 200);
    t.equal(balance.json.data.balance, 0);
    const limited = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: ['sms:read'] });
    const denied = await call(d.api, 'GET', '/v1/account/balance', { token: limited.token });
    t.equal(denied.status, 403);
    t.equal(denied.json.code, 'INSUFFICIENT_SCOPE');
    t.equal(denied.json.data.requiredScope, 'account:read');
    t.match(denied.json.message, /account:read/);
  });

  t.test('credit shows in the balance', async (t) => {
    await d.adminCall('POST', '/admin/accounts/acme/credit', { amount: 12.5 });
    await d.adminCall('POST', '/admin/accounts/acme/debit', { amount: 2.25 });
    const r = await call(d.api, 'GET', '/v1/account/balance', { token });
    t.equal(r.json.data.balance, 10.25);
    t.equal(r.json.data.currency, 'USD');
  });

  t.test('suspended account: 403 ACCOUNT_SUSPENDED, then resumed', async (t) => {
    await d.adminCall('POST', '/admin/accounts/acme/suspend', { reason: 'unpaid' });
    const r = await call(d.api, 'GET', '/v1/health', { token });
    t.equal(r.status, 403);
    t.equal(r.json.code, 'ACCOUNT_SUSPENDED');
    const wrong = await call(d.api, 'GET', '/v1/health', { token: Buffer.from(`${key.keyId}:sk_wrong`).toString('base64') });
    t.equal(wrong.json.code, 'INVALID_CREDENTIALS', 'suspension is not revealed to a wrong secret');
    await d.adminCall('POST', '/admin/accounts/acme/resume');
    t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 200);
  });

  t.test('rotation keeps the old secret for the grace period; revocation ends the key', async (t) => {
    const k = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: 'all' });
    const rotated = await d.adminCall('POST', `/admin/keys/${k.keyId}/rotate`, { graceSeconds: 3600 });
    t.not(rotated.secret, k.secret);
    t.ok(rotated.previousSecretValidUntil);
    t.equal((await call(d.api, 'GET', '/v1/health', { token: k.token })).status, 200, 'old secret in grace');
    t.equal((await call(d.api, 'GET', '/v1/health', { token: rotated.token })).status, 200, 'new secret');
    const again = await d.adminCall('POST', `/admin/keys/${k.keyId}/rotate`, { graceSeconds: 0 });
    t.equal((await call(d.api, 'GET', '/v1/health', { token: rotated.token })).status, 401, 'no grace: previous secret refused');
    t.equal((await call(d.api, 'GET', '/v1/health', { token: again.token })).status, 200);
    await d.adminCall('POST', `/admin/keys/${k.keyId}/revoke`);
    const revoked = await call(d.api, 'GET', '/v1/health', { token: again.token });
    t.equal(revoked.status, 401);
    t.equal(revoked.json.code, 'INVALID_CREDENTIALS');
  });

  t.test('expired key is refused', async (t) => {
    const k = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: 'all', expiresAt: new Date(Date.now() + 1500).toISOString() });
    t.equal((await call(d.api, 'GET', '/v1/health', { token: k.token })).status, 200);
    await new Promise((r) => setTimeout(r, 1700));
    t.equal((await call(d.api, 'GET', '/v1/health', { token: k.token })).status, 401);
  });

  t.test('secrets are stored hashed', async (t) => {
    const k = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: 'all' });
    const { rows } = await d.daemon.db.query<{ secret_hash: string }>('SELECT secret_hash FROM api_keys WHERE id = $1', [k.keyId]);
    t.match(rows[0].secret_hash, /^[0-9a-f]{64}$/);
    t.not(rows[0].secret_hash, k.secret);
    const listed = await d.adminCall('GET', '/admin/keys?account=acme');
    t.notOk(JSON.stringify(listed).includes(k.secret), 'listing never shows a secret');
  });
});

t.test(`repeated auth failures and the per-key rate limit answer 429 (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_AUTH_FAILURE_LIMIT: '5', FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '1', FERRY_HTTP_RATE_LIMIT_BURST: '3' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'limited');

  for (let i = 0; i < 8; i++) {
    const r = await call(d.api, 'GET', '/v1/health');
    t.equal(r.json.code, 'AUTH_HEADER_MISSING', 'no header is refused but is not a guess');
  }
  const bad = Buffer.from('ak_live_bbbbbbbbbbbbbbbbbbbb:sk_nope').toString('base64');
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await call(d.api, 'GET', '/v1/health', { token: bad })).status);
  t.same(statuses, [401, 401, 401, 401, 401, 429, 429], 'after 5 failures the client is throttled');
  const blocked = await call(d.api, 'GET', '/v1/health', { token });
  t.equal(blocked.status, 429, 'even a valid key from a throttled address waits');
  t.equal(blocked.json.code, 'TOO_MANY_AUTH_FAILURES');
  t.ok(Number(blocked.headers.get('retry-after')) >= 1, 'Retry-After header');

  await d.daemon.backends.throttle.reset('authfail:127.0.0.1');
  const seen: number[] = [];
  for (let i = 0; i < 5; i++) seen.push((await call(d.api, 'GET', '/v1/health', { token })).status);
  t.same(seen.slice(0, 3), [200, 200, 200], 'burst allowed');
  t.ok(seen.includes(429), 'then limited');
  const limited = await call(d.api, 'GET', '/v1/health', { token });
  t.equal(limited.json.code, 'RATE_LIMIT_EXCEEDED');
  t.ok(Number(limited.headers.get('retry-after')) >= 1);
  t.ok(limited.json.data.retryAfter >= 1);
});

/**
 * Failures recorded through another instance land in the shared window only: this instance's recent reading of the
 * address lets at most `limit` more requests through before it reads the window again, and a reading older than a
 * second is not used at all.
 */
t.test(`failures recorded elsewhere are honoured within the limit and within a second (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_AUTH_FAILURE_LIMIT: '5' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'shared');
  const throttle = d.daemon.backends.throttle;
  const elsewhere = async () => {
    for (let i = 0; i < 5; i++) await throttle.hit('authfail:127.0.0.1', 5, 60_000);
  };

  t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 200, 'read: no failures');
  await elsewhere();
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await call(d.api, 'GET', '/v1/health', { token })).status);
  t.same(statuses, [200, 200, 200, 200, 429, 429], 'the reading served the rest of its five requests, then the window was read');

  await throttle.reset('authfail:127.0.0.1');
  t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 200, 'a throttled address is read every time: a reset lets it in at once');
  await elsewhere();
  await new Promise((r) => setTimeout(r, 1100));
  t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 429, 'a reading a second old is not used');
});
