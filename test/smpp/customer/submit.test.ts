import t from 'tap';
import { SmsError, type SmsErrorCode } from '../../../src/messaging/types.js';
import { CommandStatus, statusName } from '../../../src/smpp/constants.js';
import { smppMessageId } from '../../../src/messaging/smpp-ingress/smpp-message-id.js';
import { MAX_SCHEDULE_AHEAD_MS, SMS_ERROR_STATUS, isSubmitRefusal, submissionFromPdu } from '../../../src/messaging/smpp-ingress/submit-sm.js';
import { encodeGsm7 } from '../../../src/smpp/text/gsm7.js';
import { encodeUcs2 } from '../../../src/smpp/text/encoding.js';
import { concatUdh16, concatUdh8 } from '../../../src/smpp/text/udh.js';
import { formatSmppAbsolute } from '../../../src/smpp/time.js';
import type { CustomerClient } from './customer-client.js';
import { customerFixture, waitFor, type CustomerFixture, type TestAccount } from './customer-fixture.js';

const BASE = {
  source_addr_ton: 5,
  esm_class: 0,
  source_addr_npi: 0,
  source_addr: 'Ferry',
  dest_addr_ton: 1,
  dest_addr_npi: 1,
  destination_addr: '447700900123',
  registered_delivery: 1,
  data_coding: 0,
  short_message: encodeGsm7('hello'),
};

let f: CustomerFixture;
let acc: TestAccount;
let client: CustomerClient;

t.before(async () => {
  f = await customerFixture(t);
  acc = await f.account('sender');
  client = await f.bind(acc);
});

const submit = (patch: Record<string, unknown>) => client.request('submit_sm', { ...BASE, ...patch });

