// Credit holds a module takes for work priced when it ends (src/billing/balance-holds.ts): held at once against the
// balance and credit limit, settled once, the rest credited back, every movement in account_transactions.
import t from 'tap';
import { BalanceHolds } from '../../src/billing/balance-holds.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

t.test(`balance holds (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const holds = new BalanceHolds('voice');
  const account = async (id: string, balance: number, limit = 0) => {
    await db.query(`INSERT INTO accounts (id, name, balance_micros, credit_limit_micros) VALUES ($1, $1, $2, $3)`, [id, balance, limit]);
  };
  const balance = async (id: string) => Number((await db.query<{ b: string }>(`SELECT balance_micros AS b FROM accounts WHERE id = $1`, [id])).rows[0].b);
  const movements = async (id: string) =>
    (await db.query<{ kind: string; amount: string; after: string; reference: string }>(
      `SELECT kind, amount_micros AS amount, balance_after_micros AS after, reference FROM account_transactions WHERE account_id = $1 ORDER BY id`,
      [id],
    )).rows.map((r) => [r.kind, Number(r.amount), Number(r.after), r.reference]);

  t.test('a hold debits at once; settling charges part and credits back the rest, once', async (t) => {
    await account('acc_a', 1_000_000);
    const held = await db.tx((q) => holds.hold(q, { accountId: 'acc_a', reference: 'call_1', micros: 600_000 }));
    t.ok(held.ok && held.created, 'held');
    t.equal(await balance('acc_a'), 400_000, 'the balance drops by the hold');
    const again = await db.tx((q) => holds.hold(q, { accountId: 'acc_a', reference: 'call_1', micros: 600_000 }));
    t.ok(again.ok && !again.created, 'the same reference answers the same hold');
    t.equal(await balance('acc_a'), 400_000, 'nothing held twice');

    const settled = await db.tx((q) => holds.settle(q, 'call_1', 150_000));
    t.equal(settled?.releasedMicros, 450_000, 'the rest is released');
    t.equal(settled?.hold.chargedMicros, 150_000);
    t.equal(await balance('acc_a'), 850_000, 'the balance ends charged by what was used');
    t.equal(await db.tx((q) => holds.settle(q, 'call_1', 0)), null, 'a second settlement changes nothing');
    t.equal(await balance('acc_a'), 850_000);
    t.same(await movements('acc_a'), [
      ['voice_hold', -600_000, 400_000, 'call_1'],
      ['voice_release', 450_000, 850_000, 'call_1'],
    ], 'each movement is in the account history');
    t.equal(await db.tx((q) => holds.settle(q, 'call_unknown', 0)), null, 'an unknown hold settles nothing');
  });

  t.test('a charge above the hold is capped at it; a hold of everything releases nothing', async (t) => {
    await account('acc_b', 500_000);
    t.ok((await db.tx((q) => holds.hold(q, { accountId: 'acc_b', reference: 'call_2', micros: 500_000 }))).ok);
    const settled = await db.tx((q) => holds.settle(q, 'call_2', 9_000_000));
    t.equal(settled?.hold.chargedMicros, 500_000, 'charged at most what was held');
    t.equal(settled?.releasedMicros, 0);
    t.equal(await balance('acc_b'), 0);
    t.equal((await movements('acc_b')).length, 1, 'no release row for nothing released');
  });

  t.test('a hold beyond balance and credit limit is refused and changes nothing', async (t) => {
    await account('acc_c', 100_000, 50_000);
    const refused = await db.tx((q) => holds.hold(q, { accountId: 'acc_c', reference: 'call_3', micros: 150_001 }));
    t.same(refused, { ok: false, availableMicros: 150_000 }, 'the answer says what could be held');
    t.equal(await balance('acc_c'), 100_000);
    t.same(await movements('acc_c'), []);
    t.equal(await db.tx((q) => holds.get(q, 'call_3')), null);
    const onCredit = await db.tx((q) => holds.hold(q, { accountId: 'acc_c', reference: 'call_3', micros: 150_000 }));
    t.ok(onCredit.ok, 'up to the credit limit is allowed');
    t.equal(await balance('acc_c'), -50_000);
  });

  t.test('concurrent holds never take the balance below the limit', async (t) => {
    await account('acc_d', 100_000);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => db.tx((q) => holds.hold(q, { accountId: 'acc_d', reference: `call_d${i}`, micros: 30_000 }))),
    );
    t.equal(results.filter((r) => r.ok).length, 3, 'three of ten fit');
    t.equal(await balance('acc_d'), 10_000);
    const concurrentSame = await Promise.all(
      Array.from({ length: 5 }, () => db.tx((q) => holds.hold(q, { accountId: 'acc_d', reference: 'call_same', micros: 5_000 }))),
    );
    t.equal(concurrentSame.filter((r) => r.ok && r.created).length, 1, 'one reference, one hold, however many ask at once');
    t.equal(await balance('acc_d'), 5_000);
    const settles = await Promise.all(Array.from({ length: 5 }, () => db.tx((q) => holds.settle(q, 'call_same', 1_000))));
    t.equal(settles.filter((s) => s !== null).length, 1, 'settled once under concurrency');
    t.equal(await balance('acc_d'), 9_000);
  });

  t.test('holds of another module are its own; open holds are listed for recovery', async (t) => {
    await account('acc_e', 100_000);
    const other = new BalanceHolds('agents');
    t.ok((await db.tx((q) => holds.hold(q, { accountId: 'acc_e', reference: 'x', micros: 10_000 }))).ok);
    t.ok((await db.tx((q) => other.hold(q, { accountId: 'acc_e', reference: 'x', micros: 20_000 }))).ok, 'the same reference in another module is another hold');
    t.equal(await balance('acc_e'), 70_000);
    const open = await holds.open(db, new Date(Date.now() + 60_000), 100);
    t.ok(open.some((h) => h.reference === 'x' && h.heldMicros === 10_000), 'open holds of the module');
    t.notOk(open.some((h) => h.heldMicros === 20_000), 'not those of another module');
    t.throws(() => new BalanceHolds('Bad Name'), /not a module name/);
  });
});
