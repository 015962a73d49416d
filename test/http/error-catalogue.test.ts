// Every error answer, from every layer (Node's HTTP parser, the router, body parsing, validation, authentication,
// handlers, shutdown), is the error envelope with a catalogued code and the catalogue's HTTP status. One table: a row
// per catalogued code, provoked over real HTTP, plus the cases that once answered outside the catalogue. A code added
// to src/http/errors.ts or to a module's errors.ts without a row here fails the test.
import { writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createApp } from '../../src/http/app.js';
import { errorCatalogue } from '../../src/http/errors.js';
import { requestHash } from '../../src/http/idempotency.js';
import type { ChatModuleService } from '../../src/channels/chat/index.js';
import type { MessengerModuleService } from '../../src/channels/messenger/index.js';
import { MESSENGER_RATE_LIMITS } from '../../src/limits/messenger-rate-limits.js';
import { RatePolicy } from '../../src/limits/rate-policy.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics.js';
import { startSimulator } from '../../src/sim/smpp/simulator.js';
import { encodeGsm7 } from '../../src/smpp/text/gsm7.js';
import { call, startDaemon, type CallResult, otpOf } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { backendLabel } from '../helpers/env.js';
import { rawHttp, type RawResponse } from '../helpers/raw-http.js';
import { CustomerClient } from '../smpp/customer/customer-client.js';

/** An answer, from fetch or from a raw socket. */
interface Answer {
  status: number;
  header(name: string): string | null;
  json: any;
  text: string;
}

const fromCall = (r: CallResult): Answer => ({ status: r.status, header: (n) => r.headers.get(n), json: r.json, text: r.text });
const fromRaw = (r: RawResponse): Answer => ({ status: r.status, header: (n) => r.headers[n.toLowerCase()] ?? null, json: r.json, text: r.text });

interface Row {
  /** What the row does (the test name). */
  name: string;
  /** The catalogue code expected, or a success code (then the answer must be a 2xx success envelope). */
  code: string;
  /** The expected status of a success row (error rows take the catalogue's). */
  status?: number;
  /** How the code is provoked: a request over real HTTP (and, where needed, the state it needs). */
  run: () => Promise<Answer>;
  /** Further checks of the answer. */
  check?: (t: Test, a: Answer) => void;
}

const ENVELOPE_KEYS = new Set(['success', 'code', 'message', 'data', 'requestId']);

/** The merged catalogue (the core's codes and those the daemon's modules declared at boot). */
function isErrorCode(code: string): boolean {
  return Object.hasOwn(errorCatalogue(), code);
}

/** The answer is the envelope: JSON, success false, the code, the catalogue status, a request id also in X-Request-Id. */
function assertEnvelope(t: Test, a: Answer, row: Row): void {
  const error = isErrorCode(row.code);
  const status = error ? errorCatalogue()[row.code].status : (row.status ?? 200);
  t.equal(a.status, status, `HTTP ${status}`);
  t.match(a.header('content-type') ?? '', /^application\/json/, 'a JSON body');
  t.ok(a.json && typeof a.json === 'object', `an envelope (${a.text.slice(0, 300)})`);
  if (!a.json) return;
  t.equal(a.json.code, row.code, 'the code');
  t.equal(a.json.success, !error, `success ${!error}`);
  t.type(a.json.message, 'string');
  t.ok(a.json.message.length > 0, 'a message');
  t.match(a.json.requestId, /^req_[0-9a-z]{26}$/, 'a request id');
  t.equal(a.header('x-request-id'), a.json.requestId, 'the same request id in X-Request-Id');
  const extra = Object.keys(a.json).filter((k) => !ENVELOPE_KEYS.has(k));
  t.same(extra, [], 'nothing outside the envelope');
  if (a.json.data !== undefined) t.type(a.json.data, 'object', 'data is an object');
}

