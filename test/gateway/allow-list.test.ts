// Recipient allow-lists (release 2.1.0's whitelisted-phone delivery filters): per account and per API key.
import t from 'tap';
import { call } from '../helpers/daemon.js';
import { startGatewayDaemon } from '../helpers/gateway.js';

t.test('account and key allow-lists refuse other recipients', async (t) => {
  const gw = await startGatewayDaemon({ receiptDelayMs: 20 });
  t.teardown(() => gw.stop());
  const acc = await gw.account('allow-acc');
  await gw.adminCall('PATCH', `/admin/accounts/${acc.id}`, { allowedRecipients: ['23324*', '+14155552671'] });
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const send = (to: string) => c.request('submit_sm', { source_addr: 'Ferry', destination_addr: to, dest_addr_ton: 1, short_message: 'hi' });
  t.equal((await send('233241234567')).command_status, 0, 'prefix entry');
  t.equal((await send('14155552671')).command_status, 0, 'exact entry');
  t.equal((await send('233541234567')).command_status, 0x0b, 'not listed: ESME_RINVDSTADR');
  t.equal((await send('14155552672')).command_status, 0x0b, 'an exact entry is not a prefix');
  await t.rejects(gw.adminCall('PATCH', `/admin/accounts/${acc.id}`, { allowedRecipients: ['abc'] }), { code: 'VALIDATION_ERROR' });
  await gw.adminCall('PATCH', `/admin/accounts/${acc.id}`, { allowedRecipients: null });
  t.equal((await send('233541234567')).command_status, 0, 'cleared: anyone');

  const key = await gw.adminCall('POST', '/admin/keys', { account: acc.id, scopes: 'all', environment: 'test', allowedRecipients: ['+233241234567'] });
  const ok = await call(gw.api, 'POST', '/v1/sms/send', { token: key.token, body: { to: '+233241234567', from: 'Ferry', message: 'to the listed one' } });
  t.equal(ok.status, 200);
  const refused = await call(gw.api, 'POST', '/v1/sms/send', { token: key.token, body: { to: '+233241234568', from: 'Ferry', message: 'elsewhere' } });
  t.equal(refused.status, 403);
  t.equal(refused.json.code, 'RECIPIENT_NOT_ALLOWED');
});
