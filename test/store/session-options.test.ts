// Every session of the daemon runs with JIT off (src/store/sql/db.ts sessionOptions): Postgres would otherwise compile
// a query on each execution once the tables' size makes its estimated cost pass jit_above_cost.
import t from 'tap';
import { openDb, sessionOptions } from '../../src/store/sql/db.js';
import { DATABASE_URL } from '../helpers/env.js';

t.test('session options: JIT off, after what the URL gives', async (t) => {
  t.equal(sessionOptions('postgres://u@127.0.0.1:5432/db'), '-c jit=off');
  t.equal(sessionOptions('postgres://u@127.0.0.1:5432/db?options=-c%20statement_timeout%3D5000'), '-c statement_timeout=5000 -c jit=off', "the URL's own options are kept");
});

t.test('a daemon session has JIT off (Postgres)', { skip: DATABASE_URL ? false : 'needs DATABASE_URL (the embedded database has no JIT)' }, async (t) => {
  const db = await openDb({ url: DATABASE_URL!, dataDir: '', poolSize: 2 });
  t.teardown(() => db.close());
  const shown = await Promise.all([1, 2].map(() => db.query<{ jit: string }>('SHOW jit')));
  t.same(shown.map((r) => r.rows[0].jit), ['off', 'off'], "on the pool's connections");
});
