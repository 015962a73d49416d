import t from 'tap';
import pino from 'pino';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { bootOrder, declaredTables } from '../../src/platform/module-order.js';
import { TableMaintenance, vacuumedTables, type VacuumResult } from '../../src/store/sql/table-maintenance.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

const log = pino({ level: 'silent' });
// What the daemon passes: the core's tables, then the products' in boot order.
const tables = declaredTables(bootOrder(CHANNEL_MODULES));
const { churn: CHURN_TABLES, ledger: LEDGER_TABLES } = vacuumedTables(tables);

t.test(`table maintenance vacuums churned tables and gives their space back (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const size = async () => (await db.query<{ n: number }>(`SELECT pg_relation_size('idempotency_keys')::int8 AS n`)).rows[0].n;

  // 5,000 keys come and go: the table keeps every dead row until a vacuum.
  await db.query(
    `INSERT INTO idempotency_keys (account_id, key, request_hash, status)
     SELECT 'acc_t', 'k' || g, repeat('h', 64), 'done' FROM generate_series(1, 5000) g`,
  );
  await db.query(`DELETE FROM idempotency_keys`);
  const bloated = await size();
  t.ok(bloated > 100_000, `the emptied table still holds its pages (${bloated} bytes)`);

  const vacuumed: string[] = [];
  const m = new TableMaintenance({ db, log, tables, intervalSeconds: 0, onVacuum: (table, _s, kind) => vacuumed.push(`${kind} ${table}`) });
  // Postgres publishes dead-row counts about a second after the deleting transaction; embedded goes by the clock.
  let pass: VacuumResult[] = [];
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    pass = await m.runOnce();
    // The insert's statistics may arrive before the delete's: a table then only analyzed is looked at again.
    if (pass.some((r) => r.table === 'idempotency_keys' && !r.analyzeOnly)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  t.ok(pass.some((r) => r.table === 'idempotency_keys' && !r.analyzeOnly), 'the churned table was vacuumed');
  t.ok(vacuumed.includes('vacuum idempotency_keys'), 'and reported for the metrics');
  t.ok((await size()) < bloated / 10, `its empty pages were given back (${await size()} bytes)`);

  if (db.kind === 'postgres') {
    t.notOk(pass.some((r) => r.table === 'messages'), 'a table without dead rows is left alone');
    for (const r of pass) if (!r.analyzeOnly) t.ok((r.deadRows ?? 0) >= 1000, `${r.table} was picked by its dead rows`);
    // Insert-only growth: nothing to reclaim, but the planner needs to learn the table's new size.
    await db.query(
      `INSERT INTO upstream_correlations (upstream_id, upstream_key, message_id, part_index, parts, created_at)
       SELECT 'up', lpad(g::text, 10, '0'), 'msg_' || g, 0, 1, 0 FROM generate_series(1, 5000) g`,
    );
    let analyzed: VacuumResult | undefined;
    const until = Date.now() + 10_000;
    while (!analyzed && Date.now() < until) {
      analyzed = (await m.runOnce()).find((r) => r.table === 'upstream_correlations');
      if (!analyzed) await new Promise((r) => setTimeout(r, 250));
    }
    t.equal(analyzed?.analyzeOnly, true, 'a table that only grew is analyzed, not vacuumed');
    t.ok(vacuumed.includes('analyze upstream_correlations'), 'and reported as an analyze');
    const stats = await db.query<{ n: number }>(`SELECT reltuples::int8 AS n FROM pg_class WHERE oid = 'upstream_correlations'::regclass`);
    t.equal(stats.rows[0].n, 5000, 'and the planner knows its size');
  } else {
    // A partitioned table is vacuumed as its partitions (the parent has no storage of its own).
    // (message_parts is one without a declaration of its own: partitioned with messages.)
    const { rows: parts } = await db.query<{ parent: string; name: string }>(
      `SELECT p.relname AS parent, c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relkind = 'p'`,
    );
    const partitioned = new Set(parts.map((x) => x.parent));
    const asVacuumed = (names: readonly string[]) => names.flatMap((n) => (partitioned.has(n) ? parts.filter((x) => x.parent === n).map((x) => x.name) : [n])).sort();
    t.ok(partitioned.size > 0 && parts.length > 0, `partitioned tables take part (${[...partitioned].join(', ')})`);
    const every3 = new TableMaintenance({ db, log, tables, intervalSeconds: 0, ledgerEvery: 3 });
    const first = await every3.runOnce();
    t.same(first.map((r) => r.table).sort(), asVacuumed([...CHURN_TABLES, ...LEDGER_TABLES]), 'embedded: the first pass covers every table');
    const second = await every3.runOnce();
    t.same(second.map((r) => r.table).sort(), asVacuumed(CHURN_TABLES), 'the next ones only the churn tables');
    await every3.runOnce();
    t.equal((await every3.runOnce()).length, asVacuumed([...CHURN_TABLES, ...LEDGER_TABLES]).length, 'and every third one the ledger again');
  }
  await m.stop();
});

t.test(`table maintenance runs on its timer and stops cleanly (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const passes: string[] = [];
  // One second is the smallest interval; embedded storage vacuums every churn table on each pass.
  const m = new TableMaintenance({ db: tdb.db, log, tables, intervalSeconds: 1, minDeadRows: 0, onVacuum: (table) => passes.push(table) });
  await tdb.db.query(`INSERT INTO idempotency_keys (account_id, key, request_hash, status) VALUES ('acc_t', 'k', 'h', 'done')`);
  await tdb.db.query(`DELETE FROM idempotency_keys`);
  m.start();
  const deadline = Date.now() + 8000;
  while (passes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await m.stop();
  t.ok(passes.length > 0, `the timer ran a pass (${passes.length} vacuums)`);
  const after = passes.length;
  await new Promise((r) => setTimeout(r, 1300));
  t.equal(passes.length, after, 'no pass after stop');
});