t.test('each bad field is refused with its own command_status, before the SMS service', async (t) => {
  const days = (n: number): string => formatSmppAbsolute(new Date(Date.now() + n * 86_400_000));
  const cases: Array<[string, Record<string, unknown>, keyof typeof CommandStatus]> = [
    ['empty source', { source_addr: '' }, 'ESME_RINVSRCADR'],
    ['alphanumeric source over 11', { source_addr: 'TwelveLetter' }, 'ESME_RINVSRCADR'],
    ['letters in an international source', { source_addr_ton: 1, source_addr_npi: 1, source_addr: '44abc' }, 'ESME_RINVSRCADR'],
    ['numeric source over 15 digits', { source_addr_ton: 1, source_addr_npi: 1, source_addr: '1234567890123456' }, 'ESME_RINVSRCADR'],
    ['source TON 7', { source_addr_ton: 7 }, 'ESME_RINVSRCTON'],
    ['source NPI 2', { source_addr_npi: 2 }, 'ESME_RINVSRCNPI'],
    ['destination too short', { destination_addr: '12' }, 'ESME_RINVDSTADR'],
    ['destination with letters', { destination_addr: '4477009abc' }, 'ESME_RINVDSTADR'],
    ['destination over 15 digits', { destination_addr: '4477009001234567' }, 'ESME_RINVDSTADR'],
    ['empty destination', { destination_addr: '' }, 'ESME_RINVDSTADR'],
    ['destination TON 9', { dest_addr_ton: 9 }, 'ESME_RINVDSTTON'],
    ['destination NPI 5', { dest_addr_npi: 5 }, 'ESME_RINVDSTNPI'],
    ['data_coding 5 (JIS)', { data_coding: 5 }, 'ESME_RINVDCS'],
    ['data_coding 0x10', { data_coding: 0x10 }, 'ESME_RINVDCS'],
    ['priority 4', { priority_flag: 4 }, 'ESME_RINVPRTFLG'],
    ['ESME delivery ack esm_class', { esm_class: 0x08 }, 'ESME_RINVESMCLASS'],
    ['empty message', { short_message: Buffer.alloc(0) }, 'ESME_RINVMSGLEN'],
    ['short_message and message_payload', { message_payload: encodeGsm7('also') }, 'ESME_RINVMSGLEN'],
    ['UCS-2 of odd length', { data_coding: 8, short_message: Buffer.from([0x00, 0x41, 0x00]) }, 'ESME_RINVMSGLEN'],
    ['text over 10 segments', { short_message: Buffer.alloc(0), message_payload: encodeGsm7('x'.repeat(153 * 10 + 1)) }, 'ESME_RINVMSGLEN'],
    ['binary over 1340 octets', { data_coding: 4, short_message: Buffer.alloc(0), message_payload: Buffer.alloc(1341, 1) }, 'ESME_RINVMSGLEN'],
    ['UDHI with an overrunning UDH', { esm_class: 0x40, short_message: Buffer.from([0x0a, 0x00, 0x03, 0x01]) }, 'ESME_RINVESMCLASS'],
    ['UDH only, no user data', { esm_class: 0x40, short_message: concatUdh8(1, 2, 1) }, 'ESME_RINVMSGLEN'],
    ['UDH part 0 of 3', { esm_class: 0x40, short_message: Buffer.concat([concatUdh8(1, 3, 0), encodeGsm7('x')]) }, 'ESME_RINVESMCLASS'],
    ['UDH part 4 of 3', { esm_class: 0x40, short_message: Buffer.concat([concatUdh8(1, 3, 4), encodeGsm7('x')]) }, 'ESME_RINVESMCLASS'],
    ['UDH total 0', { esm_class: 0x40, short_message: Buffer.concat([concatUdh8(1, 0, 0), encodeGsm7('x')]) }, 'ESME_RINVESMCLASS'],
    ['UDH part too long for one segment', { esm_class: 0x40, short_message: Buffer.concat([concatUdh8(1, 2, 1), encodeGsm7('x'.repeat(154))]) }, 'ESME_RINVMSGLEN'],
    ['SAR part 0', { sar_msg_ref_num: 7, sar_total_segments: 2, sar_segment_seqnum: 0 }, 'ESME_RINVOPTPARAMVAL'],
    ['SAR part 3 of 2', { sar_msg_ref_num: 7, sar_total_segments: 2, sar_segment_seqnum: 3 }, 'ESME_RINVOPTPARAMVAL'],
    ['SAR without its seqnum', { sar_msg_ref_num: 7, sar_total_segments: 2 }, 'ESME_RMISSINGOPTPARAM'],
    ['malformed schedule', { schedule_delivery_time: '99139912000000+' }, 'ESME_RINVSCHED'],
    ['schedule 8 days ahead (relative)', { schedule_delivery_time: '000008000000000R' }, 'ESME_RINVSCHED'],
    ['schedule 8 days ahead (absolute)', { schedule_delivery_time: days(8) }, 'ESME_RINVSCHED'],
    ['malformed validity', { validity_period: '2501011200000x+' }, 'ESME_RINVEXPIRY'],
    ['validity in the past', { validity_period: '200101000000000+' }, 'ESME_RINVEXPIRY'],
    ['validity before the schedule', { schedule_delivery_time: days(2), validity_period: days(1) }, 'ESME_RINVEXPIRY'],
  ];
  for (const [name, patch, expected] of cases) {
    const before = f.sms.submissions.length;
    const resp = await submit(patch);
    t.equal(statusName(resp.command_status), expected, name);
    t.equal(f.sms.submissions.length, before, `${name}: nothing reached the SMS service`);
  }
  t.equal(await f.metric('ferry_smpp_customer_submits_total', { status: 'ESME_RINVDSTADR' }), 4, 'refusals are counted by status');
  t.ok(f.logs.some((l) => l.msg === 'customer submit refused' && l.status === 'ESME_RINVSCHED'), 'refusals are logged at debug');
});

