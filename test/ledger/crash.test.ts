import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Ledger } from '../../src/ledger/ledger.js';
import { openDb } from '../../src/store/sql/db.js';
import type { Db } from '../../src/store/types.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { runUntilKilled } from '../helpers/kill-after.js';

const ACCEPTOR = fileURLToPath(new URL('../helpers/ledger-acceptor.ts', import.meta.url));
// The kill comes once this many rows were acknowledged (or when the child ends by itself).
const KILL_AFTER = 3000;

t.test(`SIGKILL while accepting loses no acknowledged message (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  let db: Db = tdb.db;
  t.teardown(async () => {
    if (db !== tdb.db) await db.close().catch(() => {});
    await tdb.cleanup();
  });
  // PGlite: the child must own the data folder alone.
  if (!tdb.url) await db.close();

  const { acked, signal, stderr } = await runUntilKilled(
    ACCEPTOR,
    { ACCEPTOR_DB_URL: tdb.url ?? '', ACCEPTOR_DATA_DIR: tdb.dataDir, ACCEPTOR_CALLERS: '64', ACCEPTOR_MAX_ROWS: '100000', ACCEPTOR_MAX_MS: '30000' },
    KILL_AFTER,
  );
  t.equal(signal, 'SIGKILL', `the acceptor was killed mid-run ${stderr ? `(stderr: ${stderr.slice(0, 500)})` : ''}`);
  t.ok(acked.length >= KILL_AFTER, `${acked.length} rows acknowledged before the kill`);

  if (!tdb.url) db = await openDb({ url: null, dataDir: tdb.dataDir });
  const present = new Set<string>();
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM messages WHERE id = ANY($1::text[])`, [acked]);
  for (const r of rows) present.add(r.id);
  const missing = acked.filter((id) => !present.has(id));
  t.same(missing.slice(0, 10), [], `every acknowledged row is there (${acked.length} acknowledged, ${missing.length} missing)`);
  const ev = await db.query<{ n: number }>(`SELECT count(DISTINCT message_id)::int AS n FROM message_events WHERE message_id = ANY($1::text[])`, [acked]);
  t.equal(ev.rows[0].n, acked.length, 'and each has its queued event');

  // What the daemon would re-queue: everything committed, acknowledged or not (at-least-once).
  const ledger = new Ledger(db);
  let swept = 0;
  let after = '';
  for (let page = 0; page < 1000; page++) {
    const got = await ledger.recoverable(1000, after);
    swept += got.length;
    if (got.length < 1000) break;
    after = got[got.length - 1].id;
  }
  t.ok(swept >= acked.length, `the recovery sweep finds ${swept} rows to re-queue`);
  await ledger.close();
});
