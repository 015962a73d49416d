import t from 'tap';
import { SmsError } from '../../../src/messaging/types.js';
import type { MessageStatus } from '../../../src/ledger/types.js';
import { CommandStatus, MessageState } from '../../../src/smpp/constants.js';
import { MESSAGE_STATE_OF_STATUS, RECEIPT_STAT_OF_STATUS, messageStateOf } from '../../../src/messaging/smpp-ingress/message-state.js';
import { ledgerMessageId, smppMessageId } from '../../../src/messaging/smpp-ingress/smpp-message-id.js';
import { encodeGsm7 } from '../../../src/smpp/text/gsm7.js';
import { CustomerClient } from './customer-client.js';
import { customerFixture, type CustomerFixture, type TestAccount } from './customer-fixture.js';

const SUBMIT = {
  source_addr_ton: 5,
  source_addr: 'Ferry',
  dest_addr_ton: 1,
  dest_addr_npi: 1,
  destination_addr: '447700900123',
  data_coding: 0,
  short_message: encodeGsm7('hello'),
};

let f: CustomerFixture;
let acc: TestAccount;
let client: CustomerClient;

t.before(async () => {
  f = await customerFixture(t);
  acc = await f.account('querier');
  client = await f.bind(acc);
});

/** Submits; resolves with the SMPP id of submit_sm_resp. */
async function submitted(c: CustomerClient = client, patch: Record<string, unknown> = {}): Promise<string> {
  const resp = await c.request('submit_sm', { ...SUBMIT, ...patch });
  if (resp.command_status !== 0) throw new Error(`submit refused: ${resp.command_status}`);
  return resp.message_id as string;
}

/** The SMS service's (REST) id of an SMPP id. */
const rest = (smppId: string): string => ledgerMessageId(smppId)!;

t.test('the status maps', async (t) => {
  const expected: Record<MessageStatus, [number, string]> = {
    queued: [MessageState.ENROUTE, 'ENROUTE'],
    scheduled: [MessageState.ENROUTE, 'ENROUTE'],
    submitted: [MessageState.ENROUTE, 'ENROUTE'],
    delivered: [MessageState.DELIVERED, 'DELIVRD'],
    expired: [MessageState.EXPIRED, 'EXPIRED'],
    cancelled: [MessageState.DELETED, 'DELETED'],
    undelivered: [MessageState.UNDELIVERABLE, 'UNDELIV'],
    failed: [MessageState.UNDELIVERABLE, 'UNDELIV'],
    rejected: [MessageState.REJECTED, 'REJECTD'],
  };
  for (const [status, [state, stat]] of Object.entries(expected) as Array<[MessageStatus, [number, string]]>) {
    t.equal(MESSAGE_STATE_OF_STATUS[status], state, `${status} → message_state ${state}`);
    t.equal(RECEIPT_STAT_OF_STATUS[status], stat, `${status} → stat ${stat}`);
  }
  t.equal(messageStateOf('scheduled', 0x50), MessageState.SCHEDULED, 'v5.0 binds know SCHEDULED');
  t.equal(messageStateOf('scheduled', 0x34), MessageState.ENROUTE);
  t.equal(messageStateOf('queued', 0x50), MessageState.ENROUTE);
});

t.test('query_sm answers the ledger status, final date and error 0', async (t) => {
  const id = await submitted();
  let resp = await client.request('query_sm', { message_id: id, source_addr: 'Ferry' });
  t.equal(resp.command_status, CommandStatus.ESME_ROK);
  t.equal(resp.message_id, id);
  t.equal(resp.message_state, MessageState.ENROUTE);
  t.equal(resp.final_date, '', 'no final date while en route');
  t.equal(resp.error_code, 0);

  const finalAt = Math.floor(Date.now() / 1000) * 1000;
  for (const [status, state] of [
    ['delivered', MessageState.DELIVERED],
    ['expired', MessageState.EXPIRED],
    ['undelivered', MessageState.UNDELIVERABLE],
    ['failed', MessageState.UNDELIVERABLE],
    ['rejected', MessageState.REJECTED],
    ['cancelled', MessageState.DELETED],
  ] as Array<[MessageStatus, number]>) {
    f.sms.setStatus(rest(id), status, finalAt);
    resp = await client.request('query_sm', { message_id: id });
    t.equal(resp.message_state, state, `${status} → ${state}`);
    // The smpp package turns the SMPP time back into a Date.
    t.equal((resp.final_date as Date).getTime(), finalAt, `${status}: final_date is the ledger's finalAt`);
  }

  t.equal((await client.request('query_sm', { message_id: 'msg_nope' })).command_status, CommandStatus.ESME_RQUERYFAIL, 'unknown id → ESME_RQUERYFAIL');
  t.equal((await client.request('query_sm', { message_id: '' })).command_status, CommandStatus.ESME_RINVMSGID, 'empty id → ESME_RINVMSGID');

  t.equal((await client.request('query_sm', { message_id: 'not an id!' })).command_status, CommandStatus.ESME_RQUERYFAIL, 'an id of neither form → ESME_RQUERYFAIL');

  const other = await f.account('stranger');
  const otherClient = await f.bind(other);
  t.equal((await otherClient.request('query_sm', { message_id: id })).command_status, CommandStatus.ESME_RQUERYFAIL, "another account's message is unknown");
});

