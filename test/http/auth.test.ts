import t from 'tap';
import { accountWithKey, call, LogLines, startDaemon } from '../helpers/daemon.js';
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

t.test(`failed attempts are throttled per address; valid credentials are always served (${backendLabel})`, async (t) => {
  const logs = new LogLines();
  const d = await startDaemon({ FERRY_AUTH_FAILURE_LIMIT: '5', FERRY_LOG_LEVEL: 'info' }, undefined, logs);
  t.teardown(() => d.stop());
  const { token, key } = await accountWithKey(d, 'throttled');
  const metric = async (re: RegExp) => Number(re.exec((await call(d.admin, 'GET', '/metrics')).text)?.[1] ?? 0);

  for (let i = 0; i < 8; i++) {
    const r = await call(d.api, 'GET', '/v1/health');
    t.equal(r.json.code, 'AUTH_HEADER_MISSING', 'no header is refused but is not a guess');
  }
  const bad = Buffer.from('ak_live_bbbbbbbbbbbbbbbbbbbb:sk_nope').toString('base64');
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await call(d.api, 'GET', '/v1/health', { token: bad })).status);
  t.same(statuses, [401, 401, 401, 401, 401, 429, 429], 'after 5 failures the failed attempts of the address get 429');
  const throttled = await call(d.api, 'GET', '/v1/health', { token: bad });
  t.equal(throttled.json.code, 'TOO_MANY_AUTH_FAILURES');
  t.equal(throttled.json.success, false);
  t.ok(Number(throttled.headers.get('retry-after')) >= 1, 'Retry-After header');
  t.ok(throttled.json.data.retryAfter >= 1, 'data.retryAfter');
  const malformed = await call(d.api, 'GET', '/v1/health', { headers: { authorization: 'Basic !!!' } });
  t.equal(malformed.json.code, 'TOO_MANY_AUTH_FAILURES', 'a malformed header is a failed attempt too');

  const served = await call(d.api, 'GET', '/v1/health', { token });
  t.equal(served.status, 200, 'a valid key from the throttled address is served');
  t.equal(served.json.data.keyId, key.keyId);
  const wrongAgain = await call(d.api, 'GET', '/v1/health', { token: Buffer.from(`${key.keyId}:sk_wrong`).toString('base64') });
  t.equal(wrongAgain.status, 429, 'a valid request does not reset the window: failed attempts stay throttled');
  t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 200, 'and valid ones stay served');

  t.equal(await metric(/ferry_auth_failures_total\{reason="INVALID_CREDENTIALS"\} (\d+)/), 9, 'every failed attempt is counted, throttled or not');
  t.equal(await metric(/ferry_auth_failures_total\{reason="AUTH_HEADER_MALFORMED"\} (\d+)/), 1);
  t.equal(await metric(/ferry_rate_limited_total\{limit="auth_failures"\} (\d+)/), 5, 'and the throttled ones are reported as such');
  const reached = logs.find(/failed authentications from/);
  t.equal(reached.length, 1, 'the address reaching the limit is logged once');
  t.equal(reached[0].level, 'warn');
  t.match(reached[0], { address: '127.0.0.1', failures: 5 });
  const refusals = logs.find('request').filter((l) => l.code === 'TOO_MANY_AUTH_FAILURES');
  t.equal(refusals.length, 5, 'each throttled attempt has its access log line');
  t.ok(refusals.every((l) => l.ip === '127.0.0.1' && l.status === 429), 'with the address and status');
  t.notMatch(JSON.stringify(logs.lines), /sk_nope|sk_wrong|Basic /, 'no secret or Authorization header in any log line');

  await d.daemon.backends.throttle.reset('authfail:127.0.0.1');
  const after = await call(d.api, 'GET', '/v1/health', { token: bad });
  t.equal(after.status, 401, 'once the window frees up, failures are 401 again');
});

t.test(`the per-key rate limit answers 429 RATE_LIMIT_EXCEEDED (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '1', FERRY_HTTP_RATE_LIMIT_BURST: '3' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'limited');
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
 * The failure window is shared by every instance (Redis, or the one embedded store): failures recorded elsewhere
 * throttle this instance's next failed attempt at once, and never a valid request.
 */
t.test(`failures recorded elsewhere throttle failed attempts here, never valid ones (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_AUTH_FAILURE_LIMIT: '5' });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'shared');
  const throttle = d.daemon.backends.throttle;
  for (let i = 0; i < 5; i++) await throttle.hit('authfail:127.0.0.1', 5, 60_000);

  const bad = Buffer.from('ak_live_cccccccccccccccccccc:sk_nope').toString('base64');
  t.equal((await call(d.api, 'GET', '/v1/health', { token: bad })).status, 429, 'the first failed attempt here is throttled');
  t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 200, 'a valid one is served');
  await throttle.reset('authfail:127.0.0.1');
  t.equal((await call(d.api, 'GET', '/v1/health', { token: bad })).status, 401, 'a reset is honoured at once');
});

t.test(`a request that looks proxied while trustProxy is off is warned about, once per address (${backendLabel})`, async (t) => {
  const logs = new LogLines();
  const d = await startDaemon({ FERRY_LOG_LEVEL: 'warn' }, undefined, logs);
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'proxied');
  const warnings = () => logs.find(/looks like a reverse proxy/);

  await call(d.api, 'GET', '/v1/health', { token });
  await call(d.api, 'GET', '/v1/openapi.json');
  t.equal(warnings().length, 0, 'a loopback client without forwarding headers is not a proxy');

  for (let i = 0; i < 3; i++) await call(d.api, 'GET', '/v1/health', { token, headers: { 'x-forwarded-for': `203.0.113.${i}` } });
  await call(d.api, 'GET', '/v1/health', { token, headers: { forwarded: 'for=203.0.113.9' } });
  const w = warnings();
  t.equal(w.length, 1, 'one warning per address, however many requests');
  t.equal(w[0].level, 'warn');
  t.match(w[0], { address: /127\.0\.0\.1$/, reason: /X-Forwarded-For/, trustProxy: false });
  t.match(w[0].msg, /auth-failure throttling/);
  t.match(w[0].msg, /list them in http\.trustProxy \(e\.g\. \[(::ffff:)?127\.0\.0\.1\], FERRY_HTTP_TRUST_PROXY=(::ffff:)?127\.0\.0\.1/, 'it says how to fix it');

  const trusting = new LogLines();
  const d2 = await startDaemon({ FERRY_LOG_LEVEL: 'warn', FERRY_HTTP_TRUST_PROXY: '127.0.0.1' }, undefined, trusting);
  t.teardown(() => d2.stop());
  const other = await accountWithKey(d2, 'behind-proxy');
  const r = await call(d2.api, 'GET', '/v1/health', { token: other.token, headers: { 'x-forwarded-for': '203.0.113.7' } });
  t.equal(r.status, 200);
  t.equal(trusting.find(/looks like a reverse proxy/).length, 0, 'no warning when trustProxy is on');
});
