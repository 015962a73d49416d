import t from 'tap';
import { call, startDaemon, type TestDaemon, gatewayOf, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

async function customer(d: TestDaemon, name: string) {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes: 'all' });
  return { accountId: account.id as string, token: key.token as string };
}

/** Polls until `done(value)` or the limit; returns the last value. */
async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, limitMs = 20_000): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = await fn();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test(`SMS status, resend and inbound over REST (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });
  t.teardown(() => d.stop());
  const sim = simulatorOf(d.daemon)!.simulator;
  const acme = await customer(d, 'acme');
  const rival = await customer(d, 'rival');
  const send = (body: unknown, token = acme.token) => call(d.api, 'POST', '/v1/sms/send', { token, body });
  const status = (id: string, token = acme.token) => call(d.api, 'GET', `/v1/sms/status/${id}`, { token });
  const finalStatus = (id: string) => until(() => status(id), (r) => !['queued', 'scheduled', 'submitted'].includes(r.json?.data?.status));

  t.test('status history reaches delivered; upstream names stay hidden', async (t) => {
    const sent = await send({ to: '0241234567', from: 'Ferry', message: 'track me', reference: 'st-1' });
    t.equal(sent.status, 200, sent.text);
    const id = sent.json.data.messageId;
    const r = await finalStatus(id);
    t.equal(r.status, 200);
    t.equal(r.json.code, 'SMS_STATUS');
    const s = r.json.data;
    t.equal(s.messageId, id);
    t.equal(s.channel, 'sms');
    t.equal(s.status, 'delivered');
    t.equal(s.to, '233241234567');
    t.equal(s.from, 'Ferry');
    t.equal(s.reference, 'st-1');
    t.equal(s.segments, 1);
    t.type(s.encoding, 'string');
    t.type(s.cost, 'number');
    t.equal(s.currency, 'USD');
    t.ok(Date.parse(s.createdAt));
    t.ok(Date.parse(s.submittedAt), 'submittedAt from the history');
    t.ok(Date.parse(s.finalAt));
    t.equal(s.error, null);
    t.equal(s.route, 'default');
    t.notOk('upstream' in s, 'no upstream unless the deployment shows it');
    t.type(s.attempts, 'number');
    t.equal(s.resendOf, null);
    t.same(s.resends, []);
    t.equal(s.batchId, null);
    const steps = s.history.map((h: { status: string }) => h.status);
    t.equal(steps[0], 'queued');
    t.ok(steps.includes('submitted'));
    t.equal(steps[steps.length - 1], 'delivered');
    for (const h of s.history) {
      t.ok(Date.parse(h.at));
      if (h.detail) t.notOk(Object.keys(h.detail).some((k) => k.startsWith('upstream')), 'no upstream keys in the detail');
    }
  });

  t.test("another account's message, or an unknown id: 404 MESSAGE_NOT_FOUND", async (t) => {
    const mine = await send({ to: '0241234567', from: 'Ferry', message: 'private' });
    const theirs = await status(mine.json.data.messageId, rival.token);
    t.equal(theirs.status, 404);
    t.equal(theirs.json.code, 'MESSAGE_NOT_FOUND');
    const unknown = await status('msg_00000000000000000000000000');
    t.equal(unknown.status, 404);
    t.equal(unknown.json.code, 'MESSAGE_NOT_FOUND');
    const writer = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: ['sms:send'] });
    const denied = await status(mine.json.data.messageId, writer.token);
    t.equal(denied.status, 403);
    t.equal(denied.json.data.requiredScope, 'sms:read');
  });

  t.test('resend of an undelivered message; NOT_RESENDABLE once delivered', async (t) => {
    sim.setBehaviour({ outcomes: { UNDELIV: 1 } });
    const sent = await send({ to: '0241234567', from: 'Ferry', message: 'first try', reference: 'rs-1' });
    const id = sent.json.data.messageId;
    const failed = await finalStatus(id);
    sim.setBehaviour({ outcomes: { DELIVRD: 1 } });
    t.equal(failed.json.data.status, 'undelivered');
    t.not(failed.json.data.error, null, 'the upstream error is shown');

    const notYours = await call(d.api, 'POST', '/v1/sms/resend', { token: rival.token, body: { messageId: id } });
    t.equal(notYours.status, 404);
    t.equal(notYours.json.code, 'MESSAGE_NOT_FOUND');

    const again = await call(d.api, 'POST', '/v1/sms/resend', { token: acme.token, body: { messageId: id } });
    t.equal(again.status, 200, again.text);
    t.equal(again.json.code, 'SMS_SENT');
    const re = again.json.data;
    t.equal(re.resendOf, id);
    t.not(re.messageId, id);
    t.equal(re.to, '233241234567');
    t.equal(re.from, 'Ferry');
    t.equal(re.channel, 'sms');
    t.equal(re.delivery.status, 'SENT');
    t.equal(re.reference, 'rs-1', "the original's reference by default");

    const original = await status(id);
    t.same(original.json.data.resends, [re.messageId]);
    const done = await finalStatus(re.messageId);
    t.equal(done.json.data.status, 'delivered');
    t.equal(done.json.data.resendOf, id);

    const delivered = await call(d.api, 'POST', '/v1/sms/resend', { token: acme.token, body: { messageId: re.messageId } });
    t.equal(delivered.status, 409);
    t.equal(delivered.json.code, 'NOT_RESENDABLE');
  });

  t.test('resend of a failed message (failed by the ledger before it was sent)', async (t) => {
    const later = await send({ to: '0241234568', from: 'Ferry', message: 'later', scheduledAt: new Date(Date.now() + 3_600_000).toISOString() });
    const id = later.json.data.messageId;
    await gatewayOf(d.daemon).ledger.transition(id, 'failed', { reason: 'test' }, 'MAX_ATTEMPTS');
    const failed = await status(id);
    t.equal(failed.json.data.status, 'failed');
    t.equal(failed.json.data.error, 'MAX_ATTEMPTS');
    const again = await call(d.api, 'POST', '/v1/sms/resend', { token: acme.token, body: { messageId: id, reference: 'rs-2' } });
    t.equal(again.status, 200, again.text);
    t.equal(again.json.data.resendOf, id);
    t.equal(again.json.data.reference, 'rs-2');
    t.equal(again.json.data.status, 'queued', 'sent now, not at the old schedule');
  });

  t.test('inbound messages: newest first, cursor pages, per account', async (t) => {
    await d.daemon.accounts.addNumber(acme.accountId, '233209990001');
    // The pool binds to the simulator in the background; MO needs a bound receiver.
    await until(
      async () => sim.sessions().length,
      (n) => n > 0,
    );
    for (const text of ['mo one', 'mo two', 'mo three']) {
      await sim.injectMo({ source: '233241112222', destination: '233209990001', text });
      await new Promise((r) => setTimeout(r, 5));
    }
    const inbound = (q = '', token = acme.token) => call(d.api, 'GET', `/v1/sms/inbound${q}`, { token });
    const all = await until(
      () => inbound(),
      (r) => r.json?.data?.messages?.length >= 3,
    );
    t.equal(all.status, 200, all.text);
    t.equal(all.json.code, 'SMS_INBOUND');
    t.same(
      all.json.data.messages.map((m: { message: string }) => m.message),
      ['mo three', 'mo two', 'mo one'],
    );
    const m = all.json.data.messages[0];
    t.match(m.id, /^mo_/);
    t.equal(m.from, '233241112222');
    t.equal(m.to, '233209990001');
    t.ok(Date.parse(m.receivedAt));
    t.notOk('upstream' in m);
    t.equal(all.json.data.nextCursor, null);

    const page1 = await inbound('?limit=2');
    t.equal(page1.json.data.messages.length, 2);
    t.type(page1.json.data.nextCursor, 'string');
    const page2 = await inbound(`?limit=2&after=${encodeURIComponent(page1.json.data.nextCursor)}`);
    t.same(
      page2.json.data.messages.map((x: { message: string }) => x.message),
      ['mo one'],
    );
    t.equal(page2.json.data.nextCursor, null);

    const theirs = await inbound('', rival.token);
    t.same(theirs.json.data.messages, [], "another account's inbox is empty");

    for (const q of ['?limit=0', '?limit=501', '?limit=abc', '?after=bm9wZQ']) {
      const bad = await inbound(q);
      t.equal(bad.status, 400, q);
      t.equal(bad.json.code, 'VALIDATION_ERROR', q);
    }
  });
});

t.test(`status with sms.showUpstreams: the upstream is named (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20', FERRY_SMS_SHOW_UPSTREAMS: 'true' });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const sent = await call(d.api, 'POST', '/v1/sms/send', { token: acme.token, body: { to: '0241234567', from: 'Ferry', message: 'where did it go' } });
  const r = await until(
    () => call(d.api, 'GET', `/v1/sms/status/${sent.json.data.messageId}`, { token: acme.token }),
    (x) => x.json?.data?.status === 'delivered',
  );
  t.equal(r.json.data.upstream, 'embedded');
  t.ok(
    r.json.data.history.some((h: { detail: Record<string, unknown> | null }) => h.detail?.upstream === 'embedded'),
    'history details keep the upstream',
  );
});
