// Service codes belong to their owner: another account cannot claim a code's extensions or parents (409
// USSD_SERVICE_CODE_TAKEN), so a handset dialling an extension reaches the owner's menu over SMPP; claims that
// overlap, made at once (in one daemon, and across two sharing Postgres), never both win; overlapping claims kept
// from before route to the older one. Another account's menu and codes are not told apart from missing ones
// (delete 404, simulate 404). The OTP fallback is served on every ingress: Africa's Talking, Hubtel, simulate.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { MenuTree } from '../../../src/channels/ussd/menu-tree.js';
import { UssdServiceOp } from '../../../src/smpp/constants.js';
import { call, LogLines, startDaemon, type TestDaemon, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel, DATABASE_URL } from '../../helpers/env.js';
import { atHop, BANK_TREE, customer, newPhone, publishedMenu, ussdOf, ussdTo } from './ussd-helpers.js';

t.setTimeout(300_000);

const PIN_TREE: MenuTree = {
  start: 'pin',
  nodes: { pin: { type: 'input', text: 'Enter your PIN', var: 'pin', next: 'done' }, done: { type: 'end', text: 'Thank you' } },
};
const BALANCE = 'Your balance is 120.50 GHS';
const OTP_CODE = '*889*142#';

/** An OTP requested over REST for an international phone; the code as the SMS carried it. */
async function otpFor(d: TestDaemon, api: Awaited<ReturnType<typeof customer>>['api'], phone: string): Promise<string> {
  const r = await api('POST', '/v1/otp/request', { phone: `+${phone}`, from: 'Ferry', message: 'Your code is {code}.' });
  if (r.status !== 200) throw new Error(r.text);
  const sim = simulatorOf(d.daemon)!.simulator;
  const until = Date.now() + 10_000;
  for (;;) {
    const sms = sim.received().find((m) => m.destinations[0] === phone && m.tlvs?.ussd_service_op === undefined);
    if (sms) return /code is ([A-Z0-9]+)\./.exec(sms.text)![1];
    if (Date.now() > until) throw new Error(`no OTP SMS to ${phone}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

t.test(`USSD service codes belong to their owner (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const sim = simulatorOf(d.daemon)!.simulator;
  const acme = await customer(d, 'acme');
  const rival = await customer(d, 'rival');
  const acmeMenu = await publishedMenu(acme.api, BANK_TREE, 'bank');
  const rivalMenu = await publishedMenu(rival.api, PIN_TREE, 'pin');
  const claim = (c: typeof acme, serviceCode: string, menuId: string) => c.api('POST', '/v1/ussd/service-codes', { serviceCode, menuId });
  t.equal((await claim(acme, '*384*12#', acmeMenu)).status, 200);

  t.test("another account's extension or parent: 409 USSD_SERVICE_CODE_TAKEN; the handset reaches the owner", async (t) => {
    for (const code of ['*384*12*1#', '*384#', '*384*12#']) {
      const r = await claim(rival, code, rivalMenu);
      t.equal(r.status, 409, code);
      t.equal(r.json.code, 'USSD_SERVICE_CODE_TAKEN', code);
    }
    // Segment by segment: *38# and *384*13# share no claim path with *384*12#.
    t.equal((await claim(rival, '*38#', rivalMenu)).status, 200, '*38# is not a parent of *384*12#');
    t.equal((await claim(rival, '*384*13#', rivalMenu)).status, 200, 'a sibling extension is free');
    // The owner may claim its own extensions (another app behind one option), not the same code twice.
    t.equal((await claim(acme, '*384*12*9#', acmeMenu)).status, 200, 'the owner claims its own extension');
    t.equal((await claim(acme, '*384*12#', acmeMenu)).json.code, 'USSD_SERVICE_CODE_TAKEN', 'the same code twice');
    // The OTP fallback's code: its extensions and the codes it extends are reserved.
    for (const code of [OTP_CODE, '*889*142*7#', '*889#']) t.equal((await claim(rival, code, rivalMenu)).json.code, 'USSD_SERVICE_CODE_RESERVED', code);

    const phone = newPhone();
    await sim.injectUssd({ source: phone, destination: '*384*12*1#', text: '*384*12*1#', op: UssdServiceOp.PSSR_INDICATION, sessionInfo: Buffer.from([3, 0]) });
    const [screen] = await ussdTo(d, phone);
    t.equal(screen.text, BALANCE, "the handset dialling *384*12*1# over SMPP reaches acme's balance screen");
    const own = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: '*384*12*1#', phoneNumber: phone });
    t.same(own.json.data.screens, [{ input: null, text: BALANCE, end: true }], "acme's simulate shows the same");
  });

  t.test("another account's menu in use: 404 as if missing; the owner's: 409", async (t) => {
    const other = await rival.api('DELETE', `/v1/ussd/menus/${acmeMenu}`);
    t.equal(other.status, 404);
    t.equal(other.json.code, 'USSD_MENU_NOT_FOUND');
    const missing = await rival.api('DELETE', '/v1/ussd/menus/menu_nope');
    t.same([missing.status, missing.json.code, missing.json.message], [other.status, other.json.code, other.json.message], 'the same answer as a menu that does not exist');
    const mine = await acme.api('DELETE', `/v1/ussd/menus/${acmeMenu}`);
    t.same([mine.status, mine.json.code], [409, 'USSD_MENU_IN_USE']);
    t.equal((await acme.api('GET', `/v1/ussd/menus/${acmeMenu}`)).status, 200, 'still there');
  });

  t.test("simulate: an unclaimed code and another account's code answer the same 404", async (t) => {
    const theirs = await rival.api('POST', '/v1/ussd/simulate', { serviceCode: '*384*12#', phoneNumber: '233241112222' });
    const nobody = await rival.api('POST', '/v1/ussd/simulate', { serviceCode: '*777#', phoneNumber: '233241112222' });
    t.equal(nobody.status, 404);
    t.equal(nobody.json.code, 'USSD_SERVICE_CODE_NOT_FOUND');
    t.same([theirs.status, theirs.json.code, theirs.json.message, theirs.json.data], [nobody.status, nobody.json.code, nobody.json.message, nobody.json.data], 'indistinguishable');
    t.equal((await rival.api('POST', '/v1/ussd/simulate', { serviceCode: 'abc', phoneNumber: '233241112222' })).json.code, 'VALIDATION_ERROR');
    const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
    t.ok(doc.paths['/ussd/simulate'].post.responses['404'], 'the 404 is in the OpenAPI document');
  });

  t.test('overlapping claims kept from before the check route to the older claim, and are named', async (t) => {
    // As a database from before the fix may hold them: rival's extension claimed after acme's code.
    await d.daemon.db.query(
      `INSERT INTO ussd_service_codes (id, account_id, code, menu_id, dialect, created_at) VALUES ('usc_legacy', $1, '384*12*5', $2, 'africastalking', $3)`,
      [rival.accountId, rivalMenu, Date.now() + 1000],
    );
    t.teardown(() => d.daemon.db.query(`DELETE FROM ussd_service_codes WHERE id = 'usc_legacy'`).then(() => undefined));
    const overlaps = await ussdOf(d).store.overlaps();
    t.same(
      overlaps.map((o) => [o.older.code, o.older.accountId, o.newer.code, o.newer.accountId]),
      [['384*12', acme.accountId, '384*12*5', rival.accountId]],
      'the pair the start-up warning names',
    );
    const phone = newPhone();
    await sim.injectUssd({ source: phone, destination: '*384*12*5#', text: '*384*12*5#', op: UssdServiceOp.PSSR_INDICATION, sessionInfo: Buffer.from([4, 0]) });
    t.match((await ussdTo(d, phone))[0].text, /^Invalid choice\nFerry Bank/, "acme's menu (5 is no option there), not rival's PIN prompt");
    const sim2 = await rival.api('POST', '/v1/ussd/simulate', { serviceCode: '*384*12*5#', phoneNumber: phone });
    t.equal(sim2.json.code, 'USSD_SERVICE_CODE_NOT_FOUND', 'rival cannot reach it either');
  });

  t.test('overlapping claims at once: exactly one wins', async (t) => {
    for (let i = 0; i < 5; i++) {
      const [a, b] = await Promise.all([claim(acme, `*51${i}*1#`, acmeMenu), claim(rival, `*51${i}#`, rivalMenu)]);
      t.same([a.status, b.status].sort(), [200, 409], `pair ${i}: one 200, one 409`);
      const held = await d.daemon.db.query<{ n: number }>(`SELECT count(DISTINCT account_id)::int AS n FROM ussd_service_codes WHERE code IN ($1, $2)`, [`51${i}*1`, `51${i}`]);
      t.equal(held.rows[0].n, 1, 'one owner');
    }
  });

  t.test("the OTP fallback on every ingress: Africa's Talking, Hubtel, simulate (the account's own codes), SMPP", async (t) => {
    const phone = newPhone();
    const code = await otpFor(d, acme.api, phone);
    const expected = `Your code is ${code}, valid 5 min`;

    const at = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const atPath = `${at.json.data.callbackPath}?key=${encodeURIComponent(at.json.data.secret)}`;
    const r = await atHop(d, atPath, { sessionId: 'otp-at-1', serviceCode: OTP_CODE, phoneNumber: `+${phone}`, networkCode: '62001', text: '' });
    t.same([r.status, r.text], [200, `END ${expected}`], "Africa's Talking gets the pending code");

    const hub = await acme.api('POST', '/v1/ussd/connectors', { dialect: 'hubtel' });
    const hubPath = `${hub.json.data.callbackPath}?key=${encodeURIComponent(hub.json.data.secret)}`;
    const h = await call(d.api, 'POST', hubPath, { body: { Type: 'Initiation', Mobile: phone, SessionId: 'otp-hub-1', ServiceCode: OTP_CODE, Message: OTP_CODE, Operator: 'mtn' } });
    t.same(h.json, { Type: 'Release', Message: expected }, 'Hubtel gets it');

    const s = await acme.api('POST', '/v1/ussd/simulate', { serviceCode: OTP_CODE, phoneNumber: phone });
    t.same(s.json.data, { sessionId: null, ended: true, screens: [{ input: null, text: expected, end: true }] }, "simulate by the OTP's owner");

    // A connector or a simulate names an account, not a phone the network vouches for: another account hears nothing.
    const rivalAt = await rival.api('POST', '/v1/ussd/connectors', { dialect: 'africastalking' });
    const rivalPath = `${rivalAt.json.data.callbackPath}?key=${encodeURIComponent(rivalAt.json.data.secret)}`;
    t.equal((await atHop(d, rivalPath, { sessionId: 'otp-at-2', serviceCode: OTP_CODE, phoneNumber: phone, networkCode: '', text: '' })).text, 'END No pending code', "not through another account's connector");
    t.same((await rival.api('POST', '/v1/ussd/simulate', { serviceCode: OTP_CODE, phoneNumber: phone })).json.data.screens, [{ input: null, text: 'No pending code', end: true }], "nor another account's simulate");

    await sim.injectUssd({ source: phone, destination: OTP_CODE, text: OTP_CODE, op: UssdServiceOp.PSSR_INDICATION, sessionInfo: Buffer.from([5, 0]) });
    const [smpp] = await ussdTo(d, phone);
    t.equal(smpp.text, expected, 'over SMPP as before');
    t.equal(smpp.tlvs?.ussd_service_op, UssdServiceOp.PSSR_RESPONSE);
    t.same(smpp.tlvs?.its_session_info, Buffer.from([5, 1]), 'released: the end-of-session bit set');
    t.equal(smpp.source, OTP_CODE);
  });
});

