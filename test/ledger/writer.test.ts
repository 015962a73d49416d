import t from 'tap';
import { LedgerBusyError } from '../../src/ledger/ledger-busy-error.js';
import { LedgerClosedError } from '../../src/ledger/ledger-closed-error.js';
import { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { sampleMessage } from '../helpers/ledger-rows.js';

t.test(`ledger writer group commit (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;

  t.test('2,000 concurrent accepts: every row and its event, in few commits', async (t) => {
    const w = new LedgerWriter(db);
    const rows = Array.from({ length: 2000 }, (_, i) => sampleMessage({ accountId: 'acc_conc', reference: `r${i}` }));
    await Promise.all(rows.map((r) => w.accept(r)));
    const n = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE account_id = 'acc_conc'`);
    t.equal(n.rows[0].n, 2000, 'every row committed');
    const ev = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM message_events e JOIN messages m ON m.id = e.message_id WHERE m.account_id = 'acc_conc' AND e.status = 'queued'`,
    );
    t.equal(ev.rows[0].n, 2000, 'every row has its queued event');
    t.ok(w.stats.committedBatches < 2000 / 10, `${w.stats.committedBatches} commits for 2000 rows (largest batch ${w.stats.maxBatchSeen})`);
    t.equal(w.stats.items, 2000);
    await w.close();
  });

  t.test('columns round-trip, scheduled rows start scheduled', async (t) => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    const w = new LedgerWriter(db, { clock: () => now });
    const bin = sampleMessage({ body: null, bodyBytes: Buffer.from([0, 1, 0xfe, 0xff]), dataCoding: 4, udhRef: 7, udhTotal: 2, udhSeq: 1, ingress: 'rest' });
    const later = sampleMessage({ scheduledAt: now + 60_000, expiresAt: now + 3_600_000, priority: 3, batchId: 'bat_1' });
    await w.acceptMany([bin, later]);
    const { rows } = await db.query<Record<string, unknown>>(`SELECT * FROM messages WHERE id = ANY($1::text[]) ORDER BY id`, [[bin.id, later.id]]);
    const b = rows.find((r) => r.id === bin.id)!;
    const l = rows.find((r) => r.id === later.id)!;
    t.same(Buffer.from(b.body_bytes as Uint8Array), Buffer.from([0, 1, 0xfe, 0xff]), 'bytes kept exactly');
    t.equal(b.data_coding, 4);
    t.same([b.udh_ref, b.udh_total, b.udh_seq], [7, 2, 1]);
    t.equal(b.status, 'queued');
    t.equal(b.ingress, 'rest');
    t.equal(l.status, 'scheduled', 'future scheduled_at → scheduled');
    t.equal(new Date(l.scheduled_at as string).getTime(), now + 60_000);
    t.equal(new Date(l.expires_at as string).getTime(), now + 3_600_000);
    t.equal(l.priority, 3);
    t.equal(l.cost_micros, 35_000);
    const ev = await db.query<{ status: string }>(`SELECT status FROM message_events WHERE message_id = $1`, [later.id]);
    t.same(ev.rows.map((r) => r.status), ['scheduled']);
    await w.close();
  });

  t.test('a failing batch rejects every caller of it and commits none of it', async (t) => {
    const w = new LedgerWriter(db, { lingerMs: 50 });
    const rows = Array.from({ length: 20 }, () => sampleMessage({ accountId: 'acc_dup' }));
    rows[10] = { ...rows[10], id: rows[3].id }; // duplicate id inside the batch
    const settled = await Promise.allSettled(rows.map((r) => w.accept(r)));
    t.equal(settled.filter((s) => s.status === 'fulfilled').length, 0, 'no caller acknowledged');
    t.equal(settled.filter((s) => s.status === 'rejected').length, 20, 'every caller rejected');
    t.equal(w.stats.batches, 1, 'they were one batch');
    const n = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE account_id = 'acc_dup'`);
    t.equal(n.rows[0].n, 0, 'nothing of that batch was committed');
    const ok = sampleMessage({ accountId: 'acc_dup' });
    await w.accept(ok);
    t.pass('the writer keeps working after a failed batch');
    await w.close();
  });

  t.test('debits commit with their rows: what the balance covers is written, the rest is not, in arrival order', async (t) => {
    await db.query(`INSERT INTO accounts (id, name, balance_micros) VALUES ('acc_paid', 'paid', 100000)`);
    const w = new LedgerWriter(db, { lingerMs: 20 });
    const rows = Array.from({ length: 12 }, (_, i) => sampleMessage({ accountId: 'acc_paid', reference: `p${i}` }));
    // 30,000 each: the first three fit (10,000 left), the fourth not, then a 10,000 one fits again.
    const prices = [30_000, 30_000, 30_000, 30_000, 10_000, 30_000, 0, 0, 0, 0, 0, 0];
    const results = await Promise.all(rows.map((r, i) => w.accept(r, prices[i])));
    t.same(results, [true, true, true, false, true, false, true, true, true, true, true, true]);
    t.equal(w.stats.batches, 1, 'one batch');
    const { rows: stored } = await db.query<{ reference: string }>(`SELECT reference FROM messages WHERE account_id = 'acc_paid' ORDER BY reference`);
    t.same(
      stored.map((r) => r.reference).sort(),
      ['p0', 'p1', 'p10', 'p11', 'p2', 'p4', 'p6', 'p7', 'p8', 'p9'],
      'refused rows are not written, free ones always are',
    );
    const bal = await db.query<{ b: number }>(`SELECT balance_micros AS b FROM accounts WHERE id = 'acc_paid'`);
    t.equal(bal.rows[0].b, 0);
    const { rows: tx } = await db.query<{ reference: string; amount_micros: number; balance_after_micros: number }>(
      `SELECT reference, amount_micros, balance_after_micros FROM account_transactions WHERE account_id = 'acc_paid' ORDER BY id`,
    );
    t.same(
      tx.map((r) => [r.reference, r.amount_micros, r.balance_after_micros]),
      [rows[0].id, rows[1].id, rows[2].id, rows[4].id].map((id, i) => [id, -[30_000, 30_000, 30_000, 10_000][i], [70_000, 40_000, 10_000, 0][i]]),
      'one transaction row per debit, named by its message, with the balance it left',
    );

    // A batch that fails takes its debits with it.
    await db.query(`UPDATE accounts SET balance_micros = 50000 WHERE id = 'acc_paid'`);
    const dup = sampleMessage({ accountId: 'acc_paid' });
    const settled = await Promise.allSettled([w.accept(dup, 20_000), w.accept({ ...sampleMessage({ accountId: 'acc_paid' }), id: dup.id }, 20_000)]);
    t.same(settled.map((x) => x.status), ['rejected', 'rejected'], 'a duplicate id fails the batch');
    t.equal((await db.query<{ b: number }>(`SELECT balance_micros AS b FROM accounts WHERE id = 'acc_paid'`)).rows[0].b, 50_000, 'nothing debited');
    t.equal((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM account_transactions WHERE account_id = 'acc_paid'`)).rows[0].n, 4);
    t.equal(await w.accept(sampleMessage({ accountId: 'acc_unknown' }), 1), false, 'an unknown account covers nothing');
    await w.close();
  });

  t.test('back-pressure: LedgerBusyError beyond maxPending', async (t) => {
    // A db that never answers until released keeps the one write slot busy.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = { query: async (text: string, params?: readonly unknown[]) => (await gate, db.query(text, params)) };
    const w = new LedgerWriter(slow as typeof db, { maxBatch: 5, maxInFlight: 1, maxPending: 10, lingerMs: 1 });
    const accepted: Promise<boolean>[] = [];
    // The first 5 fill a batch that goes in flight; then 10 more may wait; the next is refused.
    for (let i = 0; i < 15; i++) accepted.push(w.accept(sampleMessage({ accountId: 'acc_bp' })));
    t.equal(w.pending, 10);
    await t.rejects(w.accept(sampleMessage({ accountId: 'acc_bp' })), LedgerBusyError);
    await t.rejects(w.acceptMany([sampleMessage()]), LedgerBusyError, 'acceptMany too');
    release();
    await Promise.all(accepted);
    t.equal(w.pending, 0);
    await w.accept(sampleMessage({ accountId: 'acc_bp' }));
    t.pass('accepts again once drained');
    await w.close();
  });

  t.test('close() flushes pending rows, then refuses new ones', async (t) => {
    const w = new LedgerWriter(db, { lingerMs: 10_000 });
    const rows = Array.from({ length: 7 }, () => sampleMessage({ accountId: 'acc_close' }));
    const ps = rows.map((r) => w.accept(r));
    await w.close();
    await Promise.all(ps);
    const n = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE account_id = 'acc_close'`);
    t.equal(n.rows[0].n, 7, 'pending rows written by close');
    await t.rejects(w.accept(sampleMessage()), LedgerClosedError);
  });

  t.test('a closed database rejects the batch: nothing acknowledged', async (t) => {
    const other = await testDb();
    const w = new LedgerWriter(other.db, { lingerMs: 20 });
    const ps = Array.from({ length: 5 }, () => w.accept(sampleMessage()));
    await other.db.close();
    const settled = await Promise.allSettled(ps);
    t.equal(settled.filter((s) => s.status === 'rejected').length, 5);
    await other.cleanup();
  });
});
