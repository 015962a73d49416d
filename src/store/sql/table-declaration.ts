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
   */
  partitions?: { column: string; dropWhen?: string; widthDays?: number };
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
    seen.add(t.name);
    const r = t.retention;
    if (!r) continue;
    if (!IDENTIFIER.test(r.family) || RETENTION_SETTINGS.has(r.family)) fail(`retention family ${r.family} is not a valid family name`);
    for (const column of [r.ageColumn, ...(r.key ? [r.key] : [])]) if (!IDENTIFIER.test(column)) fail(`column ${column} is not an identifier`);
    if (r.children?.length && !r.key) fail('retention children need the key they reference');
    if (t.partitions) {
      if (r.ageColumn !== t.partitions.column || r.ageUnit !== 'timestamptz') fail('a partitioned table ages by its timestamptz partition column');
      if (r.finishedWhere || r.children?.length) fail('a partitioned table is purged by dropping partitions: its condition is partitions.dropWhen');
    }
    for (const c of r.children ?? []) if (!IDENTIFIER.test(c.table) || !IDENTIFIER.test(c.column)) fail(`child ${c.table}.${c.column} is not an identifier`);
  }
  return tables;
}
