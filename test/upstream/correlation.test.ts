import t from 'tap';
import { MemoryCorrelationStore } from '../../src/smpp/upstream/memory-correlation-store.js';
import { ReceiptCorrelator } from '../../src/smpp/upstream/receipt-correlator.js';
import { correlationKey, receiptLookupKeys } from '../../src/smpp/upstream/receipt-id.js';
import { SqlCorrelationStore } from '../../src/smpp/upstream/sql-correlation-store.js';
import type { CorrelationStore } from '../../src/smpp/upstream/correlation-store.js';
import { testDb } from '../helpers/db.js';
import { message, sim, testPool, upstreamConfig, waitFor, waitUp } from './upstream-helpers.js';

// One migrated database for the file (creating one costs seconds); each test uses its own upstream ids.
let shared: Promise<Awaited<ReturnType<typeof testDb>>> | undefined;
function sharedDb(_t: unknown): Promise<Awaited<ReturnType<typeof testDb>>> {
  if (!shared) {
    shared = testDb();
    t.teardown(async () => (await shared!).cleanup());
  }
  return shared;
}

t.test('correlation keys absorb case, leading zeros and the configured hex/decimal difference', async (t) => {
  t.equal(correlationKey('00AB12', 'as-is'), 'ab12');
  t.equal(correlationKey('1a2b', 'dec'), String(0x1a2b), 'hex response stored as the decimal the receipts write');
  t.equal(correlationKey('6699', 'hex'), (6699).toString(16), 'decimal response stored as the hex the receipts write');
  t.equal(correlationKey('msg-XYZ', 'dec'), 'msg-xyz', 'non-numeric ids stay as they are');
  t.same(receiptLookupKeys('0000001A2B'), ['1a2b', String(0x1a2b)]);
  t.equal(receiptLookupKeys(String(0x1a2b))[0], String(0x1a2b), 'own form first');
});

t.test('a receipt before its response is held and released by record(); one that never matches times out', async (t) => {
  const c = new ReceiptCorrelator(new MemoryCorrelationStore(), { holdMs: 150 });
  t.teardown(() => c.close());
  const early = c.match('u', 'ABC');
  t.equal(c.heldReceipts, 1);
  await c.record('u', 'as-is', 'ferry-1', 2, [{ upstreamMessageId: 'abc', partIndex: 1 }]);
  t.same(await early, { ref: { messageId: 'ferry-1', partIndex: 1, parts: 2 }, keyIndex: 0 });
  t.same(await c.match('u', '000abc'), { ref: { messageId: 'ferry-1', partIndex: 1, parts: 2 }, keyIndex: 0 }, 'after the fact: found at once');
  t.equal(await c.match('other-upstream', 'abc'), undefined, 'ids are per upstream');
  const started = Date.now();
  t.equal(await c.match('u', 'nope'), undefined);
  t.ok(Date.now() - started >= 140, 'held for the hold time first');
  t.equal(c.heldReceipts, 0);

  const bounded = new ReceiptCorrelator(new MemoryCorrelationStore(), { holdMs: 10_000, maxHeld: 2 });
  t.teardown(() => bounded.close());
  void bounded.match('u', 'x1');
  void bounded.match('u', 'x2');
  t.equal(await bounded.match('u', 'x3'), undefined, 'beyond maxHeld: answered at once');
  t.equal(bounded.heldOverflow, 1);
});

t.test('the memory store is bounded', async (t) => {
  const store = new MemoryCorrelationStore({ maxEntries: 3 });
  for (let i = 0; i < 5; i++) await store.put([{ upstreamId: 'u', key: `k${i}`, messageId: `m${i}`, partIndex: 0, parts: 1, createdAt: i }]);
  t.equal(store.size, 3);
  t.equal(await store.find('u', ['k0']), undefined, 'oldest evicted');
  t.equal(await store.purge(4), 2);
  t.same(await store.find('u', ['k4']), { ref: { messageId: 'm4', partIndex: 0, parts: 1 }, keyIndex: 0 });
});

