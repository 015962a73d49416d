// Destinations as carriers accept them: on SMPP Ferry checks the form (digits, a possible length for the calling code)
// and leaves validity to the carrier, unless the account or the route rule asks for numberValidation strict. The
// customer is the `smpp` npm client (an independent SMPP implementation).
import t from 'tap';
import { CommandStatus, statusName } from '../../src/smpp/constants.js';
import { ledgerMessageId } from '../../src/messaging/smpp-ingress/smpp-message-id.js';
import { call, gatewayOf } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';
import { startGatewayDaemon, type GatewayDaemon } from '../helpers/gateway.js';
import type { CustomerClient } from '../smpp/customer/customer-client.js';

// A North American test number (555 is no area code in service) and Kannel's default destination, TON/NPI 0/0.
const NANP_TEST = '15555550100';
const KANNEL = '4670000000';
// Not numbers whatever the policy: letters, too short, longer than E.164.
const GARBAGE = ['acme', '12', '12345678901234567890'];

let gw: GatewayDaemon;
t.before(async () => {
  gw = await startGatewayDaemon({
    receiptDelayMs: 50,
    rules: [
      { id: 'nanp-strict', match: { prefix: ['1'] }, upstreams: ['embedded'], numberValidation: 'strict' },
      { id: 'default', match: {}, upstreams: ['embedded'] },
    ],
  });
});
t.teardown(() => gw.stop());

async function submit(c: CustomerClient, destination: string, ton = 0, npi = 0): Promise<string> {
  const resp = await c.request('submit_sm', { source_addr: 'Ferry', dest_addr_ton: ton, dest_addr_npi: npi, destination_addr: destination, short_message: 'to the carrier' });
  return statusName(resp.command_status) + (resp.command_status === CommandStatus.ESME_ROK ? ` ${String(resp.message_id)}` : '');
}

const outcome = (answer: string): string => answer.split(' ')[0];

t.test(`SMPP, by default: the carrier decides whether a possible number exists (${backendLabel})`, async (t) => {
  const acc = await gw.account('dest-default');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const kannel = await submit(c, KANNEL);
  t.equal(outcome(kannel), 'ESME_ROK', `${KANNEL} TON/NPI 0/0: ${kannel}`);
  const rec = await gatewayOf(gw.daemon).ledger.get(ledgerMessageId(kannel.split(' ')[1] ?? '') ?? '');
  t.equal(rec?.destination, KANNEL, 'read as international digits: they look international (+46, a possible length)');
  t.equal(outcome(await submit(c, '+46700000001')), 'ESME_ROK', 'a leading + is international too');
  t.equal(outcome(await submit(c, '0612345678')), 'ESME_RINVDSTADR', 'a national number of no known country: no calling code to read');
  for (const g of GARBAGE) t.equal(outcome(await submit(c, g)), 'ESME_RINVDSTADR', `${g} refused`);
});

t.test('an account with numberValidation strict refuses what its country plan does not know', async (t) => {
  const acc = await gw.account('dest-strict');
  await gw.adminCall('PATCH', `/admin/accounts/${acc.id}`, { numberValidation: 'strict' });
  t.equal((await gw.adminCall('GET', `/admin/accounts/${acc.id}`)).numberValidation, 'strict', 'set through the admin API');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  t.equal(outcome(await submit(c, KANNEL)), 'ESME_RINVDSTADR', `${KANNEL} 0/0`);
  t.equal(outcome(await submit(c, NANP_TEST, 1, 1)), 'ESME_RINVDSTADR', `${NANP_TEST} 1/1`);
  t.equal(outcome(await submit(c, '233241234567')), 'ESME_ROK', 'a valid number still goes');
  for (const g of GARBAGE) t.equal(outcome(await submit(c, g)), 'ESME_RINVDSTADR', `${g} refused`);
  await t.rejects(gw.adminCall('PATCH', `/admin/accounts/${acc.id}`, { numberValidation: 'lenient' }), { code: 'VALIDATION_ERROR' }, 'only strict, possible, off or null');
});

t.test('a route rule with numberValidation strict: the stricter of rule and account applies', async (t) => {
  const plain = await gw.account('dest-route');
  const c = await gw.bind('transceiver', plain.systemId, plain.password);
  t.equal(outcome(await submit(c, NANP_TEST)), 'ESME_RINVDSTADR', `${NANP_TEST} 0/0 routes by the strict +1 rule`);
  t.equal(outcome(await submit(c, NANP_TEST, 1, 1)), 'ESME_RINVDSTADR', `${NANP_TEST} 1/1 as well`);
  t.equal(outcome(await submit(c, '14155552671', 1, 1)), 'ESME_ROK', 'a valid +1 number goes');
  const off = await gw.account('dest-off', 'secret1', { numberValidation: 'off' });
  const o = await gw.bind('transceiver', off.systemId, off.password);
  t.equal(outcome(await submit(o, NANP_TEST)), 'ESME_RINVDSTADR', 'an account set to off does not loosen a strict route');
  t.equal(outcome(await submit(o, '0612345678')), 'ESME_ROK', 'off: any 3 to 15 digits elsewhere');
  t.equal(outcome(await submit(o, '999123')), 'ESME_ROK', 'even without a known calling code');
  for (const g of GARBAGE) t.equal(outcome(await submit(o, g)), 'ESME_RINVDSTADR', `${g} refused even when off`);
});

t.test('REST keeps INVALID_PHONE_NUMBER for numbers its strict default does not know, unless the account says otherwise', async (t) => {
  const send = async (name: string, to: string) => {
    const key = await gw.adminCall('POST', '/admin/keys', { account: name, scopes: 'all' });
    return (await call(gw.api, 'POST', '/v1/sms/send', { token: key.token as string, body: { to, from: 'Ferry', message: 'over REST' } })).json.code as string;
  };
  await gw.account('rest-default');
  t.equal(await send('rest-default', `+${KANNEL}`), 'INVALID_PHONE_NUMBER', 'strict by default on REST');
  t.equal(await send('rest-default', 'nope'), 'INVALID_PHONE_NUMBER');
  await gw.account('rest-possible', 'secret1', { numberValidation: 'possible' });
  t.equal(await send('rest-possible', `+${KANNEL}`), 'SMS_SENT', 'possible: sent');
  t.equal(await send('rest-possible', 'nope'), 'INVALID_PHONE_NUMBER', 'a number that cannot be read: refused whatever the policy');
});
