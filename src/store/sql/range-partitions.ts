import type { Logger } from 'pino';
import type { Db, Queryable } from '../types.js';
import { idFloor, idTime } from '../../util/ids.js';
import type { TableDeclaration } from './table-declaration.js';

const DAY_MS = 86_400_000;
/** Partitions exist this far ahead of now, so rows never land in the default partition while a daemon runs. */
const AHEAD_MS = 2 * DAY_MS;
/** DDL on the parent waits at most this long for its lock, then gives up until the next pass (a queued lock would block the inserts behind it). */
const LOCK_TIMEOUT = '2s';
/** Serialises partition DDL across instances (pg_advisory_xact_lock key). */
const PARTITION_LOCK = 7102455002;

/** One range partition of a table: rows with from ≤ column < to (from null: unbounded below). */
export interface RangePartition {
  name: string;
  fromMs: number | null;
  toMs: number;
}

/** A table partitioned by time whose partitions the core creates ahead and retention drops whole. */
export type PartitionedTable = TableDeclaration & { partitions: NonNullable<TableDeclaration['partitions']> };

export function isPartitioned(t: TableDeclaration): t is PartitionedTable {
  return t.partitions !== undefined;
}

/**
 * How wide a partition is for a retention of `days` (0: kept forever): about a tenth of the retention, between one day
 * and a week. Every read that cannot prune by time (a cursor's batch reads by transaction id) visits each partition's
 * index once, so their number stays near ten; a partition is dropped once its newest row is past the retention, so
 * rows live at most one width longer.
 */
export function partitionWidthDays(days: number): number {
  if (days <= 0) return 7;
  return Math.min(7, Math.max(1, Math.floor(days / 10)));
}

// A bound is a timestamp (tables partitioned by a timestamptz column) or an id (by time-sortable ids, `idPrefix`).
const LIST_SQL = `SELECT c.relname AS name, b.from_bound, b.to_bound,
    CASE WHEN b.from_bound ~ '^[0-9]{4}-' THEN extract(epoch FROM b.from_bound::timestamptz) * 1000 END AS from_ms,
    CASE WHEN b.to_bound ~ '^[0-9]{4}-' THEN extract(epoch FROM b.to_bound::timestamptz) * 1000 END AS to_ms
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL (SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1] AS from_bound,
    (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1] AS to_bound) b
  WHERE i.inhparent = to_regclass($1)`;

const ID_BOUND = /^([a-z]+_)[0-9a-z]{26}$/;

/** A bound's time: a timestamp's (from SQL), else the time an id bound carries; null for none (MINVALUE, DEFAULT). */
function boundMs(bound: string | null, ms: string | null): number | null {
  if (ms !== null) return Number(ms);
  const m = bound === null ? null : ID_BOUND.exec(bound);
  return m ? idTime(m[1], bound as string) : null;
}

function stamp(ms: number): string {
  return new Date(ms).toISOString();
}

function partitionName(table: string, fromMs: number): string {
  return `${table}_p${stamp(fromMs).slice(0, 10).replace(/-/g, '')}`;
}

/**
 * The range partitions of tables partitioned by a timestamptz column (`partitions` in their declaration): created
 * ahead of time by every instance (under one advisory lock, so two never race) and dropped whole by retention once
 * past it and the declaration's `dropWhen` holds. A row no range covers goes to the table's default partition
 * (`<table>_default`, created by the table's migration); creating a range moves such rows into it.
 */
export class RangePartitions {
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  /** The table's range partitions, oldest first (the default partition is not listed). */
  async list(table: string, q: Queryable = this.db): Promise<RangePartition[]> {
    const { rows } = await q.query<{ name: string; from_bound: string | null; to_bound: string | null; from_ms: string | null; to_ms: string | null }>(LIST_SQL, [table]);
    const out: RangePartition[] = [];
    for (const r of rows) {
      const toMs = boundMs(r.to_bound, r.to_ms);
      if (toMs !== null) out.push({ name: r.name, fromMs: boundMs(r.from_bound, r.from_ms), toMs });
    }
    return out.sort((a, b) => a.toMs - b.toMs);
  }

  /**
   * Creates the partitions missing from the newest one's end to `now` + two days, `widthDays` each, for the table and
   * the children partitioned alike (`idPrefix`); returns their names.
   */
  async ensure(table: PartitionedTable, widthDays: number, now = Date.now(), firstMs = Math.floor(now / DAY_MS) * DAY_MS): Promise<string[]> {
    const until = now + AHEAD_MS;
    const members = alike(table);
    let due = false;
    for (const m of members) {
      const existing = await this.list(m.table);
      if (!existing.length || existing[existing.length - 1].toMs < until) due = true;
    }
    if (!due) return [];
    return this.db.tx(async (q) => {
      await q.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await q.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
      const made: string[] = [];
      for (const m of members) {
        const parts = await this.list(m.table, q);
        // A table with none yet starts at `firstMs` (default today's midnight, UTC).
        let from = parts.length ? parts[parts.length - 1].toMs : firstMs;
        while (from < until) {
          const to = from + widthDays * DAY_MS;
          made.push(await this.create(q, table, m, from, to));
          from = to;
        }
      }
      if (made.length) this.log.info({ table: table.name, partitions: made }, 'partitions created ahead');
      return made;
    });
  }