t.test(`overlapping claims at two instances sharing Postgres: exactly one wins (${backendLabel})`, { skip: DATABASE_URL ? false : 'the embedded database belongs to one process: two instances need Postgres' }, async (t) => {
  const a = await startDaemon({ FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('base64') });
  t.teardown(() => a.stop());
  const b = await startDaemon({ FERRY_DATA_DIR: mkdtempSync(join(tmpdir(), 'ferry-ussd-own-b-')) }, a.reuse);
  t.teardown(() => b.stopKeepingStore());
  const acme = await customer(a, 'acme');
  const rival = await customer(a, 'rival');
  const acmeMenu = await publishedMenu(acme.api, BANK_TREE);
  const rivalMenu = await publishedMenu(rival.api, PIN_TREE);
  // The same accounts' keys, calling instance B.
  const rivalAtB = (body: unknown) => call(b.api, 'POST', '/v1/ussd/service-codes', { token: rival.token, body });
  for (let i = 0; i < 8; i++) {
    const [x, y] = await Promise.all([
      acme.api('POST', '/v1/ussd/service-codes', { serviceCode: `*62${i}#`, menuId: acmeMenu }),
      rivalAtB({ serviceCode: `*62${i}*4#`, menuId: rivalMenu }),
    ]);
    t.same([x.status, y.status].sort(), [200, 409], `pair ${i}: one wins`);
  }
  const { rows } = await a.daemon.db.query<{ code: string; n: number }>(
    `SELECT split_part(code, '*', 1) AS code, count(DISTINCT account_id)::int AS n FROM ussd_service_codes GROUP BY 1 HAVING count(DISTINCT account_id) > 1`,
  );
  t.same(rows, [], 'no code path held by two accounts');
});

