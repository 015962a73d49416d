/**
 * How rows of a table leave: those in a final state (`finishedWhere`) whose `ageColumn` is older than their family's
 * retention are purged in batches, with their `children` (rows keyed by the parent's `key`) in the same statement.
 * The SQL fragments are constants of the declaring module, never input.
 */
export interface TableRetention {
  /** `retention.<family>` in the config overrides `retention.days` for it; a family the config does not name uses `retention.days`. */
  family: string;
  /** The column the age is measured by; the purge query needs an index on it, or on its key (keyTimeOrdered) (test/store/retention-indexes.test.ts). */
  ageColumn: string;
  /** How the table keeps its clock: epoch milliseconds (bigint) or timestamptz. */
  ageUnit: 'ms' | 'timestamptz';
  /** What else makes a row final, over the table's own columns (e.g. `status <> 'active'`); absent: its age alone. */
  finishedWhere?: string;
  /** The column children reference; a table without children is deleted by ctid. */
  key?: string;
  /**
   * The key is a time-sortable id of this prefix (src/util/ids.ts newId) and a row is final only after it was made:
   * a batch then looks only below the cutoff's first id, through the primary key, and the age column needs no index
   * (the ledger's messages, whose indexes must stay off what its status updates write).
   */
  keyTimeOrdered?: string;
  children?: ReadonlyArray<{ table: string; column: string }>;
}

/**
 * A table the core maintains for its owner (the core, or the module declaring it): its retention, and how often table
 * maintenance vacuums it. Embedded PGlite has no autovacuum at all, and a Postgres server may run with it off or tuned
 * for slower tables: `churn` tables (rows come and go at message rates: outboxes, queues, sessions) are looked at on
 * every pass, `ledger` tables (large, updated a few times per row, or purged by retention) every Nth pass.
 */
export interface TableDeclaration {
  name: string;
  retention?: TableRetention;
  vacuum?: 'churn' | 'ledger';
  /**
   * The table is partitioned by range on a timestamptz `column` (its migration creates it so, with a default
   * partition `<name>_default`): the core creates partitions ahead (src/store/sql/range-partitions.ts) and retention
   * drops a whole partition past the retention instead of deleting rows, once `dropWhen` holds. `dropWhen` is a
   * condition over the partition, named `{partition}` in it (e.g. nothing in it is still needed by a reader).
   * `widthDays` fixes the partitions' width, for a table whose retention is its product's own setting rather than a
   * `retention` family (default: about a tenth of the family's days, one day to a week).
   *
   * `idPrefix`: the column is instead the table's key, a time-sortable id of this prefix (src/util/ids.ts newId), and
   * the ranges are id bounds (idFloor of each range's start). A lookup by id then reaches one partition with no time
   * beside it, and a unique key on the id alone stays possible. The retention's children are partitioned alike (same
   * bounds, on their column holding the key; their migration makes them so): made and dropped with the table. A
   * partition past the cutoff goes whole, with every final row in it whatever its final time, after its rows still
   * open (`openWhere`, which a partial index on the table serves) moved to the default partition with their children.
   * Rows in the default partition and in the first, unbounded one (the table from before it was partitioned) are
   * purged row by row by the retention's own rule (finishedWhere, ageColumn).
   *
   * `storage`: the storage parameters each new partition gets (a partitioned table has none of its own).
   */
  partitions?: { column: string; dropWhen?: string; widthDays?: number; idPrefix?: string; openWhere?: string; storage?: string };
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** Keys of the `retention` config section that are settings, not families. */
const RETENTION_SETTINGS = new Set(['days', 'intervalSeconds', 'batchRows', 'maxRowsPerPass']);

/**
 * Checks a list of declarations (the core's and every module's) before the daemon runs anything on them: identifiers
 * only where SQL is built from names, each table declared once, children only with the key they reference.
 */
export function checkTables(tables: readonly TableDeclaration[]): readonly TableDeclaration[] {
  const seen = new Set<string>();
  for (const t of tables) {
    const fail = (why: string): never => {
      throw new Error(`table ${t.name}: ${why}`);
    };
    if (!IDENTIFIER.test(t.name)) fail('the name is not a lower-case SQL identifier');
    if (seen.has(t.name)) fail('declared twice');
    if (t.partitions && !IDENTIFIER.test(t.partitions.column)) fail(`partition column ${t.partitions.column} is not an identifier`);
    const width = t.partitions?.widthDays;
    if (width !== undefined && (!Number.isInteger(width) || width < 1 || width > 31)) fail(`partition width ${width} is not a whole number of days from 1 to 31`);
    if (t.partitions?.idPrefix !== undefined && !/^[a-z]+_$/.test(t.partitions.idPrefix)) fail(`id prefix ${t.partitions.idPrefix} is not lower-case letters and an underscore`);
    if (t.partitions?.storage !== undefined && !/^[a-z_]+ = [0-9]+(, [a-z_]+ = [0-9]+)*$/.test(t.partitions.storage)) fail(`partition storage ${t.partitions.storage} is not a list of numeric parameters`);
    seen.add(t.name);
    const r = t.retention;
    if (!r) continue;
    if (!IDENTIFIER.test(r.family) || RETENTION_SETTINGS.has(r.family)) fail(`retention family ${r.family} is not a valid family name`);
    for (const column of [r.ageColumn, ...(r.key ? [r.key] : [])]) if (!IDENTIFIER.test(column)) fail(`column ${column} is not an identifier`);
    if (r.children?.length && !r.key) fail('retention children need the key they reference');
    if (t.partitions?.idPrefix) {
      if (r.key !== t.partitions.column || r.keyTimeOrdered !== t.partitions.idPrefix) fail('a table partitioned by id ranges has that id as its retention key, time-ordered by the same prefix');
      if (t.partitions.dropWhen) fail('a table partitioned by id ranges keeps its open rows (openWhere): it has no dropWhen');
      if (!t.partitions.openWhere) fail('a table partitioned by id ranges says which rows are still open (openWhere)');
    } else if (t.partitions) {
      if (r.ageColumn !== t.partitions.column || r.ageUnit !== 'timestamptz') fail('a partitioned table ages by its timestamptz partition column');
      if (r.finishedWhere || r.children?.length) fail('a partitioned table is purged by dropping partitions: its condition is partitions.dropWhen');
    }
    for (const c of r.children ?? []) if (!IDENTIFIER.test(c.table) || !IDENTIFIER.test(c.column)) fail(`child ${c.table}.${c.column} is not an identifier`);
  }
  return tables;
}