  /**
   * Drops each partition whose whole range is older than `cutoffMs` and whose declaration's `dropWhen` holds (checked
   * in the dropping transaction); returns those dropped with their rows (the planner's estimate: counting would read
   * them all). A partition that may not go yet is looked at again next pass. A table partitioned by id ranges drops
   * its children's partitions of the same range with it, after moving its open rows (`openWhere`) and theirs to the
   * default partitions. The transaction's work does not grow with the partition: a lookup of the open rows through
   * their partial index, the detaches and the drops.
   */
  async dropExpired(table: PartitionedTable, cutoffMs: number): Promise<Array<{ name: string; rows: number }>> {
    const dropped: Array<{ name: string; rows: number }> = [];
    for (const p of await this.list(table.name)) {
      if (p.toMs > cutoffMs) break;
      let kept = 0;
      const gone = await this.db.tx(async (q) => {
        await q.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
        await q.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
        const when = table.partitions.dropWhen;
        if (when) {
          const { rows } = await q.query<{ ok: boolean }>(`SELECT (${when.replaceAll('{partition}', p.name)}) AS ok`);
          if (!rows[0]?.ok) return false;
        }
        const { rows } = await q.query<{ n: string }>(`SELECT greatest(reltuples, 0)::int8 AS n FROM pg_class WHERE oid = to_regclass($1)`, [p.name]);
        const suffix = p.name.slice(table.name.length);
        const members = alike(table).map((m) => ({ ...m, partition: m.table + suffix }));
        for (const m of members) await q.query(`ALTER TABLE ${m.table} DETACH PARTITION ${m.partition}`);
        const open = table.partitions.openWhere;
        if (open) {
          // Detached, the partition takes no more writes: its open rows, through their partial index, are all there
          // is to keep. No range covers them any more, so through the parents they land in the default partitions.
          const keys = (await q.query<{ k: string }>(`SELECT ${table.partitions.column} AS k FROM ${p.name} WHERE ${open}`)).rows.map((r) => r.k);
          kept = keys.length;
          if (kept) for (const m of members) await q.query(`INSERT INTO ${m.table} SELECT * FROM ${m.partition} WHERE ${m.column} = ANY($1::text[])`, [keys]);
        }
        for (const m of members) await q.query(`DROP TABLE ${m.partition}`);
        return Math.max(0, Number(rows[0]?.n ?? 0) - kept);
      });
      if (gone === false) {
        this.log.info({ table: table.name, partition: p.name }, 'partition past its retention kept: rows in it are still needed');
        break;
      }
      dropped.push({ name: p.name, rows: gone });
      this.log.info({ table: table.name, partition: p.name, rows: gone, kept }, 'partition past its retention dropped');
    }
    return dropped;
  }

  /**
   * The partitions of an id-partitioned table no drop reaches, as suffixes of its name (`_default`, and `_p_before`
   * while the table from before it was partitioned is there): retention purges them row by row.
   */
  async rowPurgedSuffixes(table: PartitionedTable): Promise<string[]> {
    const unbounded = (await this.list(table.name)).filter((p) => p.fromMs === null).map((p) => p.name.slice(table.name.length));
    return [...unbounded, '_default'];
  }

  /** One partition [from, to) of a member: rows its default partition holds for the range move into it in the same transaction. */
  private async create(q: Queryable, table: PartitionedTable, m: Member, from: number, to: number): Promise<string> {
    const name = partitionName(m.table, from);
    const fallback = `${m.table}_default`;
    const bound = (ms: number): string => (table.partitions.idPrefix ? idFloor(table.partitions.idPrefix, ms) : stamp(ms));
    const range = `FOR VALUES FROM ('${bound(from)}') TO ('${bound(to)}')`;
    // Storage parameters are the table's own, not its children's.
    const storage = m.table === table.name && table.partitions.storage ? ` WITH (${table.partitions.storage})` : '';
    const { rows } = await q.query<{ stray: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${fallback} WHERE ${m.column} >= $1 AND ${m.column} < $2) AS stray`,
      [bound(from), bound(to)],
    );
    if (!rows[0]?.stray) {
      await q.query(`CREATE TABLE ${name} PARTITION OF ${m.table} ${range}${storage}`);
      return name;
    }
    await q.query(`CREATE TABLE ${name} (LIKE ${m.table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)${storage}`);
    await q.query(
      `WITH moved AS (DELETE FROM ${fallback} WHERE ${m.column} >= $1 AND ${m.column} < $2 RETURNING *) INSERT INTO ${name} SELECT * FROM moved`,
      [bound(from), bound(to)],
    );
    await q.query(`ALTER TABLE ${m.table} ATTACH PARTITION ${name} ${range}`);
    return name;
  }
}

/** A table partitioned together with others: its name and the column its ranges are on. */
interface Member {
  table: string;
  column: string;
}

/** The table and, when partitioned by id ranges, its retention's children: their partitions share bounds and suffixes. */
function alike(table: PartitionedTable): Member[] {
  const own = { table: table.name, column: table.partitions.column };
  if (!table.partitions.idPrefix) return [own];
  return [own, ...(table.retention?.children ?? []).map((c) => ({ table: c.table, column: c.column }))];
}
