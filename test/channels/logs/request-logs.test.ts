import pino from 'pino';
import t from 'tap';
import { RangePartitions } from '../../../src/store/sql/range-partitions.js';
import type { LogsService } from '../../../src/channels/logs/logs-service.js';
import { call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

async function customer(d: TestDaemon, name: string, scopes: string | string[] = 'all') {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  await d.adminCall('POST', `/admin/accounts/${name}/credit`, { amount: 100 });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return { accountId: account.id as string, keyId: key.keyId as string, token: key.token as string };
}

t.test(`request logs (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => d.stop());
  const logs = d.daemon.modules.service<LogsService>('logs');
  const acme = await customer(d, 'acme');
  const other = await customer(d, 'other');
  const noLogs = await customer(d, 'nologs', ['sms:send']);
  const api = (method: string, path: string, opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {}) =>
    call(d.api, method, path, { token: acme.token, ...opts });

  /** Waits until the account's logs hold a request with this id (they are written in batches). */
  async function logged(requestId: string, token = acme.token) {
    const until = Date.now() + 10_000;
    for (;;) {
      const r = await call(d.api, 'GET', `/v1/logs?requestId=${requestId}`, { token });
      if (r.json?.data?.items?.length) return r.json.data.items[0];
      if (Date.now() > until) throw new Error(`${requestId} not in the logs: ${r.text}`);
      await new Promise((res) => setTimeout(res, 20));
    }
  }

  const sent = await api('POST', '/v1/sms/send', { body: { to: '0241234567', from: 'Ferry', message: 'the private text 4711' }, headers: { 'idempotency-key': 'idem-1', 'user-agent': 'logs-test/1' } });
  t.equal(sent.status, 200, sent.text);
  const badPin = await api('POST', '/v1/otp/verify', { body: { id: 'otp_nope', pin: '918273' } });
  t.equal(badPin.status, 404);
  const hook = await api('POST', '/v1/webhooks', { body: { url: 'https://example.com/hook', events: ['*'] } });
  const status = await api('GET', `/v1/sms/status/${sent.json.data.messageId}`);
  t.equal(status.status, 200);

  t.test('every /v1 request is recorded with its fields', async (t) => {
    const row = await logged(sent.json.requestId);
    t.match(row, {
      requestId: sent.json.requestId,
      method: 'POST',
      route: '/v1/sms/send',
      path: '/v1/sms/send',
      product: 'sms',
      status: 200,
      keyId: acme.keyId,
      clientIp: '127.0.0.1',
      userAgent: 'logs-test/1',
      idempotencyKey: 'idem-1',
      errorCode: null,
    });
    t.ok(row.latencyMs >= 0);
    t.ok(Date.parse(row.at) > Date.now() - 60_000);
    const st = await logged(status.json.requestId);
    t.equal(st.route, '/v1/sms/status/:messageId');
    t.equal(st.path, `/v1/sms/status/${sent.json.data.messageId}`);
    const err = await logged(badPin.json.requestId);
    t.match(err, { status: 404, errorCode: 'OTP_NOT_FOUND', product: 'otp' });
  });

  t.test('bodies are stored redacted: no secret, pin, message text or Authorization', async (t) => {
    const sms = await api('GET', `/v1/logs/${sent.json.requestId}`);
    t.equal(sms.status, 200, sms.text);
    t.equal(sms.json.code, 'LOG_FOUND');
    const req = JSON.parse(sms.json.data.requestBody);
    t.same(req, { to: '0241234567', from: 'Ferry', message: '[redacted]' });
    const res = JSON.parse(sms.json.data.responseBody);
    t.equal(res.success, true);
    t.equal(res.data.messageId, sent.json.data.messageId);
    const pin = await api('GET', `/v1/logs/${badPin.json.requestId}`);
    t.same(JSON.parse(pin.json.data.requestBody), { id: 'otp_nope', pin: '[redacted]' });
    t.equal(JSON.parse(pin.json.data.responseBody).code, 'OTP_NOT_FOUND');
    if (hook.status === 200 || hook.status === 201) {
      t.ok(hook.json.data.secret, 'the webhook answer carries its secret');
      await logged(hook.json.requestId);
      const w = await api('GET', `/v1/logs/${hook.json.requestId}`);
      t.notMatch(w.json.data.responseBody, hook.json.data.secret);
      t.equal(JSON.parse(w.json.data.responseBody).data.secret, '[redacted]');
    }
    // Nothing stored anywhere holds the text, the pin or the credentials.
    const { rows } = await d.daemon.db.query<{ b: string }>(`SELECT coalesce(request_body, '') || coalesce(response_body, '') || coalesce(user_agent, '') AS b FROM request_logs`);
    const all = rows.map((r) => r.b).join('\n');
    t.notMatch(all, 'private text');
    t.notMatch(all, '918273');
    t.notMatch(all, acme.token);
    t.notMatch(all, Buffer.from(acme.token, 'base64').toString().split(':')[1]);
  });

  t.test('filters: status class, method, path prefix, key, request id, time, cursor', async (t) => {
    await logged(status.json.requestId);
    const q = async (query: string) => {
      const r = await api('GET', `/v1/logs?${query}`);
      t.equal(r.status, 200, r.text);
      return r.json.data;
    };
    const errors = await q('status=4xx');
    t.ok(errors.items.length >= 1);
    t.ok(errors.items.every((i: { status: number }) => i.status >= 400 && i.status < 500));
    t.ok(errors.items.some((i: { requestId: string }) => i.requestId === badPin.json.requestId));
    t.ok((await q('status=404')).items.every((i: { status: number }) => i.status === 404));
    const gets = await q('method=GET&path=/v1/sms');
    t.ok(gets.items.length >= 1);
    t.ok(gets.items.every((i: { method: string; path: string }) => i.method === 'GET' && i.path.startsWith('/v1/sms')));
    t.same((await q(`requestId=${sent.json.requestId}`)).items.map((i: { requestId: string }) => i.requestId), [sent.json.requestId]);
    t.ok((await q(`keyId=${acme.keyId}`)).items.length >= 3);
    t.equal((await q(`keyId=${other.keyId}`)).items.length, 0);
    t.equal((await q(`from=${new Date(Date.now() + 3_600_000).toISOString()}`)).items.length, 0);
    t.ok((await q(`to=${new Date(Date.now() + 3_600_000).toISOString()}`)).items.length >= 3);
    // Paging one at a time walks every row once, newest first.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 50; i++) {
      const page: { items: Array<{ seq: string }>; nextCursor: string | null } = await q(`limit=1${cursor ? `&cursor=${cursor}` : ''}&path=/v1/sms`);
      seen.push(...page.items.map((x) => x.seq));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    t.ok(seen.length >= 2);
    t.same(seen, [...seen].sort((a, b) => Number(b) - Number(a)));
    t.equal(new Set(seen).size, seen.length);
    const bad = await api('GET', '/v1/logs?status=4x');
    t.equal(bad.json.code, 'VALIDATION_ERROR');
    const backwards = await api('GET', `/v1/logs?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`);
    t.equal(backwards.json.code, 'VALIDATION_ERROR');
  });

  t.test("one account's logs are invisible to another", async (t) => {
    const mine = await call(d.api, 'GET', '/v1/logs', { token: other.token });
    t.equal(mine.status, 200);
    t.ok(mine.json.data.items.every((i: { keyId: string }) => i.keyId === other.keyId));
    const theirs = await call(d.api, 'GET', `/v1/logs/${sent.json.requestId}`, { token: other.token });
    t.equal(theirs.status, 404);
    t.equal(theirs.json.code, 'LOG_NOT_FOUND');
    const searched = await call(d.api, 'GET', `/v1/logs?requestId=${sent.json.requestId}`, { token: other.token });
    t.same(searched.json.data.items, []);
    const scope = await call(d.api, 'GET', '/v1/logs', { token: noLogs.token });
    t.equal(scope.status, 403);
    t.equal(scope.json.code, 'INSUFFICIENT_SCOPE');
    // A request without valid credentials is recorded for no account.
    const anon = await call(d.api, 'GET', '/v1/logs');
    t.equal(anon.status, 401);
    await logs.search(acme.accountId, {}, 1); // (reads work while the writer runs)
  });

  t.test('retention drops whole partitions: rows past logs.retentionDays wait for their partition to be past it', async (t) => {
    // 15 days old, in the first partition (everything up to tomorrow): it goes once all of it is past the retention
    // (request-log-partitions.test.ts drops it with a clock moved on).
    const old = Date.now() - 15 * 86_400_000;
    await d.daemon.db.query(
      `INSERT INTO request_logs (request_id, at, method, route, path, product, status, latency_ms, key_id, account_id, created_at)
       VALUES ('req_old1', $1, 'GET', '/v1/account', '/v1/account', 'account', 200, 1, $2, $3, $4)`,
      [old, acme.keyId, acme.accountId, new Date(old).toISOString()],
    );
    const where = await d.daemon.db.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM request_logs WHERE request_id = 'req_old1'`);
    t.equal(where.rows[0].p, 'request_logs_p_before');
    // The first partition reaches the day after the database was migrated (a test template may be days old).
    const first = (await new RangePartitions(d.daemon.db, pino({ level: 'silent' })).list('request_logs'))[0];
    t.equal(first.name, 'request_logs_p_before');
    const due = first.toMs <= Date.now() - logs.retentionDays * 86_400_000;
    await logs.purgeExpired();
    t.equal((await api('GET', '/v1/logs/req_old1')).status, due ? 404 : 200, due ? 'its partition was past the retention: dropped' : 'its row stays until its partition is past the retention');
    t.equal((await api('GET', `/v1/logs/${sent.json.requestId}`)).status, 200, 'recent rows stay');
  });

  t.test('GET /v1/keys/stats: per key by day and product, last use, refusals, the limits in force', async (t) => {
    // A refusal counted as rate limiting: a resend inside the cooldown.
    const otp = await api('POST', '/v1/otp/request', { body: { phone: '0241112233', from: 'Ferry', message: 'code {code}' } });
    t.equal(otp.status, 200, otp.text);
    const resend = await api('POST', '/v1/otp/resend', { body: { id: otp.json.data.id } });
    t.equal(resend.json.code, 'RESEND_COOLDOWN');
    await logged(resend.json.requestId);
    const r = await api('GET', '/v1/keys/stats');
    t.equal(r.status, 200, r.text);
    t.equal(r.json.code, 'KEY_STATS');
    const keys = r.json.data.keys as Array<Record<string, any>>;
    t.same(keys.map((k) => k.keyId), [acme.keyId], "only the account's keys");
    const k = keys[0];
    t.ok(k.requests >= 6);
    t.ok(k.errors >= 2);
    t.ok(k.rateLimited >= 1);
    t.equal(k.lastUsedFrom, '127.0.0.1');
    t.ok(Date.parse(k.lastUsedAt) > Date.now() - 60_000);
    t.equal(k.byDay.at(-1).day, new Date().toISOString().slice(0, 10));
    const products = Object.fromEntries(k.byProduct.map((p: { product: string }) => [p.product, p]));
    t.ok(products.sms.requests >= 2);
    t.ok(products.otp.rateLimited >= 1);
    t.ok(products.otp.errors >= 2);
    const limits = r.json.data.limits as Array<{ scope: string; limit: number | null; refusal: string }>;
    t.ok(limits.find((l) => l.scope === 'key' && l.limit === 2000 && l.refusal === 'RATE_LIMIT_EXCEEDED'));
    t.ok(limits.find((l) => l.scope === 'account'));
    t.ok(limits.find((l) => l.scope === 'endpoint' && l.refusal === 'RESEND_COOLDOWN'));
    const fresh = await call(d.api, 'GET', '/v1/keys/stats', { token: other.token });
    t.equal(fresh.json.data.keys.length, 1);
    t.equal(fresh.json.data.keys[0].keyId, other.keyId);
  });
});