t.test('text codings are decoded into text; the submission carries the PDU fields', async (t) => {
  const gsm = await submit({ short_message: encodeGsm7('Hello @ €uro {x}'), priority_flag: 2, registered_delivery: 1 });
  t.equal(gsm.command_status, CommandStatus.ESME_ROK);
  t.equal(gsm.message_id, smppMessageId([...f.sms.records.keys()].at(-1)!), 'answered with the id the service returned, in its SMPP form');
  t.match(gsm.message_id, /^[0-9a-z]{26}$/, 'letters and digits only');
  const sub = f.sms.last();
  t.same(sub, {
    accountId: acc.accountId,
    ingress: 'smpp',
    source: 'Ferry',
    sourceTon: 5,
    sourceNpi: 0,
    destination: '447700900123',
    destTon: 1,
    priority: 2,
    registeredDelivery: 1,
    scheduledAt: null,
    expiresAt: null,
    customerSystemId: acc.systemId,
    text: 'Hello @ €uro {x}',
  });

  t.equal((await submit({ data_coding: 1, short_message: Buffer.from('plain ascii', 'latin1') })).command_status, 0);
  t.equal(f.sms.last().text, 'plain ascii', 'IA5');
  t.equal((await submit({ data_coding: 3, short_message: Buffer.from('café crème', 'latin1') })).command_status, 0);
  t.equal(f.sms.last().text, 'café crème', 'Latin-1');
  t.equal((await submit({ data_coding: 8, short_message: encodeUcs2('Привет 👋') })).command_status, 0);
  t.equal(f.sms.last().text, 'Привет 👋', 'UCS-2 with a surrogate pair');
  t.equal(f.sms.last().bytes, undefined, 'text is not sent as bytes');

  const long = 'y'.repeat(600);
  t.equal((await submit({ short_message: Buffer.alloc(0), message_payload: encodeGsm7(long) })).command_status, 0);
  t.equal(f.sms.last().text, long, 'message_payload carries a long text');

  t.equal((await submit({ source_addr_ton: 1, source_addr_npi: 1, source_addr: '+447700900999', destination_addr: '+447700900124' })).command_status, 0);
  t.match(f.sms.last(), { source: '+447700900999', destination: '+447700900124' }, 'numbers are passed as written; the service normalises');
  t.equal((await submit({ source_addr_ton: 0, source_addr: 'Shop 24' })).command_status, 0, 'TON 0 accepts an alphanumeric sender');
});

t.test('customer-split parts and binary data are passed as bytes', async (t) => {
  const udhPart = Buffer.concat([concatUdh8(42, 3, 2), encodeGsm7('part two')]);
  t.equal((await submit({ esm_class: 0x40, short_message: udhPart })).command_status, 0);
  let sub = f.sms.last();
  t.same(sub.bytes, udhPart, 'short_message as received, UDH included');
  t.match(sub, { dataCoding: 0, esmClass: 0x40, concat: { reference: 42, total: 3, seq: 2, via: 'udh' }, displayText: 'part two' });
  t.equal(sub.text, undefined);

  const udh16 = Buffer.concat([concatUdh16(0x1234, 2, 1), encodeUcs2('часть')]);
  t.equal((await submit({ esm_class: 0x40, data_coding: 8, short_message: udh16 })).command_status, 0);
  t.match(f.sms.last(), { dataCoding: 8, concat: { reference: 0x1234, total: 2, seq: 1, via: 'udh' }, displayText: 'часть' });

  const sarPayload = encodeUcs2('second half');
  t.equal((await submit({ data_coding: 8, short_message: sarPayload, sar_msg_ref_num: 500, sar_total_segments: 2, sar_segment_seqnum: 2 })).command_status, 0);
  sub = f.sms.last();
  t.same(sub.bytes, sarPayload);
  t.match(sub, { dataCoding: 8, esmClass: 0, concat: { reference: 500, total: 2, seq: 2, via: 'sar' }, displayText: 'second half' });

  const binary = Buffer.from([0x00, 0xff, 0x10, 0x80]);
  t.equal((await submit({ data_coding: 4, short_message: binary })).command_status, 0);
  sub = f.sms.last();
  t.same(sub.bytes, binary);
  t.equal(sub.dataCoding, 4);
  t.equal(sub.displayText, undefined, 'binary has no display text');
  t.equal(sub.text, undefined);

  t.equal((await submit({ data_coding: 0xf5, short_message: binary })).command_status, 0, 'message class with 8-bit data');
  t.equal(f.sms.last().dataCoding, 0xf5);
  t.equal((await submit({ data_coding: 2, short_message: binary })).command_status, 0, '8-bit data (2)');

  // A UDH without concatenation (e.g. port addressing): one message, sent as is.
  const ports = Buffer.concat([Buffer.from([0x06, 0x05, 0x04, 0x0b, 0x84, 0x23, 0xf0]), Buffer.from('wap')]);
  t.equal((await submit({ esm_class: 0x40, data_coding: 4, short_message: ports })).command_status, 0);
  t.same(f.sms.last().bytes, ports);
  t.equal(f.sms.last().concat, undefined);
});