t.test(`every error answer is a catalogued envelope (${backendLabel})`, async (t) => {
  // Upstream "a" from a config file (for UPSTREAM_IN_CONFIG), routing only Ghanaian numbers (for NO_ROUTE).
  const sim = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20, seed: 3 });
  t.teardown(() => sim.close());
  const configFile = join(tmpdir(), `ferry-catalogue-${process.pid}-${Date.now()}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      smpp: { upstreams: [{ id: 'a', host: '127.0.0.1', port: sim.port, systemId: 'ferry', password: 'pw', binds: 1, window: 10, reconnect: { initialMs: 100, maxMs: 500 } }] },
      routing: { rules: [{ id: 'gh', match: { prefix: ['233'] }, upstreams: ['a'] }] },
    }),
  );
  const d = await startDaemon({
    FERRY_CONFIG: configFile,
    FERRY_SMPP_SIMULATOR_ENABLED: 'off',
    FERRY_HTTP_BODY_LIMIT_BYTES: '65536',
    // A webhook to a local port that refuses: the endpoint exists, its deliveries just fail.
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    // email: domains must be verified, as with a real relay (SENDER_DOMAIN_NOT_VERIFIED)
    FERRY_EMAIL_REQUIRE_VERIFIED_DOMAIN: 'true',
    // voice: the embedded trunk simulator on both backends (CALL_ALREADY_ENDED needs a call that ends)
    FERRY_VOICE_SIMULATOR: 'on',
    FERRY_VOICE_MEDIA_PORT_MIN: '44200',
    FERRY_VOICE_MEDIA_PORT_MAX: '44399',
    // voice: no browser dialer here (DIALER_NOT_AVAILABLE)
    FERRY_VOICE_DIALER_ENABLED: 'false',
  });
  t.teardown(() => d.stop());
  const apiPort = Number(new URL(d.api).port);
  const adminPort = Number(new URL(d.admin).port);
  const admin = { authorization: `Bearer ${d.adminToken}` };

  const customer = async (name: string, scopes: string | string[] = 'all', extra: Record<string, unknown> = {}) => {
    await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH', ...extra });
    return (await d.adminCall('POST', '/admin/keys', { account: name, scopes })).token as string;
  };
  const token = await customer('cat');
  const accountId = (await d.adminCall('GET', '/admin/accounts/cat')).id as string;
  const readOnly = (await d.adminCall('POST', '/admin/keys', { account: 'cat', scopes: ['sms:read'] })).token as string;
  const narrow = (await d.adminCall('POST', '/admin/keys', { account: 'cat', scopes: 'all', allowedRecipients: ['23324*'] })).token as string;
  const wrongSecret = Buffer.from(`ak_live_${'z'.repeat(20)}:sk_wrong`).toString('base64');

  const api = async (method: string, path: string, opts: Parameters<typeof call>[3] = {}) => fromCall(await call(d.api, method, path, { token, ...opts }));
  const anon = async (method: string, path: string, opts: Parameters<typeof call>[3] = {}) => fromCall(await call(d.api, method, path, opts));
  const adm = async (method: string, path: string, body?: unknown) => fromCall(await call(d.admin, method, path, { body, headers: admin }));
  const send = (body: Record<string, unknown>, tok = token, headers: Record<string, string> = {}) => api('POST', '/v1/sms/send', { token: tok, body, headers });
  let phones = 0;
  const newPhone = () => `02412${String(50_000 + phones++).padStart(5, '0')}`;
  const messengerSim = () => d.daemon.modules.service<MessengerModuleService>('messenger').simulator!;
  const otp = (body: Record<string, unknown> = {}) => api('POST', '/v1/otp/request', { body: { phone: newPhone(), from: 'Ferry', message: 'Code {code}', ...body } });
  const created = await api('POST', '/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });
  t.equal(created.status, 200, 'a webhook endpoint to test with');
  const webhook = created.json.data.id as string;

  // A separate app built by the same createApp, for the layers a running daemon cannot be made to show on demand: a
  // handler that throws, a storage backend that is down, a request arriving while the server closes, a request timeout.
  const app = await createApp({ log: createLogger('silent'), metrics: new Metrics(), bodyLimitBytes: 1 << 20 });
  app.get('/boom', async () => {
    throw new TypeError('a bug');
  });
  app.get('/db', async () => {
    // What the Postgres driver throws when the server is unreachable.
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  });
  app.get('/ok', async () => ({ ok: true }));
  const serverSockets: Socket[] = [];
  app.server.on('connection', (s: Socket) => serverSockets.push(s));
  const appBase = await app.listen({ host: '127.0.0.1', port: 0 });
  const appPort = Number(new URL(appBase).port);
  t.teardown(() => app.close());

  /** Collects a raw socket's answer. */
  const rawSocket = async (port: number) => {
    const { connect } = await import('node:net');
    const s = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    s.on('data', (c) => chunks.push(c));
    s.on('error', () => undefined);
    await new Promise((r) => s.once('connect', r));
    const closed = new Promise((r) => s.once('close', r));
    return { s, closed, answer: (last = false) => parseRaw(Buffer.concat(chunks).toString('latin1'), last) };
  };

  // In-app chat: a user token minted with the account's key, and calls that carry one.
  const chatToken = async (userId: string) => (await api('POST', '/v1/chat-sdk/users/token', { body: { userId } })).json.data.token as string;
  const asChatUser = (jwt: string, method: string, path: string, body?: unknown) => anon(method, path, { body, headers: { authorization: `Bearer ${jwt}` } });
  const chatRoom = (id: string, members: string[]) => api('POST', '/v1/chat-sdk/channels', { body: { type: 'messaging', id, members } });
  const flipSignature = (jwt: string) => `${jwt.slice(0, -2)}${jwt.endsWith('AA') ? 'BB' : 'AA'}`;

  const rows: Row[] = [
    // ---- request shape
    { name: 'a body missing required fields', code: 'VALIDATION_ERROR', run: () => send({}) },
    { name: 'a body that is not JSON', code: 'INVALID_JSON', run: () => api('POST', '/v1/sms/send', { raw: '{"to": ', headers: { 'content-type': 'application/json' } }) },
    {
      name: 'a header line the HTTP parser cannot read',
      code: 'MALFORMED_REQUEST',
      run: async () => fromRaw(await rawHttp(apiPort, 'GET /v1/health HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n')),
    },
    {
      name: 'a URL with a broken percent-encoding',
      code: 'MALFORMED_REQUEST',
      run: async () => fromRaw(await rawHttp(apiPort, 'GET /v1/sms/status/%E0%A4%A HTTP/1.1\r\nHost: x\r\n\r\n')),
    },
    { name: 'a text/plain body', code: 'UNSUPPORTED_MEDIA_TYPE', run: () => api('POST', '/v1/sms/send', { raw: 'to=1', headers: { 'content-type': 'text/plain' } }) },
    { name: 'a form body', code: 'UNSUPPORTED_MEDIA_TYPE', run: () => api('POST', '/v1/sms/send', { raw: 'to=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }) },
    { name: 'a body over the limit', code: 'PAYLOAD_TOO_LARGE', run: () => send({ to: '0241234567', from: 'Ferry', message: 'x'.repeat(70_000) }) },
    {
      name: 'headers over the limit (from the HTTP parser)',
      code: 'HEADERS_TOO_LARGE',
      run: async () => fromRaw(await rawHttp(apiPort, `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)),
      check: (t, a) => t.equal(a.header('connection'), 'close', 'the connection is closed'),
    },
    {
      // The parser reports the overflow again for every further chunk of a large header: the first answer must stand.
      name: 'headers far over the limit (1 MB, many chunks)',
      code: 'HEADERS_TOO_LARGE',
      run: async () => fromRaw(await rawHttp(apiPort, `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(1_000_000)}\r\n\r\n`)),
    },
    {
      name: 'headers over the limit on the admin listener',
      code: 'HEADERS_TOO_LARGE',
      run: async () => fromRaw(await rawHttp(adminPort, `GET /admin/accounts HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)),
    },
    {
      // Node times requests out from a timer that runs every 30 s (headersTimeout 60 s): the test raises the same
      // 'clientError' Node raises then, on a real connection, and reads what the client gets.
      name: 'a request not received in time',
      code: 'REQUEST_TIMEOUT',
      run: async () => {
        const before = serverSockets.length;
        const c = await rawSocket(appPort);
        c.s.write('GET /ok HTTP/1.1\r\nHost: x\r\n');
        while (serverSockets.length === before) await new Promise((r) => setTimeout(r, 5));
        app.server.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), serverSockets[serverSockets.length - 1]);
        await c.closed;
        return fromRaw(c.answer());
      },
    },
    { name: 'an unknown path without credentials', code: 'NOT_FOUND', run: () => anon('GET', '/v1/nope') },
    { name: 'an unknown path with credentials', code: 'NOT_FOUND', run: () => api('GET', '/v1/nope') },
    { name: 'an unknown path with wrong credentials', code: 'NOT_FOUND', run: () => anon('POST', '/v1/nope/deeper', { token: wrongSecret, body: {} }) },
    { name: 'an unknown admin path', code: 'NOT_FOUND', run: async () => fromCall(await call(d.admin, 'GET', '/admin/nope')) },
    {
      name: 'GET on a POST endpoint',
      code: 'METHOD_NOT_ALLOWED',
      run: () => anon('GET', '/v1/sms/send'),
      check: (t, a) => t.equal(a.header('allow'), 'POST', 'Allow lists the methods'),
    },
    {
      name: 'DELETE on a GET endpoint with a path parameter, with credentials',
      code: 'METHOD_NOT_ALLOWED',
      run: () => api('DELETE', '/v1/sms/status/msg_x'),
      check: (t, a) => t.equal(a.header('allow'), 'GET, HEAD'),
    },
    {
      name: 'PUT on an endpoint of several methods',
      code: 'METHOD_NOT_ALLOWED',
      run: () => api('PUT', '/v1/webhooks/wh_x', { body: {} }),
      check: (t, a) => t.equal(a.header('allow'), 'DELETE, GET, HEAD, PATCH'),
    },
    {
      name: 'a wrong method on the admin listener',
      code: 'METHOD_NOT_ALLOWED',
      run: () => adm('DELETE', '/admin/accounts'),
      check: (t, a) => t.equal(a.header('allow'), 'GET, HEAD, POST'),
    },
    // ---- authentication
    { name: 'no Authorization header', code: 'AUTH_HEADER_MISSING', run: () => anon('GET', '/v1/health') },
    { name: 'an Authorization header of another scheme', code: 'AUTH_HEADER_MALFORMED', run: () => anon('GET', '/v1/health', { headers: { authorization: 'Token abc' } }) },
    {
      name: 'an end-user token on an API-key route',
      code: 'END_USER_TOKEN_NOT_ACCEPTED',
      run: () => anon('GET', '/v1/account/balance', { headers: { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJlLW9mLWEtdXNlcg' } }),
    },
    { name: 'a wrong secret', code: 'INVALID_CREDENTIALS', run: () => anon('GET', '/v1/health', { token: wrongSecret }) },
    {
      name: 'a key without the scope',
      code: 'INSUFFICIENT_SCOPE',
      run: () => api('GET', '/v1/account/balance', { token: readOnly }),
      check: (t, a) => t.equal(a.json?.data?.requiredScope, 'account:read'),
    },
    {
      name: 'a suspended account',
      code: 'ACCOUNT_SUSPENDED',
      run: async () => {
        const tok = await customer('cat-suspended');
        await d.adminCall('POST', '/admin/accounts/cat-suspended/suspend', { reason: 'test' });
        return api('GET', '/v1/health', { token: tok });
      },
    },
    {
      name: 'failed attempts past the limit from one address',
      code: 'TOO_MANY_AUTH_FAILURES',
      run: async () => {
        try {
          for (let i = 0; i < 30; i++) {
            const a = await anon('GET', '/v1/health', { token: wrongSecret });
            if (a.status === 429) return a;
          }
          throw new Error('never throttled');
        } finally {
          await d.daemon.backends.throttle.reset('authfail:127.0.0.1');
        }
      },
      check: (t, a) => t.ok(Number(a.header('retry-after')) >= 1, 'Retry-After'),
    },
    {
      name: "the account's messages per second used up",
      code: 'RATE_LIMIT_EXCEEDED',
      run: async () => {
        const tok = await customer('cat-slow');
        await d.adminCall('PATCH', '/admin/accounts/cat-slow', { maxTps: 1 });
        for (let i = 0; i < 10; i++) {
          const a = await send({ to: '0241234567', from: 'Ferry', message: 'x' }, tok);
          if (a.status !== 200) return a;
        }
        throw new Error('never limited');
      },
      check: (t, a) => t.ok(Number(a.header('retry-after')) >= 1, 'Retry-After'),
    },
    // ---- messaging
    { name: 'a recipient that is not a number', code: 'INVALID_PHONE_NUMBER', run: () => send({ to: 'nope', from: 'Ferry', message: 'x' }) },
    { name: 'a sender of 12 characters', code: 'INVALID_SENDER_ID', run: () => send({ to: '0241234567', from: 'ABCDEFGHIJKL', message: 'x' }) },
    { name: 'a sender of 16 digits', code: 'INVALID_SENDER_ID', run: () => send({ to: '0241234567', from: '2332412345678901', message: 'x' }) },
    { name: 'a sender of 15 digits is accepted', code: 'SMS_SENT', run: () => send({ to: '0241234567', from: '233241234567890', message: 'x' }) },
    { name: 'a message of 1531 characters', code: 'MESSAGE_TOO_LONG', run: () => send({ to: '0241234567', from: 'Ferry', message: 'x'.repeat(1531) }) },
    {
      name: 'a balance short of the price',
      code: 'INSUFFICIENT_CREDIT',
      run: async () => {
        const tok = await customer('cat-broke');
        const pricing = await d.adminCall('GET', '/admin/pricing');
        await d.adminCall('PUT', '/admin/pricing', { defaultPrice: 0.05, entries: [] });
        try {
          return await send({ to: '0241234567', from: 'Ferry', message: 'x' }, tok);
        } finally {
          await d.adminCall('PUT', '/admin/pricing', pricing);
        }
      },
    },
    { name: "a recipient outside the key's allow-list", code: 'RECIPIENT_NOT_ALLOWED', run: () => send({ to: '0201234567', from: 'Ferry', message: 'x' }, narrow) },
    { name: 'an unknown message id', code: 'MESSAGE_NOT_FOUND', run: () => api('GET', '/v1/sms/status/msg_nope') },
    {
      name: 'a resend of a message that has not failed',
      code: 'NOT_RESENDABLE',
      run: async () => {
        const sent = await send({ to: '0241234567', from: 'Ferry', message: 'later', scheduledAt: new Date(Date.now() + 3_600_000).toISOString() });
        return api('POST', '/v1/sms/resend', { body: { messageId: sent.json.data.messageId } });
      },
    },
    {
      name: 'an Idempotency-Key reused with another body',
      code: 'IDEMPOTENCY_KEY_REUSED',
      run: async () => {
        await send({ to: '0241234567', from: 'Ferry', message: 'one' }, token, { 'idempotency-key': 'cat-1' });
        return send({ to: '0241234567', from: 'Ferry', message: 'two' }, token, { 'idempotency-key': 'cat-1' });
      },
    },
    {
      name: 'an Idempotency-Key whose first request is still running',
      code: 'IDEMPOTENCY_IN_PROGRESS',
      run: async () => {
        const body = { to: '0241234567', from: 'Ferry', message: 'pending' };
        await d.daemon.db.query(`INSERT INTO idempotency_keys (account_id, key, request_hash, status) VALUES ($1, $2, $3, 'pending')`, [
          accountId,
          'cat-2',
          requestHash('POST', '/v1/sms/send', body),
        ]);
        return send(body, token, { 'idempotency-key': 'cat-2' });
      },
    },
    { name: 'a recipient no routing rule serves', code: 'NO_ROUTE', run: () => send({ to: '+447911123456', from: 'Ferry', message: 'x' }) },
    { name: 'an unknown batch id', code: 'BATCH_NOT_FOUND', run: () => api('GET', '/v1/sms/batches/bat_nope') },
    {
      name: 'a bulk request that accepts nothing',
      code: 'BULK_REJECTED',
      run: () => api('POST', '/v1/sms/bulk', { body: { to: ['x', 'y', 'z'], message: 'm', from: 'Ferry' } }),
      check: (t, a) => {
        t.same([a.json.data.total, a.json.data.accepted, a.json.data.rejected], [3, 0, 3]);
        t.equal(a.json.data.results.length, 3, 'the reason of each item');
      },
    },
    // ---- OTP
    {
      name: 'an OTP for a phone that has one active',
      code: 'ACTIVE_OTP_EXISTS',
      run: async () => {
        const phone = newPhone();
        await otp({ phone });
        return otp({ phone });
      },
    },
    {
      name: 'a verify after the expiry',
      code: 'OTP_EXPIRED',
      run: async () => {
        const o = await otp({ expiry: { amount: 1, duration: 'minutes' } });
        const service = otpOf(d.daemon);
        service.clock = () => Date.now() + 60_001;
        try {
          return await api('POST', '/v1/otp/verify', { body: { id: o.json.data.id, pin: '000000' } });
        } finally {
          service.clock = Date.now;
        }
      },
    },
    {
      name: 'a wrong pin',
      code: 'INVALID_PIN',
      run: async () => {
        const o = await otp({ pinType: 'ALPHABETIC', pinLength: 5 });
        return api('POST', '/v1/otp/verify', { body: { id: o.json.data.id, pin: '00000' } });
      },
    },
    { name: 'an unknown OTP id', code: 'OTP_NOT_FOUND', run: () => api('POST', '/v1/otp/verify', { body: { id: 'otp_nope', pin: '123456' } }) },
    {
      name: 'a verify after the last attempt was used',
      code: 'OTP_LOCKED',
      run: async () => {
        // The wrong pin that uses the last attempt is INVALID_PIN with attemptsRemaining 0; the verify after it is locked.
        const o = await otp({ pinType: 'ALPHABETIC', pinLength: 5, maxAmountOfValidationRetries: 1 });
        await api('POST', '/v1/otp/verify', { body: { id: o.json.data.id, pin: '00000' } });
        return api('POST', '/v1/otp/verify', { body: { id: o.json.data.id, pin: '00000' } });
      },
    },
    {
      name: 'a resend within the cooldown',
      code: 'RESEND_COOLDOWN',
      run: async () => {
        const o = await otp();
        return api('POST', '/v1/otp/resend', { body: { id: o.json.data.id } });
      },
    },
    {
      name: 'an OTP for a phone that is not a number',
      code: 'INVALID_PHONE_NUMBER',
      run: () => otp({ phone: 'not-a-phone' }),
      check: (t, a) => t.same(a.json.data.errors.map((e: { field: string }) => e.field), ['phone'], 'naming the field'),
    },
    // ---- shortlink
    { name: 'an unknown short link', code: 'SHORTLINK_NOT_FOUND', run: () => api('GET', '/v1/shortlink/links/lnk_nope') },
    {
      name: 'a chosen slug in use',
      code: 'SLUG_TAKEN',
      run: async () => {
        await api('POST', '/v1/shortlink/links', { body: { url: 'https://example.com/', slug: 'cat-slug' } });
        return api('POST', '/v1/shortlink/links', { body: { url: 'https://example.com/', slug: 'cat-slug' } });
      },
    },
    {
      name: "an externalId another of the account's short links has",
      code: 'EXTERNAL_ID_TAKEN',
      run: async () => {
        await api('POST', '/v1/shortlink/links', { body: { url: 'https://example.com/', externalId: 'cat-ext' } });
        return api('POST', '/v1/shortlink/links', { body: { url: 'https://example.com/', externalId: 'cat-ext' } });
      },
    },
    {
      name: 'a short link whose destination is a short link',
      code: 'DESTINATION_DENIED',
      run: async () => {
        const first = await api('POST', '/v1/shortlink/links', { body: { url: 'https://example.com/' } });
        return api('POST', '/v1/shortlink/links', { body: { url: first.json.data.shortUrl } });
      },
    },
    // ---- messenger (spec §7.2)
    { name: 'a messenger send to a number that is not E.164', code: 'WA001', run: () => api('POST', '/v1/messenger/send', { body: { to: '12', type: 'text', text: { body: 'x' } } }) },
    {
      name: 'a messenger send to a number known not to be on the platform',
      code: 'WA002',
      run: async () => {
        messengerSim().offPlatform.add('447700900002');
        await api('GET', '/v1/messenger/numbers/check?phone=447700900002');
        return api('POST', '/v1/messenger/send', { body: { to: '447700900002', type: 'template', template: { name: 'hello_world', language: 'en_US' } } });
      },
    },
    {
      name: 'a messenger send from a business number that is not the account\'s',
      code: 'MESSENGER_NO_NUMBER',
      run: () => api('POST', '/v1/messenger/send', { body: { to: '447700900006', from: '999999999', type: 'template', template: { name: 'hello_world', language: 'en_US' } } }),
    },
    { name: 'a messenger text outside the 24-hour window', code: 'WA003', run: () => api('POST', '/v1/messenger/send', { body: { to: '447700900003', type: 'text', text: { body: 'x' } } }) },
    {
      name: 'a messenger image that is not public HTTPS',
      code: 'WA004',
      run: async () => {
        await messengerSim().userReply('447700900004', 'hi');
        return api('POST', '/v1/messenger/send', { body: { to: '447700900004', type: 'image', image: { link: 'http://127.0.0.1:1/a.jpg' } } });
      },
    },
    {
      name: 'a messenger send past the 80/s limit',
      code: 'WA005',
      run: async () => {
        const policy = new RatePolicy(d.daemon.backends.rateWindows, MESSENGER_RATE_LIMITS);
        let last: Answer | null = null;
        for (let i = 0; i < 20; i++) {
          // Use up what is left of this second (at most 80 takes), then send within it.
          for (let k = 0; k < 81 && (await policy.take('messenger.send', { accountId })).allowed; k++);
          last = await api('POST', '/v1/messenger/send', { body: { to: '447700900005', type: 'template', template: { name: 'hello_world', language: 'en_US' } } });
          if (last.status === 429) break;
        }
        return last!;
      },
    },
    { name: 'an unknown messenger template', code: 'TEMPLATE_NOT_FOUND', run: () => api('GET', '/v1/messenger/templates/nope') },
    {
      name: 'a messenger template created twice',
      code: 'TEMPLATE_EXISTS',
      run: async () => {
        const body = { name: 'twice', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi' }] };
        await api('POST', '/v1/messenger/templates', { body });
        return api('POST', '/v1/messenger/templates', { body });
      },
    },
    {
      name: 'a messenger template the platform no longer has',
      code: 'MESSENGER_PROVIDER_ERROR',
      run: async () => {
        await api('POST', '/v1/messenger/templates', { body: { name: 'gone', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi' }] } });
        for (const k of [...messengerSim().templates.keys()]) if (k.endsWith(':gone:en_US')) messengerSim().templates.delete(k);
        return api('DELETE', '/v1/messenger/templates/gone');
      },
    },
    { name: 'an unknown business number (admin)', code: 'MESSENGER_NUMBER_NOT_FOUND', run: () => adm('GET', '/admin/messenger/numbers/999999999') },
    {
      name: 'a business number that is the config number (admin)',
      code: 'MESSENGER_NUMBER_EXISTS',
      run: () => adm('POST', '/admin/messenger/numbers', { phoneNumberId: '100000000000001', account: 'cat', wabaId: '200000000000009', accessToken: 'fake-token', appSecret: 'fake-secret' }),
    },
    // ---- email
    { name: 'email from a domain the account has not added', code: 'SENDER_DOMAIN_UNKNOWN', run: () => api('POST', '/v1/email/send', { body: { from: 'a@nowhere.test', to: ['b@c.test'], subject: 's', text: 't' } }) },
    { name: 'an unknown sending domain', code: 'EMAIL_DOMAIN_NOT_FOUND', run: () => api('GET', '/v1/email/domains/dom_nope') },
    { name: 'an unknown email template', code: 'TEMPLATE_NOT_FOUND', run: () => api('GET', '/v1/email/templates/tpl_nope') },
    {
      name: 'a template that does not compile',
      code: 'TEMPLATE_RENDER_ERROR',
      run: () => api('POST', '/v1/email/templates', { body: { name: 'bad', subject: 'Hi {{#if}}', text: 'x' } }),
    },
    {
      name: 'email attachments over 10 MB',
      code: 'ATTACHMENTS_TOO_LARGE',
      run: () =>
        api('POST', '/v1/email/send', {
          body: { from: 'a@nowhere.test', to: ['b@c.test'], subject: 's', text: 't', attachments: [{ filename: 'x', content: Buffer.alloc(10 * 1024 * 1024 + 3).toString('base64') }] },
        }),
    },
    { name: 'an address that is not suppressed', code: 'SUPPRESSION_NOT_FOUND', run: () => api('DELETE', '/v1/email/suppressions/nobody@c.test') },
    { name: 'an unknown email message', code: 'EMAIL_NOT_FOUND', run: () => api('GET', '/v1/email/messages/em_nope') },
    { name: 'an unknown email schedule', code: 'SCHEDULE_NOT_FOUND', run: () => api('GET', '/v1/email/schedules/sch_nope') },
    {
      name: 'email from a domain whose DKIM record is not published (a relay configured)',
      code: 'SENDER_DOMAIN_NOT_VERIFIED',
      run: async () => {
        await api('POST', '/v1/email/domains', { body: { domain: 'unverified.test' } });
        return api('POST', '/v1/email/send', { body: { from: 'a@unverified.test', to: ['b@c.test'], subject: 's', text: 't' } });
      },
    },
    // ---- operator / admin
    { name: 'the admin API without its token', code: 'ADMIN_UNAUTHORIZED', run: async () => fromCall(await call(d.admin, 'GET', '/admin/accounts')) },
    { name: 'an unknown account', code: 'ACCOUNT_NOT_FOUND', run: () => adm('GET', '/admin/accounts/ghost') },
    { name: 'an account name taken', code: 'ACCOUNT_EXISTS', run: () => adm('POST', '/admin/accounts', { name: 'cat' }) },
    { name: 'an unknown key', code: 'KEY_NOT_FOUND', run: () => adm('POST', `/admin/keys/ak_live_${'q'.repeat(20)}/revoke`) },
    {
      name: "a number another account owns",
      code: 'CONFLICT',
      run: async () => {
        await d.adminCall('POST', '/admin/accounts', { name: 'cat-other' });
        await d.adminCall('POST', '/admin/accounts/cat/numbers', { number: '233209990001' });
        return adm('POST', '/admin/accounts/cat-other/numbers', { number: '233209990001' });
      },
    },
    { name: 'a switch of an unknown rule', code: 'RULE_NOT_FOUND', run: () => adm('POST', '/admin/routes/nope/switch', { upstream: 'a' }) },
    { name: 'a switch to an unknown upstream', code: 'UNKNOWN_UPSTREAM', run: () => adm('POST', '/admin/routes/gh/switch', { upstream: 'nope' }) },
    { name: 'an unknown upstream', code: 'UPSTREAM_NOT_FOUND', run: () => adm('GET', '/admin/upstreams/nope') },
    { name: 'removing an upstream of the config file', code: 'UPSTREAM_IN_CONFIG', run: () => adm('DELETE', '/admin/upstreams/a') },
    {
      name: 'a receipt replay of an SMPP message not yet final',
      code: 'NOT_FINAL',
      run: async () => {
        await d.adminCall('POST', '/admin/accounts', { name: 'cat-smpp', smppPassword: 'secret1' });
        const { client, resp } = await CustomerClient.bound(Number(d.daemon.addresses.smpp.split(':').pop()), 'transceiver', 'cat-smpp', 'secret1');
        if (resp.command_status !== 0) throw new Error(`bind refused ${resp.command_status}`);
        try {
          const r = await client.request('submit_sm', {
            source_addr: 'Ferry',
            destination_addr: '233241234567',
            dest_addr_ton: 1,
            short_message: encodeGsm7('later'),
            schedule_delivery_time: '000001000000000R',
          });
          if (r.command_status !== 0) throw new Error(`submit refused ${r.command_status}`);
          return await adm('POST', `/admin/receipts/${String(r.message_id)}/replay`);
        } finally {
          await client.close().catch(() => undefined);
        }
      },
    },
    {
      name: 'a receipt replay of a REST message',
      code: 'NOT_SMPP',
      run: async () => adm('POST', `/admin/receipts/${(await send({ to: '0241234567', from: 'Ferry', message: 'x' })).json.data.messageId}/replay`),
    },
    { name: 'removing a number the account does not own', code: 'NUMBER_NOT_FOUND', run: () => adm('DELETE', '/admin/accounts/cat/numbers/233200000000') },
    { name: 'reading the embedded simulator where real upstreams are configured', code: 'SIMULATOR_NOT_RUNNING', run: () => adm('GET', '/admin/sim/messages') },
    { name: 'a credit of 1e308', code: 'INVALID_AMOUNT', run: () => adm('POST', '/admin/accounts/cat/credit', { amount: 1e308 }) },
    { name: 'a debit below the credit limit', code: 'CREDIT_LIMIT_EXCEEDED', run: () => adm('POST', '/admin/accounts/cat/debit', { amount: 1_000_000 }) },
    // ---- webhooks
    { name: 'an unknown webhook', code: 'WEBHOOK_NOT_FOUND', run: () => api('GET', '/v1/webhooks/wh_nope') },
    { name: 'a webhook URL of another scheme', code: 'INVALID_WEBHOOK_URL', run: () => api('POST', '/v1/webhooks', { body: { url: 'ftp://example.com/hook', events: ['*'] } }) },
    { name: 'an unknown delivery', code: 'DELIVERY_NOT_FOUND', run: () => api('POST', `/v1/webhooks/${webhook}/deliveries/whd_nope/replay`) },
    {
      name: 'a test event with a JSON content type and no body',
      code: 'WEBHOOK_TEST_SENT',
      run: () => api('POST', `/v1/webhooks/${webhook}/test`, { raw: '', headers: { 'content-type': 'application/json' } }),
    },
    {
      name: 'a secret rotation (optional body) with a JSON content type and no body',
      code: 'WEBHOOK_SECRET_ROTATED',
      run: () => api('POST', `/v1/webhooks/${webhook}/rotate-secret`, { raw: '', headers: { 'content-type': 'application/json' } }),
    },
    {
      name: 'a send (required body) with a JSON content type and no body',
      code: 'VALIDATION_ERROR',
      run: () => api('POST', '/v1/sms/send', { raw: '', headers: { 'content-type': 'application/json' } }),
    },
    {
      name: 'a path parameter over the router limit',
      code: 'VALIDATION_ERROR',
      run: () => api('GET', `/v1/sms/status/msg_${'x'.repeat(300)}`),
    },
    // ---- ussd
    { name: 'an unknown USSD menu', code: 'USSD_MENU_NOT_FOUND', run: () => api('GET', '/v1/ussd/menus/menu_nope') },
    {
      name: 'a menu tree with a missing target',
      code: 'INVALID_MENU_TREE',
      run: () => api('POST', '/v1/ussd/menus', { body: { name: 'm', tree: { start: 'a', nodes: { a: { type: 'menu', text: 'Pick', options: [{ key: '1', label: 'x', next: 'zz' }] } } } } }),
    },
    {
      name: 'deleting a menu a service code uses',
      code: 'USSD_MENU_IN_USE',
      run: async () => {
        const m = await api('POST', '/v1/ussd/menus', { body: { name: 'used', tree: { start: 'e', nodes: { e: { type: 'end', text: 'Hi' } } } } });
        await api('POST', '/v1/ussd/service-codes', { body: { serviceCode: '*7001#', menuId: m.json.data.id } });
        return api('DELETE', `/v1/ussd/menus/${m.json.data.id}`);
      },
    },
    {
      name: 'a service code already claimed',
      code: 'USSD_SERVICE_CODE_TAKEN',
      run: async () => {
        await api('POST', '/v1/ussd/service-codes', { body: { serviceCode: '*7002#', webhookUrl: 'https://example.com/ussd' } });
        return api('POST', '/v1/ussd/service-codes', { body: { serviceCode: '*7002#', webhookUrl: 'https://example.com/ussd' } });
      },
    },
    { name: 'the OTP fallback code claimed', code: 'USSD_SERVICE_CODE_RESERVED', run: () => api('POST', '/v1/ussd/service-codes', { body: { serviceCode: '*889*142#', webhookUrl: 'https://example.com/ussd' } }) },
    { name: 'an unknown service code claim', code: 'USSD_SERVICE_CODE_NOT_FOUND', run: () => api('DELETE', '/v1/ussd/service-codes/usc_nope') },
    { name: 'an unknown USSD session', code: 'USSD_SESSION_NOT_FOUND', run: () => api('GET', '/v1/ussd/sessions/ussd_nope') },
    { name: 'an unknown USSD connector', code: 'USSD_CONNECTOR_NOT_FOUND', run: () => api('DELETE', '/v1/ussd/connectors/ucon_nope') },
    { name: 'a USSD app URL of another scheme', code: 'INVALID_APP_URL', run: () => api('POST', '/v1/ussd/service-codes', { body: { serviceCode: '*7003#', webhookUrl: 'ftp://example.com/ussd' } }) },
    // ---- logs
    { name: 'a request not in the logs', code: 'LOG_NOT_FOUND', run: () => api('GET', '/v1/logs/req_nope') },
    { name: 'the logs page API without a session', code: 'LOGS_SESSION_REQUIRED', run: () => anon('GET', '/logs/api/requests') },
    {
      name: 'a logs page sign-out without the CSRF token',
      code: 'CSRF_TOKEN_INVALID',
      run: async () => {
        const signin = await call(d.api, 'POST', '/logs/session', { token });
        const cookie = (signin.headers.get('set-cookie') ?? '').split(';')[0];
        return anon('POST', '/logs/session/end', { headers: { cookie } });
      },
    },
    // ---- push
    { name: 'an unknown push app', code: 'APP_NOT_FOUND', run: () => api('GET', '/v1/push/apps/papp_nope') },
    { name: 'an unknown push device', code: 'DEVICE_NOT_FOUND', run: () => api('GET', '/v1/push/devices/pdev_nope') },
    { name: 'an unknown push topic', code: 'TOPIC_NOT_FOUND', run: () => api('GET', '/v1/push/topics/no-such-topic') },
    { name: 'an FCM service account that is not JSON', code: 'INVALID_FCM_CREDENTIALS', run: () => api('POST', '/v1/push/apps', { body: { name: 'x', fcm: { serviceAccount: '{not json' } } }) },
    {
      name: 'an APNs key that is not a key',
      code: 'INVALID_APNS_CREDENTIALS',
      run: () => api('POST', '/v1/push/apps', { body: { name: 'x', apns: { privateKey: 'not a key', keyId: 'FAKEKEY001', teamId: 'FAKETEAM01', bundleId: 'com.example.app' } } }),
    },
    { name: 'an unknown push send', code: 'PUSH_NOT_FOUND', run: () => api('GET', '/v1/push/sends/push_nope') },
    { name: 'a push to a user without devices', code: 'NO_ACTIVE_DEVICES', run: () => api('POST', '/v1/push/send', { body: { to: { userId: 'nobody' }, notification: { title: 'x' } } }) },
    {
      name: 'a push to a device whose token its service invalidated',
      code: 'DEVICE_INVALID',
      run: async () => {
        const app = await call(d.api, 'POST', '/v1/push/apps', { token, body: { name: 'catalogue' } });
        const dev = await call(d.api, 'POST', '/v1/push/devices', { token, body: { appId: app.json.data.id, token: 'catalogue-device', platform: 'android' } });
        const id = dev.json.data.id ?? dev.json.data.device?.id;
        // As the delivery of an UNREGISTERED answer leaves it (send.test.ts goes through the simulators for that).
        await d.daemon.db.query(`UPDATE push_devices SET status = 'invalid', invalid_reason = 'DEVICE_UNREGISTERED', invalidated_at = now() WHERE id = $1`, [id]);
        return api('POST', '/v1/push/send', { body: { to: { deviceId: id }, notification: { title: 'x' } } });
      },
    },
    // ---- chat
    { name: 'a chat token with a wrong signature', code: 'CHAT_TOKEN_INVALID', run: async () => asChatUser(flipSignature(await chatToken('cat-chat-1')), 'GET', '/v1/chat-sdk/me') },
    {
      name: 'an expired chat token',
      code: 'CHAT_TOKEN_EXPIRED',
      run: async () => {
        await chatToken('cat-chat-2');
        // Signed with the account's real key (minting refuses lifetimes under a minute): expired a minute ago.
        const now = Math.floor(Date.now() / 1000);
        const tokens = (d.daemon.modules.service<ChatModuleService>('chat').chat as unknown as { tokens: { sign(a: string, u: string, g: number, i: number, e: number): Promise<string> } }).tokens;
        return asChatUser(await tokens.sign(accountId, 'cat-chat-2', 1, now - 180, now - 60), 'GET', '/v1/chat-sdk/me');
      },
    },
    {
      name: "a chat token minted before the user's tokens were revoked",
      code: 'CHAT_TOKEN_REVOKED',
      run: async () => {
        const jwt = await chatToken('cat-chat-3');
        await api('POST', '/v1/chat-sdk/users/cat-chat-3/revoke-tokens');
        return asChatUser(jwt, 'GET', '/v1/chat-sdk/me');
      },
    },
    { name: 'an end-user-only chat route with an API key', code: 'CHAT_USER_TOKEN_REQUIRED', run: () => api('GET', '/v1/chat-sdk/me') },
    {
      name: "a banned chat user's token",
      code: 'CHAT_USER_BANNED',
      run: async () => {
        const jwt = await chatToken('cat-chat-4');
        await api('POST', '/v1/chat-sdk/users/cat-chat-4/ban');
        return asChatUser(jwt, 'GET', '/v1/chat-sdk/me');
      },
    },
    { name: 'an unknown chat user', code: 'CHAT_USER_NOT_FOUND', run: () => api('GET', '/v1/chat-sdk/users/nobody') },
    { name: 'an unknown chat channel', code: 'CHAT_CHANNEL_NOT_FOUND', run: () => api('GET', '/v1/chat-sdk/channels/nope') },
    {
      name: 'a chat channel id in use',
      code: 'CHAT_CHANNEL_EXISTS',
      run: async () => {
        await chatRoom('cat-room-1', ['cat-chat-5']);
        return chatRoom('cat-room-1', ['cat-chat-5']);
      },
    },
    {
      name: 'an unknown chat message',
      code: 'CHAT_MESSAGE_NOT_FOUND',
      run: async () => {
        await chatRoom('cat-room-2', ['cat-chat-5']);
        return api('DELETE', '/v1/chat-sdk/channels/cat-room-2/messages/msg_nope');
      },
    },
    {
      name: 'removing a user who is not a member of the channel',
      code: 'CHAT_MEMBER_NOT_FOUND',
      run: async () => {
        await chatRoom('cat-room-3', ['cat-chat-5']);
        return api('DELETE', '/v1/chat-sdk/channels/cat-room-3/members/nobody');
      },
    },
    {
      name: 'a chat member who is no owner renaming the channel',
      code: 'CHAT_NOT_ALLOWED',
      run: async () => {
        await chatRoom('cat-room-4', ['cat-chat-6']);
        return asChatUser(await chatToken('cat-chat-6'), 'PATCH', '/v1/chat-sdk/channels/cat-room-4', { name: 'mine' });
      },
    },
    {
      name: 'a chat channel with more members than chat.maxMembersPerChannel',
      code: 'CHAT_TOO_MANY_MEMBERS',
      run: () => api('POST', '/v1/chat-sdk/channels', { body: { type: 'messaging', members: Array.from({ length: 1000 }, (_, i) => `m${i}`), createdBy: 'owner' } }),
    },
    {
      name: 'a chat message larger than chat.maxMessageBytes',
      code: 'CHAT_MESSAGE_TOO_LARGE',
      run: async () => {
        await chatRoom('cat-room-5', []);
        return api('POST', '/v1/chat-sdk/channels/cat-room-5/messages', { body: { text: 'x'.repeat(9000) } });
      },
    },
    // ---- voice calls
    { name: 'an unknown call', code: 'CALL_NOT_FOUND', run: () => api('GET', '/v1/voice/calls/call_nope') },
    { name: 'a call from a number the account does not own', code: 'CALLER_ID_NOT_ALLOWED', run: () => api('POST', '/v1/voice/calls', { body: { to: '+14155550100', from: '+14155550199', say: { text: 'hi' } } }) },
    {
      name: 'a call in a locale no engine speaks',
      code: 'VOICE_NOT_AVAILABLE',
      run: async () => {
        await d.adminCall('POST', `/admin/accounts/${accountId}/numbers`, { number: '+14155550198' }).catch(() => undefined);
        return api('POST', '/v1/voice/calls', { body: { to: '+14155550100', from: '+14155550198', say: { text: 'Akwaaba', locale: 'tw-GH' } } });
      },
    },
    {
      name: 'hanging up a call that has ended',
      code: 'CALL_ALREADY_ENDED',
      run: async () => {
        await d.adminCall('POST', `/admin/accounts/${accountId}/numbers`, { number: '+14155550198' }).catch(() => undefined);
        const placed = await api('POST', '/v1/voice/calls', { body: { to: '+14155550486', from: '+14155550198', script: [{ pause: { seconds: 1 } }] } });
        const id = placed.json.data.callId as string;
        await until(async () => (await api('GET', `/v1/voice/calls/${id}`)).json.data.status, (s) => s === 'busy', 30_000);
        return api('POST', `/v1/voice/calls/${id}/hangup`);
      },
    },
    { name: 'removing a SIP trunk that is not there', code: 'TRUNK_NOT_FOUND', run: () => adm('DELETE', '/admin/voice/trunks/nope') },
    { name: 'an unknown voice agent', code: 'VOICE_AGENT_NOT_FOUND', run: () => api('GET', '/v1/voice/agents/agent_nope') },
    {
      name: 'a voice agent with both a model and a relay',
      code: 'VOICE_AGENT_INVALID',
      run: () =>
        api('POST', '/v1/voice/agents', {
          body: { name: 'cat-agent', systemPrompt: 'Be brief.', llm: { provider: 'openai-compatible', model: 'm', baseUrl: 'https://llm.example.com/v1' }, relay: { url: 'wss://relay.example.com' } },
        }),
      check: (t, a) => t.same(a.json.data.errors, [{ field: 'relay', message: 'give either llm (a model Ferry calls) or relay (your own model over a WebSocket), not both' }]),
    },
    { name: 'a dialer token where the browser dialer does not run', code: 'DIALER_NOT_AVAILABLE', run: () => api('POST', '/v1/voice/dialer/token', { body: {} }) },
    // ---- live chat (src/channels/chat/livechat): rows for test/http/error-catalogue.test.ts's `rows`, using its api/anon helpers
    { name: 'an unknown live chat inbox', code: 'CHAT_INBOX_NOT_FOUND', run: () => api('GET', '/v1/chat-sdk/inboxes/inb_nope') },
    { name: 'an unknown widget key', code: 'CHAT_WIDGET_KEY_UNKNOWN', run: () => anon('POST', '/v1/chat-sdk/widget/session', { body: { widgetKey: 'wk_nope' } }) },
    {
      name: 'an anonymous visitor where the inbox requires identity',
      code: 'CHAT_IDENTITY_REQUIRED',
      run: async () => {
        const inbox = (await api('POST', '/v1/chat-sdk/inboxes', { body: { name: 'cat-strict', requireIdentity: true } })).json.data;
        return anon('POST', '/v1/chat-sdk/widget/session', { body: { widgetKey: inbox.widgetKey } });
      },
    },
    {
      name: 'a visitor identity with a wrong HMAC',
      code: 'CHAT_IDENTITY_INVALID',
      run: async () => {
        const inbox = (await api('POST', '/v1/chat-sdk/inboxes', { body: { name: 'cat-ident' } })).json.data;
        return anon('POST', '/v1/chat-sdk/widget/session', { body: { widgetKey: inbox.widgetKey, identity: { userId: 'cat-u1', hmac: '0'.repeat(64) } } });
      },
    },
    {
      name: 'a visitor message outside business hours where the inbox hides',
      code: 'CHAT_INBOX_OFFLINE',
      run: async () => {
        const inbox = (await api('POST', '/v1/chat-sdk/inboxes', { body: { name: 'cat-night', businessHours: { timezone: 'UTC', days: {} }, offlineMode: 'hide' } })).json.data;
        const s = (await anon('POST', '/v1/chat-sdk/widget/session', { body: { widgetKey: inbox.widgetKey } })).json.data;
        return anon('POST', '/v1/chat-sdk/widget/messages', { body: { widgetKey: inbox.widgetKey, text: 'hi', visitor: { email: 'a@example.com' } }, headers: { authorization: `Bearer ${s.token}` } });
      },
    },
    {
      name: "a visitor message without the pre-chat form's required name",
      code: 'CHAT_PRECHAT_REQUIRED',
      run: async () => {
        const inbox = (await api('POST', '/v1/chat-sdk/inboxes', { body: { name: 'cat-form', preChatForm: { name: { required: true } } } })).json.data;
        const s = (await anon('POST', '/v1/chat-sdk/widget/session', { body: { widgetKey: inbox.widgetKey } })).json.data;
        return anon('POST', '/v1/chat-sdk/widget/messages', { body: { widgetKey: inbox.widgetKey, text: 'hi' }, headers: { authorization: `Bearer ${s.token}` } });
      },
    },
    {
      name: 'an unknown live chat conversation',
      code: 'CHAT_CONVERSATION_NOT_FOUND',
      run: async () => {
        const inbox = (await api('POST', '/v1/chat-sdk/inboxes', { body: { name: 'cat-conv' } })).json.data;
        return api('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}/conversations/lc_nope`, { body: { status: 'open' } });
      },
    },
    {
      name: 'assigning a conversation to an agent who never signed in',
      code: 'CHAT_AGENT_NOT_FOUND',
      run: async () => {
        const inbox = (await api('POST', '/v1/chat-sdk/inboxes', { body: { name: 'cat-assign' } })).json.data;
        const s = (await anon('POST', '/v1/chat-sdk/widget/session', { body: { widgetKey: inbox.widgetKey } })).json.data;
        const sent = (await anon('POST', '/v1/chat-sdk/widget/messages', { body: { widgetKey: inbox.widgetKey, text: 'hi' }, headers: { authorization: `Bearer ${s.token}` } })).json.data;
        return api('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}/conversations/${sent.conversation.channelId}`, { body: { assignee: 'agent:ak_nobody' } });
      },
    },
    { name: 'an inbox page call without a session', code: 'CHAT_INBOX_SESSION_REQUIRED', run: () => anon('GET', '/inbox/api/conversations') },
    {
      name: 'an inbox page change without its CSRF token',
      code: 'CHAT_CSRF_TOKEN_INVALID',
      run: async () => {
        const signedIn = await api('POST', '/inbox/session', { body: {} });
        return anon('POST', '/inbox/session/end', { headers: { cookie: (signedIn.header('set-cookie') ?? '').split(';')[0] } });
      },
    },
    // ---- mcp
    { name: 'an MCP request from a foreign Origin', code: 'MCP_HOST_NOT_ALLOWED', run: () => api('POST', '/mcp', { body: {}, headers: { origin: 'https://evil.example' } }) },
    // ---- server side
    { name: 'storage unreachable', code: 'SERVICE_UNAVAILABLE', run: async () => fromCall(await call(appBase, 'GET', '/db')) },
    { name: 'a bug in a handler', code: 'INTERNAL_ERROR', run: async () => fromCall(await call(appBase, 'GET', '/boom')) },
    {
      // Last: closes the app. A request that arrives on an open connection while the server closes.
      name: 'a request arriving while the server shuts down',
      code: 'SHUTTING_DOWN',
      run: async () => {
        const c = await rawSocket(appPort);
        c.s.write('GET /ok HTTP/1.1\r\nHost: x\r\n\r\n');
        await new Promise((r) => setTimeout(r, 100));
        // The next request has begun (so the connection is busy, not idle) when the close starts.
        c.s.write('GET /ok HTTP/1.1\r\n');
        await new Promise((r) => setTimeout(r, 50));
        const closed = app.close();
        await new Promise((r) => setTimeout(r, 50));
        c.s.write('Host: x\r\n\r\n');
        await closed;
        await c.closed;
        const all = c.answer(true);
        return fromRaw(all);
      },
      check: (t, a) => {
        t.equal(a.header('connection'), 'close');
        t.equal(a.header('retry-after'), '1');
      },
    },
  ];

  const covered = new Set(rows.map((r) => r.code));
  const missing = Object.keys(errorCatalogue()).filter((code) => !covered.has(code));
  t.same(missing, [], 'every code of the catalogue has a row: add one for a new code');

  for (const row of rows) {
    await t.test(`${row.code}: ${row.name}`, async (t) => {
      const a = await row.run();
      assertEnvelope(t, a, row);
      row.check?.(t, a);
    });
  }

  const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
  for (const [code, e] of Object.entries(errorCatalogue())) t.match(doc.info.description, `| ${code} | ${e.status} |`, `${code} is in the OpenAPI document`);
  t.ok(doc.paths['/sms/bulk'].post.responses['422'], 'bulk documents its 422');
});

