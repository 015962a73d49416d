import t from 'tap';
import { call, startDaemon, type TestDaemon, otpOf, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

/** An account in Ghana (local numbers read as +233) with a key of the given scopes. */
async function customer(d: TestDaemon, name: string, scopes: string | string[] = 'all') {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return { accountId: account.id as string, token: key.token as string };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const TEMPLATE = 'Your Ferry code is {code}. It expires in {amount} {duration}.';
const CODE_IN_TEXT = /code is ([A-Z0-9]+)\./;

// A fresh Ghanaian mobile number per use: the single-active rule and the hourly limit are per phone.
let seq = 0;
function newPhone(): { local: string; intl: string } {
  const n = String(1_000_000 + ++seq * 37 + (process.pid % 1000) * 1000).slice(-7);
  return { local: `024${n}`, intl: `23324${n}` };
}

t.test(`OTP request and verify over HTTP (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });
  t.teardown(() => d.stop());
  const sim = simulatorOf(d.daemon)!.simulator;
  const acme = await customer(d, 'acme');
  const other = await customer(d, 'other');

  const request = (body: Record<string, unknown>, token = acme.token) => call(d.api, 'POST', '/v1/otp/request', { token, body: { from: 'Ferry', message: TEMPLATE, ...body } });
  const verify = (id: string, pin: string, token = acme.token) => call(d.api, 'POST', '/v1/otp/verify', { token, body: { id, pin } });

  /** Texts the simulator received for the phone, oldest first; waits until there are at least `n`. */
  async function smsTo(intl: string, n = 1): Promise<string[]> {
    const until = Date.now() + 10_000;
    for (;;) {
      const texts = sim.received().filter((m) => m.destinations[0] === intl && !m.tlvs?.ussd_service_op).map((m) => m.text);
      if (texts.length >= n) return texts;
      if (Date.now() > until) throw new Error(`${texts.length} SMS to ${intl}, expected ${n}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const codeOf = (text: string) => CODE_IN_TEXT.exec(text)![1];
  const wrong = (code: string) => code.slice(0, -1) + (code.endsWith('1') ? '2' : '1');

  /** A sent OTP and its code (read from the SMS). */
  async function sent(body: Record<string, unknown> = {}, token = acme.token) {
    const phone = newPhone();
    const r = await request({ phone: phone.local, ...body }, token);
    if (r.status !== 200) throw new Error(r.text);
    const [text] = await smsTo(phone.intl);
    return { phone, id: r.json.data.id as string, code: codeOf(text), text, res: r };
  }

  t.test('request: otp_ id and expiresAt; the code goes out by SMS on the priority lane', async (t) => {
    const before = Date.now();
    const phone = newPhone();
    const r = await request({ phone: phone.local, metadata: { userId: 'u1', ipAddress: '10.0.0.1' } });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.success, true);
    t.equal(r.json.code, 'OTP_SENT');
    t.match(r.json.requestId, /^req_/);
    t.match(r.json.data.id, /^otp_[0-9a-z]{26}$/);
    t.match(r.json.data.expiresAt, ISO);
    const expiresAt = Date.parse(r.json.data.expiresAt);
    t.ok(expiresAt >= before + 5 * 60_000 && expiresAt <= Date.now() + 5 * 60_000, 'default expiry 5 minutes');
    t.equal(r.json.data.to, phone.intl);
    t.match(r.json.data.messageId, /^msg_/);

    const [text] = await smsTo(phone.intl);
    t.match(text, /^Your Ferry code is [0-9]{6}\. It expires in 5 minutes\.$/, 'placeholders replaced; default NUMERIC, 6 digits');
    const row = (
      await d.daemon.db.query<{ priority: number; reference: string; source: string }>(`SELECT priority, reference, source FROM messages WHERE id = $1`, [r.json.data.messageId])
    ).rows[0];
    t.ok(row.priority >= 1, 'priority lane');
    t.equal(row.reference, r.json.data.id, 'the SMS references the OTP');
    t.equal(row.source, 'Ferry');
    t.notMatch(JSON.stringify(r.json), codeOf(text), 'the code is not in the response');
    const stored = (await d.daemon.db.query<{ body: string; body_sealed: string | null }>(`SELECT body, body_sealed FROM messages WHERE id = $1`, [r.json.data.messageId])).rows[0];
    t.equal(stored.body, 'Your Ferry code is ******. It expires in 5 minutes.', 'the ledger shows the text with the code masked');
    t.ok(stored.body_sealed, 'the real text is kept sealed');
    t.notMatch(stored.body_sealed!, codeOf(text), 'and not readable at rest');
  });

  t.test('ACTIVE_OTP_EXISTS while one is active, with the seconds remaining', async (t) => {
    const o = await sent();
    const r = await request({ phone: o.phone.local });
    t.equal(r.status, 409);
    t.equal(r.json.code, 'ACTIVE_OTP_EXISTS');
    t.equal(r.json.success, false);
    t.ok(r.json.data.remainingSeconds > 290 && r.json.data.remainingSeconds <= 300, `remainingSeconds ${r.json.data.remainingSeconds}`);
    t.equal(r.headers.get('retry-after'), String(r.json.data.remainingSeconds));
    const intl = await request({ phone: '+' + o.phone.intl });
    t.equal(intl.json.code, 'ACTIVE_OTP_EXISTS', 'the same phone written internationally');
    t.equal((await smsTo(o.phone.intl)).length, 1, 'no second SMS');
    const elsewhere = await request({ phone: o.phone.local }, other.token);
    t.equal(elsewhere.status, 200, 'another account has its own OTPs for the phone');
  });

  t.test('verify: right pin → verified, then OTP_NOT_FOUND; the phone is free again', async (t) => {
    const o = await sent();
    const r = await verify(o.id, o.code);
    t.equal(r.status, 200, r.text);
    t.equal(r.json.code, 'OTP_VERIFIED');
    t.equal(r.json.data.verified, true);
    t.type(r.json.message, 'string');
    const again = await verify(o.id, o.code);
    t.equal(again.status, 404);
    t.equal(again.json.code, 'OTP_NOT_FOUND');
    t.equal((await verify('otp_doesnotexist', '123456')).json.code, 'OTP_NOT_FOUND');
    t.equal((await request({ phone: o.phone.local })).status, 200, 'a new OTP for the phone');
  });

  t.test('RATE_LIMIT_EXCEEDED after 3 requests per phone in an hour, with retryAfter and Retry-After', async (t) => {
    const phone = newPhone();
    for (let i = 1; i <= 3; i++) {
      const r = await request({ phone: phone.local });
      t.equal(r.status, 200, `request ${i}`);
      const texts = await smsTo(phone.intl, i);
      t.equal((await verify(r.json.data.id, codeOf(texts[i - 1]))).status, 200);
    }
    const r = await request({ phone: phone.local });
    t.equal(r.status, 429);
    t.equal(r.json.code, 'RATE_LIMIT_EXCEEDED');
    t.ok(r.json.data.retryAfter > 3500 && r.json.data.retryAfter <= 3600, `retryAfter ${r.json.data.retryAfter}`);
    t.equal(r.headers.get('retry-after'), String(r.json.data.retryAfter));
    t.equal((await request({ phone: newPhone().local })).status, 200, 'other phones are not limited');
  });

  t.test('INVALID_PIN with attemptsRemaining down to 0; after that OTP_LOCKED, and the phone may request a new OTP', async (t) => {
    const o = await sent();
    const w1 = await verify(o.id, wrong(o.code));
    t.equal(w1.status, 400);
    t.equal(w1.json.code, 'INVALID_PIN');
    t.same(w1.json.data, { verified: false, attemptsRemaining: 2 });
    t.equal((await verify(o.id, wrong(o.code))).json.data.attemptsRemaining, 1);
    const last = await verify(o.id, wrong(o.code));
    t.equal(last.status, 400, 'the wrong pin that uses the last attempt is INVALID_PIN (spec §3.1)');
    t.equal(last.json.code, 'INVALID_PIN');
    t.same(last.json.data, { verified: false, attemptsRemaining: 0 });
    const after = await verify(o.id, wrong(o.code));
    t.equal(after.status, 423, 'a wrong pin after it');
    t.equal(after.json.code, 'OTP_LOCKED');
    t.equal(after.json.data.attemptsRemaining, 0);
    const right = await verify(o.id, o.code);
    t.equal(right.status, 423, 'even the right pin once locked');
    t.equal(right.json.code, 'OTP_LOCKED');
    const next = await request({ phone: o.phone.local });
    t.equal(next.status, 200, 'a new OTP for the phone');
    const [, text] = await smsTo(o.phone.intl, 2);
    t.equal((await verify(next.json.data.id, codeOf(text))).json.data.verified, true);
  });

  t.test('OTP_EXPIRED after the expiry; the phone may request again', async (t) => {
    const o = await sent({ expiry: { amount: 1, duration: 'minutes' } });
    t.match(o.text, /expires in 1 minutes\./);
    const otp = otpOf(d.daemon);
    otp.clock = () => Date.now() + 60_001;
    t.teardown(() => {
      otp.clock = Date.now;
    });
    const r = await verify(o.id, o.code);
    t.equal(r.status, 410);
    t.equal(r.json.code, 'OTP_EXPIRED');
    t.equal(r.json.data, undefined, 'no extra data');
    t.equal((await call(d.api, 'POST', '/v1/otp/resend', { token: acme.token, body: { id: o.id } })).json.code, 'OTP_EXPIRED', 'resend too');
    t.equal((await request({ phone: o.phone.local })).status, 200, 'an expired OTP does not block the phone');
    otp.clock = Date.now;
  });

  t.test('an SMS refusal is returned as for SMS, and withdraws the OTP', async (t) => {
    const limited = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: 'all', allowedRecipients: ['23399*'] });
    const phone = newPhone();
    const r = await request({ phone: phone.local }, limited.token);
    t.equal(r.status, 403);
    t.equal(r.json.code, 'RECIPIENT_NOT_ALLOWED');
    const again = await request({ phone: phone.local });
    t.equal(again.status, 200, 'the phone is not blocked by a code nobody received');
  });

  t.test('another account\'s id is OTP_NOT_FOUND and uses no attempt', async (t) => {
    const o = await sent();
    const r = await verify(o.id, wrong(o.code), other.token);
    t.equal(r.status, 404);
    t.equal(r.json.code, 'OTP_NOT_FOUND');
    t.equal((await call(d.api, 'POST', '/v1/otp/resend', { token: other.token, body: { id: o.id } })).json.code, 'OTP_NOT_FOUND');
    const w = await verify(o.id, wrong(o.code));
    t.equal(w.json.data.attemptsRemaining, 2, 'the owner still has all but this attempt');
  });

  t.test('letters are compared case-insensitively; codes use their alphabet', async (t) => {
    const an = await sent({ pinType: 'ALPHANUMERIC', pinLength: 12 });
    t.match(an.code, /^[A-HJ-NP-Z2-9]{12}$/, 'no 0, O, 1 or I');
    t.equal((await verify(an.id, an.code.toLowerCase())).json.data?.verified, true);
    const al = await sent({ pinType: 'ALPHABETIC', pinLength: 10 });
    t.match(al.code, /^[A-Z]{10}$/);
    t.equal((await verify(al.id, al.code)).json.data?.verified, true);
  });

  t.test('validation bounds at their edges', async (t) => {
    // [name, body, the field named (null: accepted), the code when not VALIDATION_ERROR]
    const cases: Array<[string, Record<string, unknown>, string | null, string?]> = [
      ['message without {code}', { message: 'Your code is coming' }, 'message'],
      ['message with {code}', { message: '{code}' }, null],
      ['NUMERIC 3', { pinType: 'NUMERIC', pinLength: 3 }, 'pinLength'],
      ['NUMERIC 4', { pinType: 'NUMERIC', pinLength: 4 }, null],
      ['NUMERIC 8', { pinType: 'NUMERIC', pinLength: 8 }, null],
      ['NUMERIC 9', { pinType: 'NUMERIC', pinLength: 9 }, 'pinLength'],
      ['default type 9', { pinLength: 9 }, 'pinLength'],
      ['ALPHANUMERIC 5', { pinType: 'ALPHANUMERIC', pinLength: 5 }, 'pinLength'],
      ['ALPHANUMERIC 6', { pinType: 'ALPHANUMERIC', pinLength: 6 }, null],
      ['ALPHANUMERIC 12', { pinType: 'ALPHANUMERIC', pinLength: 12 }, null],
      ['ALPHANUMERIC 13', { pinType: 'ALPHANUMERIC', pinLength: 13 }, 'pinLength'],
      ['ALPHABETIC 4', { pinType: 'ALPHABETIC', pinLength: 4 }, 'pinLength'],
      ['ALPHABETIC 5', { pinType: 'ALPHABETIC', pinLength: 5 }, null],
      ['ALPHABETIC 10', { pinType: 'ALPHABETIC', pinLength: 10 }, null],
      ['ALPHABETIC 11', { pinType: 'ALPHABETIC', pinLength: 11 }, 'pinLength'],
      ['unknown pinType', { pinType: 'HEX' }, 'pinType'],
      ['expiry 0 minutes', { expiry: { amount: 0, duration: 'minutes' } }, 'expiry'],
      ['expiry 1 minute', { expiry: { amount: 1, duration: 'minutes' } }, null],
      ['expiry 1440 minutes', { expiry: { amount: 1440, duration: 'minutes' } }, null],
      ['expiry 1441 minutes', { expiry: { amount: 1441, duration: 'minutes' } }, 'expiry'],
      ['expiry 0 hours', { expiry: { amount: 0, duration: 'hours' } }, 'expiry'],
      ['expiry 24 hours', { expiry: { amount: 24, duration: 'hours' } }, null],
      ['expiry 25 hours', { expiry: { amount: 25, duration: 'hours' } }, 'expiry'],
      ['expiry -1 minutes', { expiry: { amount: -1, duration: 'minutes' } }, 'expiry'],
      ['expiry in days', { expiry: { amount: 1, duration: 'days' } }, 'expiry.duration'],
      ['retries 10', { maxAmountOfValidationRetries: 10 }, null],
      ['retries 11', { maxAmountOfValidationRetries: 11 }, 'maxAmountOfValidationRetries'],
      ['retries 0', { maxAmountOfValidationRetries: 0 }, 'maxAmountOfValidationRetries'],
      ['bad phone', { phone: 'not-a-phone' }, 'phone', 'INVALID_PHONE_NUMBER'],
      ['short phone', { phone: '12345' }, 'phone', 'INVALID_PHONE_NUMBER'],
      ['bad phone with another bad field', { phone: '12345', pinLength: 3 }, 'phone'],
      ['sender of 11 characters', { from: 'ABCDEFGHIJK' }, null],
      ['sender of 12 characters', { from: 'ABCDEFGHIJKL' }, 'from', 'INVALID_SENDER_ID'],
      ['numeric sender of 15 digits', { from: '233241234567890' }, null],
      ['numeric sender of + and 15 digits', { from: '+233241234567890' }, null],
      ['numeric sender of 16 digits', { from: '2332412345678901' }, 'from', 'INVALID_SENDER_ID'],
      ['sender with a GSM extension character', { from: 'Ferry[1]' }, 'from', 'INVALID_SENDER_ID'],
      ['bad sender and bad phone', { from: 'ABCDEFGHIJKL', phone: '12345' }, 'phone', 'INVALID_SENDER_ID'],
      ['no sender', { from: undefined }, 'from'],
      ['unknown field', { colour: 'red' }, 'colour'],
    ];
    for (const [name, body, field, code] of cases) {
      const phone = newPhone();
      const r = await request({ phone: phone.local, ...body });
      if (field === null) {
        t.equal(r.status, 200, `${name}: accepted (${r.text})`);
        continue;
      }
      t.equal(r.status, 400, `${name}: 400`);
      t.equal(r.json.code, code ?? 'VALIDATION_ERROR', name);
      t.ok(
        (r.json.data?.errors ?? []).some((e: { field: string }) => e.field === field),
        `${name}: names ${field} (${JSON.stringify(r.json.data?.errors)})`,
      );
    }
  });

  t.test('the accepted edges do what they say', async (t) => {
    for (const [pinType, pinLength, re] of [
      ['NUMERIC', 4, /^[0-9]{4}$/],
      ['NUMERIC', 8, /^[0-9]{8}$/],
      ['ALPHANUMERIC', 6, /^[A-HJ-NP-Z2-9]{6}$/],
      ['ALPHABETIC', 5, /^[A-Z]{5}$/],
    ] as const) {
      const o = await sent({ pinType, pinLength });
      t.match(o.code, re, `${pinType} ${pinLength}`);
    }
    const day = await sent({ expiry: { amount: 24, duration: 'hours' } });
    const at = Date.parse(day.res.json.data.expiresAt);
    t.ok(Math.abs(at - (Date.now() + 24 * 3_600_000)) < 30_000, '24 hours');
    t.match(day.text, /expires in 24 hours\./);
    const ten = await sent({ maxAmountOfValidationRetries: 10 });
    const w = await verify(ten.id, wrong(ten.code));
    t.equal(w.json.data.attemptsRemaining, 9, '10 attempts');
  });

  t.test('50 parallel requests for one phone create exactly one OTP', async (t) => {
    const phone = newPhone();
    const res = await Promise.all(Array.from({ length: 50 }, () => request({ phone: phone.local })));
    const created = res.filter((r) => r.status === 200);
    t.equal(created.length, 1, 'one created');
    t.equal(res.filter((r) => r.status === 409 && r.json.code === 'ACTIVE_OTP_EXISTS').length, 49, 'the others see it active');
    await smsTo(phone.intl);
    await new Promise((r) => setTimeout(r, 300));
    t.equal((await smsTo(phone.intl)).length, 1, 'one SMS');
    t.equal((await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE destination = $1`, [phone.intl])).rows[0].n, 1, 'one ledger row');
  });

  t.test('parallel right-pin verifies: exactly one verified', async (t) => {
    const o = await sent();
    const res = await Promise.all(Array.from({ length: 20 }, () => verify(o.id, o.code)));
    t.equal(res.filter((r) => r.status === 200 && r.json.data.verified === true).length, 1);
    t.equal(res.filter((r) => r.status === 404 && r.json.code === 'OTP_NOT_FOUND').length, 19);
  });

  t.test('parallel wrong pins are counted exactly', async (t) => {
    const o = await sent({ maxAmountOfValidationRetries: 10 });
    const res = await Promise.all(Array.from({ length: 9 }, () => verify(o.id, wrong(o.code))));
    t.same(
      res.map((r) => r.json.data.attemptsRemaining).sort((a: number, b: number) => a - b),
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
      'each wrong pin saw its own count',
    );
    t.equal((await verify(o.id, o.code)).json.data?.verified, true, 'the last attempt is still there');

    const p = await sent({ maxAmountOfValidationRetries: 5 });
    const res2 = await Promise.all(Array.from({ length: 15 }, () => verify(p.id, wrong(p.code))));
    t.same(
      res2.flatMap((r) => (r.json.code === 'INVALID_PIN' ? [r.json.data.attemptsRemaining] : [])).sort((a: number, b: number) => a - b),
      [0, 1, 2, 3, 4],
      'five wrong pins answered INVALID_PIN, the fifth with 0',
    );
    t.equal(res2.filter((r) => r.json.code === 'OTP_LOCKED').length, 10, 'the rest find it locked');
  });

  t.test('scopes: otp:send requests, otp:verify verifies', async (t) => {
    const sender = await customer(d, 'sender-only', ['otp:send']);
    const o = await sent({}, sender.token);
    const r = await verify(o.id, o.code, sender.token);
    t.equal(r.status, 403);
    t.equal(r.json.code, 'INSUFFICIENT_SCOPE');
    const verifier = await d.adminCall('POST', '/admin/keys', { account: 'sender-only', scopes: ['otp:verify'] });
    t.equal((await request({ phone: newPhone().local }, verifier.token)).json.code, 'INSUFFICIENT_SCOPE');
    t.equal((await verify(o.id, o.code, verifier.token)).json.data?.verified, true);
  });

  t.test('events for webhooks: requested, failed, verified, expired; never the code', async (t) => {
    const otp = otpOf(d.daemon);
    const events: Array<{ type: string; data: Record<string, unknown> }> = [];
    otp.onEvent = (type, data) => {
      events.push({ type, data: { ...data } });
    };
    t.teardown(() => {
      otp.onEvent = undefined;
      otp.clock = Date.now;
    });
    const a = await sent({ metadata: { userId: 'u42' } });
    await verify(a.id, wrong(a.code));
    await verify(a.id, a.code);
    const b = await sent({ maxAmountOfValidationRetries: 1 });
    await verify(b.id, wrong(b.code));
    await verify(b.id, b.code);
    const c = await sent({ expiry: { amount: 1, duration: 'minutes' } });
    otp.clock = () => Date.now() + 60_001;
    // Wait for this OTP's event: OTPs of earlier subtests expire under the moved clock too, and may come first.
    const until = Date.now() + 10_000;
    while (!events.some((e) => e.type === 'otp.expired' && e.data.id === c.id) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    otp.clock = Date.now;

    const of = (id: string) => events.filter((e) => e.data.id === id).map((e) => [e.type, e.data.reason ?? null, e.data.attemptsRemaining ?? null]);
    t.same(of(a.id), [
      ['otp.requested', null, null],
      ['otp.failed', 'INVALID_PIN', 2],
      ['otp.verified', null, null],
    ]);
    t.same(of(b.id), [
      ['otp.requested', null, null],
      ['otp.failed', 'INVALID_PIN', 0],
      ['otp.failed', 'OTP_LOCKED', 0],
    ], 'the last wrong pin is INVALID_PIN with 0; the right pin after it finds the OTP locked');
    t.same(of(c.id), [
      ['otp.requested', null, null],
      ['otp.expired', null, null],
    ], 'expired once, only the one never verified or locked');
    const first = events.find((e) => e.data.id === a.id)!.data;
    t.match(first, { accountId: acme.accountId, phone: a.phone.intl, metadata: { userId: 'u42' } });
    t.match(first.messageId, /^msg_/);
    for (const o of [a, b, c]) t.notOk(events.some((e) => JSON.stringify(e).includes(o.code)), 'no code in any event');
  });

  t.test('metrics by outcome and the OpenAPI document', async (t) => {
    const m = await call(d.admin, 'GET', '/metrics');
    t.match(m.text, /ferry_otp_requests_total\{outcome="sent"\} [1-9]/);
    t.match(m.text, /ferry_otp_requests_total\{outcome="active_exists"\} [1-9]/);
    t.match(m.text, /ferry_otp_requests_total\{outcome="rate_limited"\} [1-9]/);
    t.match(m.text, /ferry_otp_verifications_total\{outcome="verified"\} [1-9]/);
    t.match(m.text, /ferry_otp_verifications_total\{outcome="invalid_pin"\} [1-9]/);
    t.match(m.text, /ferry_otp_verifications_total\{outcome="locked"\} [1-9]/);
    t.match(m.text, /ferry_otp_verifications_total\{outcome="expired"\} [1-9]/);
    t.match(m.text, /ferry_otp_conversion_ratio 0\.\d+/);
    t.notMatch(m.text, /ferry_otp_[a-z_]+\{[^}]*(phone|code|id)=/, 'no phone, code or id labels');

    const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
    const req = doc.paths['/otp/request'].post;
    for (const s of ['200', '400', '409', '429']) t.ok(req.responses[s], `request documents ${s}`);
    t.match(req.responses['409'].description, /ACTIVE_OTP_EXISTS/);
    t.match(req.responses['429'].description, /RATE_LIMIT_EXCEEDED/);
    const ver = doc.paths['/otp/verify'].post;
    for (const [s, code] of [['400', 'INVALID_PIN'], ['404', 'OTP_NOT_FOUND'], ['410', 'OTP_EXPIRED'], ['423', 'OTP_LOCKED']]) t.match(ver.responses[s].description, new RegExp(code), `verify ${s} ${code}`);
    t.match(doc.paths['/otp/resend'].post.responses['429'].description, /RESEND_COOLDOWN/);
  });
});