t.test('SQL store: batched writes, lookups by variant, purge; a new correlator (restart) finds what the old one wrote', async (t) => {
  const tdb = await sharedDb(t);
  await tdb.db.query('DELETE FROM upstream_correlations');
  const store: CorrelationStore = new SqlCorrelationStore(tdb.db);
  const c1 = new ReceiptCorrelator(store);
  await Promise.all(
    Array.from({ length: 50 }, (_, i) => c1.record('u', 'dec', `ferry-${i}`, 1, [{ upstreamMessageId: (0x1000 + i).toString(16), partIndex: 0 }])),
  );
  await c1.record('u', 'as-is', 'ferry-long', 3, [
    { upstreamMessageId: 'AA01', partIndex: 0 },
    { upstreamMessageId: 'AA02', partIndex: 1 },
  ]);
  c1.close();
  const { rows } = await tdb.db.query<{ n: string }>('SELECT count(*) AS n FROM upstream_correlations');
  t.equal(Number(rows[0].n), 52);

  const c2 = new ReceiptCorrelator(new SqlCorrelationStore(tdb.db), { holdMs: 100 });
  t.teardown(() => c2.close());
  t.same(await c2.match('u', String(0x1000 + 7)), { ref: { messageId: 'ferry-7', partIndex: 0, parts: 1 }, keyIndex: 0 }, 'decimal receipt id');
  t.same(await c2.match('u', '00aa02'), { ref: { messageId: 'ferry-long', partIndex: 1, parts: 3 }, keyIndex: 0 });
  t.equal(await c2.match('u', 'ffff'), undefined);
  t.equal(await store.purge(Date.now() + 1), 52);
});

t.test('a shared store lets a held receipt match a submit recorded by another instance', async (t) => {
  const tdb = await sharedDb(t);
  const instanceA = new ReceiptCorrelator(new SqlCorrelationStore(tdb.db), { holdMs: 3000, recheckMs: 50 });
  const instanceB = new ReceiptCorrelator(new SqlCorrelationStore(tdb.db));
  t.teardown(() => {
    instanceA.close();
    instanceB.close();
  });
  const early = instanceA.match('shared-u', 'beef');
  await new Promise((r) => setTimeout(r, 100));
  await instanceB.record('shared-u', 'as-is', 'ferry-x', 1, [{ upstreamMessageId: 'BEEF', partIndex: 0 }]);
  t.same(await early, { ref: { messageId: 'ferry-x', partIndex: 0, parts: 1 }, keyIndex: 0 }, 'found on re-check');
});

t.test('receipts after a restart are correlated through the durable store', async (t) => {
  const tdb = await sharedDb(t);
  const s = await sim(t, { receiptDelayMs: 300 });
  const config = upstreamConfig('restart-a', s.port);
  const first = testPool(t, [config], { correlator: new ReceiptCorrelator(new SqlCorrelationStore(tdb.db)) });
  await waitUp(first.pool, ['restart-a']);
  const msgs = Array.from({ length: 5 }, () => message());
  for (const m of msgs) t.equal((await first.pool.submit(m, ['restart-a'])).kind, 'accepted');
  await first.pool.close(); // "crash" before the receipts come: the simulator keeps them for the next receiver
  t.equal(first.receipts.length, 0, 'no receipt reached the first instance');

  const second = testPool(t, [config], { correlator: new ReceiptCorrelator(new SqlCorrelationStore(tdb.db)) });
  await waitFor(() => second.receipts.length === 5, 5000, 'receipts after restart');
  t.same(second.receipts.map((r) => r.messageId).sort(), msgs.map((m) => m.id).sort());
});