t.test(`overlapping claims kept from before are named at start (${backendLabel})`, async (t) => {
  const first = await startDaemon();
  // The one running at the end is stopped (and its storage removed).
  const running = { d: first };
  t.teardown(() => running.d.stop());
  const acme = await customer(first, 'acme');
  const rival = await customer(first, 'rival');
  await acme.api('POST', '/v1/ussd/service-codes', { serviceCode: '*384*12#', menuId: await publishedMenu(acme.api, BANK_TREE) });
  const rivalMenu = await publishedMenu(rival.api, PIN_TREE);
  await first.daemon.db.query(
    `INSERT INTO ussd_service_codes (id, account_id, code, menu_id, dialect, created_at) VALUES ('usc_old_parent', $1, '384', $2, 'africastalking', $3)`,
    [rival.accountId, rivalMenu, Date.now() + 1000],
  );
  await first.stopKeepingStore();
  const logs = new LogLines();
  running.d = await startDaemon({ FERRY_LOG_LEVEL: 'warn' }, first.reuse, logs);
  const [line] = logs.find(/overlapping service codes of two accounts/);
  t.ok(line, 'a warning at start');
  t.match(line, { older: { code: '*384*12#', account: acme.accountId }, newer: { code: '*384#', account: rival.accountId, id: 'usc_old_parent' } }, 'naming both claims and accounts');
});
