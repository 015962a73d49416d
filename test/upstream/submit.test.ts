import { Registry } from 'prom-client';
import t from 'tap';
import { DataCoding, MessageState } from '../../src/smpp/constants.js';
import type { SimulatorOptions } from '../../src/sim/smpp/simulator.js';
import type { UpstreamMo } from '../../src/smpp/upstream/outbound.js';
import { UpstreamMetrics } from '../../src/smpp/upstream/upstream-metrics.js';
import { message, sim, testPool, upstreamConfig, waitFor, waitUp } from './upstream-helpers.js';

t.test('submit is accepted with the upstream id, and the receipt comes back with the Ferry id', async (t) => {
  const s = await sim(t);
  const { pool, receipts } = testPool(t, [upstreamConfig('a', s.port)]);
  await waitUp(pool, ['a']);
  const m = message({ text: 'Hello from Ferry' });
  const outcome = await pool.submit(m, ['a']);
  t.equal(outcome.kind, 'accepted');
  if (outcome.kind !== 'accepted') return;
  t.equal(outcome.upstreamId, 'a');
  t.equal(outcome.totalParts, 1);
  const received = s.received();
  t.equal(received.length, 1);
  t.same(outcome.parts, [{ upstreamMessageId: received[0].messageId, partIndex: 0 }], 'the id the SMSC answered');
  t.equal(received[0].text, 'Hello from Ferry');
  t.equal(received[0].source, 'Ferry');
  await waitFor(() => receipts.length === 1);
  t.match(receipts[0], { messageId: m.id, partIndex: 0, parts: 1, upstreamId: 'a', state: MessageState.DELIVERED, stat: 'DELIVRD', final: true });
  t.equal(receipts[0].errorCode, '000');
});

t.test('receipts that arrive before submit_sm_resp are held and matched', async (t) => {
  const s = await sim(t, { receiptsBeforeResponse: true });
  const { pool, receipts } = testPool(t, [upstreamConfig('a', s.port, { window: 50 })]);
  await waitUp(pool, ['a']);
  const msgs = Array.from({ length: 20 }, () => message());
  const outcomes = await Promise.all(msgs.map((m) => pool.submit(m, ['a'])));
  t.ok(outcomes.every((o) => o.kind === 'accepted'), 'all accepted');
  await waitFor(() => receipts.length === 20, 5000, '20 receipts');
  t.same(receipts.map((r) => r.messageId).sort(), msgs.map((m) => m.id).sort(), 'every receipt correlated to its own message');
  t.equal(s.stats.receiptsSent, 20);
  t.ok(pool.correlator.matchedAfterHold >= 1, `receipts really were early (${pool.correlator.matchedAfterHold} held then matched)`);
  t.equal(pool.correlator.heldReceipts, 0, 'nothing left held');
});

t.test('hex / decimal / padded receipt ids are matched; a wrong receiptIdFormat still matches, through a counted fallback', async (t) => {
  const cases: Array<{ name: string; sim: Partial<SimulatorOptions>; format: 'hex' | 'dec' | 'as-is'; fallbacks: boolean }> = [
    { name: 'hex responses, decimal receipts, format dec', sim: { idFormat: 'hex', receiptIdStyle: 'decimal' }, format: 'dec', fallbacks: false },
    { name: 'hex responses, upper-case zero-padded receipts', sim: { idFormat: 'hex', receiptIdStyle: 'padded-upper' }, format: 'as-is', fallbacks: false },
    { name: 'decimal both ways', sim: { idFormat: 'dec', receiptIdStyle: 'same' }, format: 'as-is', fallbacks: false },
    { name: 'hex responses, decimal receipts, format left as-is', sim: { idFormat: 'hex', receiptIdStyle: 'decimal' }, format: 'as-is', fallbacks: true },
  ];
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const s = await sim(t, c.sim);
      const registry = new Registry();
      const metrics = new UpstreamMetrics(registry);
      const { pool, receipts } = testPool(t, [upstreamConfig('u', s.port, { receiptIdFormat: c.format })], { metrics });
      await waitUp(pool, ['u']);
      const msgs = Array.from({ length: 5 }, () => message());
      for (const m of msgs) t.equal((await pool.submit(m, ['u'])).kind, 'accepted');
      await waitFor(() => receipts.length === 5);
      t.same(receipts.map((r) => r.messageId).sort(), msgs.map((m) => m.id).sort());
      if (c.sim.receiptIdStyle === 'decimal') t.match(receipts[0].upstreamMessageId, /^[0-9]+$/, 'the receipt really wrote decimal');
      if (c.sim.receiptIdStyle === 'padded-upper') t.match(receipts[0].upstreamMessageId, /^0+[0-9A-F]+$/, 'the receipt really padded');
      const fallbacks = (await metrics.receiptIdFallbacks.get()).values.reduce((n, v) => n + v.value, 0);
      t.equal(fallbacks, c.fallbacks ? 5 : 0, 'fallback matches counted');
      const unmatched = (await metrics.receiptsUnmatched.get()).values.length;
      t.equal(unmatched, 0);
    });
  }
});