t.test('a receipt that outlives its hold (the SMSC far ahead of the submit record) is kept and applied when the correlation lands', async (t) => {
  const tdb = await sharedDb(t);
  // Each receipt is sent 600 ms before its submit_sm_resp: three times the hold.
  const s = await sim(t, { receiptsBeforeResponse: true, acceptLatencyMs: 600 });
  const correlator = new ReceiptCorrelator(new SqlCorrelationStore(tdb.db), { holdMs: 200, sweepMs: 100 });
  const unmatched: string[] = [];
  const { pool, receipts } = testPool(t, [upstreamConfig('kept-a', s.port, { responseTimeoutMs: 5000 })], {
    correlator,
    onUnmatchedReceipt: (r) => {
      unmatched.push(r.upstreamMessageId);
    },
  });
  await waitUp(pool, ['kept-a']);
  const msgs = Array.from({ length: 5 }, () => message());
  const outcomes = await Promise.all(msgs.map((m) => pool.submit(m, ['kept-a'])));
  t.ok(outcomes.every((o) => o.kind === 'accepted'), 'all accepted');
  await waitFor(() => receipts.length === 5, 5000, 'the early receipts applied');
  t.same(receipts.map((r) => r.messageId).sort(), msgs.map((m) => m.id).sort(), 'every receipt reached its own message');
  t.ok(receipts.every((r) => r.stat === 'DELIVRD' && r.final && r.errorCode === '000' && r.doneDate instanceof Date), 'with the fields the SMSC wrote');
  t.equal(correlator.matchedAfterKeep, 5, 'each was kept past its hold, then matched');
  t.same(unmatched, [], 'none reported unmatched');
  await waitFor(() => s.stats.receiptsAcked === 5, 2000, 'receipts acknowledged');
  t.equal(s.stats.receiptsFailed, 0, 'acknowledged once kept: the SMSC did not have to offer them again');
  // A sweep counts a match as soon as it is applied and drops the kept rows after: wait for a sweep in flight.
  await correlator.sweepKept();
  const { rows } = await tdb.db.query<{ n: string }>(`SELECT count(*) AS n FROM upstream_kept_receipts WHERE upstream_id = 'kept-a'`);
  t.equal(Number(rows[0].n), 0, 'nothing left kept');
});

t.test('kept receipts survive a restart; one whose correlation never lands is purged as unmatched after the keep time', async (t) => {
  const tdb = await sharedDb(t);
  const first = new ReceiptCorrelator(new SqlCorrelationStore(tdb.db), { holdMs: 50 });
  t.equal(await first.match('kept-b', 'C0FFEE'), undefined, 'nothing recorded yet');
  await first.keep('kept-b', { id: 'C0FFEE', state: 2, stat: 'DELIVRD', final: true, receivedAt: Date.now() });
  await first.keep('kept-b', { id: 'dead01', state: 5, stat: 'UNDELIV', final: true, receivedAt: Date.now() });
  first.close();

  let now = Date.now();
  const second = new ReceiptCorrelator(new SqlCorrelationStore(tdb.db), { sweepMs: 50, keepMs: 60_000, clock: () => now });
  t.teardown(() => second.close());
  second.start();
  const applied: Array<{ id: string; messageId: string }> = [];
  second.onKeptMatch = async (k, m) => {
    applied.push({ id: k.receipt.id, messageId: m.ref.messageId });
  };
  const expired: string[] = [];
  second.onKeptExpired = (ks) => expired.push(...ks.map((k) => k.receipt.id));
  await second.record('kept-b', 'as-is', 'ferry-kept', 1, [{ upstreamMessageId: 'c0ffee', partIndex: 0 }]);
  await waitFor(() => applied.length === 1, 3000, 'the kept receipt applied after the restart');
  t.same(applied, [{ id: 'C0FFEE', messageId: 'ferry-kept' }]);
  now += 61_000;
  await second.purge();
  t.same(expired, ['dead01'], 'the other one ends unmatched');
  const { rows } = await tdb.db.query<{ n: string }>(`SELECT count(*) AS n FROM upstream_kept_receipts WHERE upstream_id = 'kept-b'`);
  t.equal(Number(rows[0].n), 0);
});
