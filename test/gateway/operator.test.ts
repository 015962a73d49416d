// The operator's side of the gateway over real connections: MO routing by owned number, receipt replay, message
// inspection, and a route switch through the admin API that survives a restart.
import t from 'tap';
import { startSimulator } from '../../src/sim/smpp/simulator.js';
import { ledgerMessageId } from '../../src/messaging/smpp-ingress/smpp-message-id.js';
import { startGatewayDaemon } from '../helpers/gateway.js';
import type { ClientPdu } from '../smpp/customer/customer-client.js';
import { gatewayOf, simulatorOf } from '../helpers/daemon.js';

const DEST = '233241234567';
/** The ledger id of a submit_sm_resp. */
const rest = (resp: ClientPdu): string => ledgerMessageId(String(resp.message_id))!;
const receiptsFor = (id: string) => (p: ClientPdu) => p.command === 'deliver_sm' && p.receipted_message_id === id;

t.test('MO to a number the account owns reaches its receiver bind; receipts can be replayed; messages inspected', async (t) => {
  const gw = await startGatewayDaemon({ receiptDelayMs: 20 });
  t.teardown(() => gw.stop());
  const acc = await gw.account('operator-mo');
  await gw.adminCall('POST', `/admin/accounts/${acc.id}/numbers`, { number: '233200000099' });
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const sim = simulatorOf(gw.daemon)!.simulator;
  await sim.injectMo({ source: DEST, destination: '233200000099', text: 'STOP' });
  const mo = await c.next((p) => p.command === 'deliver_sm' && p.esm_class === 0, 10_000);
  t.equal(mo.source_addr, DEST);
  t.equal(mo.destination_addr, '233200000099');
  t.equal((mo.short_message as { message: string }).message, 'STOP');

  const resp = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'replay me', registered_delivery: 1 });
  const id = String(resp.message_id);
  await c.next(receiptsFor(id), 10_000);
  const shown = await gw.adminCall('GET', `/admin/messages/${id}`);
  t.equal(shown.message.status, 'delivered');
  t.equal(shown.message.id, `msg_${id}`, 'the SMPP id a customer quotes shows the message');
  t.same(
    shown.history.map((h: { status: string }) => h.status),
    ['queued', 'submitted', 'delivered'],
  );
  t.equal(shown.message.upstreamId, 'embedded');
  const replay = await gw.adminCall('POST', `/admin/receipts/${id}/replay`);
  t.ok(replay, 'replay accepted');
  const until = Date.now() + 10_000;
  while (c.received.filter(receiptsFor(id)).length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.equal(c.received.filter(receiptsFor(id)).length, 2, 'the receipt came again');
  await t.rejects(gw.adminCall('GET', '/admin/messages/msg_nothing'), { code: 'MESSAGE_NOT_FOUND' });
});

t.test('a route switch through the admin API takes effect at once and survives a restart', async (t) => {
  const a = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20 });
  const b = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20 });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const upstreams = [
    { id: 'a', port: a.port },
    { id: 'b', port: b.port },
  ];
  const rules = [{ id: 'gh', match: { prefix: ['233'] }, upstreams: ['a', 'b'] }];
  const gw1 = await startGatewayDaemon({ upstreams, rules });
  const acc = await gw1.account('operator-switch');
  await gw1.adminCall('POST', '/admin/routes/gh/switch', { upstream: 'b' });
  const c1 = await gw1.bind('transceiver', acc.systemId, acc.password);
  const r1 = await c1.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'after switch' });
  await gw1.waitStatus(rest(r1), ['delivered']);
  t.equal((await gatewayOf(gw1.daemon).ledger.get(rest(r1)))?.upstreamId, 'b');
  await gw1.stopKeepingStore();

  const gw2 = await startGatewayDaemon({ upstreams, rules, reuse: gw1.reuse });
  t.teardown(() => gw2.stop());
  t.same(gatewayOf(gw2.daemon).router.overrides(), { gh: 'b' }, 'the switch was restored');
  const c2 = await gw2.bind('transceiver', acc.systemId, acc.password);
  const r2 = await c2.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'after restart' });
  await gw2.waitStatus(rest(r2), ['delivered']);
  t.equal((await gatewayOf(gw2.daemon).ledger.get(rest(r2)))?.upstreamId, 'b');
  await gw2.adminCall('DELETE', '/admin/routes/gh/switch');
  const r3 = await c2.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'after clear' });
  await gw2.waitStatus(rest(r3), ['delivered']);
  t.equal((await gatewayOf(gw2.daemon).ledger.get(rest(r3)))?.upstreamId, 'a', 'cleared: back to the configured primary');
  t.equal(a.received().filter((m) => m.text === 'after switch' || m.text === 'after restart').length, 0);
});