t.test('GSM-7, UCS-2 and long messages are split with UDH; parts correlate separately', async (t) => {
  const s = await sim(t);
  const { pool, receipts } = testPool(t, [upstreamConfig('a', s.port)]);
  await waitUp(pool, ['a']);

  // 150 GSM characters + 6 extension characters (2 septets each) = 162 septets: two parts, not one.
  const gsmExt = 'a'.repeat(150) + '€€€€€€';
  const o1 = await pool.submit(message({ text: gsmExt }), ['a']);
  t.equal(o1.kind === 'accepted' && o1.totalParts, 2, 'extension characters count twice');

  s.clearReceived();
  const ucs = await pool.submit(message({ text: 'Привет, мир' }), ['a']);
  t.equal(ucs.kind, 'accepted');
  t.equal(s.received()[0].dataCoding, DataCoding.UCS2);
  t.equal(s.received()[0].text, 'Привет, мир');

  s.clearReceived();
  receipts.length = 0;
  const long = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ').padEnd(400, '.'); // 400 septets: 3 × 153
  const m = message({ text: long });
  const o3 = await pool.submit(m, ['a']);
  t.equal(o3.kind, 'accepted');
  if (o3.kind !== 'accepted') return;
  t.equal(o3.totalParts, 3);
  t.same(o3.parts.map((p) => p.partIndex).sort(), [0, 1, 2]);
  const parts = s.received();
  t.equal(parts.length, 3, 'three submit_sm at the SMSC');
  t.ok(parts.every((p) => p.dataCoding === DataCoding.SMSC_DEFAULT && p.concat?.via === 'udh' && p.concat.total === 3));
  t.equal(new Set(parts.map((p) => p.concat!.reference)).size, 1, 'one reference');
  t.same(parts.map((p) => p.concat!.seq).sort(), [1, 2, 3]);
  t.equal([...parts].sort((a, b) => a.concat!.seq - b.concat!.seq).map((p) => p.text).join(''), long, 'parts join to the text');
  await waitFor(() => receipts.length === 3);
  t.ok(receipts.every((r) => r.messageId === m.id && r.parts === 3));
  t.same(receipts.map((r) => r.partIndex).sort(), [0, 1, 2], 'one receipt per part');

  s.clearReceived();
  const ucsLong = 'Ж'.repeat(150); // UCS-2: 67 per part → 3 parts
  const o4 = await pool.submit(message({ text: ucsLong }), ['a']);
  t.equal(o4.kind === 'accepted' && o4.totalParts, 3);
  t.ok(s.received().every((p) => p.dataCoding === DataCoding.UCS2 && p.text.length <= 67));
});

