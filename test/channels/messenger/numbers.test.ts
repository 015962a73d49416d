// Business numbers per account (issue 42): two accounts, each with its own number on one daemon. What comes in on A's
// number is A's only (events, the 24-hour window, what is known of the user, template reviews); a webhook is checked
// with the app secret of the number it names; credentials never come out of the admin API or into a log; the send
// answer carries the wamid when the platform answers within messenger.inlineAttemptMs, and a slow platform's message
// is still sent exactly once; a second daemon on the same Postgres and Redis uses a number added on the first at once.
import { Writable } from 'node:stream';
import t from 'tap';
import { call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { sign } from './fixtures.js';
import { A, B, eventsOf, inboundBody, SECRETS } from './numbers-fixtures.js';
import { api, customer, messengerOf, newNumber, statusUntil } from './helpers.js';

// Two daemons sharing Postgres and Redis: numbers-shared.test.ts.
t.setTimeout(300_000);

t.test(`business numbers per account (${backendLabel})`, async (t) => {
  let logs = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs += String(chunk);
      done();
    },
  });
  const secretKey = 'cd'.repeat(32);
  const d = await startDaemon({ FERRY_MESSENGER_SIMULATOR_STATUS_DELAY_MS: '10', FERRY_MESSENGER_INLINE_ATTEMPT_MS: '4000', FERRY_SECURITY_SECRET_KEY: secretKey, FERRY_LOG_LEVEL: 'debug', FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' }, undefined, sink);
  t.teardown(() => d.stop());
  const sim = messengerOf(d).simulator!;
  const alpha = await customer(d, 'alpha');
  const beta = await customer(d, 'beta');
  const a = api(d, alpha.token);
  const b = api(d, beta.token);
  // Events are kept for accounts with an endpoint that takes them (nothing listens on port 9: they stay queued).
  for (const x of [a, b]) t.equal((await x.call('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).status, 200);

  const addedA = await d.adminCall('POST', '/admin/messenger/numbers', { ...A, account: 'alpha', verifyToken: 'verify-of-A' });
  const addedB = await d.adminCall('POST', '/admin/messenger/numbers', { ...B, account: 'beta' });
  t.match(addedA, { phoneNumberId: A.phoneNumberId, account: 'alpha', wabaId: A.wabaId, source: 'admin', credentials: { accessToken: /^hmac-sha256:/, appSecret: /^hmac-sha256:/, verifyToken: /^hmac-sha256:/ } });
  t.equal(addedB.credentials.verifyToken, null);

  t.test('the admin API: duplicates and a WABA of another account refused; credentials never shown', async (t) => {
    await t.rejects(d.adminCall('POST', '/admin/messenger/numbers', { ...A, account: 'beta' }), { code: 'MESSENGER_NUMBER_EXISTS' });
    await t.rejects(d.adminCall('POST', '/admin/messenger/numbers', { ...A, phoneNumberId: '300000000000009', account: 'beta' }), { code: 'VALIDATION_ERROR' });
    await t.rejects(d.adminCall('GET', '/admin/messenger/numbers/399999999999999'), { code: 'MESSENGER_NUMBER_NOT_FOUND' });
    const list = await d.adminCall('GET', '/admin/messenger/numbers');
    t.same(
      list.numbers.map((n: any) => [n.phoneNumberId, n.account, n.source]),
      [
        ['100000000000001', null, 'config'],
        [A.phoneNumberId, 'alpha', 'admin'],
        [B.phoneNumberId, 'beta', 'admin'],
      ],
    );
    const onlyBeta = await d.adminCall('GET', '/admin/messenger/numbers?account=beta');
    t.same(
      onlyBeta.numbers.map((n: any) => n.phoneNumberId),
      [B.phoneNumberId],
    );
    const shown = await call(d.admin, 'GET', `/admin/messenger/numbers/${A.phoneNumberId}`, { headers: { authorization: `Bearer ${d.adminToken}` } });
    for (const text of [JSON.stringify(addedA), JSON.stringify(addedB), JSON.stringify(list), shown.text]) {
      for (const s of SECRETS) t.notOk(text.includes(s), 'no credential in an admin answer');
    }
    const { rows } = await d.daemon.db.query<Record<string, string>>(`SELECT * FROM messenger_numbers`);
    for (const s of SECRETS) t.notOk(JSON.stringify(rows).includes(s), 'sealed at rest');
  });

  t.test("inbound on A's number: A's event, A's window, A's contact; B sees none of it", async (t) => {
    const user = newNumber();
    const wamid = await sim.userReply(user, 'hello alpha', 'Ama', A.phoneNumberId);
    t.same(await eventsOf(d, 'messenger.inbound', wamid), [alpha.accountId], 'the inbound event goes to A only');
    const { rows } = await d.daemon.db.query<{ account_id: string }>(`SELECT account_id FROM messenger_inbound WHERE wamid = $1`, [wamid]);
    t.equal(rows[0].account_id, alpha.accountId);

    const fromB = await b.send({ to: user, type: 'text', text: { body: 'B may not' } });
    t.equal(fromB.status, 422, fromB.text);
    t.equal(fromB.json.code, 'WA003', "A's window does not open B's");

    const fromA = await a.send({ to: user, type: 'text', text: { body: 'A may' } });
    t.equal(fromA.status, 200, fromA.text);
    t.match(fromA.json.data.wamid, /^wamid\./, 'the platform answered in time: the wamid is in the answer');
    t.equal(sim.sent.find((m) => m.wamid === fromA.json.data.wamid)?.from, A.phoneNumberId, "sent from A's number");

    const checkA = await a.call('GET', `/v1/messenger/numbers/check?phone=${user}`);
    // A knows the user from its own traffic: the inbound, or the delivery status of A's send if that came back first.
    t.match(checkA.json.data, { status: 'on_platform', source: /^(inbound|delivery)$/ }, "A's number knows the user from its own traffic");
    const checkB = await b.call('GET', `/v1/messenger/numbers/check?phone=${user}`);
    t.match(checkB.json.data, { status: 'on_platform', source: 'provider' }, "B's number learnt nothing from A's inbound: it asked the platform");

    const stolen = await b.send({ to: user, type: 'template', template: { name: 'hello_world', language: 'en_US' }, from: A.phoneNumberId });
    t.equal(stolen.status, 422);
    t.equal(stolen.json.code, 'MESSENGER_NO_NUMBER', "B cannot send from A's number");
    const shared = await b.send({ to: user, type: 'template', template: { name: 'hello_world', language: 'en_US' }, from: '100000000000001' });
    t.equal(shared.json.code, 'MESSENGER_NO_NUMBER', 'nor from the config number once it has its own');
  });

  t.test('a signature made with B’s app secret on A’s number is refused; so is a number Ferry does not have', async (t) => {
    const user = newNumber();
    const post = (raw: string, secret: string) => call(d.api, 'POST', '/v1/messenger/webhook', { raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(secret, raw) } });
    const onA = inboundBody(A.phoneNumberId, A.wabaId, user, `wamid.forged-${user}`);
    t.equal((await post(onA, B.appSecret)).status, 401);
    t.equal((await post(inboundBody('399999999999999', '399999999999999', user, `wamid.x-${user}`), B.appSecret)).status, 401);
    t.same(await eventsOf(d, 'messenger.inbound', `wamid.forged-${user}`), []);
    t.equal((await a.send({ to: user, type: 'text', text: { body: 'x' } })).json.code, 'WA003', 'no window opened');
    t.equal((await post(onA, A.appSecret)).status, 200, "A's own secret verifies");
    const hs = await call(d.api, 'GET', '/v1/messenger/webhook?hub.mode=subscribe&hub.verify_token=verify-of-A&hub.challenge=77');
    t.equal(hs.text, '77', "the handshake takes a number's verify token");
  });

  t.test("the same template name in A's and B's business accounts keeps its own review", async (t) => {
    const tpl = { name: 'order_update', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Order {{1}} shipped' }] };
    t.equal((await a.call('POST', '/v1/messenger/templates', tpl)).status, 200);
    t.equal((await b.call('POST', '/v1/messenger/templates', tpl)).status, 200);
    const statusOf = async (x: typeof a) => (await x.call('GET', '/v1/messenger/templates/order_update')).json.data.templates[0].status;
    for (let i = 0; i < 500 && ((await statusOf(a)) !== 'APPROVED' || (await statusOf(b)) !== 'APPROVED'); i++) await new Promise((r) => setTimeout(r, 20));
    t.equal(await statusOf(a), 'APPROVED');
    const raw = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ id: A.wabaId, changes: [{ field: 'message_template_status_update', value: { event: 'PAUSED', message_template_name: 'order_update', message_template_language: 'en_US', reason: 'NONE' } }] }],
    });
    const r = await call(d.api, 'POST', '/v1/messenger/webhook', { raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(A.appSecret, raw) } });
    t.equal(r.status, 200, r.text);
    t.equal(await statusOf(a), 'PAUSED', "A's template paused");
    t.equal(await statusOf(b), 'APPROVED', "B's of the same name and language keeps its review");
    t.same(await eventsOf(d, 'messenger.template.status', 'order_update:en_US'), [alpha.accountId, alpha.accountId, beta.accountId].sort(), 'each heard its own approval; only A the pause');
    const paused = await d.daemon.db.query<{ account_id: string }>(`SELECT account_id FROM webhook_events WHERE type = 'messenger.template.status' AND payload::text LIKE '%PAUSED%'`);
    t.same(
      paused.rows.map((x) => x.account_id),
      [alpha.accountId],
    );
  });

  t.test('hello_world is listed on every account', async (t) => {
    const list = (await b.call('GET', '/v1/messenger/templates')).json.data.templates;
    t.ok(list.some((x: any) => x.name === 'hello_world' && x.language === 'en_US' && x.status === 'APPROVED'));
  });

  t.test('a slow platform: the answer comes at the deadline without the wamid; the message is sent once and delivered', async (t) => {
    const user = newNumber();
    await sim.userReply(user, 'hi', 'Ama', A.phoneNumberId);
    sim.sendDelayMs = 8000;
    t.teardown(() => {
      sim.sendDelayMs = 0;
    });
    const r = await a.send({ to: user, type: 'text', text: { body: 'slowly' } });
    t.equal(r.status, 200, r.text);
    t.same({ wamid: r.json.data.wamid, status: r.json.data.status }, { wamid: null, status: 'accepted' });
    const s = await statusUntil(d, alpha.token, r.json.data.messageId, (x) => x.status === 'delivered' || x.status === 'read', 30_000);
    t.match(s.wamid, /^wamid\./);
    t.equal(sim.sent.filter((m) => m.to === user).length, 1, 'the platform got it once');
    t.equal(s.history.filter((h: any) => h.kind === 'attempt' || (h.kind === 'state' && h.status === 'sent')).length, 1, 'one attempt recorded');
  });

  t.test('rotation: the new token is used at once; the old one is refused by the platform', async (t) => {
    const rotated = await d.adminCall('POST', `/admin/messenger/numbers/${A.phoneNumberId}/rotate`, { accessToken: 'rotated-token-of-A-0123456789' });
    t.not(rotated.credentials.accessToken, addedA.credentials.accessToken, 'another fingerprint');
    t.equal(rotated.credentials.appSecret, addedA.credentials.appSecret, 'the app secret kept');
    const r = await a.send({ to: newNumber(), type: 'template', template: { name: 'hello_world', language: 'en_US' } });
    t.match(r.json.data.wamid, /^wamid\./, 'the embedded platform took the rotated token');
  });

  t.test('no credential in any log line', async (t) => {
    t.ok(logs.length > 0, 'logs were captured');
    for (const s of SECRETS) t.notOk(logs.includes(s), 'not logged');
  });
});
