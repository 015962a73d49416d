import t from 'tap';
import { IdempotencyStore, requestHash } from '../../../src/http/idempotency.js';
import { call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

/** An account in Ghana (local numbers read as +233) with an all-scopes key. */
async function customer(d: TestDaemon, name: string, scopes: string | string[] = 'all') {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return { accountId: account.id as string, token: key.token as string };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

t.test(`POST /v1/sms/send (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const send = (body: unknown, headers: Record<string, string> = {}, token = acme.token) => call(d.api, 'POST', '/v1/sms/send', { token, body, headers });
  const countByReference = async (reference: string) =>
    Number((await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE reference = $1 AND account_id = $2`, [reference, acme.accountId])).rows[0].n);

  t.test('both published result shapes, local number normalised with the account country', async (t) => {
    const r = await send({ to: '024 123 4567', from: 'Ferry', message: 'Hello from the test', reference: 'shape-1' });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.success, true);
    t.equal(r.json.code, 'SMS_SENT');
    t.type(r.json.message, 'string');
    t.match(r.json.requestId, /^req_/);
    const data = r.json.data;
    // Shape A
    t.match(data.messageId, /^msg_[0-9a-z]{26}$/);
    t.equal(data.channel, 'sms');
    t.equal(data.delivery.status, 'SENT');
    t.match(data.delivery.submittedAt, ISO);
    t.equal(data.billing.units, 1);
    t.equal(data.billing.currency, 'USD');
    t.type(data.billing.unitCost, 'number');
    // Shape B
    t.equal(data.status, 'queued');
    t.equal(data.to, '233241234567', 'international digits, no plus');
    t.equal(data.from, 'Ferry');
    t.equal(data.segments, 1);
    t.type(data.cost, 'number');
    // and the rest
    t.equal(data.reference, 'shape-1');
    t.equal(data.scheduledAt, null);
    t.type(data.encoding, 'string');

    const intl = await send({ to: '+233241234567', from: '233201234', message: 'numeric sender' });
    t.equal(intl.status, 200, intl.text);
    t.equal(intl.json.data.to, '233241234567');
  });

  t.test('1530 characters pass, 1531 are MESSAGE_TOO_LONG', async (t) => {
    const max = await send({ to: '0241234567', from: 'Ferry', message: 'a'.repeat(1530) });
    t.equal(max.status, 200, max.text);
    t.equal(max.json.data.segments, 10);
    t.equal(max.json.data.billing.units, 10);
    const over = await send({ to: '0241234567', from: 'Ferry', message: 'a'.repeat(1531) });
    t.equal(over.status, 400);
    t.equal(over.json.code, 'MESSAGE_TOO_LONG');
    t.equal(over.json.success, false);
  });

  t.test('an 11-character sender passes, 12 is INVALID_SENDER_ID', async (t) => {
    const eleven = await send({ to: '0241234567', from: 'ABCDEFGHIJK', message: 'x' });
    t.equal(eleven.status, 200, eleven.text);
    t.equal(eleven.json.data.from, 'ABCDEFGHIJK');
    const twelve = await send({ to: '0241234567', from: 'ABCDEFGHIJKL', message: 'x' });
    t.equal(twelve.status, 400);
    t.equal(twelve.json.code, 'INVALID_SENDER_ID');
  });

  t.test('recipients that are not numbers: INVALID_PHONE_NUMBER', async (t) => {
    for (const to of ['12345', 'not-a-number', '+99912345678901']) {
      const r = await send({ to, from: 'Ferry', message: 'x' });
      t.equal(r.status, 400, to);
      t.equal(r.json.code, 'INVALID_PHONE_NUMBER', to);
    }
  });

  t.test('field errors: VALIDATION_ERROR naming each field', async (t) => {
    const r = await send({ message: '', extra: 1 });
    t.equal(r.status, 400);
    t.equal(r.json.code, 'VALIDATION_ERROR');
    const fields = r.json.data.errors.map((e: { field: string }) => e.field).sort();
    t.same(fields, ['extra', 'from', 'message', 'to']);
    const longRef = await send({ to: '0241234567', from: 'Ferry', message: 'x', reference: 'r'.repeat(101) });
    t.equal(longRef.json.code, 'VALIDATION_ERROR');
    t.equal(longRef.json.data.errors[0].field, 'reference');
  });

  t.test('scheduledAt: future within the horizon is scheduled; past or too far is VALIDATION_ERROR', async (t) => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const ok = await send({ to: '0241234567', from: 'Ferry', message: 'later', scheduledAt: at });
    t.equal(ok.status, 200, ok.text);
    t.equal(ok.json.data.status, 'scheduled');
    t.equal(ok.json.data.scheduledAt, at);

    const past = await send({ to: '0241234567', from: 'Ferry', message: 'x', scheduledAt: new Date(Date.now() - 60_000).toISOString() });
    t.equal(past.status, 400);
    t.equal(past.json.code, 'VALIDATION_ERROR');
    t.equal(past.json.data.errors[0].field, 'scheduledAt');
    t.match(past.json.data.errors[0].message, /future/);

    const far = await send({ to: '0241234567', from: 'Ferry', message: 'x', scheduledAt: new Date(Date.now() + 31 * 86_400_000).toISOString() });
    t.equal(far.status, 400);
    t.equal(far.json.code, 'VALIDATION_ERROR');
    t.match(far.json.data.errors[0].message, /30 days/);

    const junk = await send({ to: '0241234567', from: 'Ferry', message: 'x', scheduledAt: 'tomorrow' });
    t.equal(junk.json.code, 'VALIDATION_ERROR');
    t.equal(junk.json.data.errors[0].field, 'scheduledAt');
  });

  t.test("a key's recipient allow-list: RECIPIENT_NOT_ALLOWED elsewhere", async (t) => {
    const narrow = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: ['sms:send'], allowedRecipients: ['23324*'] });
    const inside = await send({ to: '0241234567', from: 'Ferry', message: 'x' }, {}, narrow.token);
    t.equal(inside.status, 200, inside.text);
    const outside = await send({ to: '0201234567', from: 'Ferry', message: 'x' }, {}, narrow.token);
    t.equal(outside.status, 403);
    t.equal(outside.json.code, 'RECIPIENT_NOT_ALLOWED');
  });

  t.test("the account's send rate: 429 RATE_LIMIT_EXCEEDED with Retry-After", async (t) => {
    const slow = await customer(d, 'slow');
    await d.adminCall('PATCH', '/admin/accounts/slow', { maxTps: 1 });
    const rs = await Promise.all(Array.from({ length: 4 }, () => send({ to: '0241234567', from: 'Ferry', message: 'x' }, {}, slow.token)));
    const limited = rs.filter((r) => r.status === 429);
    t.ok(limited.length >= 1, 'some sends are refused');
    t.equal(limited[0].json.code, 'RATE_LIMIT_EXCEEDED');
    t.match(limited[0].headers.get('retry-after'), /^\d+$/);
    t.type(limited[0].json.data.retryAfter, 'number');
  });

  t.test('scopes: a key without sms:send is refused', async (t) => {
    const reader = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: ['sms:read'] });
    const r = await send({ to: '0241234567', from: 'Ferry', message: 'x' }, {}, reader.token);
    t.equal(r.status, 403);
    t.equal(r.json.code, 'INSUFFICIENT_SCOPE');
    t.equal(r.json.data.requiredScope, 'sms:send');
  });

  t.test('Idempotency-Key: a retry replays the first response and sends nothing again', async (t) => {
    const body = { to: '0241234567', from: 'Ferry', message: 'once only', reference: 'idem-1' };
    const first = await send(body, { 'idempotency-key': 'order-1001' });
    t.equal(first.status, 200, first.text);
    t.equal(first.headers.get('idempotent-replayed'), null);
    const again = await send(body, { 'idempotency-key': 'order-1001' });
    t.equal(again.status, 200);
    t.equal(again.headers.get('idempotent-replayed'), 'true');
    t.same(again.json, first.json, 'the same envelope, byte for byte');
    t.equal(await countByReference('idem-1'), 1, 'one message in the ledger');

    const reordered = await send({ reference: 'idem-1', message: 'once only', from: 'Ferry', to: '0241234567' }, { 'idempotency-key': 'order-1001' });
    t.equal(reordered.headers.get('idempotent-replayed'), 'true', 'key order in the body does not matter');

    const changed = await send({ ...body, message: 'something else' }, { 'idempotency-key': 'order-1001' });
    t.equal(changed.status, 422);
    t.equal(changed.json.code, 'IDEMPOTENCY_KEY_REUSED');
    t.equal(await countByReference('idem-1'), 1);

    const other = await customer(d, 'other-idem');
    const theirs = await send(body, { 'idempotency-key': 'order-1001' }, other.token);
    t.equal(theirs.status, 200);
    t.equal(theirs.headers.get('idempotent-replayed'), null, 'keys are per account');
    t.not(theirs.json.data.messageId, first.json.data.messageId);
  });

  t.test('Idempotency-Key: concurrent requests with one key send one message', async (t) => {
    const body = { to: '0241234567', from: 'Ferry', message: 'raced', reference: 'idem-race' };
    const rs = await Promise.all(Array.from({ length: 6 }, () => send(body, { 'idempotency-key': 'order-race' })));
    const fresh = rs.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null);
    t.equal(fresh.length, 1, 'exactly one request ran');
    for (const r of rs) {
      if (r.status === 200) t.equal(r.json.data.messageId, fresh[0].json.data.messageId);
      else t.equal(r.json.code, 'IDEMPOTENCY_IN_PROGRESS');
    }
    t.equal(await countByReference('idem-race'), 1);
  });

  t.test('Idempotency-Key: a refused request frees its key', async (t) => {
    const bad = await send({ to: '12345', from: 'Ferry', message: 'x', reference: 'idem-2' }, { 'idempotency-key': 'order-1002' });
    t.equal(bad.json.code, 'INVALID_PHONE_NUMBER');
    const fixed = await send({ to: '0241234567', from: 'Ferry', message: 'x', reference: 'idem-2' }, { 'idempotency-key': 'order-1002' });
    t.equal(fixed.status, 200, fixed.text);
    t.equal(fixed.headers.get('idempotent-replayed'), null);
    t.equal(await countByReference('idem-2'), 1);
  });

  t.test('Idempotency-Key: malformed keys, and a key still in progress', async (t) => {
    for (const key of ['k'.repeat(256), 'tab\there']) {
      const r = await send({ to: '0241234567', from: 'Ferry', message: 'x' }, { 'idempotency-key': key });
      t.equal(r.status, 400);
      t.equal(r.json.code, 'VALIDATION_ERROR');
      t.match(r.json.data.errors[0].field, /idempotency-key/);
    }
    const body = { to: '0241234567', from: 'Ferry', message: 'x', reference: 'idem-3' };
    // The state a concurrent first request leaves while it runs.
    await d.daemon.db.query(`INSERT INTO idempotency_keys (account_id, key, request_hash, status) VALUES ($1, $2, $3, 'pending')`, [
      acme.accountId,
      'order-1003',
      requestHash('POST', '/v1/sms/send', body),
    ]);
    const busy = await send(body, { 'idempotency-key': 'order-1003' });
    t.equal(busy.status, 409);
    t.equal(busy.json.code, 'IDEMPOTENCY_IN_PROGRESS');
    t.equal(busy.headers.get('retry-after'), '1');
    t.equal(await countByReference('idem-3'), 0);
  });

  t.test('Idempotency keys are purged after 24 hours', async (t) => {
    await d.daemon.db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'order-1001' AND account_id = $1`, [acme.accountId]);
    const purged = await new IdempotencyStore(d.daemon.db).purge();
    t.ok(purged >= 1);
    const body = { to: '0241234567', from: 'Ferry', message: 'once only', reference: 'idem-1' };
    const fresh = await send(body, { 'idempotency-key': 'order-1001' });
    t.equal(fresh.headers.get('idempotent-replayed'), null, 'an expired key is a new request');
    t.equal(await countByReference('idem-1'), 2);
  });

  t.test('the OpenAPI document lists the SMS endpoints under the /v1 server', async (t) => {
    const r = await call(d.api, 'GET', '/v1/openapi.json');
    t.equal(r.status, 200);
    for (const p of ['/sms/send', '/sms/bulk', '/sms/status/{messageId}', '/sms/batches/{batchId}', '/sms/resend', '/sms/inbound']) t.ok(r.json.paths[p], p);
    const send = r.json.paths['/sms/send'].post;
    t.match(send.requestBody.content['application/json'].schema.properties.from.description, /11/);
  });
});
