import t from 'tap';
import { openDb } from '../../src/store/sql/db.js';
import { prepared, preparedName } from '../../src/store/sql/prepared.js';
import { testDb } from '../helpers/db.js';
import { backendLabel, DATABASE_URL } from '../helpers/env.js';

const COUNT_SQL = prepared(`SELECT count(*)::int AS n FROM messages WHERE account_id = $1`);

t.test(`hot-path statements run as named prepared statements, and can be turned off (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const name = preparedName(COUNT_SQL)!;
  t.match(name, /^ferry_/, 'a registered text has a name');
  t.equal(preparedName(`SELECT 1 WHERE $1::int = 1`), undefined, 'an unregistered one has none');

  // pg_prepared_statements lists the statements of the session that asks, so ask inside one transaction.
  const namesSeen = async (db: typeof tdb.db) =>
    db.tx(async (q) => {
      for (let i = 0; i < 3; i++) t.equal((await q.query<{ n: number }>(COUNT_SQL, ['acc_1'])).rows[0].n, 0);
      await q.query(`SELECT 1 WHERE $1::int = 1`, [1]);
      return (await q.query<{ name: string }>(`SELECT name FROM pg_prepared_statements ORDER BY name`)).rows.map((r) => r.name);
    });
  t.same(await namesSeen(tdb.db), [name], 'the registered statement is prepared once on the connection; others run unnamed');

  if (!DATABASE_URL) {
    // PGlite: outside a transaction too, with its parameters serialised and rows parsed as an unnamed statement's.
    await tdb.db.query(
      `INSERT INTO messages (id, account_id, ingress, source, destination, body, segments, encoding, currency, status) VALUES ('msg_p1', 'acc_2', 'rest', 'Ferry', '447700900123', 'Hi', 1, 'gsm7', 'EUR', 'queued')`,
    );
    const r = await tdb.db.query<{ n: number }>(COUNT_SQL, ['acc_2']);
    t.same(r.rows, [{ n: 1 }], 'rows come back parsed');
    await t.rejects(tdb.db.query(COUNT_SQL, []), 'a bad call fails like an unnamed one');
    t.same((await tdb.db.query<{ n: number }>(COUNT_SQL, ['acc_2'])).rows, [{ n: 1 }], 'and the statement still runs after it');
    // Issued while another caller's transaction is open, it waits for that transaction instead of running inside it.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const rolledBack = tdb.db.tx(async (q) => {
      await q.query(
        `INSERT INTO messages (id, account_id, ingress, source, destination, body, segments, encoding, currency, status) VALUES ('msg_p2', 'acc_3', 'rest', 'Ferry', '447700900123', 'Hi', 1, 'gsm7', 'EUR', 'queued')`,
      );
      await gate;
      throw new Error('rolled back');
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const during = tdb.db.query<{ n: number }>(COUNT_SQL, ['acc_3']);
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await t.rejects(rolledBack, /rolled back/);
    t.same((await during).rows, [{ n: 0 }], 'it ran after the transaction, outside it');
    // One embedded database per folder: the first must close before the folder opens again.
    await tdb.db.close();
    await t.rejects(tdb.db.query(COUNT_SQL, ['acc_2']), /PGlite is closed/, 'once closed it fails as an unnamed statement does');
  }
  const off = await openDb({ url: tdb.url, dataDir: tdb.dataDir, poolSize: 1, preparedStatements: false });
  t.teardown(() => off.close());
  t.same(await namesSeen(off), [], 'with preparedStatements off nothing is prepared');
});