t.test('schedule and validity, absolute and relative', async (t) => {
  const now = Date.now();
  t.equal((await submit({ schedule_delivery_time: '000000010000000R', validity_period: '000001000000000R' })).command_status, 0);
  let sub = f.sms.last();
  t.ok(Math.abs(sub.scheduledAt! - (now + 3_600_000)) < 5000, 'relative schedule: an hour from now');
  t.ok(Math.abs(sub.expiresAt! - (now + 86_400_000)) < 5000, 'relative validity: a day from now');

  const at = new Date(Math.floor((now + 2 * 86_400_000) / 1000) * 1000);
  const until = new Date(at.getTime() + 3_600_000);
  t.equal((await submit({ schedule_delivery_time: formatSmppAbsolute(at, 8), validity_period: formatSmppAbsolute(until, -20) })).command_status, 0);
  sub = f.sms.last();
  t.equal(sub.scheduledAt, at.getTime(), 'absolute schedule with a +2 h offset');
  t.equal(sub.expiresAt, until.getTime(), 'absolute validity with a -5 h offset');

  t.equal((await submit({ schedule_delivery_time: '200101000000000+' })).command_status, 0, 'a past schedule means now');
  t.equal(f.sms.last().scheduledAt, null);

  const fixed = Date.UTC(2030, 0, 1);
  const atLimit = submissionFromPdu({ ...BASE, schedule_delivery_time: formatSmppAbsolute(new Date(fixed + MAX_SCHEDULE_AHEAD_MS)) }, { accountId: 'a', systemId: 's', now: fixed });
  t.notOk(isSubmitRefusal(atLimit), 'exactly the maximum schedule is allowed');
  const beyond = submissionFromPdu({ ...BASE, schedule_delivery_time: formatSmppAbsolute(new Date(fixed + MAX_SCHEDULE_AHEAD_MS + 1000)) }, { accountId: 'a', systemId: 's', now: fixed });
  t.match(beyond, { status: CommandStatus.ESME_RINVSCHED }, 'a second more is refused');
});

t.test('data_sm is converted the same way', async (t) => {
  const resp = await client.request('data_sm', { ...BASE, short_message: undefined, message_payload: encodeGsm7('via data_sm'), qos_time_to_live: 600 });
  t.equal(resp.command_status, CommandStatus.ESME_ROK);
  t.match(resp.message_id, /^[0-9a-z]{26}$/);
  t.equal(f.sms.last().text, 'via data_sm');
  t.ok(Math.abs(f.sms.last().expiresAt! - (Date.now() + 600_000)) < 5000, 'qos_time_to_live becomes the validity');
});