/** A raw HTTP answer: the last response on the connection when `last`, else the first. */
function parseRaw(text: string, last = false): RawResponse {
  const starts = [...text.matchAll(/HTTP\/1\.1 \d{3}/g)].map((m) => m.index);
  const at = starts.length ? (last ? starts[starts.length - 1] : starts[0]) : 0;
  const one = text.slice(at);
  const end = one.indexOf('\r\n\r\n');
  const head = end < 0 ? one : one.slice(0, end);
  const [first, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = end < 0 ? '' : one.slice(end + 4, end + 4 + length);
  let json: any = null;
  try {
    json = body ? JSON.parse(body) : null;
  } catch {
    json = null;
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(first)?.[1] ?? 0), headers, text: one, json };
}

t.test('a parser error reported again for the same connection does not cut the answer short', async (t) => {
  const app = await createApp({ log: createLogger('silent'), metrics: new Metrics(), bodyLimitBytes: 1 << 20 });
  const sockets: Socket[] = [];
  app.server.on('connection', (s: Socket) => sockets.push(s));
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const { connect } = await import('node:net');
  const client = connect({ host: '127.0.0.1', port: Number(new URL(base).port) });
  const chunks: Buffer[] = [];
  client.on('data', (c) => chunks.push(c));
  client.on('error', () => undefined);
  const closed = new Promise((r) => client.once('close', r));
  await new Promise((r) => client.once('connect', r));
  client.write('GET / HTTP/1.1\r\nHost: x\r\n');
  while (!sockets.length) await new Promise((r) => setTimeout(r, 5));
  const overflow = () => Object.assign(new Error('Header overflow'), { code: 'HPE_HEADER_OVERFLOW' });
  // Node's parser raises the error once per further chunk of an oversized header.
  app.server.emit('clientError', overflow(), sockets[0]);
  app.server.emit('clientError', overflow(), sockets[0]);
  app.server.emit('clientError', overflow(), sockets[0]);
  t.equal(sockets[0].destroyed, false, 'the connection is left to close after the answer, not destroyed');
  client.end();
  await closed;
  const a = parseRaw(Buffer.concat(chunks).toString('latin1'));
  t.equal(a.status, 431);
  t.equal(a.json?.code, 'HEADERS_TOO_LARGE');
  t.equal((Buffer.concat(chunks).toString('latin1').match(/HTTP\/1\.1 /g) ?? []).length, 1, 'one answer');
});
