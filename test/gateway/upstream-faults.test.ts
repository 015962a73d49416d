// The gateway against misbehaving upstreams (two simulators), over real TCP end to end: every accepted message
// ends final, receipts carry the ids the customer was given, and nothing is lost on the way.
import t from 'tap';
import { startSimulator, type SmscSimulator } from '../../src/sim/smpp/simulator.js';
import { ledgerMessageId } from '../../src/messaging/smpp-ingress/smpp-message-id.js';
import { FINAL_STATUSES } from '../../src/ledger/types.js';
import { startGatewayDaemon, type GatewayDaemon } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import type { ClientPdu, CustomerClient } from '../smpp/customer/customer-client.js';
import { gatewayOf } from '../helpers/daemon.js';

const DEST = '233241234567';

async function sims(t: { teardown(fn: () => unknown): void }, n: number, opts: Parameters<typeof startSimulator>[0] = {}): Promise<SmscSimulator[]> {
  const out: SmscSimulator[] = [];
  for (let i = 0; i < n; i++) {
    const s = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20, seed: 11 + i, ...opts });
    t.teardown(() => s.close());
    out.push(s);
  }
  return out;
}

async function submitMany(c: CustomerClient, n: number, tag: string): Promise<string[]> {
  const resps = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: `${tag} ${i}`, registered_delivery: 1 }, 15_000),
    ),
  );
  const bad = resps.filter((r) => r.command_status !== 0);
  if (bad.length) throw new Error(`${bad.length} submits refused: ${bad[0].command_status}`);
  // Ledger ids, for the ledger; receiptIds maps the receipts' ids the same way.
  return resps.map((r) => ledgerMessageId(r.message_id as string)!);
}

