import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import t from 'tap';
import { Ledger } from '../../src/ledger/ledger.js';
import { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import { CustomerDelivery } from '../../src/receipts/customer-delivery.js';
import { CustomerOutbox, type OutboxEntry, type ReceiptTaker } from '../../src/receipts/customer-outbox.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { sampleMessage } from '../helpers/ledger-rows.js';

/** The claim, lease, release, defer and remove cycle of what customers' binds are owed. */
t.test(`customer outbox leases (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const outbox = new CustomerOutbox(db);
  const mo = (accountId: string, n: number) =>
    outbox.insertMo({ accountId, source: '4477009000' + n, destination: '12345', dataCoding: 0, esmClass: 0, payload: Buffer.from('MO ' + n) });
  // Separate statements, so each row has its own next_at (now() of its transaction) and the order is defined.
  for (let i = 1; i <= 4; i++) {
    await mo('acc_a', i);
    await mo('acc_b', i);
  }
  const sources = (rows: { source: string | null }[]) => rows.map((r) => r.source!.slice(-1));
  const owners = (rows: { accountId: string }[]) => rows.map((r) => r.accountId.slice(-1));

  const first = await outbox.claim(['acc_a', 'acc_b'], 3, 30_000);
  t.same(owners(first), ['a', 'b', 'a'], 'the oldest due rows across the accounts, oldest first');
  t.same(sources(first), ['1', '1', '2']);
  t.ok(first.every((r) => r.attempts === 1), 'each counts an attempt');

  const second = await outbox.claim(['acc_a', 'acc_b'], 10, 30_000);
  t.equal(second.length, 5, 'leased rows are not claimed again while their lease runs');
  t.notOk(second.some((r) => first.some((f) => f.id === r.id)));

  t.same(await outbox.claim(['acc_b'], 10, 30_000), [], 'nothing is left due');

  await outbox.release([first[1].id]);
  const released = await outbox.claim(['acc_a', 'acc_b'], 10, 30_000);
  t.same(released.map((r) => r.id), [first[1].id], 'a released row is due again at once');
  t.equal(released[0].attempts, 2);

  await outbox.defer([first[0].id], 60_000);
  await outbox.release([first[2].id]);
  const afterDefer = await outbox.claim(['acc_a', 'acc_b'], 10, 30_000);
  t.same(afterDefer.map((r) => r.id), [first[2].id], 'a deferred row waits for its time; the released one comes back');

  await outbox.remove(second.map((r) => r.id));
  t.same(await outbox.pending(), { receipt: 0, mo: 8 - second.length }, 'removed rows are gone');

  // An instance that claimed rows and died never releases them: they come back when the lease ends.
  t.same(await outbox.claim(['acc_a', 'acc_b'], 10, 30_000), [], 'nothing due: everything left is leased or deferred');
  await db.query(`UPDATE smpp_outbox SET leased_until = now() - interval '1 second' WHERE id = $1`, [released[0].id]);
  const expired = await outbox.claim(['acc_a', 'acc_b'], 10, 30_000);
  t.same(expired.map((r) => r.id), [released[0].id], 'a row whose lease ended is claimed again');
  t.equal(expired[0].attempts, 3);

  t.same(await outbox.claim(['acc_c'], 10, 30_000), [], 'another account sees none of them');
});

/** Receipts of accounts bound here are leased by their own insert and handed over after the commit: no claim. */
t.test(`customer outbox hands receipts over at commit (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const outbox = new CustomerOutbox(db);
  const w = new LedgerWriter(db);
  let failNext = false;
  const ledger = new Ledger(db, {
    effects: [
      outbox.effect,
      () => {
        if (failNext) throw new Error('a later effect fails');
        return null;
      },
    ],
  });
  t.teardown(async () => {
    await ledger.close();
    await w.close();
  });
  const calls: string[] = [];
  const taken: OutboxEntry[] = [];
  let taking = ['acc_here'];
  const taker: ReceiptTaker = {
    leaseMs: 30_000,
    takingFor: () => taking,
    take: (entries) => {
      calls.push('take');
      taken.push(...entries);
    },
    owed: (accounts) => calls.push(`owed ${accounts.join(',')}`),
  };
  outbox.handOffTo(taker);
  const accept = async (accountId: string, over = {}) => {
    const m = sampleMessage({ accountId, body: 'Hello from the test', ...over });
    await w.accept(m);
    return m.id;
  };
  const leaseOf = async (messageId: string) =>
    (
      await db.query<{ leased: boolean; attempts: number }>(`SELECT COALESCE(leased_until > now(), false) AS leased, attempts FROM smpp_outbox WHERE message_id = $1`, [
        messageId,
      ])
    ).rows;

  const here = await accept('acc_here');
  const elsewhere = await accept('acc_elsewhere');
  const noReceipt = await accept('acc_here', { registeredDelivery: 0 });
  await ledger.transitionMany([
    { id: here, to: 'delivered' },
    { id: elsewhere, to: 'undelivered', errorCode: '011' },
    { id: noReceipt, to: 'delivered' },
  ]);
  t.same(calls, ['take', 'owed acc_elsewhere'], "the bound account's receipt is handed over; the taker hears which account is owed another");
  t.equal(taken.length, 1);
  const e = taken[0];
  t.equal(e.messageId, here);
  t.equal(e.accountId, 'acc_here');
  t.equal(e.kind, 'receipt');
  t.equal(e.status, 'delivered');
  t.equal(e.attempts, 1, 'the hand-over counts as an attempt');
  t.equal(e.message?.body, 'Hello from the test', 'rendered from the message row, as a claim is');
  t.equal(e.message?.destination, '447700900123');
  t.ok(e.message?.finalAt, 'the final time written in the same transaction is seen');
  t.same(await leaseOf(here), [{ leased: true, attempts: 1 }], 'the handed row is leased in the table');
  t.same(await leaseOf(elsewhere), [{ leased: false, attempts: 0 }], 'the other account\'s row waits for a claim');
  t.same(await leaseOf(noReceipt), [], 'no receipt asked for, none written');

  const claimed = await outbox.claim(['acc_here', 'acc_elsewhere'], 10, 30_000);
  t.same(claimed.map((r) => r.messageId), [elsewhere], 'a claim skips the handed row while its lease runs');

  // A batch that rolls back hands nothing over.
  calls.length = 0;
  taken.length = 0;
  const rolledBack = await accept('acc_here');
  failNext = true;
  await t.rejects(ledger.transition(rolledBack, 'delivered'), /a later effect fails/);
  failNext = false;
  t.same(calls, [], 'nothing handed over from a rolled-back batch');
  t.same(await leaseOf(rolledBack), [], 'and no row written');

  // With no room (or no bind) the taker takes nothing: rows wait for claims, and it is told.
  taking = [];
  const full = await accept('acc_here');
  await ledger.transition(full, 'delivered');
  t.same(calls, ['owed acc_here'], 'not taken: owed');
  t.same(await leaseOf(full), [{ leased: false, attempts: 0 }]);

  // Without a taker rows are written unleased, and nobody is called.
  outbox.handOffTo(null);
  calls.length = 0;
  taking = ['acc_here'];
  const noTaker = await accept('acc_here');
  await ledger.transition(noTaker, 'delivered');
  t.same(calls, []);
  t.same(await leaseOf(noTaker), [{ leased: false, attempts: 0 }]);
});

/** Rows handed over once the worker stopped are released, so the next claim (any instance) sends them without waiting for the lease. */
t.test(`customer delivery releases what it is handed after it stopped (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const outbox = new CustomerOutbox(db);
  const w = new LedgerWriter(db);
  const ledger = new Ledger(db, { effects: [outbox.effect] });
  t.teardown(async () => {
    await ledger.close();
    await w.close();
  });
  const binds = Object.assign(new EventEmitter(), { accountsWithReceivers: () => ['acc_1'], pickReceiver: () => undefined });
  const delivery = new CustomerDelivery({ outbox, binds, log: pino({ level: 'silent' }), pollMs: 60_000 });
  delivery.start();
  t.same(delivery.takingFor(), ['acc_1'], "a running worker takes its bound accounts' receipts");
  await delivery.stop();
  t.same(delivery.takingFor(), [], 'a stopped worker takes nothing');
  const m = sampleMessage();
  await w.accept(m);
  await ledger.transition(m.id, 'delivered');
  t.same(await outbox.claim(['acc_1'], 10, 30_000).then((r) => r.map((e) => e.messageId)), [m.id], 'written unleased after the stop');
  // The commit of a batch whose insert leased rows to the worker lands after its stop: the claim above stands in for it.
  const [entry] = await db
    .query<{ id: string }>(`SELECT id FROM smpp_outbox WHERE message_id = $1 AND leased_until > now()`, [m.id])
    .then((r) => r.rows.map((x) => ({ id: Number(x.id) })));
  t.ok(entry, 'leased');
  delivery.take([entry as OutboxEntry]);
  for (let i = 0; i < 100 && (await outbox.claim(['acc_1'], 10, 30_000)).length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  const row = await db.query<{ attempts: number }>(`SELECT attempts FROM smpp_outbox WHERE message_id = $1`, [m.id]);
  t.equal(row.rows[0].attempts, 2, 'released by the stopped worker, then claimed again at once');
});

/** Rows no bind took within the retention are dropped and counted by kind; younger ones stay. */
t.test(`customer outbox purge after the retention (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const outbox = new CustomerOutbox(db);
  for (let i = 1; i <= 3; i++) await outbox.insertMo({ accountId: 'acc_p', source: '447700900' + i, destination: '12345', dataCoding: 0, esmClass: 0, payload: Buffer.from('MO') });
  await db.query(`INSERT INTO smpp_outbox (account_id, kind, message_id, status) VALUES ('acc_p', 'receipt', 'msg_old1', 'delivered'), ('acc_p', 'receipt', 'msg_old2', 'expired'), ('acc_p', 'receipt', 'msg_new', 'delivered')`);
  await db.query(`UPDATE smpp_outbox SET created_at = now() - interval '3 days' WHERE message_id LIKE 'msg_old%' OR source = '4477009001'`);
  await db.query(`UPDATE smpp_outbox SET created_at = now() - interval '47 hours' WHERE source = '4477009002'`);
  t.same(await outbox.purge(48 * 3_600_000), { receipt: 2, mo: 1 }, 'what is older than the retention, by kind');
  t.same(await outbox.pending(), { receipt: 1, mo: 2 }, 'younger rows stay');
  t.same(await outbox.purge(48 * 3_600_000), { receipt: 0, mo: 0 }, 'nothing twice');
  const { rows } = await db.query<{ message_id: string | null; source: string | null }>(`SELECT message_id, source FROM smpp_outbox ORDER BY id`);
  t.same(rows.map((r) => r.message_id ?? r.source), ['4477009002', '4477009003', 'msg_new']);
});

/**
 * Deletes, releases and deferrals find rows by id. A btree with id as a later column can match such a condition only by
 * reading all of itself, and the planner, costing it as a descent, chose one while the outbox held few live rows
 * (migration 0012): only the primary key may contain id.
 */
t.test(`only the primary key of smpp_outbox holds id (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { rows } = await tdb.db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
     WHERE i.indrelid = 'smpp_outbox'::regclass AND a.attname = 'id' ORDER BY 1`,
  );
  t.same(rows.map((r) => r.name), ['smpp_outbox_pkey']);
});

