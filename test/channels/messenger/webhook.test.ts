import t from 'tap';
import { call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { fixture, sign } from './fixtures.js';
import { api, customer, messengerOf, newNumber, statusUntil } from './helpers.js';

const SECRET = 'test-app-secret';

t.test(`the platform's webhooks (${backendLabel})`, async (t) => {
  // Statuses from the simulator never come within the test: this test sends them itself, signed like the platform.
  const d = await startDaemon({
    FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '600000',
    FERRY_MESSENGER_APP_SECRET: SECRET,
    FERRY_MESSENGER_ACCESS_TOKEN: 'test-token',
    FERRY_MESSENGER_VERIFY_TOKEN: 'verify-me',
  });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const a = api(d, acme.token);
  const { simulator: sim } = messengerOf(d);
  const ts = () => String(Math.floor(Date.now() / 1000));
  const post = (raw: string, signature = sign(SECRET, raw)) =>
    call(d.api, 'POST', '/v1/messenger/webhook', { raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature } });

  /** A template message, sent: its id and wamid. */
  async function sentMessage(to = newNumber()) {
    const r = await a.send({ to, type: 'template', template: { name: 'hello_world', language: { code: 'en_US' } } });
    const s = await statusUntil(d, acme.token, r.json.data.messageId, (x) => x.status === 'sent');
    return { id: r.json.data.messageId as string, wamid: s.wamid as string, to };
  }

  t.test('the hub.challenge handshake', async (t) => {
    const good = await call(d.api, 'GET', '/v1/messenger/webhook?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444');
    t.equal(good.status, 200);
    t.equal(good.text, '1158201444');
    const bad = await call(d.api, 'GET', '/v1/messenger/webhook?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1');
    t.equal(bad.status, 401);
  });

  t.test('a forged or missing signature is 401 and changes nothing', async (t) => {
    const m = await sentMessage();
    const raw = fixture('status-delivered.json', { wamid: m.wamid, phone: m.to, ts: ts() });
    t.equal((await post(raw, sign('wrong-secret', raw))).status, 401);
    t.equal((await post(raw, '')).status, 401);
    t.equal((await post(raw, sign(SECRET, raw + ' '))).status, 401, 'signed over other bytes');
    t.equal((await a.status(m.id)).json.data.status, 'sent');
  });

  t.test('statuses: deduplicated by (wamid, status), out of order never demotes', async (t) => {
    const m = await sentMessage();
    const vars = { wamid: m.wamid, phone: m.to, ts: ts() };
    t.equal((await post(fixture('status-read.json', vars))).status, 200);
    t.equal((await post(fixture('status-delivered.json', vars))).status, 200, 'delivered after read');
    t.equal((await post(fixture('status-read.json', vars))).status, 200, 'read again');
    t.equal((await post(fixture('status-sent.json', vars))).status, 200, 'sent again');
    const s = (await a.status(m.id)).json.data;
    t.equal(s.status, 'read');
    const states = s.history.filter((h: any) => h.kind === 'state').map((h: any) => h.status);
    t.same(states, ['queued', 'sent', 'read'], 'one change per state, none backwards');
    t.ok(s.history.some((h: any) => h.kind === 'late' && h.status === 'delivered'), 'the late delivered is recorded, not applied');
  });

  t.test('a failed status with 131026: WA002 beside 131026; the number is then known not to be on the platform', async (t) => {
    const m = await sentMessage();
    t.equal((await post(fixture('status-failed-131026.json', { wamid: m.wamid, phone: m.to, ts: ts() }))).status, 200);
    const s = (await a.status(m.id)).json.data;
    t.equal(s.status, 'failed');
    t.match(s.error, { code: 'WA002', providerCode: '131026' });
    const check = await a.call('GET', `/v1/messenger/numbers/check?phone=${m.to}`);
    t.match(check.json.data, { phone: m.to, status: 'not_on_platform', source: 'failure_131026' });
    const again = await a.send({ to: m.to, type: 'template', template: { name: 'hello_world', language: 'en_US' } });
    t.equal(again.status, 422);
    t.equal(again.json.code, 'WA002', 'refused at once');
  });

  t.test('inbound messages: stored once, open the window, teach the number', async (t) => {
    const to = newNumber();
    const before = await a.send({ to, type: 'text', text: { body: 'too early' } });
    t.equal(before.json.code, 'WA003');
    for (const file of ['inbound-text.json', 'inbound-button-reply.json']) {
      const raw = fixture(file, { wamid: `wamid.in-${file}-${to}`, phone: to, ts: ts() });
      t.equal((await post(raw)).status, 200);
      t.equal((await post(raw)).status, 200, 'the same message again');
    }
    const { rows } = await d.daemon.db.query<{ n: string }>(`SELECT count(*) AS n FROM messenger_inbound WHERE user_number = $1`, [to]);
    t.equal(Number(rows[0].n), 2, 'each inbound stored once');
    const after = await a.send({ to, type: 'text', text: { body: 'now the window is open' } });
    t.equal(after.status, 200, after.text);
    const check = await a.call('GET', `/v1/messenger/numbers/check?phone=${to}`);
    t.match(check.json.data, { status: 'on_platform', source: 'inbound' });
  });

  t.test('template review and quality updates', async (t) => {
    const r = await a.call('POST', '/v1/messenger/templates', { name: 'order_ready', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Order {{1}} is ready' }] });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.data.status, 'PENDING');
    // The simulator reviews it (a BODY with {{1}}: approved) and says so by a signed webhook.
    for (let i = 0; i < 500; i++) {
      if ((await a.call('GET', '/v1/messenger/templates/order_ready')).json.data.templates[0].status === 'APPROVED') break;
      await new Promise((res) => setTimeout(res, 20));
    }
    const listed = (await a.call('GET', '/v1/messenger/templates')).json.data.templates;
    t.equal(listed.find((x: any) => x.name === 'order_ready').status, 'APPROVED', 'approved by the review');
    t.ok(listed.some((x: any) => x.name === 'hello_world' && x.language === 'en_US' && x.status === 'APPROVED'), "the platform's sample is listed beside it");
    t.equal((await post(fixture('template-status.json', { name: 'order_ready', status: 'PAUSED', reason: 'NONE' }))).status, 200);
    const got = await a.call('GET', '/v1/messenger/templates/order_ready');
    t.equal(got.json.data.templates[0].status, 'PAUSED');
    t.equal((await post(fixture('quality-update.json'))).status, 200);
    await sim!.stop(); // the provider unreachable: the last webhook's rating answers
    const q = await a.call('GET', '/v1/messenger/quality');
    t.match(q.json.data, { rating: 'FLAGGED', tier: 'TIER_10K', source: 'webhook' });
  });
});