t.test('SmsError codes map to command_status; other errors to ESME_RSYSERR', async (t) => {
  t.teardown(() => {
    f.sms.failWith = undefined;
  });
  for (const code of Object.keys(SMS_ERROR_STATUS) as SmsErrorCode[]) {
    f.sms.failWith = () => new SmsError(code, 'refused');
    const resp = await submit({});
    t.equal(resp.command_status, SMS_ERROR_STATUS[code], `${code} → ${statusName(SMS_ERROR_STATUS[code])}`);
  }
  t.equal(SMS_ERROR_STATUS.NO_ROUTE, CommandStatus.ESME_RINVDSTADR);
  t.equal(SMS_ERROR_STATUS.THROTTLED, CommandStatus.ESME_RTHROTTLED);
  t.equal(SMS_ERROR_STATUS.ACCOUNT_SUSPENDED, CommandStatus.ESME_RSUBMITFAIL);
  f.sms.failWith = () => new Error('disk on fire');
  t.equal((await submit({})).command_status, CommandStatus.ESME_RSYSERR);
  t.ok(f.logs.some((l) => l.msg === 'customer request failed' && l.level === 'error'), 'unexpected errors are logged');
});

t.test('submit_sm_resp waits for the durable accept; maxIncoming throttles', async (t) => {
  const g = await customerFixture(t, { maxIncoming: 1 });
  const a = await g.account('slow');
  const c = await g.bind(a);
  let release!: () => void;
  g.sms.gate = new Promise((r) => (release = r));
  const first = c.request('submit_sm', BASE);
  await waitFor(() => g.sms.submissions.length === 1);
  let answered = false;
  void first.then(() => (answered = true));
  const second = await c.request('submit_sm', BASE);
  t.equal(second.command_status, CommandStatus.ESME_RTHROTTLED, 'a second request while one is in the service → throttled');
  t.notOk(answered, 'no response before the service resolves');
  release();
  t.equal((await first).command_status, CommandStatus.ESME_ROK);
  const hist = await g.registry.getSingleMetric('ferry_smpp_customer_submit_duration_seconds')!.get();
  const count = hist.values.find((v) => (v as { metricName?: string }).metricName === 'ferry_smpp_customer_submit_duration_seconds_count');
  t.equal(count?.value, 1, 'duration observed');
});

t.test('submit_multi: one submission per destination, refusals in unsuccess_sme', async (t) => {
  t.teardown(() => {
    f.sms.failWith = undefined;
  });
  f.sms.failWith = (s) => (s.destination === '447700900333' ? new SmsError('NO_ROUTE', 'no route') : undefined);
  const before = f.sms.submissions.length;
  const resp = await client.request('submit_multi', {
    ...BASE,
    destination_addr: undefined,
    dest_address: [
      { dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '447700900111' },
      { dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '12' },
      { dl_name: 'friends' },
      { dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '447700900333' },
      { dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '447700900444' },
    ],
  });
  t.equal(resp.command_status, CommandStatus.ESME_ROK);
  const accepted = f.sms.submissions.slice(before);
  t.same(accepted.map((s) => s.destination), ['447700900111', '447700900333', '447700900444'], 'valid destinations reached the service');
  t.equal(resp.message_id, smppMessageId([...f.sms.records.values()].find((r) => r.destination === '447700900111')!.id), 'the first accepted id');
  const unsuccess = (resp.unsuccess_sme as Array<{ destination_addr: string; error_status_code: number }>).map((u) => [u.destination_addr, statusName(u.error_status_code)]);
  t.same(unsuccess.sort(), [['12', 'ESME_RINVDSTADR'], ['447700900333', 'ESME_RINVDSTADR'], ['friends', 'ESME_RINVDLNAME']].sort());

  const badSource = await client.request('submit_multi', { ...BASE, source_addr: '', dest_address: [{ dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '447700900111' }] });
  t.equal(badSource.command_status, CommandStatus.ESME_RINVSRCADR, 'a field common to all destinations fails the PDU');
  const noneOk = await client.request('submit_multi', { ...BASE, dest_address: [{ dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '1' }] });
  t.equal(noneOk.command_status, CommandStatus.ESME_RINVDSTADR, 'no destination accepted → their common status');
});
