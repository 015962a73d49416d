// USSD end to end over real sockets: menus (validation, versions, publish), service codes (reserved, taken,
// longest match), a tree walked over SMPP (the embedded SMSC simulator dials) and over Africa's Talking and Hubtel
// callbacks, paging, sessions and transcripts, events through the webhook outbox, the OTP code answered first,
// publish while sessions run, the network's timeout, resume.
import t from 'tap';
import { UssdServiceOp } from '../../../src/smpp/constants.js';
import { call, startDaemon, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel, REDIS_URL } from '../../helpers/env.js';
import { scanKeys, testRedisClient } from '../../helpers/redis.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { atHop, BANK_TREE, customer, newPhone, publishedMenu, until, ussdOf, ussdTo } from './ussd-helpers.js';

t.test(`USSD sessions (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_USSD_RESUME_MINUTES: '5' });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const rival = await customer(d, 'rival');
  const sim = simulatorOf(d.daemon)!.simulator;
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  t.equal((await acme.api('POST', '/v1/webhooks', { url: rx.url, events: ['ussd.session.started', 'ussd.session.ended'] })).status, 200);

  const menuId = await publishedMenu(acme.api, BANK_TREE, 'bank');
  const claim = await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384*12#', menuId });
  t.equal(claim.status, 200, claim.json?.code);
  t.equal(claim.json.data.serviceCode, '*384*12#');

  t.test('menus: validation on upload, versions, publish', async (t) => {
    const bad = await acme.api('POST', '/v1/ussd/menus', { name: 'bad', tree: { start: 'a', nodes: { a: { type: 'menu', text: 'Pick', options: [{ key: '1', label: 'x', next: 'zz' }] }, b: { type: 'end', text: 'ok' } } } });
    t.equal(bad.status, 400);
    t.equal(bad.json.code, 'INVALID_MENU_TREE');
    t.same(bad.json.data.errors.map((e: { field: string }) => e.field).sort(), ['tree.nodes.a.next', 'tree.nodes.b']);
    const missing = await acme.api('POST', '/v1/ussd/menus', { name: 'x', tree: { start: 'a', nodes: { a: { type: 'end' } } } });
    t.equal(missing.json.code, 'INVALID_MENU_TREE');
    const got = await acme.api('GET', `/v1/ussd/menus/${menuId}`);
    t.equal(got.json.data.publishedVersion, 1);
    t.same(got.json.data.tree, BANK_TREE);
    t.equal((await rival.api('GET', `/v1/ussd/menus/${menuId}`)).json.code, 'USSD_MENU_NOT_FOUND', "another account's menu is not found");
    const list = await acme.api('GET', '/v1/ussd/menus');
    t.ok(list.json.data.some((m: { id: string }) => m.id === menuId));
    const unpublishedDel = await acme.api('DELETE', `/v1/ussd/menus/${menuId}`);
    t.equal(unpublishedDel.json.code, 'USSD_MENU_IN_USE');
  });

  t.test('service codes: reserved OTP code, taken, one of menu or webhook, bad URL', async (t) => {
    t.equal((await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*889*142#', menuId })).json.code, 'USSD_SERVICE_CODE_RESERVED');
    t.equal((await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*889*142*7#', menuId })).json.code, 'USSD_SERVICE_CODE_RESERVED');
    const rivalMenu = await publishedMenu(rival.api, BANK_TREE);
    t.equal((await rival.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384*12#', menuId: rivalMenu })).json.code, 'USSD_SERVICE_CODE_TAKEN');
    t.equal((await rival.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384#', menuId, webhookUrl: 'https://example.com' })).json.code, 'VALIDATION_ERROR');
    t.equal((await rival.api('POST', '/v1/ussd/service-codes', { serviceCode: 'abc', menuId: rivalMenu })).json.code, 'VALIDATION_ERROR');
    t.equal((await rival.api('POST', '/v1/ussd/service-codes', { serviceCode: '*385#', webhookUrl: 'ftp://x' })).json.code, 'INVALID_APP_URL');
    const codes = await acme.api('GET', '/v1/ussd/service-codes');
    t.match(codes.json.data[0].signingSecret, /^whsec_/);
  });

  t.test('simulate: a walk with every screen; an extended code pre-fills the path', async (t) => {
    const r = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: '*384*12#', phoneNumber: '+233241112222', inputs: ['2', 'ten', '10'] });
    t.equal(r.status, 200, r.text);
    t.same(
      r.json.data.screens.map((s: { text: string }) => s.text),
      ['Ferry Bank\n1. Balance\n2. Send money\n3. Help', 'Enter amount', 'Digits only\nEnter amount', 'You sent 10 GHS'],
    );
    t.equal(r.json.data.ended, true);
    const pre = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: '*384*12*1#', phoneNumber: '233241112222' });
    t.same(pre.json.data.screens, [{ input: null, text: 'Your balance is 120.50 GHS', end: true }]);
    const s = await acme.api('GET', `/v1/ussd/sessions/${r.json.data.sessionId}`);
    t.equal(s.json.data.endStatus, 'Success');
    t.equal(s.json.data.hops, 4);
    t.equal(s.json.data.dialled, '*384*12#');
    t.same(
      s.json.data.transcript.map((e: { dir: string; text: string }) => `${e.dir}:${e.text.split('\n')[0]}`),
      ['in:*384*12#', 'out:Ferry Bank', 'in:2', 'out:Enter amount', 'in:ten', 'out:Digits only', 'in:10', 'out:You sent 10 GHS'],
    );
    const unknown = await rival.api('POST', '/v1/ussd/simulate', { serviceCode: '*384*12#', phoneNumber: '233241112222' });
    t.same([unknown.status, unknown.json.code], [404, 'USSD_SERVICE_CODE_NOT_FOUND'], "another account's code does not route");
  });

  t.test('over SMPP: the carrier dials, USSR continues, PSSR releases; the network end bit ends a session', async (t) => {
    const phone = newPhone();
    const info = Buffer.from([7, 0]);
    await sim.injectUssd({ source: phone, destination: '*384*12#', text: '*384*12#', op: UssdServiceOp.PSSR_INDICATION, sessionInfo: info });
    const [first] = await ussdTo(d, phone);
    t.equal(first.text, 'Ferry Bank\n1. Balance\n2. Send money\n3. Help');
    t.equal(first.tlvs?.ussd_service_op, UssdServiceOp.USSR_REQUEST, 'continue: USSR request');
    t.same(first.tlvs?.its_session_info, info);
    t.equal(first.registeredDelivery, 0);
    await sim.injectUssd({ source: phone, destination: '*384*12#', text: '2', op: UssdServiceOp.USSR_CONFIRM, sessionInfo: info });
    t.equal((await ussdTo(d, phone, 2))[1].text, 'Enter amount');
    await sim.injectUssd({ source: phone, destination: '*384*12#', text: '25', op: UssdServiceOp.USSR_CONFIRM, sessionInfo: info });
    const end = (await ussdTo(d, phone, 3))[2];
    t.equal(end.text, 'You sent 25 GHS');
    t.equal(end.tlvs?.ussd_service_op, UssdServiceOp.PSSR_RESPONSE, 'release: PSSR response');
    t.same(end.tlvs?.its_session_info, Buffer.from([7, 1]), 'end of session bit set');

    // A second dialogue the network ends (its_session_info end bit) after one screen.
    const other = newPhone();
    await sim.injectUssd({ source: other, destination: '*384*12#', text: '*384*12#', op: UssdServiceOp.PSSR_INDICATION, sessionInfo: Buffer.from([9, 0]) });
    await ussdTo(d, other);
    await sim.injectUssd({ source: other, destination: '*384*12#', text: '', op: UssdServiceOp.USSR_CONFIRM, sessionInfo: Buffer.from([9, 1]) });
    const s = await until(
      () => acme.api('GET', `/v1/ussd/sessions?phone=${other}`),
      (r) => r.json.data.sessions[0]?.status === 'ended',
    );
    t.same([s.json.data.sessions[0].endStatus, s.json.data.sessions[0].channel], ['Incomplete', 'smpp']);
  });

  t.test('the OTP code still answers first over SMPP; an unclaimed code is not answered (as before)', async (t) => {
    const phone = newPhone();
    await sim.injectUssd({ source: phone, destination: '*889*142#', text: '*889*142#', op: UssdServiceOp.PSSR_INDICATION });
    const [otp] = await ussdTo(d, phone);
    t.equal(otp.text, 'No pending code');
    await sim.injectUssd({ source: phone, destination: '*999#', text: '*999#', op: UssdServiceOp.PSSR_INDICATION });
    await sim.injectUssd({ source: phone, destination: '*384*12#', text: '*384*12*3#', op: UssdServiceOp.PSSR_INDICATION });
    const screens = await ussdTo(d, phone, 2);
    t.equal(screens[1].text, 'Call 100 for help', 'the next dialogue is answered; the unclaimed one was not');
    t.equal(screens.length, 2);
  });

  t.test("Africa's Talking callbacks: CON/END text/plain, secret and allow-list, end-of-session notice", async (t) => {
    const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    t.equal(c.status, 200, c.json?.code);
    const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
    const base = { sessionId: 'ATUid_1', serviceCode: '*384*12#', phoneNumber: '+254711000111', networkCode: '63902' };
    let r = await atHop(d, path, { ...base, text: '' });
    t.equal(r.status, 200);
    t.match(r.type, /^text\/plain/);
    t.equal(r.text, 'CON Ferry Bank\n1. Balance\n2. Send money\n3. Help');
    r = await atHop(d, path, { ...base, text: '2' });
    t.equal(r.text, 'CON Enter amount');
    r = await atHop(d, path, { ...base, text: '2*300' });
    t.equal(r.text, 'END You sent 300 GHS');
    const wrong = await atHop(d, `${c.json.data.callbackPath}?key=nope`, { ...base, text: '' });
    t.equal(wrong.status, 401);
    const listed = await acme.api('GET', '/v1/ussd/connectors');
    t.notOk('secret' in listed.json.data[0], 'the secret is shown once');

    // An IP allow-list without a secret: loopback allowed, then one that is not.
    const byIp = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking', secret: false, allowIps: ['127.0.0.1'] });
    t.equal((await atHop(d, byIp.json.data.callbackPath, { ...base, sessionId: 'ATUid_ip', text: '1' })).text, 'END Your balance is 120.50 GHS', 'pre-filled text on the first hop');
    const elsewhere = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking', secret: false, allowIps: ['203.0.113.9'] });
    t.equal((await atHop(d, elsewhere.json.data.callbackPath, { ...base, text: '' })).status, 401);

    // The network drops a session: AT's end-of-session notice.
    await atHop(d, path, { ...base, sessionId: 'ATUid_2', text: '' });
    t.equal((await atHop(d, `${c.json.data.callbackPath}/events?key=${encodeURIComponent(c.json.data.secret)}`, { ...base, sessionId: 'ATUid_2', status: 'Incomplete' })).text, 'OK');
    const s = await acme.api('GET', '/v1/ussd/sessions?channel=africastalking&limit=1');
    t.same([s.json.data.sessions[0].status, s.json.data.sessions[0].endStatus], ['ended', 'Incomplete']);

    // Resume: the same phone dialling again within the window continues where it was.
    r = await atHop(d, path, { ...base, sessionId: 'ATUid_3', text: '' });
    t.equal(r.text, 'CON Ferry Bank\n1. Balance\n2. Send money\n3. Help');
    await atHop(d, path, { ...base, sessionId: 'ATUid_3', text: '2' });
    await atHop(d, `${c.json.data.callbackPath}/events?key=${encodeURIComponent(c.json.data.secret)}`, { ...base, sessionId: 'ATUid_3', status: 'Incomplete' });
    r = await atHop(d, path, { ...base, sessionId: 'ATUid_4', text: '' });
    t.equal(r.text, 'CON Enter amount', 'resumed at the amount prompt');
    r = await atHop(d, path, { ...base, sessionId: 'ATUid_4', text: '40' });
    t.equal(r.text, 'END You sent 40 GHS');
    const resumed = await acme.api('GET', '/v1/ussd/sessions?channel=africastalking&limit=1');
    t.match(resumed.json.data.sessions[0].resumedFrom, /^ussd_/);
  });

  t.test("Hubtel's JSON dialect behind the same core", async (t) => {
    const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'hubtel' });
    const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
    const base = { Mobile: '233200000111', SessionId: 'hub-1', ServiceCode: '*384*12#', Operator: 'mtn' };
    let r = await call(d.api, 'POST', path, { body: { ...base, Type: 'Initiation', Message: '*384*12#' } });
    t.same(r.json, { Type: 'Response', Message: 'Ferry Bank\n1. Balance\n2. Send money\n3. Help' });
    r = await call(d.api, 'POST', path, { body: { ...base, Type: 'Response', Message: '3' } });
    t.same(r.json, { Type: 'Release', Message: 'Call 100 for help' });
    r = await call(d.api, 'POST', path, { body: { ...base, SessionId: 'hub-x', Type: 'Initiation', Message: '*384*12*1#' } });
    t.same(r.json, { Type: 'Release', Message: 'Your balance is 120.50 GHS' }, 'an extended code dialled pre-fills the path');
    await call(d.api, 'POST', path, { body: { ...base, SessionId: 'hub-2', Type: 'Initiation', Message: '*384*12#' } });
    r = await call(d.api, 'POST', path, { body: { ...base, SessionId: 'hub-2', Type: 'Timeout', Message: '' } });
    t.equal(r.json.Type, 'Release');
    const s = await acme.api('GET', '/v1/ussd/sessions?channel=hubtel&endStatus=Incomplete');
    t.equal(s.json.data.sessions.length, 1);
  });

  t.test('paging: 98 More and 0 Back, an option on page 2 chosen', async (t) => {
    const options = Array.from({ length: 12 }, (_, i) => ({ key: String(i + 1), label: `Bundle ${i + 1}: 1GB valid for 30 days`, next: i === 10 ? 'eleven' : 'other' }));
    const id = await publishedMenu(acme.api, { start: 'm', nodes: { m: { type: 'menu', text: 'Data bundles', options }, eleven: { type: 'end', text: 'Bundle 11 bought' }, other: { type: 'end', text: 'Other bundle' } } });
    await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*500#', menuId: id });
    const r = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: '*500#', phoneNumber: '233241112223', inputs: ['98', '0', '98', '98', '11'] });
    const [p1, p2, back, again, p3, done] = r.json.data.screens.map((s: { text: string }) => s.text);
    for (const s of [p1, p2, back, again, p3]) t.ok(s.length <= 182, `${s.length} characters`);
    t.match(p1, /98 More$/);
    t.notMatch(p1, /0 Back/);
    t.match(p2, /98 More\n0 Back$/);
    t.equal(back, p1);
    t.equal(again, p2);
    t.match(p3, /11\. Bundle 11/);
    t.match(p3, /\n0 Back$/);
    t.notMatch(p3, /98 More/);
    t.equal(done, 'Bundle 11 bought');
  });

  t.test('hops of one session sent at once are applied one after the other, never mixed', async (t) => {
    const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
    const base = { sessionId: 'race-1', serviceCode: '*384*12#', phoneNumber: '233200000777', networkCode: '' };
    await atHop(d, path, { ...base, text: '' });
    await atHop(d, path, { ...base, text: '2' });
    const answers = await Promise.all([atHop(d, path, { ...base, text: '2*x' }), atHop(d, path, { ...base, text: '2*x*8' })]);
    // Whichever arrives first: x is refused then 8 ends it, or 8 ends it and the late 2*x opens a new session
    // (Africa's Talking repeats every input) at the same refusal. Never a mixed or lost hop.
    t.same(answers.map((a) => a.text).sort(), ['CON Digits only\nEnter amount', 'END You sent 8 GHS']);
    const rows = (await d.daemon.db.query<{ hops: number; n: number }>(`SELECT hops, jsonb_array_length(transcript)::int AS n FROM ussd_sessions WHERE phone = '233200000777' AND status = 'ended'`)).rows;
    for (const r of rows) t.equal(r.n, r.hops * 2, 'each hop: its input and its screen');
  });

  t.test('publish while sessions run: a live session finishes on its version, a new one gets the new', async (t) => {
    const id = await publishedMenu(acme.api, { start: 'm', nodes: { m: { type: 'menu', text: 'V1', options: [{ key: '1', label: 'Go', next: 'e' }] }, e: { type: 'end', text: 'Done v1' } } });
    await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*600#', menuId: id });
    const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
    const base = { serviceCode: '*600#', phoneNumber: '233200000222', networkCode: '62001' };
    t.equal((await atHop(d, path, { ...base, sessionId: 'old', text: '' })).text, 'CON V1\n1. Go');
    const put = await acme.api('PUT', `/v1/ussd/menus/${id}`, { tree: { start: 'm', nodes: { m: { type: 'menu', text: 'V2', options: [{ key: '1', label: 'Go', next: 'e' }] }, e: { type: 'end', text: 'Done v2' } } } });
    t.same([put.json.data.latestVersion, put.json.data.publishedVersion], [2, 1], 'a draft until published');
    t.equal((await atHop(d, path, { ...base, sessionId: 'draft', text: '' })).text, 'CON V1\n1. Go', 'the draft is not live');
    const pub = await acme.api('POST', `/v1/ussd/menus/${id}/publish`, {});
    t.equal(pub.json.data.publishedVersion, 2);
    t.equal((await atHop(d, path, { ...base, sessionId: 'new', text: '' })).text, 'CON V2\n1. Go');
    t.equal((await atHop(d, path, { ...base, sessionId: 'old', text: '1' })).text, 'END Done v1', 'the running session keeps v1');
    const versions = await acme.api('GET', `/v1/ussd/menus/${id}/versions`);
    t.same(versions.json.data.map((v: { version: number; live: boolean }) => [v.version, v.live]), [[2, true], [1, false]]);
    const v1 = await acme.api('GET', `/v1/ussd/menus/${id}/versions/1`);
    t.same([v1.json.data.live, v1.json.data.tree.nodes.m.text], [false, 'V1']);
    t.equal((await acme.api('GET', `/v1/ussd/menus/${id}/versions/9`)).json.code, 'USSD_MENU_NOT_FOUND');
  });

  t.test("the network's timeout: an idle session is ended Incomplete by the sweep", async (t) => {
    const ussd = ussdOf(d);
    const r = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const path = `${r.json.data.callbackPath}?key=${encodeURIComponent(r.json.data.secret)}`;
    await atHop(d, path, { sessionId: 'idle-1', serviceCode: '*384*12#', phoneNumber: '233200000333', networkCode: '', text: '' });
    ussd.setClock(() => Date.now() + 181_000);
    t.teardown(() => ussd.setClock(Date.now));
    t.ok((await ussd.core.sweep()) >= 1);
    const s = await acme.api('GET', '/v1/ussd/sessions?phone=233200000333');
    t.same([s.json.data.sessions[0].endStatus, s.json.data.sessions[0].error], ['Incomplete', 'NETWORK_TIMEOUT']);
    // A late hop of the dropped session starts nothing new on the old key: it begins again.
    ussd.setClock(Date.now);
  });

  t.test('a live session reads as of its last hop; with Redis its state is there, with a TTL, until it ends', async (t) => {
    const c = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const path = `${c.json.data.callbackPath}?key=${encodeURIComponent(c.json.data.secret)}`;
    const base = { sessionId: 'live-1', serviceCode: '*384*12#', phoneNumber: '233200000666', networkCode: '' };
    await atHop(d, path, { ...base, text: '' });
    await atHop(d, path, { ...base, text: '2' });
    const live = await acme.api('GET', '/v1/ussd/sessions?phone=233200000666');
    const id = live.json.data.sessions[0].id;
    t.same([live.json.data.sessions[0].status, live.json.data.sessions[0].hops], ['active', 2]);
    const one = await acme.api('GET', `/v1/ussd/sessions/${id}`);
    t.same(one.json.data.transcript.map((e: { text: string }) => e.text.split('\n')[0]), ['*384*12#', 'Ferry Bank', '2', 'Enter amount']);
    const sql = (await d.daemon.db.query<{ n: number }>(`SELECT jsonb_array_length(transcript)::int AS n FROM ussd_sessions WHERE id = $1`, [id])).rows[0].n;
    if (REDIS_URL) {
      t.equal(sql, 2, 'with Redis the SQL row holds the start until the end');
      const redis = testRedisClient();
      t.teardown(() => redis.disconnect());
      const keys = await scanKeys(redis, `${d.reuse.env.FERRY_REDIS_KEY_PREFIX}ussd:live:*live-1}`);
      t.equal(keys.length, 1, 'the live copy is in Redis');
      t.ok((await redis.pttl(keys[0])) > 180_000, 'with a TTL past the session timeout');
    } else t.equal(sql, 4, 'embedded, the SQL row is the live state');
    t.equal((await atHop(d, path, { ...base, text: '2*5' })).text, 'END You sent 5 GHS');
    const done = (await d.daemon.db.query<{ n: number; hops: number }>(`SELECT jsonb_array_length(transcript)::int AS n, hops FROM ussd_sessions WHERE id = $1`, [id])).rows[0];
    t.same(done, { n: 6, hops: 3 }, 'the ended row holds the whole transcript');
  });

  t.test('a session is bounded: at most 200 hops, then the apology (Failed, TOO_MANY_HOPS)', async (t) => {
    const core = ussdOf(d).core;
    const key = 'test:many-hops';
    await core.begin({ channel: 'simulate', networkKey: key, phone: '233200000555', dialled: '*384*12#', accountId: acme.accountId });
    let last = null;
    for (let i = 0; i < 250 && !last?.end; i++) last = await core.input(key, '9'.repeat(300));
    t.same(last, { text: 'Sorry, this service is not available right now. Please try again later.', end: true, sessionId: last?.sessionId });
    const s = await acme.api('GET', `/v1/ussd/sessions/${last!.sessionId}`);
    t.same([s.json.data.hops, s.json.data.endStatus, s.json.data.error], [200, 'Failed', 'TOO_MANY_HOPS']);
    t.equal(s.json.data.lastInput.length, 182, 'an input is cut to a screen');
  });

  t.test('sessions: filters and cursor; events started/ended through the outbox', async (t) => {
    const page1 = await acme.api('GET', '/v1/ussd/sessions?limit=3');
    t.equal(page1.json.data.sessions.length, 3);
    const page2 = await acme.api('GET', `/v1/ussd/sessions?limit=3&cursor=${page1.json.data.nextCursor}`);
    t.ok(page2.json.data.sessions.every((s: { id: string }) => s.id < page1.json.data.sessions[2].id), 'older on the next page');
    t.equal((await acme.api('GET', '/v1/ussd/sessions/ussd_nope')).json.code, 'USSD_SESSION_NOT_FOUND');
    const total = (await acme.api('GET', '/v1/ussd/sessions?status=ended&limit=200')).json.data.sessions.length;
    const got = await until(
      async () => rx.received.filter((r) => r.json?.type === 'ussd.session.ended'),
      (ended) => ended.length >= total,
    );
    t.ok(got.length >= total, `${got.length} ended events for ${total} ended sessions`);
    const success = got.find((r) => r.json.data.status === 'Success')!;
    t.match(success.json.data, { sessionId: /^ussd_/, status: 'Success', hopsCount: Number, durationInMillis: Number });
    t.ok(rx.received.some((r) => r.json?.type === 'ussd.session.started'));
    t.ok(success.headers['webhook-signature'], 'signed');
  });
});
