import { pino } from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import type { FastifyRequest } from 'fastify';
import { REDACTED, redactValue, storedRequestBody, storedResponseBody, truncate } from '../../../src/channels/logs/redact.js';
import { RequestLogStore } from '../../../src/channels/logs/request-log-store.js';
import { productOf, RequestLogWriter } from '../../../src/channels/logs/request-log-writer.js';
import { testDb } from '../../helpers/db.js';
import { backendLabel } from '../../helpers/env.js';

t.test('redaction: the log rules at any depth, keys ending in secret/password/token, the envelope message kept', async (t) => {
  t.same(
    redactValue({ to: '233', message: 'hi', nested: { password: 'p', deeper: [{ token: 't', pin: '1234', ok: 1 }] }, apiSecret: 's', webhookSecret: 'w', accessToken: 'a', Authorization: 'Basic x' }),
    { to: '233', message: REDACTED, nested: { password: REDACTED, deeper: [{ token: REDACTED, pin: REDACTED, ok: 1 }] }, apiSecret: REDACTED, webhookSecret: REDACTED, accessToken: REDACTED, Authorization: REDACTED },
  );
  const res = JSON.parse(storedResponseBody(JSON.stringify({ success: true, code: 'X', message: 'Webhook created', data: { id: 'wh_1', secret: 'whsec_abc', text: 'body' } }), 8192)!);
  t.same(res, { success: true, code: 'X', message: 'Webhook created', data: { id: 'wh_1', secret: REDACTED, text: REDACTED } });
  t.equal(storedRequestBody(undefined, 8192), null);
  t.equal(storedRequestBody({}, 8192), null);
  t.equal(storedResponseBody('not json', 8192), '[non-JSON body of 8 bytes not kept]');
});

t.test('truncation: at most the limit in bytes, on a character boundary, marked', async (t) => {
  const text = JSON.stringify({ list: 'é'.repeat(10_000) });
  const cut = truncate(text, 8192);
  const [kept, mark] = cut.split('…');
  t.ok(Buffer.byteLength(kept) <= 8192);
  t.notMatch(kept, '\uFFFD', 'no broken character');
  t.equal(mark, `[truncated, ${Buffer.byteLength(text)} bytes]`);
  t.equal(truncate('short', 8192), 'short');
  t.ok(Buffer.byteLength(storedRequestBody({ items: 'x'.repeat(20_000) }, 1024)!) < 1100);
});

t.test('the product of a path', async (t) => {
  t.equal(productOf('/v1/sms/send'), 'sms');
  t.equal(productOf('/v1/keys/stats'), 'keys');
  t.equal(productOf('/v1'), 'v1');
});

/** A request as the response hook sees it. */
function request(i: number, opts: { body?: unknown; payload?: string; accountId?: string } = {}): FastifyRequest {
  return {
    id: `req_w${i}`,
    url: `/v1/sms/status/msg_${i}?x=1`,
    method: 'GET',
    ip: '127.0.0.1',
    headers: { 'user-agent': 'w', 'content-length': String(opts.body ? JSON.stringify(opts.body).length : 0) },
    body: opts.body,
    sentPayload: opts.payload ?? '{"success":true}',
    errorCode: null,
    auth: { keyId: 'ak_1', accountId: opts.accountId ?? 'acc_1' },
  } as unknown as FastifyRequest;
}

t.test(`the writer: batches into the store, bounded, drops and counts past the bound (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const store = new RequestLogStore(tdb.db);
  const registry = new Registry();
  let now = 1_000_000;
  const writer = new RequestLogWriter({ store, log: pino({ level: 'silent' }), registry, bodyLimitBytes: 8192, bufferSize: 50, flushMs: 10_000, batchSize: 100, bufferBytes: 100_000, now: () => now });
  for (let i = 0; i < 45; i++) writer.observe(request(i, { body: { message: 'secret text', to: '1' } }), 200, 5, '/v1/sms/status/:messageId');
  await writer.flush();
  const page = await store.search('acc_1', {}, 100);
  t.equal(page.rows.length, 45);
  t.match(page.rows.at(-1), { requestId: 'req_w0', path: '/v1/sms/status/msg_0', route: '/v1/sms/status/:messageId', product: 'sms', at: new Date(1_000_000 - 5).toISOString() });
  t.equal((await store.get('acc_1', 'req_w0'))!.requestBody, '{"message":"[redacted]","to":"1"}');
  // Not /v1: not recorded.
  writer.observe({ ...request(99), url: '/logs/api/requests' } as FastifyRequest, 200, 1, '/logs/api/requests');
  t.equal(writer.pending, 0);
  // Past the entry bound, then past the byte bound: dropped and counted, never waited for.
  for (let i = 100; i < 160; i++) writer.observe(request(i), 200, 1, 'r');
  t.equal(writer.pending, 50, 'the entry bound');
  const big = 'x'.repeat(60_000);
  await writer.flush();
  writer.observe(request(200, { payload: JSON.stringify({ big }) }), 200, 1, 'r');
  writer.observe(request(201, { payload: JSON.stringify({ big }) }), 200, 1, 'r');
  t.equal(writer.pending, 1, 'the second large body is over the byte bound');
  const dropped = await registry.getSingleMetric('ferry_request_logs_dropped_total')!.get();
  t.ok(dropped.values.find((v) => v.labels.reason === 'buffer_full' && v.value >= 11), JSON.stringify(dropped.values));
  now += 1;
  await writer.close();
  const written = await registry.getSingleMetric('ferry_request_logs_written_total')!.get();
  t.equal(written.values[0].value, 45 + 50 + 1);
  writer.observe(request(300), 200, 1, 'r');
  t.equal(writer.pending, 0, 'nothing is taken after close');
});
