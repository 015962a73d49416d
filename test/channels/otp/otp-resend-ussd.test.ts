import t from 'tap';
import { UssdServiceOp } from '../../../src/smpp/constants.js';
import type { ReceivedMessage } from '../../../src/sim/smpp/simulator.js';
import { call, startDaemon, type TestDaemon, otpOf, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

async function customer(d: TestDaemon, name: string) {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes: 'all' });
  return { accountId: account.id as string, token: key.token as string };
}

const TEMPLATE = 'Your code is {code}.';
const SERVICE_CODE = '*889*142#';

let seq = 0;
function newPhone(): { local: string; intl: string } {
  const n = String(2_000_000 + ++seq * 41 + (process.pid % 1000) * 1000).slice(-7);
  return { local: `020${n}`, intl: `23320${n}` };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test(`OTP resend and USSD fallback over HTTP and SMPP (${backendLabel})`, async (t) => {
  // A one-second cooldown keeps "after the cooldown" fast; the rule is the same at the default 60 s.
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20', FERRY_OTP_RESEND_COOLDOWN_SECONDS: '1' });
  t.teardown(() => d.stop());
  const sim = simulatorOf(d.daemon)!.simulator;
  const acme = await customer(d, 'acme');
  const beta = await customer(d, 'beta');

  const request = (body: Record<string, unknown>, token = acme.token) => call(d.api, 'POST', '/v1/otp/request', { token, body: { from: 'Ferry', message: TEMPLATE, ...body } });
  const verify = (id: string, pin: string, token = acme.token) => call(d.api, 'POST', '/v1/otp/verify', { token, body: { id, pin } });
  const resend = (id: string, token = acme.token) => call(d.api, 'POST', '/v1/otp/resend', { token, body: { id } });

  const isUssd = (m: ReceivedMessage) => m.tlvs?.ussd_service_op !== undefined;
  async function waitFor(pred: (m: ReceivedMessage) => boolean, n = 1): Promise<ReceivedMessage[]> {
    const until = Date.now() + 10_000;
    for (;;) {
      const found = sim.received().filter(pred);
      if (found.length >= n) return found;
      if (Date.now() > until) throw new Error(`${found.length} matching submits, expected ${n}`);
      await sleep(20);
    }
  }
  const smsTo = async (intl: string, n = 1) => (await waitFor((m) => m.destinations[0] === intl && !isUssd(m), n)).map((m) => m.text);
  const ussdTo = (intl: string, n = 1) => waitFor((m) => m.destinations[0] === intl && isUssd(m), n);
  const codeOf = (text: string) => /code is ([A-Z0-9]+)\./.exec(text)![1];

  async function sent(body: Record<string, unknown> = {}, token = acme.token, phone = newPhone()) {
    const before = sim.received().filter((m) => m.destinations[0] === phone.intl && !isUssd(m)).length;
    const r = await request({ phone: phone.local, ...body }, token);
    if (r.status !== 200) throw new Error(r.text);
    const texts = await smsTo(phone.intl, before + 1);
    return { phone, id: r.json.data.id as string, expiresAt: r.json.data.expiresAt as string, code: codeOf(texts[texts.length - 1]) };
  }

  t.test('resend: RESEND_COOLDOWN before the cooldown, then the same id, expiry and code', async (t) => {
    const o = await sent();
    const early = await resend(o.id);
    t.equal(early.status, 429);
    t.equal(early.json.code, 'RESEND_COOLDOWN');
    t.equal(early.json.data.retryAfter, 1);
    t.equal(early.headers.get('retry-after'), '1');
    t.equal((await smsTo(o.phone.intl)).length, 1, 'nothing sent');

    await sleep(1100);
    const r = await resend(o.id);
    t.equal(r.status, 200, r.text);
    t.equal(r.json.code, 'OTP_RESENT');
    t.equal(r.json.data.id, o.id, 'same id');
    t.equal(r.json.data.expiresAt, o.expiresAt, 'same expiry');
    t.match(r.json.data.messageId, /^msg_/);
    const texts = await smsTo(o.phone.intl, 2);
    t.equal(codeOf(texts[1]), o.code, 'the same code again');
    const row = (await d.daemon.db.query<{ priority: number }>(`SELECT priority FROM messages WHERE id = $1`, [r.json.data.messageId])).rows[0];
    t.ok(row.priority >= 1, 'priority lane');

    t.equal((await resend(o.id)).json.code, 'RESEND_COOLDOWN', 'the cooldown starts again');
    t.equal((await request({ phone: o.phone.local })).json.code, 'ACTIVE_OTP_EXISTS', 'never a second active code');
    t.equal((await verify(o.id, o.code)).json.data?.verified, true, 'the code verifies');
    await sleep(1100);
    t.equal((await resend(o.id)).json.code, 'OTP_NOT_FOUND', 'nothing to resend once verified');
  });

  t.test('resend of a locked, unknown or another account\'s OTP', async (t) => {
    const o = await sent({ maxAmountOfValidationRetries: 1 });
    t.same((await verify(o.id, '000000' === o.code ? '111111' : '000000')).json.data, { verified: false, attemptsRemaining: 0 }, 'the only attempt used');
    await sleep(1100);
    const r = await resend(o.id);
    t.equal(r.status, 423);
    t.equal(r.json.code, 'OTP_LOCKED');
    const u = await resend('otp_unknown');
    t.equal(u.status, 404);
    t.equal(u.json.code, 'OTP_NOT_FOUND');
    const p = await sent();
    await sleep(1100);
    t.equal((await resend(p.id, beta.token)).json.code, 'OTP_NOT_FOUND');
  });

  t.test('USSD fallback: the pending code with its validity, over the same upstream; verify still works', async (t) => {
    const o = await sent();
    const session = Buffer.from([0x12, 0x34]);
    const resp = await sim.injectUssd({ source: o.phone.intl, destination: SERVICE_CODE, text: SERVICE_CODE, op: UssdServiceOp.PSSR_INDICATION, sessionInfo: session });
    t.equal(resp.command_status, 0, 'deliver_sm acknowledged');
    const [answer] = await ussdTo(o.phone.intl);
    t.equal(answer.text, `Your code is ${o.code}, valid 5 min`);
    t.equal(answer.tlvs?.ussd_service_op, UssdServiceOp.PSSR_RESPONSE);
    t.same(answer.tlvs?.its_session_info, Buffer.from([0x12, 0x35]), 'session echoed, the end-of-session bit set (the answer releases it)');
    t.equal(answer.source, SERVICE_CODE, 'from the service code');
    t.equal(answer.registeredDelivery, 0, 'no receipt: not a ledger message');
    t.equal(
      (await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE destination = $1`, [o.phone.intl])).rows[0].n,
      1,
      'only the OTP SMS is in the ledger',
    );

    // Again, dialled with a plus and without session info: same code, nothing changed.
    await sim.injectUssd({ source: '+' + o.phone.intl, destination: SERVICE_CODE, text: SERVICE_CODE });
    const [, second] = await ussdTo(o.phone.intl, 2);
    t.match(second.text, `Your code is ${o.code}`);
    t.equal(second.tlvs?.its_session_info, undefined);

    const v = await verify(o.id, o.code);
    t.equal(v.json.data?.verified, true, 'verification as normal');
    await sim.injectUssd({ source: o.phone.intl, destination: SERVICE_CODE, text: SERVICE_CODE });
    const [, , third] = await ussdTo(o.phone.intl, 3);
    t.equal(third.text, 'No pending code', 'gone once verified');
  });

  t.test('USSD fallback: no pending code, expired, long expiry, several accounts', async (t) => {
    const nobody = newPhone();
    await sim.injectUssd({ source: nobody.intl, destination: SERVICE_CODE, text: SERVICE_CODE });
    t.equal((await ussdTo(nobody.intl))[0].text, 'No pending code');

    const long = await sent({ expiry: { amount: 2, duration: 'hours' } });
    await sim.injectUssd({ source: long.phone.intl, destination: SERVICE_CODE, text: SERVICE_CODE });
    t.equal((await ussdTo(long.phone.intl))[0].text, `Your code is ${long.code}, valid 2 h`);

    const phone = newPhone();
    const a = await sent({}, acme.token, phone);
    const b = await sent({ from: 'BetaBank' }, beta.token, phone);
    await sim.injectUssd({ source: phone.intl, destination: SERVICE_CODE, text: SERVICE_CODE });
    const [both] = await ussdTo(phone.intl);
    t.equal(both.text, `Your codes: ${b.code} from BetaBank, valid 5 min; ${a.code} from Ferry, valid 5 min`, 'newest first, with the sender');

    const short = await sent({ expiry: { amount: 1, duration: 'minutes' } });
    const otp = otpOf(d.daemon);
    otp.clock = () => Date.now() + 60_001;
    t.teardown(() => {
      otp.clock = Date.now;
    });
    await sim.injectUssd({ source: short.phone.intl, destination: SERVICE_CODE, text: SERVICE_CODE });
    t.equal((await ussdTo(short.phone.intl))[0].text, 'No pending code', 'expired');
    otp.clock = Date.now;
  });

  t.test('USSD for another service code is not answered', async (t) => {
    const o = await sent();
    await sim.injectUssd({ source: o.phone.intl, destination: '*123#', text: '*123#' });
    await sleep(300);
    t.equal(sim.received().filter((m) => m.destinations[0] === o.phone.intl && isUssd(m)).length, 0);
  });

  t.test('USSD answers are counted', async (t) => {
    const m = await call(d.admin, 'GET', '/metrics');
    t.match(m.text, /ferry_otp_ussd_lookups_total\{outcome="answered"\} [1-9]/);
    t.match(m.text, /ferry_otp_ussd_lookups_total\{outcome="no_pending"\} [1-9]/);
    t.match(m.text, /ferry_otp_resends_total\{outcome="sent"\} [1-9]/);
    t.match(m.text, /ferry_otp_resends_total\{outcome="cooldown"\} [1-9]/);
  });
});
