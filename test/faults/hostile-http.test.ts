// Hostile HTTP input against the REST API: malformed JSON, wrong types, huge bodies, deep nesting, header abuse,
// other accounts' ids, auth brute force. Every answer is a clear 4xx (never 5xx, never another account's data) and
// the daemon keeps serving.
import net from 'node:net';
import t from 'tap';
import { accountWithKey, call, startDaemon } from '../helpers/daemon.js';
import { rawHttp } from '../helpers/raw-http.js';
import { backendLabel } from '../helpers/env.js';
import { sleep } from './common.js';

t.test(`hostile HTTP input (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20', FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_AUTH_FAILURE_LIMIT: '10' });
  t.teardown(() => d.stop());
  const port = Number(new URL(d.api).port);
  const alice = await accountWithKey(d, 'alice');
  const mallory = await accountWithKey(d, 'mallory');
  const auth = `Basic ${alice.token}`;
  const send = (raw: string | Buffer, headers: Record<string, string> = {}) =>
    call(d.api, 'POST', '/v1/sms/send', { raw, token: alice.token, headers: { 'content-type': 'application/json', ...headers } });
  const healthy = async (): Promise<boolean> => (await call(d.api, 'GET', '/v1/health', { token: alice.token })).status === 200;

  t.test('malformed JSON and wrong types: 400 with a clear code', async (t) => {
    for (const raw of ['{', '{"to": }', 'null', '[]', '"x"', '{"to":"233241234567","from":"Ferry","message":"hi"', '\u0000\u0001garbage', '{"__proto__":{"polluted":1}}']) {
      const r = await send(raw);
      t.ok(r.status >= 400 && r.status < 500, `${JSON.stringify(raw).slice(0, 40)} → ${r.status} ${r.json?.code}`);
      t.equal(r.json?.success, false, 'in the error envelope');
    }
    t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
    for (const body of [
      { to: 233241234567, from: 'Ferry', message: 'hi' },
      { to: ['233241234567'], from: 'Ferry', message: 'hi' },
      { to: '233241234567', from: { a: 1 }, message: 'hi' },
      { to: '233241234567', from: 'Ferry', message: 12 },
      { to: '233241234567', from: 'Ferry', message: 'x'.repeat(20_000) },
      { to: '233241234567', from: 'Ferry', message: 'hi', scheduledAt: 'tomorrow-ish' },
      { to: null, from: null, message: null },
    ]) {
      const r = await call(d.api, 'POST', '/v1/sms/send', { token: alice.token, body });
      t.equal(r.status, 400, `${JSON.stringify(body).slice(0, 60)} → ${r.json?.code}`);
    }
    const wrongType = await call(d.api, 'POST', '/v1/sms/send', { token: alice.token, raw: 'to=1&from=2', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    t.equal(wrongType.status, 415, 'a form body is 415');
  });

  t.test('a 6 MB body is 413, deep nesting is a 4xx', async (t) => {
    const big = Buffer.alloc(6 * 1024 * 1024, 0x61);
    const head = `POST /v1/sms/send HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${big.length + 2}\r\n\r\n`;
    const r = await rawHttp(port, Buffer.concat([Buffer.from(head), Buffer.from('{"'), big]));
    t.equal(r.status, 413, 'PAYLOAD_TOO_LARGE');
    const chunked = await rawHttp(port, Buffer.concat([Buffer.from(head.replace(/Content-Length: \d+/, 'Transfer-Encoding: chunked')), Buffer.from(`${big.length.toString(16)}\r\n`), big, Buffer.from('\r\n0\r\n\r\n')]));
    t.equal(chunked.status, 413, 'chunked: PAYLOAD_TOO_LARGE too');
    for (const depth of [10_000, 100_000]) {
      const obj = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      const arr = '['.repeat(depth) + ']'.repeat(depth);
      for (const [name, raw] of [['objects', obj], ['arrays', arr]]) {
        const res = await send(raw);
        t.ok(res.status >= 400 && res.status < 500, `${depth} nested ${name} → ${res.status} ${res.json?.code}`);
      }
    }
    t.ok(await healthy(), 'still serving');
  });

  t.test('header abuse', async (t) => {
    const huge = await rawHttp(port, `GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nX-Big: ${'a'.repeat(200_000)}\r\n\r\n`);
    t.ok(huge.status === 431 || huge.status === 400 || huge.status === 0, `a 200 kB header → ${huge.status || 'closed'}`);
    const many = await rawHttp(port, `GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n${Array.from({ length: 5000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\n\r\n`);
    t.ok(many.status === 431 || many.status === 400 || many.status === 0, `5000 headers → ${many.status || 'closed'}`);
    const hugeAuth = await call(d.api, 'GET', '/v1/health', { headers: { authorization: `Basic ${'A'.repeat(8000)}` } });
    t.equal(hugeAuth.status, 401, `an 8 kB Authorization header → 401 ${hugeAuth.json?.code}`);
    const badLen = await rawHttp(port, `POST /v1/sms/send HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 10\r\nContent-Length: 20\r\n\r\n{}`);
    t.ok(badLen.status === 400 || badLen.status === 0, `duplicate Content-Length → ${badLen.status || 'closed'}`);
    const smuggle = await rawHttp(port, `POST /v1/sms/send HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`);
    t.ok(smuggle.status === 400 || smuggle.status === 0, `Content-Length with Transfer-Encoding → ${smuggle.status || 'closed'}`);
    const badCt = await send('{}', { 'content-type': 'application/json; charset=utf-7' });
    t.ok(badCt.status >= 400 && badCt.status < 500, `charset=utf-7 → ${badCt.status}`);
    // A slow client that never finishes its headers holds one socket, not the daemon.
    const slow = net.connect({ host: '127.0.0.1', port }, () => slow.write('GET /v1/health HTTP/1.1\r\nHost: x\r\n'));
    slow.on('error', () => undefined);
    await sleep(200);
    t.ok(await healthy(), 'still serving during a slow client');
    slow.destroy();
  });

  t.test("another account's ids are not found and never leaked", async (t) => {
    const SECRET = 'alice-secret-text-7781';
    const sent = await call(d.api, 'POST', '/v1/sms/send', { token: alice.token, body: { to: '233241234567', from: 'Ferry', message: SECRET, reference: 'alice-ref-1' } });
    t.equal(sent.status, 200, 'alice sent an SMS');
    const msgId = sent.json.data.messageId as string;
    const bulk = await call(d.api, 'POST', '/v1/sms/bulk', { token: alice.token, body: { messages: [{ to: '233241234567', message: SECRET, from: 'Ferry' }] } });
    t.equal(bulk.status, 200, 'alice sent a batch');
    const batchId = bulk.json.data.batchId as string;
    const wh = await call(d.api, 'POST', '/v1/webhooks', { token: alice.token, body: { url: 'http://127.0.0.1:9/alice-hook', events: ['*'], description: SECRET } });
    t.equal(wh.status, 200, 'alice created a webhook');
    const whId = wh.json.data.id as string;
    const otp = await call(d.api, 'POST', '/v1/otp/request', { token: alice.token, body: { phone: '233241234568', from: 'Ferry', message: 'Your Ferry code is {code}. It expires in {amount} {duration}.' } });
    t.equal(otp.status, 200, 'alice requested an OTP');
    const otpId = otp.json.data.id as string;

    const probes: Array<[string, string, unknown?]> = [
      ['GET', `/v1/sms/status/${msgId}`],
      ['POST', '/v1/sms/resend', { messageId: msgId }],
      ['GET', `/v1/sms/batches/${batchId}`],
      ['GET', `/v1/webhooks/${whId}`],
      ['PATCH', `/v1/webhooks/${whId}`, { enabled: false }],
      ['GET', `/v1/webhooks/${whId}/deliveries`],
      ['POST', `/v1/webhooks/${whId}/rotate-secret`, {}],
      ['POST', `/v1/webhooks/${whId}/test`],
      ['DELETE', `/v1/webhooks/${whId}`],
      ['POST', '/v1/otp/verify', { id: otpId, pin: '123456' }],
      ['POST', '/v1/otp/resend', { id: otpId }],
    ];
    for (const [method, path, body] of probes) {
      const r = await call(d.api, method, path, { token: mallory.token, body });
      t.equal(r.status, 404, `mallory ${method} ${path.replace(/\/(msg|bat|wh|otp)_\w+/, '/$1_…')} → ${r.status} ${r.json?.code}`);
      t.notMatch(r.text, new RegExp(`${SECRET}|233241234567|233241234568|alice-ref-1|alice-hook`), 'nothing of alice in the answer');
    }
    const list = await call(d.api, 'GET', '/v1/webhooks', { token: mallory.token });
    t.notMatch(list.text, /alice-hook/, "alice's webhook is not in mallory's list");
    const still = await call(d.api, 'GET', `/v1/webhooks/${whId}`, { token: alice.token });
    t.equal(still.json?.data?.enabled, true, "mallory's PATCH/DELETE changed nothing");
    const verify = await call(d.api, 'POST', '/v1/otp/verify', { token: alice.token, body: { id: otpId, pin: '000000' } });
    t.not(verify.status, 404, "mallory's guess did not consume alice's OTP");
  });

  t.test('auth brute force is throttled; the daemon keeps serving', async (t) => {
    let throttledAt = 0;
    let retryAfter: string | null = null;
    for (let i = 1; i <= 40 && !throttledAt; i++) {
      const r = await call(d.api, 'GET', '/v1/health', { headers: { authorization: `Basic ${Buffer.from(`ak_live_guess${i}:wrong${i}`).toString('base64')}` } });
      if (r.status === 429) {
        t.equal(r.json?.code, 'TOO_MANY_AUTH_FAILURES');
        retryAfter = r.headers.get('retry-after');
        throttledAt = i;
      } else t.equal(r.status, 401, `guess ${i} → 401`);
    }
    t.ok(throttledAt > 0 && throttledAt <= 11, `throttled at guess ${throttledAt}`);
    t.ok(retryAfter, `Retry-After: ${retryAfter}`);
    const again = await call(d.api, 'GET', '/v1/health', { headers: { authorization: `Basic ${Buffer.from('ak_live_guessx:wrongx').toString('base64')}` } });
    t.equal(again.status, 429, 'further guesses stay throttled');
    const right = await call(d.api, 'GET', '/v1/health', { token: alice.token });
    t.equal(right.status, 200, 'valid credentials from the throttled address are served (one client cannot lock out the others)');
    const open = await call(d.api, 'GET', '/v1/openapi.json');
    t.equal(open.status, 200, 'unauthenticated routes still answer');
    t.comment(`hostile-http: 4xx for every malformed/oversized/nested/header-abuse input, 404 for 11 cross-account probes, brute force throttled at guess ${throttledAt}, daemon up`);
  });
});