/** Rows nobody took start a claim round only when their account has a receiver here; others wait for a bind. */
t.test(`customer delivery claims owed rows only for accounts bound here (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const outbox = new CustomerOutbox(db);
  const binds = Object.assign(new EventEmitter(), { accountsWithReceivers: () => ['acc_1'], pickReceiver: () => undefined });
  const delivery = new CustomerDelivery({ outbox, binds, log: pino({ level: 'silent' }), pollMs: 60_000 });
  delivery.start();
  t.teardown(() => delivery.stop());
  const attempts = async () => Number((await db.query<{ n: number }>(`SELECT coalesce(sum(attempts), 0)::int AS n FROM smpp_outbox`)).rows[0].n);
  const settle = async (want: number) => {
    for (let i = 0; i < 100 && (await attempts()) < want; i++) await new Promise((r) => setTimeout(r, 10));
  };
  // The start-up claim round finds nothing; then a row for the bound account arrives unannounced.
  await new Promise((r) => setTimeout(r, 50));
  await outbox.insertMo({ accountId: 'acc_1', source: '447700900001', destination: '12345', dataCoding: 0, esmClass: 0, payload: Buffer.from('MO') });
  delivery.owed(['acc_other']);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(await attempts(), 0, 'owed for an account bound elsewhere: no claim');
  delivery.owed(['acc_other', 'acc_1']);
  await settle(1);
  t.ok((await attempts()) >= 1, 'owed for a bound account: claimed');
});
