import t from 'tap';
import { CustomerOutbox } from '../../src/receipts/customer-outbox.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

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
