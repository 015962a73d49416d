import t from 'tap';
import { normalizeSender, SENDER_RULE, senderKind, validSmppSource } from '../../src/messaging/sender.js';
import { CommandStatus } from '../../src/smpp/constants.js';
import { isSubmitRefusal, submissionFromPdu } from '../../src/messaging/smpp-ingress/submit-sm.js';
import { encodeGsm7 } from '../../src/smpp/text/gsm7.js';
import { call, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

/** The one sender rule, row by row: [sender, its kind (null: refused), why]. */
const TABLE: Array<[string, 'alphanumeric' | 'numeric' | null, string]> = [
  ['Ferry', 'alphanumeric', 'letters'],
  ['ABCDEFGHIJK', 'alphanumeric', '11 characters'],
  ['ABCDEFGHIJKL', null, '12 characters'],
  ['My Shop', 'alphanumeric', 'a space inside'],
  [' Ferry', null, 'a leading space'],
  ['Ferry ', null, 'a trailing space'],
  ['Ferry-1.2_x', 'alphanumeric', 'GSM punctuation, 11 characters'],
  ['A&B@C$#%!?', 'alphanumeric', 'more GSM punctuation'],
  ['Ferry[1]', null, 'a GSM extension character (two septets)'],
  ['Ferry~', null, 'another extension character'],
  ['Ferry€', null, 'the euro sign (extension, not ASCII)'],
  ['Fèrry', null, 'a GSM letter outside ASCII'],
  ['Ferry`', null, 'a character outside the GSM alphabet'],
  ['-_-', null, 'no letter'],
  ['4040', 'numeric', 'a short code'],
  ['233201234', 'numeric', 'digits'],
  ['233241234567890', 'numeric', '15 digits'],
  ['+233241234567890', 'numeric', '+ and 15 digits'],
  ['2332412345678901', null, '16 digits'],
  ['+', null, 'a plus alone'],
  ['++1', null, 'two pluses'],
  ['12345678901a', null, '12 characters with a letter'],
];

t.test('the rule, as senderKind states it', async (t) => {
  for (const [sender, kind, why] of TABLE) t.equal(senderKind(sender), kind, `${JSON.stringify(sender)}: ${why}`);
  t.equal(senderKind(''), null, 'empty');
  t.equal(senderKind('9'.repeat(10_000)), null, 'a huge input is refused at once');
  t.match(SENDER_RULE, /1–11 GSM characters.*1–15 digits/, 'the rule in words');
});

t.test('normalizing: + dropped, TON/NPI inferred from the shape unless given', async (t) => {
  t.same(normalizeSender('Ferry'), { source: 'Ferry', ton: 5, npi: 0 });
  t.same(normalizeSender('Ferry', 0, 0), { source: 'Ferry', ton: 5, npi: 0 }, 'TON 0 is inferred');
  t.same(normalizeSender('+233241234567890'), { source: '233241234567890', ton: 1, npi: 1 });
  t.same(normalizeSender('4040'), { source: '4040', ton: 3, npi: 0 }, 'short code');
  t.same(normalizeSender('4040', 6, 0), { source: '4040', ton: 6, npi: 0 }, 'an explicit TON is kept');
  for (const [sender, kind] of TABLE) t.equal(normalizeSender(sender) !== null, kind !== null, sender);
});

t.test('the SMPP path: source_addr under the same rule, with the shape its TON says', async (t) => {
  const pdu = (source_addr: string, source_addr_ton: number) => ({
    source_addr_ton,
    source_addr_npi: 0,
    source_addr,
    dest_addr_ton: 1,
    dest_addr_npi: 1,
    destination_addr: '447700900123',
    esm_class: 0,
    registered_delivery: 0,
    data_coding: 0,
    short_message: encodeGsm7('hi'),
  });
  const ctx = { accountId: 'acc', systemId: 'sys', now: Date.now() };
  for (const [sender, kind, why] of TABLE) {
    // TON 0 (unknown) takes either kind: exactly the rule.
    const r = submissionFromPdu(pdu(sender, 0), ctx);
    if (kind) t.notOk(isSubmitRefusal(r), `TON 0 ${JSON.stringify(sender)} accepted: ${why}`);
    else t.equal(isSubmitRefusal(r) && r.status, CommandStatus.ESME_RINVSRCADR, `TON 0 ${JSON.stringify(sender)} refused: ${why}`);
    t.equal(validSmppSource(sender, 0), kind !== null);
  }
  t.ok(validSmppSource('Ferry', 5), 'TON 5 alphanumeric');
  t.ok(validSmppSource('12345678901', 5), 'TON 5 with 11 digits');
  t.notOk(validSmppSource('123456789012', 5), 'TON 5 with 12 digits: more than an alphanumeric sender holds');
  t.ok(validSmppSource('+233241234567890', 1), 'TON 1 numeric with + and 15 digits');
  t.notOk(validSmppSource('Ferry', 1), 'TON 1 needs a number');
  t.notOk(validSmppSource('Ferry', 3), 'TON 3 needs a number');
});

t.test(`the REST path: send, bulk items and OTP from, over HTTP (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });
  t.teardown(() => d.stop());
  await d.adminCall('POST', '/admin/accounts', { name: 'senders', defaultCountry: 'GH' });
  const { token } = await d.adminCall('POST', '/admin/keys', { account: 'senders', scopes: 'all' });

  for (const [sender, kind, why] of TABLE) {
    const r = await call(d.api, 'POST', '/v1/sms/send', { token, body: { to: '0241234567', from: sender, message: 'x' } });
    if (kind) {
      t.equal(r.status, 200, `send from ${JSON.stringify(sender)} accepted: ${why} (${r.text.slice(0, 200)})`);
      t.equal(r.json.data.from, sender.replace(/^\+/, ''));
    } else {
      t.equal(r.status, 400, `send from ${JSON.stringify(sender)} refused: ${why}`);
      t.equal(r.json.code, 'INVALID_SENDER_ID', `${JSON.stringify(sender)}: INVALID_SENDER_ID`);
      t.match(r.json.message, /1–15 digits/, 'the message states the rule');
    }
  }

  const bulk = await call(d.api, 'POST', '/v1/sms/bulk', { token, body: { messages: TABLE.map(([from]) => ({ to: '0241234567', message: 'x', from })) } });
  t.equal(bulk.status, 200, bulk.text.slice(0, 300));
  TABLE.forEach(([sender, kind], i) => {
    const item = bulk.json.data.results[i];
    t.equal(item.status, kind ? 'accepted' : 'rejected', `bulk item from ${JSON.stringify(sender)}`);
    if (!kind) t.equal(item.code, 'INVALID_SENDER_ID');
  });

  let n = 0;
  for (const [sender, kind] of TABLE) {
    const phone = `02412${String(10_000 + n++).padStart(5, '0')}`;
    const r = await call(d.api, 'POST', '/v1/otp/request', { token, body: { phone, from: sender, message: 'Code {code}' } });
    t.equal(r.status, kind ? 200 : 400, `OTP from ${JSON.stringify(sender)}`);
    if (!kind) t.equal(r.json.code, 'INVALID_SENDER_ID');
  }

  const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
  const sendFrom = doc.paths['/sms/send'].post.requestBody.content['application/json'].schema.properties.from;
  t.equal(sendFrom.maxLength, undefined, 'no schema length cap that would disagree with the rule');
  t.match(sendFrom.description, SENDER_RULE, 'the OpenAPI document states the rule for send');
  t.match(doc.paths['/otp/request'].post.requestBody.content['application/json'].schema.properties.from.description, SENDER_RULE, 'and for OTP');
  t.match(doc.paths['/sms/bulk'].post.requestBody.content['application/json'].schema.properties.from.description, SENDER_RULE, 'and for bulk');
});