/** Waits until every id is final in the ledger; returns statuses by id. */
async function allFinal(gw: GatewayDaemon, ids: string[], timeoutMs = 30_000): Promise<Map<string, string>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const rows = await gatewayOf(gw.daemon).ledger.getMany(ids);
    const open = ids.filter((id) => !rows.has(id) || !FINAL_STATUSES.includes(rows.get(id)!.status));
    if (!open.length) return new Map([...rows].map(([id, r]) => [id, r.status]));
    if (Date.now() > until) throw new Error(`${open.length} of ${ids.length} messages not final, e.g. ${open[0]} is ${rows.get(open[0])?.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const receiptIds = (c: CustomerClient): Set<string> =>
  new Set(c.received.filter((p: ClientPdu) => p.command === 'deliver_sm' && p.esm_class === 4).map((p) => ledgerMessageId(String(p.receipted_message_id))!));

const eventually = (check: () => boolean): Promise<void> => waitFor(check, 15_000);

/** A daemon routing rule gh (prefix 233) to a, then b. */
function twoUpstreams(a: SmscSimulator, b: SmscSimulator): Promise<GatewayDaemon> {
  return startGatewayDaemon({
    upstreams: [
      { id: 'a', port: a.port },
      { id: 'b', port: b.port },
    ],
    rules: [{ id: 'gh', match: { prefix: ['233'] }, upstreams: ['a', 'b'] }],
  });
}

t.test('an upstream dropping its binds mid-traffic: reconnect, nothing lost, every message final with its receipt', async (t) => {
  const [a] = await sims(t, 1);
  const gw = await startGatewayDaemon({ upstreams: [{ id: 'a', port: a.port, binds: 2, window: 20 }] });
  t.teardown(() => gw.stop());
  const acc = await gw.account('drop');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const first = submitMany(c, 150, 'drop-a');
  await eventually(() => a.received().length >= 30);
  t.ok(a.disconnectAll() > 0, 'the upstream dropped every bind mid-traffic');
  const ids = [...(await first), ...(await submitMany(c, 50, 'drop-b'))];
  const statuses = await allFinal(gw, ids);
  t.equal([...statuses.values()].filter((s) => s === 'delivered').length, ids.length, 'every message delivered');
  await eventually(() => ids.every((id) => receiptIds(c).has(id)));
  t.pass(`every customer got its receipt; upstream saw ${a.received().length} submits for ${ids.length} messages (duplicates = at-least-once resends after the drop)`);
});

t.test('a down primary fails over to the second candidate', async (t) => {
  const [a, b] = await sims(t, 2);
  a.setBehaviour({ refuseBinds: 0x0d });
  const gw = await twoUpstreams(a, b);
  t.teardown(() => gw.stop());
  const acc = await gw.account('failover');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const ids = await submitMany(c, 40, 'failover');
  await allFinal(gw, ids);
  const rows = await gatewayOf(gw.daemon).ledger.getMany(ids);
  t.same(new Set([...rows.values()].map((r) => r.upstreamId)), new Set(['b']), 'all went to the failover upstream');
  t.same(new Set([...rows.values()].map((r) => r.routeRule)), new Set(['gh']));
  t.equal(a.received().length, 0);
});

t.test('a route switch under load moves the next messages, loses none', async (t) => {
  const [a, b] = await sims(t, 2);
  const gw = await twoUpstreams(a, b);
  t.teardown(() => gw.stop());
  const acc = await gw.account('switch');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const before = submitMany(c, 200, 'switch-1');
  await eventually(() => a.received().length >= 20);
  gatewayOf(gw.daemon).router.switchRoute('gh', 'b', 'test');
  const switchedAt = Date.now();
  const after = await submitMany(c, 100, 'switch-2');
  const ids = [...(await before), ...after];
  const statuses = await allFinal(gw, ids);
  t.equal([...statuses.values()].filter((s) => s === 'delivered').length, ids.length, 'every message delivered');
  const rows = await gatewayOf(gw.daemon).ledger.getMany(after);
  t.same(new Set([...rows.values()].map((r) => r.upstreamId)), new Set(['b']), 'messages accepted after the switch went to b');
  // Messages already routed and waiting for a's window when the switch came may still go to a; nothing after that.
  t.equal(a.received().filter((m) => m.receivedAt > switchedAt + 2500).length, 0, 'a got nothing once its in-flight messages were sent');
  t.ok(b.received().length >= 100);
});

t.test('receipts that overtake their submit_sm_resp still find their message', async (t) => {
  const [a] = await sims(t, 1, { receiptsBeforeResponse: true, idFormat: 'dec', receiptIdStyle: 'padded-upper' });
  const gw = await startGatewayDaemon({ upstreams: [{ id: 'a', port: a.port, receiptIdFormat: 'dec' }] });
  t.teardown(() => gw.stop());
  const acc = await gw.account('early');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const ids = await submitMany(c, 50, 'early');
  const statuses = await allFinal(gw, ids);
  t.equal([...statuses.values()].filter((s) => s === 'delivered').length, 50);
  await eventually(() => ids.every((id) => receiptIds(c).has(id)));
});

t.test('permanent upstream refusals and undelivered receipts reach the customer as final states', async (t) => {
  const [a] = await sims(t, 1, { outcomes: { UNDELIV: 1 } });
  const gw = await startGatewayDaemon({ upstreams: [{ id: 'a', port: a.port }] });
  t.teardown(() => gw.stop());
  const acc = await gw.account('undeliv');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const ids = await submitMany(c, 10, 'undeliv');
  const statuses = await allFinal(gw, ids);
  t.same(new Set(statuses.values()), new Set(['undelivered']));
  await eventually(() => ids.every((id) => receiptIds(c).has(id)));
  const dr = c.received.find((p) => p.command === 'deliver_sm')!;
  t.equal(dr.message_state, 5, 'UNDELIVERABLE');
});

t.test('a restart with queued messages sends them all', async (t) => {
  const [a] = await sims(t, 1);
  a.setBehaviour({ refuseBinds: 0x0d }); // the upstream is down: messages stay queued
  const gw1 = await startGatewayDaemon({ upstreams: [{ id: 'a', port: a.port }] });
  const acc = await gw1.account('restart');
  const c1 = await gw1.bind('transmitter', acc.systemId, acc.password);
  const ids = await submitMany(c1, 60, 'restart');
  const rows = await gatewayOf(gw1.daemon).ledger.getMany(ids);
  t.same(new Set([...rows.values()].map((r) => r.status)), new Set(['queued']), 'accepted and waiting');
  await gw1.stopKeepingStore();
  a.setBehaviour({ refuseBinds: 0 });
  const gw2 = await startGatewayDaemon({ upstreams: [{ id: 'a', port: a.port }], reuse: gw1.reuse });
  t.teardown(() => gw2.stop());
  const statuses = await allFinal(gw2, ids);
  t.equal([...statuses.values()].filter((s) => s === 'delivered').length, 60, 'all delivered after the restart');
  const rx = await gw2.bind('receiver', acc.systemId, acc.password);
  await eventually(() => ids.every((id) => receiptIds(rx).has(id)));
  t.equal(new Set(a.received().map((m) => m.text)).size, 60);
});
