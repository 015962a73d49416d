// Customer ESME (the `smpp` package) → Ferry's SMPP server → ledger → queue → dispatcher → embedded simulator,
// and the receipt all the way back, over real TCP.
import t from 'tap';
import { sampleMessage } from '../helpers/ledger-rows.js';
import { startGatewayDaemon, type GatewayDaemon } from '../helpers/gateway.js';
import { ledgerMessageId } from '../../src/messaging/smpp-ingress/smpp-message-id.js';
import type { ClientPdu } from '../smpp/customer/customer-client.js';
import { gatewayOf, simulatorOf } from '../helpers/daemon.js';

const DEST = '233241234567';
// The receipt text as the smpp package hands it over: { message } decoded, or a Buffer. It decodes IA5 (data_coding
// 1) with its GSM 03.38 table, where 0x5F ('_' in IA5) is '§'; Ferry's SMPP ids read the same either way.
function receiptText(p: ClientPdu): string {
  const sm = p.short_message as { message?: string | Buffer } | Buffer;
  if (Buffer.isBuffer(sm)) return sm.toString('latin1');
  return Buffer.isBuffer(sm.message) ? sm.message.toString('latin1') : String(sm.message);
}

/** The ledger (REST) id of an SMPP id. */
const rest = (smppId: string): string => ledgerMessageId(smppId)!;

const isReceiptFor = (id: string) => (p: ClientPdu) =>
  p.command === 'deliver_sm' && (p as { receipted_message_id?: string }).receipted_message_id === id;

let gw: GatewayDaemon;
t.before(async () => {
  gw = await startGatewayDaemon({ receiptDelayMs: 50 });
});
t.teardown(() => gw.stop());

t.test('submit_sm → submit_sm_resp id → upstream → DELIVRD receipt with the same id', async (t) => {
  const acc = await gw.account('e2e-basic');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const resp = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'hello from ferry', registered_delivery: 1 });
  t.equal(resp.command_status, 0);
  const id = resp.message_id as string;
  t.match(id, /^[0-9a-z]{26}$/, 'letters and digits only');
  const dr = await c.next((p) => p.command === 'deliver_sm' && p.esm_class === 0x04, 10_000);
  t.equal(dr.receipted_message_id, id, 'receipted_message_id is the submit_sm_resp id');
  t.equal(dr.esm_class, 0x04, 'receipt esm_class');
  t.equal(dr.data_coding, 1, 'receipt text is IA5');
  t.equal(dr.message_state, 2, 'message_state DELIVERED');
  t.equal(dr.source_addr, DEST, 'from the handset');
  t.equal(dr.destination_addr, 'Ferry', 'to the sender');
  // As the client decoded it (GSM 03.38), not as Ferry meant it.
  const text = receiptText(dr);
  t.equal(/^id:(\S+) /.exec(text)?.[1], id, 'the id in the text, read as the client reads it, is the submit_sm_resp id');
  t.match(text, new RegExp(`^id:${id} sub:001 dlvrd:001 submit date:\\d{10} done date:\\d{10} stat:DELIVRD err:000 text:hello from ferry$`));
  t.equal(await gw.waitStatus(rest(id), ['delivered']), 'delivered');
  t.equal(rest(id), `msg_${id}`, 'the REST id is msg_ + the SMPP id');
  const history = await gatewayOf(gw.daemon).ledger.history(rest(id));
  t.same(history.map((h) => h.status), ['queued', 'submitted', 'delivered'], 'every change recorded');
  const q = await c.request('query_sm', { message_id: id, source_addr: 'Ferry' });
  t.equal(q.command_status, 0);
  t.equal(q.message_id, id, 'query_sm_resp names the same id');
  t.equal(q.message_state, 2, 'query_sm tells the real state');
  const sim = simulatorOf(gw.daemon)!.simulator;
  const got = sim.received().filter((m) => m.destinations.includes(DEST) && m.text === 'hello from ferry');
  t.equal(got.length, 1, 'sent upstream exactly once');
});

t.test('a message sent whole keeps its upstream id on its row; a repeated queue item of it is not sent again', async (t) => {
  const { gateway } = gw.daemon;
  const acc = await gw.account('e2e-whole');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const resp = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'one part', registered_delivery: 1 });
  const id = resp.message_id as string;
  await c.next(isReceiptFor(id), 10_000);
  const rec = await gateway.ledger.get(rest(id));
  const sim = simulatorOf(gw.daemon)!.simulator;
  const upstreamMessageId = sim.received().find((m) => m.text === 'one part')?.messageId;
  t.ok(upstreamMessageId, 'the simulator answered an id');
  t.match(rec, { status: 'delivered', partsTotal: 1, partsDone: 1, upstreamMessageId });
  t.same(await gateway.ledger.parts(rest(id)), [{ partIndex: 0, status: 'delivered', upstreamId: rec?.upstreamId, upstreamMessageId, errorCode: null }], 'its one part is read from the row');

  // Recorded as sent but not final: a queue item for it again (a redelivered lease, a reconciler push) is skipped.
  const m = sampleMessage({ accountId: acc.id, destination: '233241230001', body: 'sent already' });
  await gateway.writer.accept(m);
  t.equal(await gateway.ledger.markSubmitted(m.id, rec!.upstreamId!, null, [{ partIndex: 0, upstreamMessageId: 'up-dup-1' }], 1), 'changed');
  const skipped = async () => (await gw.daemon.metrics.registry.getSingleMetric('ferry_dispatch_outcomes_total')!.get()).values.find((v) => v.labels.outcome === 'skipped')?.value ?? 0;
  const before = await skipped();
  await gateway.queue.push([{ id: m.id, lane: 'bulk', payload: { id: m.id } }]);
  gateway.dispatcher.wake();
  for (const until = Date.now() + 10_000; (await skipped()) === before && Date.now() < until; ) await new Promise((r) => setTimeout(r, 25));
  t.equal((await skipped()) - before, 1, 'the dispatcher skipped it');
  t.notOk(sim.received().some((x) => x.text === 'sent already'), 'not sent upstream again');
  t.match(await gateway.ledger.get(m.id), { status: 'submitted', upstreamMessageId: 'up-dup-1' });
});