t.test('the id on SMPP is the REST id without msg_; query_sm and cancel_sm take either form, in any case', async (t) => {
  const id = await submitted();
  t.match(id, /^[0-9a-z]{26}$/, 'letters and digits only: the same in IA5 and GSM 03.38');
  const restId = [...f.sms.records.keys()].at(-1)!;
  t.equal(restId, `msg_${id}`, 'msg_ + the SMPP id is the REST id');
  t.equal(smppMessageId(restId), id);
  for (const asked of [id, restId, id.toUpperCase()]) {
    const resp = await client.request('query_sm', { message_id: asked });
    t.equal(resp.command_status, CommandStatus.ESME_ROK, `query_sm ${asked}`);
    t.equal(resp.message_id, id, 'answered with the SMPP form');
  }
  t.equal((await client.request('cancel_sm', { message_id: restId })).command_status, CommandStatus.ESME_ROK, 'cancel_sm by the REST form');
  t.equal(f.sms.records.get(restId)!.status, 'cancelled');
});

t.test('query_sm on a scheduled message depends on the bind interface_version', async (t) => {
  const v34 = await CustomerClient.connect(f.server.ports.plain);
  t.teardown(() => v34.close());
  const bound = await v34.request('bind_transceiver', { system_id: acc.systemId, password: acc.password, interface_version: 0x34 });
  t.equal(bound.command_status, 0);
  const id = await submitted(v34, { schedule_delivery_time: '000000010000000R' });
  t.equal(f.sms.records.get(rest(id))!.status, 'scheduled');
  t.equal((await v34.request('query_sm', { message_id: id })).message_state, MessageState.ENROUTE, 'v3.4: ENROUTE');
  // The smpp package binds as v5.0 by default.
  t.equal((await client.request('query_sm', { message_id: id })).message_state, MessageState.SCHEDULED, 'v5.0: SCHEDULED');
});

t.test('cancel_sm, replace_sm', async (t) => {
  const id = await submitted();
  t.equal((await client.request('cancel_sm', { message_id: id, source_addr: 'Ferry', destination_addr: '447700900123' })).command_status, CommandStatus.ESME_ROK);
  t.equal(f.sms.records.get(rest(id))!.status, 'cancelled');
  t.equal((await client.request('cancel_sm', { message_id: id })).command_status, CommandStatus.ESME_RCANCELFAIL, 'already cancelled');
  t.equal((await client.request('cancel_sm', { message_id: 'msg_nope' })).command_status, CommandStatus.ESME_RCANCELFAIL, 'unknown');
  t.equal((await client.request('cancel_sm', { message_id: '', source_addr: 'Ferry', destination_addr: '447700900123' })).command_status, CommandStatus.ESME_RCANCELFAIL, 'by address only: not supported');
  const sent = await submitted();
  f.sms.setStatus(rest(sent), 'submitted');
  t.equal((await client.request('cancel_sm', { message_id: sent })).command_status, CommandStatus.ESME_RCANCELFAIL, 'already sent upstream');

  const resp = await client.request('replace_sm', { message_id: sent, source_addr: 'Ferry', short_message: encodeGsm7('new') });
  t.equal(resp.command_status, CommandStatus.ESME_RREPLACEFAIL, 'replace_sm is not supported');
});

t.test('storage failures during query and cancel', async (t) => {
  const id = await submitted();
  f.sms.failLookupsWith = new SmsError('STORAGE_UNAVAILABLE', 'db down');
  t.teardown(() => {
    f.sms.failLookupsWith = undefined;
  });
  t.equal((await client.request('query_sm', { message_id: id })).command_status, CommandStatus.ESME_RSYSERR);
  t.equal((await client.request('cancel_sm', { message_id: id })).command_status, CommandStatus.ESME_RSYSERR);
  f.sms.failLookupsWith = new Error('boom');
  t.equal((await client.request('query_sm', { message_id: id })).command_status, CommandStatus.ESME_RSYSERR);
});
