import t from 'tap';
import { call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

async function customer(d: TestDaemon, name: string) {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes: 'all' });
  return { accountId: account.id as string, token: key.token as string };
}

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, limitMs = 30_000): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = await fn();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test(`POST /v1/sms/bulk and batch summaries (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const rival = await customer(d, 'rival');
  const bulk = (body: unknown, token = acme.token, headers: Record<string, string> = {}) => call(d.api, 'POST', '/v1/sms/bulk', { token, body, headers });
  const batch = (id: string, token = acme.token) => call(d.api, 'GET', `/v1/sms/batches/${id}`, { token });
  const countBatch = async (batchId: string) =>
    Number((await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE batch_id = $1`, [batchId])).rows[0].n);

  t.test('the list form: one text to many recipients, followed to delivered', async (t) => {
    const r = await bulk({ to: ['0241234567', '+233241234568', 'nope', 7], message: 'to many', from: 'Ferry' });
    t.equal(r.status, 200, r.text);
    const data = r.json.data;
    t.equal(data.total, 4);
    t.equal(data.accepted, 2);
    t.same(
      data.results.map((x: { status: string; code?: string }) => x.code ?? x.status),
      ['accepted', 'accepted', 'INVALID_PHONE_NUMBER', 'VALIDATION_ERROR'],
    );
    t.equal(data.results[1].to, '233241234568');
    const done = await until(
      () => batch(data.batchId),
      (b) => b.json?.data?.counts?.delivered === 2,
    );
    t.equal(done.json.data.counts.delivered, 2);
    t.equal(done.json.data.pending, 0);
    t.same(
      { total: done.json.data.total, accepted: done.json.data.accepted, rejected: done.json.data.rejected },
      { total: 4, accepted: 2, rejected: 2 },
      'the batch reads back with the totals of the bulk answer',
    );

    const status = await call(d.api, 'GET', `/v1/sms/status/${data.results[0].messageId}`, { token: acme.token });
    t.equal(status.json.data.batchId, data.batchId);
  });

  t.test('per-item sender: an item without one (and no default) is INVALID_SENDER_ID', async (t) => {
    const r = await bulk({ messages: [{ to: '0241234567', message: 'a' }, { to: '0241234567', message: 'b', from: 'Item' }] });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.data.results[0].code, 'INVALID_SENDER_ID');
    t.equal(r.json.data.results[1].status, 'accepted');
  });

  t.test('a bulk that accepts nothing is refused: 422 BULK_REJECTED with every reason, nothing stored', async (t) => {
    const before = Number((await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages`)).rows[0].n);
    const r = await bulk({ to: ['x', 'y'], message: 'm', from: 'Ferry' }, acme.token, { 'idempotency-key': 'bulk-none' });
    t.equal(r.status, 422, r.text);
    t.equal(r.json.success, false);
    t.equal(r.json.code, 'BULK_REJECTED');
    t.match(r.json.requestId, /^req_/);
    t.same({ total: r.json.data.total, accepted: r.json.data.accepted, rejected: r.json.data.rejected }, { total: 2, accepted: 0, rejected: 2 });
    t.same(
      r.json.data.results.map((x: { index: number; status: string; code: string }) => [x.index, x.status, x.code]),
      [
        [0, 'rejected', 'INVALID_PHONE_NUMBER'],
        [1, 'rejected', 'INVALID_PHONE_NUMBER'],
      ],
      'the reason of each item',
    );
    t.notOk('batchId' in r.json.data, 'no batch was created');
    const after = Number((await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages`)).rows[0].n);
    t.equal(after, before, 'nothing stored');

    const routeLevel = await bulk({ messages: [{ to: '0241234567' }, 5], from: 'Ferry' });
    t.equal(routeLevel.status, 422, 'items refused before the service count the same');
    t.same(routeLevel.json.data.results.map((x: { code: string }) => x.code), ['VALIDATION_ERROR', 'VALIDATION_ERROR']);

    const fixed = await bulk({ to: ['0241234567', 'y'], message: 'm', from: 'Ferry' }, acme.token, { 'idempotency-key': 'bulk-none' });
    t.equal(fixed.status, 200, 'the refusal freed its Idempotency-Key');
    t.equal(fixed.json.data.accepted, 1);
  });

  t.test('one accepted of three: 200, and the batch reads back with the same totals', async (t) => {
    const r = await bulk({ messages: [{ to: 'nope', message: 'a' }, { to: '0241234567', message: 'b' }, { to: '0241234567', message: 'c', from: 'TWELVE_CHARS' }], from: 'Ferry' });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.success, true);
    t.same({ total: r.json.data.total, accepted: r.json.data.accepted, rejected: r.json.data.rejected }, { total: 3, accepted: 1, rejected: 2 });
    const b = await batch(r.json.data.batchId);
    t.equal(b.status, 200, b.text);
    t.same({ total: b.json.data.total, accepted: b.json.data.accepted, rejected: b.json.data.rejected }, { total: 3, accepted: 1, rejected: 2 });
    t.equal(Object.values(b.json.data.counts as Record<string, number>).reduce((x, y) => x + y, 0), 1, 'counts add up to the accepted');
  });

  t.test('a batch recorded before its totals were (or whose totals could not be written) reads back from its messages', async (t) => {
    const r = await bulk({ to: ['0241234567', '0241234568'], message: 'old', from: 'Ferry' });
    t.equal(r.status, 200);
    await d.daemon.db.query(`DELETE FROM sms_batches WHERE id = $1`, [r.json.data.batchId]);
    const b = await batch(r.json.data.batchId);
    t.equal(b.status, 200);
    t.same({ total: b.json.data.total, accepted: b.json.data.accepted, rejected: b.json.data.rejected }, { total: 2, accepted: 2, rejected: null });
  });

  t.test('request-level errors', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['neither form', { message: 'x', from: 'Ferry' }],
      ['both forms', { to: ['0241234567'], messages: [{ to: '0241234567', message: 'x' }], message: 'x', from: 'Ferry' }],
      ['to without message', { to: ['0241234567'], from: 'Ferry' }],
      ['messages with a shared message', { messages: [{ to: '0241234567' }], message: 'x', from: 'Ferry' }],
      ['empty list', { messages: [], from: 'Ferry' }],
      ['too many', { to: new Array(10_001).fill('0241234567'), message: 'x', from: 'Ferry' }],
    ];
    for (const [what, body] of cases) {
      const r = await bulk(body);
      t.equal(r.status, 400, what);
      t.equal(r.json.code, 'VALIDATION_ERROR', what);
    }
    const unknown = await batch('bat_unknown');
    t.equal(unknown.status, 404);
    t.equal(unknown.json.code, 'BATCH_NOT_FOUND');
  });

  t.test('Idempotency-Key on bulk: replayed, not sent twice', async (t) => {
    const body = { to: ['0241234567', '0241234568'], message: 'bulk once', from: 'Ferry' };
    const first = await bulk(body, acme.token, { 'idempotency-key': 'bulk-key-1' });
    t.equal(first.status, 200);
    const again = await bulk(body, acme.token, { 'idempotency-key': 'bulk-key-1' });
    t.equal(again.headers.get('idempotent-replayed'), 'true');
    t.equal(again.json.data.batchId, first.json.data.batchId);
    t.equal(await countBatch(first.json.data.batchId), 2);
  });

  t.test('a whole-batch refusal (credit) writes nothing', async (t) => {
    const pricing = await d.adminCall('GET', '/admin/pricing');
    await d.adminCall('PUT', '/admin/pricing', { defaultPrice: 0.05, entries: [] });
    t.teardown(() => d.adminCall('PUT', '/admin/pricing', pricing));
    const before = Number((await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages`)).rows[0].n);
    const r = await bulk({ to: ['0241234567', '0241234568'], message: 'no money', from: 'Ferry' }, acme.token, { 'idempotency-key': 'bulk-key-2' });
    t.equal(r.status, 402, r.text);
    t.equal(r.json.code, 'INSUFFICIENT_CREDIT');
    const after = Number((await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages`)).rows[0].n);
    t.equal(after, before);
    await d.adminCall('POST', '/admin/accounts/acme/credit', { amount: 1 });
    const paid = await bulk({ to: ['0241234567', '0241234568'], message: 'no money', from: 'Ferry' }, acme.token, { 'idempotency-key': 'bulk-key-2' });
    t.equal(paid.status, 200, 'the refused request freed its key');
    t.equal(paid.json.data.accepted, 2);
    t.equal(paid.json.data.cost, 0.1);
    t.equal(paid.json.data.results[0].cost, 0.05);
  });

  // Last: the ~10,000 queued messages keep the dispatcher (and an embedded database) busy for a while.
  t.test('10,000 items with a few bad ones: per-item codes, the rest accepted', async (t) => {
    const messages: unknown[] = [];
    for (let i = 0; i < 10_000; i++) messages.push({ to: `024${String(1_000_000 + i).padStart(7, '0')}`, message: `bulk ${i}` });
    const bad: Record<number, string> = {
      5: 'INVALID_PHONE_NUMBER',
      17: 'INVALID_SENDER_ID',
      42: 'MESSAGE_TOO_LONG',
      99: 'VALIDATION_ERROR',
      100: 'VALIDATION_ERROR',
      9_999: 'INVALID_SENDER_ID',
    };
    messages[5] = { to: 'abc', message: 'bad number' };
    messages[17] = { to: '0241234567', message: 'long sender', from: 'TWELVE_CHARS' };
    messages[42] = { to: '0241234567', message: 'x'.repeat(1531) };
    messages[99] = { message: 'no recipient' };
    messages[100] = 12345;
    messages[9_999] = { to: '0241234567', message: 'empty sender', from: '' };
    const started = Date.now();
    const r = await bulk({ from: 'Ferry', reference: 'bulk-10k', messages });
    const ms = Date.now() - started;
    t.equal(r.status, 200, r.text.slice(0, 500));
    t.comment(`10,000-item bulk answered in ${ms} ms`);
    t.equal(r.json.code, 'SMS_BATCH_ACCEPTED');
    const data = r.json.data;
    t.match(data.batchId, /^bat_/);
    t.equal(data.total, 10_000);
    t.equal(data.rejected, Object.keys(bad).length);
    t.equal(data.accepted, 10_000 - Object.keys(bad).length);
    t.type(data.cost, 'number');
    t.equal(data.currency, 'USD');
    t.equal(data.results.length, 10_000);
    let inOrder = true;
    for (let i = 0; i < data.results.length; i++) if (data.results[i].index !== i) inOrder = false;
    t.ok(inOrder, 'results in request order, index = position');
    for (const [i, code] of Object.entries(bad)) {
      t.equal(data.results[Number(i)].status, 'rejected', `item ${i}`);
      t.equal(data.results[Number(i)].code, code, `item ${i}`);
      t.type(data.results[Number(i)].message, 'string');
    }
    const first = data.results[0];
    t.equal(first.status, 'accepted');
    t.match(first.messageId, /^msg_/);
    t.equal(first.to, '233241000000');
    t.equal(first.segments, 1);
    t.type(first.cost, 'number');
    t.equal(await countBatch(data.batchId), data.accepted, 'only accepted items are stored');

    const summary = await batch(data.batchId);
    t.equal(summary.status, 200, summary.text);
    t.equal(summary.json.code, 'SMS_BATCH');
    const s = summary.json.data;
    t.equal(s.batchId, data.batchId);
    t.equal(s.total, data.total, 'the total of the bulk answer');
    t.equal(s.accepted, data.accepted);
    t.equal(s.rejected, data.rejected);
    t.equal(
      Object.values(s.counts as Record<string, number>).reduce((a, b) => a + b, 0),
      data.accepted,
      'counts add up to the total',
    );
    t.type(s.cost, 'number');
    t.equal(s.currency, 'USD');
    t.ok(Date.parse(s.createdAt));
    t.equal(s.segments, data.accepted);

    const theirs = await batch(data.batchId, rival.token);
    t.equal(theirs.status, 404);
    t.equal(theirs.json.code, 'BATCH_NOT_FOUND');
  });
});