t.test('UCS-2 long text is one message for the customer and three parts upstream, delivered when all are', async (t) => {
  const acc = await gw.account('e2e-long');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const body = 'Привет, мир! '.repeat(15).slice(0, 180); // 180 UCS-2 characters → 3 parts of 67
  const resp = await c.request('submit_sm', {
    source_addr: 'Ferry',
    destination_addr: DEST,
    dest_addr_ton: 1,
    data_coding: 8,
    message_payload: Buffer.from(body, 'utf16le').swap16(),
    registered_delivery: 1,
  });
  t.equal(resp.command_status, 0);
  const id = resp.message_id as string;
  const dr = await c.next(isReceiptFor(id), 10_000);
  t.equal(dr.message_state, 2);
  const rec = await gatewayOf(gw.daemon).ledger.get(rest(id));
  t.equal(rec?.segments, 3);
  t.equal(rec?.encoding, 'UCS-2');
  t.equal(rec?.partsTotal, 3);
  const parts = await gatewayOf(gw.daemon).ledger.parts(rest(id));
  t.same(parts.map((p) => p.status), ['delivered', 'delivered', 'delivered']);
  const sim = simulatorOf(gw.daemon)!.simulator;
  const sent = sim.received().filter((m) => m.destinations.includes(DEST) && m.dataCoding === 8 && m.concat && body.includes(m.text));
  t.equal(sent.length, 3, 'three UCS-2 parts upstream');
  t.same(sent.map((m) => m.concat?.seq).sort(), [1, 2, 3]);
});

t.test('receipts wait for a receiver bind and arrive on the next bind', async (t) => {
  const acc = await gw.account('e2e-offline');
  const tx = await gw.bind('transmitter', acc.systemId, acc.password);
  const resp = await tx.request('submit_sm', { source_addr: '4412345', destination_addr: DEST, dest_addr_ton: 1, short_message: 'later', registered_delivery: 1 });
  const id = resp.message_id as string;
  await gw.waitStatus(rest(id), ['delivered']);
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(tx.received.some(isReceiptFor(id)), 'a transmitter bind gets no receipts');
  const rx = await gw.bind('receiver', acc.systemId, acc.password);
  const dr = await rx.next(isReceiptFor(id), 10_000);
  t.equal(dr.message_state, 2);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(rx.received.filter(isReceiptFor(id)).length, 1, 'delivered once');
});

t.test('registered_delivery 0 gets no receipt; 2 only on failure', async (t) => {
  const acc = await gw.account('e2e-rd');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const r0 = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'no receipt', registered_delivery: 0 });
  const r2 = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: 'failures only', registered_delivery: 2 });
  await gw.waitStatus(rest(r0.message_id as string), ['delivered']);
  await gw.waitStatus(rest(r2.message_id as string), ['delivered']);
  await new Promise((r) => setTimeout(r, 1500));
  t.notOk(c.received.some((p) => p.command === 'deliver_sm'), 'no receipt was owed');
});

t.test("the account's rate limit answers ESME_RTHROTTLED", async (t) => {
  const acc = await gw.account('e2e-tps', 'secret1', { maxTps: 5 });
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const resps = await Promise.all(
    Array.from({ length: 20 }, (_, i) => c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: `burst ${i}` })),
  );
  const statuses = resps.map((r) => r.command_status);
  t.equal(statuses.filter((s) => s === 0).length, 5, 'the burst allowance is accepted');
  t.equal(statuses.filter((s) => s === 0x58).length, 15, 'the rest are ESME_RTHROTTLED');
});

t.test('cancel_sm of a scheduled message; it is never sent', async (t) => {
  const acc = await gw.account('e2e-cancel');
  const c = await gw.bind('transceiver', acc.systemId, acc.password);
  const resp = await c.request('submit_sm', {
    source_addr: 'Ferry',
    destination_addr: DEST,
    dest_addr_ton: 1,
    short_message: 'in an hour',
    schedule_delivery_time: '000000010000000R',
  });
  t.equal(resp.command_status, 0);
  const id = resp.message_id as string;
  t.equal((await gatewayOf(gw.daemon).ledger.get(rest(id)))?.status, 'scheduled');
  const cancel = await c.request('cancel_sm', { message_id: id, source_addr: 'Ferry', destination_addr: DEST });
  t.equal(cancel.command_status, 0);
  t.equal((await gatewayOf(gw.daemon).ledger.get(rest(id)))?.status, 'cancelled');
  t.equal(await gatewayOf(gw.daemon).queue.get(rest(id)), null, 'removed from the queue');
  const again = await c.request('cancel_sm', { message_id: id, source_addr: 'Ferry', destination_addr: DEST });
  t.equal(again.command_status, 0x11, 'ESME_RCANCELFAIL the second time');
});
