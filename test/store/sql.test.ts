import t, { type Test } from 'tap';
import { testDb } from '../helpers/db.js';
import { appliedVersions, loadMigrations, migrate, splitStatements } from '../../src/store/sql/migrate.js';
import { backendLabel } from '../helpers/env.js';
import { openDb } from '../../src/store/sql/db.js';
import type { Db } from '../../src/store/types.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { migrationFolders } from '../../src/platform/module-order.js';

t.test(`sql driver and migrations (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;

  const versions = await appliedVersions(db);
  const all = loadMigrations(migrationFolders(CHANNEL_MODULES));
  t.same(versions, all.map((m) => m.version), 'every migration applied at start, the core\'s and the products\'');
  t.same(await migrate(db, all), [], 'a second run applies nothing');

  const { rows } = await db.query<{ n: number; j: { a: number } }>(`SELECT 42::bigint AS n, '{"a":1}'::jsonb AS j`);
  t.equal(rows[0].n, 42, 'bigint comes back as a number');
  t.same(rows[0].j, { a: 1 }, 'jsonb comes back parsed');

  await db.query(`INSERT INTO settings (key, value) VALUES ('k', '1')`);
  await t.rejects(
    db.tx(async (q) => {
      await q.query(`UPDATE settings SET value = '2' WHERE key = 'k'`);
      throw new Error('boom');
    }),
    /boom/,
  );
  const after = await db.query<{ value: number }>(`SELECT value FROM settings WHERE key = 'k'`);
  t.equal(after.rows[0].value, 1, 'a throwing transaction rolls back');

  const committed = await db.tx(async (q) => {
    await q.query(`UPDATE settings SET value = '3' WHERE key = 'k'`);
    return 'ok';
  });
  t.equal(committed, 'ok');
  t.equal((await db.query<{ value: number }>(`SELECT value FROM settings WHERE key = 'k'`)).rows[0].value, 3, 'a resolving transaction commits');

  await backToBack(t, db, 'k');
  if (tdb.url) {
    // The same on a connection pool that does not pipeline (database.pipeline: false).
    const plain = await openDb({ url: tdb.url, dataDir: tdb.dataDir, poolSize: 2, pipeline: false });
    t.teardown(() => plain.close());
    await plain.query(`INSERT INTO settings (key, value) VALUES ('p', '3')`);
    await backToBack(t, plain, 'p');
  }
});

/** Back-to-back statements in a transaction, and a failed statement whose error fn swallowed. Expects value 3 at `key`. */
async function backToBack(t: Test, db: Db, key: string): Promise<void> {
  const read = async () => (await db.query<{ value: number }>(`SELECT value FROM settings WHERE key = $1`, [key])).rows[0].value;
  // Statements issued back to back (pipelined on Postgres) run in the order issued, inside the transaction.
  const seen = await db.tx(async (q) => {
    const writes = [1, 2, 3].map((i) => q.query(`UPDATE settings SET value = to_jsonb(value::text::int * 10 + ${i}) WHERE key = $1`, [key]));
    const got = q.query<{ value: number }>(`SELECT value FROM settings WHERE key = $1`, [key]);
    await Promise.all(writes);
    return (await got).rows[0].value;
  });
  t.equal(seen, 3123, 'back-to-back statements apply in issue order and the next one sees them');

  // A failed statement aborts the transaction even when fn swallows its error: the commit is refused, not faked.
  await t.rejects(
    db.tx(async (q) => {
      await q.query(`UPDATE settings SET value = '4' WHERE key = $1`, [key]);
      await q.query(`SELECT 1 / 0`).catch(() => undefined);
      return 'swallowed';
    }),
  );
  t.equal(await read(), 3123, 'nothing of it committed');

  // commitNow: the COMMIT goes out behind the statements issued, and the transaction still settles with them.
  const early = await db.tx(async (q) => {
    const w = q.query(`UPDATE settings SET value = '5' WHERE key = $1`, [key]);
    q.commitNow();
    await t.rejects(q.query(`SELECT 1`), /after commitNow/, 'a statement after commitNow is refused');
    await w;
    return 'early';
  });
  t.equal(early, 'early');
  t.equal(await read(), 5, 'committed by commitNow');

  // A statement that fails on the server turns the early COMMIT into a rollback.
  await t.rejects(
    db.tx(async (q) => {
      const pending = [q.query(`UPDATE settings SET value = '6' WHERE key = $1`, [key]), q.query(`SELECT 1 / 0`)];
      q.commitNow();
      for (const r of await Promise.allSettled(pending)) if (r.status === 'rejected') throw r.reason;
    }),
    /division by zero/,
  );
  t.equal(await read(), 5, 'a failed statement before commitNow rolls everything back');

  // A value the driver cannot send fails before anything of its statement goes out, and the COMMIT is held back:
  // the statement issued before it is rolled back too, not committed without it.
  const unsendable: Record<string, unknown> = {};
  unsendable.self = unsendable;
  await t.rejects(
    db.tx(async (q) => {
      const pending = [q.query(`UPDATE settings SET value = '7' WHERE key = $1`, [key]), q.query(`SELECT $1::jsonb`, [unsendable])];
      q.commitNow();
      for (const r of await Promise.allSettled(pending)) if (r.status === 'rejected') throw r.reason;
    }),
    /circular/i,
  );
  t.equal(await read(), 5, 'an unsendable value before commitNow rolls everything back');
  await db.query(`UPDATE settings SET value = '3' WHERE key = $1`, [key]);
}

t.test('migration files split into statements outside dollar quotes', async (t) => {
  const parts = splitStatements(`-- c\nCREATE TABLE a (x int);\nCREATE FUNCTION f() RETURNS int AS $$\nBEGIN\n  RETURN 1;\nEND;\n$$ LANGUAGE plpgsql;\n`);
  t.equal(parts.length, 2);
  t.match(parts[1], /RETURN 1;\nEND;\n\$\$ LANGUAGE plpgsql;$/);
});
