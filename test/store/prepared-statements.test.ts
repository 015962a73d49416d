import t from 'tap';
import { openDb } from '../../src/store/sql/db.js';
import { prepared, preparedName } from '../../src/store/sql/prepared.js';
import { testDb } from '../helpers/db.js';
import { DATABASE_URL } from '../helpers/env.js';

const COUNT_SQL = prepared(`SELECT count(*)::int AS n FROM messages WHERE account_id = $1`);

t.test('hot-path statements run as named prepared statements on Postgres, and can be turned off', { skip: !DATABASE_URL && 'Postgres only: PGlite runs every statement unnamed' }, async (t) => {
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

  const off = await openDb({ url: tdb.url, dataDir: tdb.dataDir, poolSize: 1, preparedStatements: false });
  t.teardown(() => off.close());
  t.same(await namesSeen(off), [], 'with preparedStatements off nothing is prepared');
});