t.test('an upstream with usePayloadTlv gets a long message in one submit_sm with message_payload', async (t) => {
  const s = await sim(t);
  const { pool, receipts } = testPool(t, [upstreamConfig('p', s.port, { usePayloadTlv: true })]);
  await waitUp(pool, ['p']);
  const text = 'x'.repeat(400);
  const m = message({ text });
  const o = await pool.submit(m, ['p']);
  t.equal(o.kind === 'accepted' && o.totalParts, 1);
  const got = s.received();
  t.equal(got.length, 1);
  t.equal(got[0].text, text);
  t.ok(got[0].tlvs?.message_payload, 'carried in message_payload');
  await waitFor(() => receipts.length === 1);
  t.equal(receipts[0].messageId, m.id);
});

t.test('transmitter+receiver mode: submits on transmitters, receipts on receivers; MO reaches onMo', async (t) => {
  const s = await sim(t);
  const mos: UpstreamMo[] = [];
  const { pool, receipts } = testPool(t, [upstreamConfig('tr', s.port, { bindMode: 'transmitter+receiver', binds: 2 })], {
    onMo: (mo) => {
      mos.push(mo);
    },
  });
  await waitUp(pool, ['tr']);
  const up = pool.get('tr')!;
  t.same(up.binds.map((b) => b.bindType).sort(), ['receiver', 'receiver', 'transmitter', 'transmitter']);
  t.same(s.sessions().map((x) => x.bindType).sort(), ['receiver', 'receiver', 'transmitter', 'transmitter'], 'the SMSC sees 2 + 2 binds');
  const msgs = Array.from({ length: 10 }, () => message());
  const outcomes = await Promise.all(msgs.map((m) => pool.submit(m, ['tr'])));
  t.ok(outcomes.every((o) => o.kind === 'accepted'));
  await waitFor(() => receipts.length === 10);
  t.same(receipts.map((r) => r.messageId).sort(), msgs.map((m) => m.id).sort());

  const responses = await s.injectMo({ source: '447700900555', destination: '12345', text: 'STOP' });
  t.equal(responses[0].command_status, 0, 'MO acknowledged');
  t.equal(mos.length, 1);
  t.match(mos[0], { upstreamId: 'tr', source: '447700900555', destination: '12345', text: 'STOP' });
  t.equal(up.binds[mos[0].bindIndex].bindType, 'receiver');
});

t.test('a receipt handler that throws makes the SMSC redeliver (deliver_sm_resp is a temporary error)', async (t) => {
  const s = await sim(t);
  let failFirst = true;
  const got: string[] = [];
  const { pool } = testPool(t, [upstreamConfig('a', s.port)], {
    onReceipt: (r) => {
      if (failFirst) {
        failFirst = false;
        throw new Error('ledger unavailable');
      }
      got.push(r.messageId);
    },
  });
  await waitUp(pool, ['a']);
  const m = message();
  t.equal((await pool.submit(m, ['a'])).kind, 'accepted');
  await waitFor(() => s.stats.receiptsFailed === 1);
  t.equal(s.stats.receiptsAcked, 0, 'the first delivery was not acknowledged');
  t.same(got, [], 'and not handled');
});

t.test('metrics: binds up, window in use, responses by status, latency, receipts by state and their answer time', async (t) => {
  const s = await sim(t);
  const registry = new Registry();
  const metrics = new UpstreamMetrics(registry);
  const { pool, receipts } = testPool(t, [upstreamConfig('m', s.port, { binds: 2 })], { metrics });
  await waitUp(pool, ['m']);
  for (let i = 0; i < 4; i++) t.equal((await pool.submit(message(), ['m'])).kind, 'accepted');
  await waitFor(() => receipts.length === 4);
  const text = await registry.metrics();
  t.match(text, /ferry_upstream_binds_up\{upstream="m"\} 2/);
  t.match(text, /ferry_upstream_window_in_use\{upstream="m",bind="1"\} 0/);
  t.match(text, /ferry_upstream_submits_total\{upstream="m",status="ESME_ROK"\} 4/);
  t.match(text, /ferry_upstream_submit_latency_seconds_count\{upstream="m"\} 4/);
  t.match(text, /ferry_upstream_receipts_total\{upstream="m",state="DELIVRD"\} 4/);
  t.match(text, /ferry_upstream_receipt_answer_seconds_count\{upstream="m"\} 4/, 'every receipt answered is timed');
});
