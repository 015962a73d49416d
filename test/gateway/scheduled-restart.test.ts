// A message scheduled over REST is kept across a daemon restart and released at its time, not before.
import t from 'tap';
import { accountWithKey, call, gatewayOf } from '../helpers/daemon.js';
import { startGatewayDaemon } from '../helpers/gateway.js';

t.test('a scheduled message is released at its time after a restart in between', async (t) => {
  const gw1 = await startGatewayDaemon({ receiptDelayMs: 20 });
  const { account, token } = await accountWithKey(gw1, 'sched-restart');
  const at = new Date(Date.now() + 4000);
  const res = await call(gw1.api, 'POST', '/v1/sms/send', { token, body: { to: '+233241234567', from: 'Ferry', message: 'on time', scheduledAt: at.toISOString() } });
  t.equal(res.status, 200, JSON.stringify(res.json));
  t.equal(res.json.data.status, 'scheduled');
  const id = res.json.data.messageId as string;
  await gw1.stopKeepingStore();

  const gw2 = await startGatewayDaemon({ receiptDelayMs: 20, reuse: gw1.reuse });
  t.teardown(() => gw2.stop());
  t.equal((await gatewayOf(gw2.daemon).ledger.get(id))?.status, 'scheduled', 'still waiting after the restart');
  t.equal(await gw2.waitStatus(id, ['delivered'], 15_000), 'delivered');
  const history = await gatewayOf(gw2.daemon).ledger.history(id);
  t.same(history.map((h) => h.status), ['scheduled', 'submitted', 'delivered']);
  t.ok(history[1].at >= at.getTime() - 50, `submitted at its time (${history[1].at - at.getTime()} ms after)`);
  const status = await call(gw2.api, 'GET', `/v1/sms/status/${id}`, { token });
  t.equal(status.json.data.status, 'delivered');
  t.equal(status.json.data.to, '233241234567');
  t.ok(account.id);
});
