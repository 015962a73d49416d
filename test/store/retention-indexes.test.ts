// Each declared retention's purge selection can use an index on its age column, so a purge pass on a big table is
// not a full scan per batch (migration 0037 added the missing ones). With sequential scans priced out, the plan of a
// table with a usable index has an index condition on the age column (a full walk of another index has none).
import t from 'tap';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { bootOrder, declaredTables } from '../../src/platform/module-order.js';
import { purgeSelection } from '../../src/store/sql/retention.js';
import { idFloor } from '../../src/util/ids.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

t.test(`every declared retention's purge query has an index on its age column (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  // A partitioned table is purged by dropping partitions (test/store/range-partitions.test.ts), never row by row; one
  // partitioned by id ranges (messages) still purges its default and first partitions row by row.
  const purged = declaredTables(bootOrder(CHANNEL_MODULES)).filter((x) => x.retention && (!x.partitions || x.partitions.idPrefix));
  t.ok(purged.length >= 11, `${purged.length} purged tables`);
  await tdb.db.tx(async (q) => {
    await q.query('SET LOCAL enable_seqscan = off');
    for (const table of purged) {
      const cutoff = table.retention!.ageUnit === 'ms' ? '0' : `'2026-01-01T00:00:00Z'::timestamptz`;
      const ordered = table.retention!.keyTimeOrdered;
      const firstId = ordered ? `'${idFloor(ordered, Date.parse('2026-01-01T00:00:00Z'))}'` : '';
      const { rows } = await q.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${purgeSelection(table).replace('$1', cutoff).replace('$3', firstId)}`);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      // A time-ordered key bounds the search by the primary key, so the age column may have no index of its own
      // (messages); a table with one (outbound_jobs_done) may be read through either.
      const column = ordered ? `(${table.retention!.key!}|${table.retention!.ageColumn})` : table.retention!.ageColumn;
      t.match(plan, new RegExp(`Index Cond: .*\\b${column}\\b`), `${table.name}: the purge finds its rows through an index on ${column}`);
      t.notMatch(plan, new RegExp(`Seq Scan on ${table.name}\\b`), `${table.name}: not scanned whole`);
    }
  });
});
