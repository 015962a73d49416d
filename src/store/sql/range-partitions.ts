import type { Logger } from 'pino';
import type { Db, Queryable } from '../types.js';
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

const LIST_SQL = `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound,
    extract(epoch FROM (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz) * 1000 AS from_ms,
    extract(epoch FROM (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz) * 1000 AS to_ms
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = to_regclass($1)`;

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
    const { rows } = await q.query<{ name: string; bound: string; from_ms: string | null; to_ms: string | null }>(LIST_SQL, [table]);
    return rows
      .filter((r) => r.to_ms !== null)
      .map((r) => ({ name: r.name, fromMs: r.from_ms === null ? null : Number(r.from_ms), toMs: Number(r.to_ms) }))
      .sort((a, b) => a.toMs - b.toMs);
  }

  /** Creates the partitions missing from the newest one's end to `now` + two days, `widthDays` each; returns their names. */
  async ensure(table: PartitionedTable, widthDays: number, now = Date.now()): Promise<string[]> {
    const until = now + AHEAD_MS;
    const existing = await this.list(table.name);
    if (existing.length && existing[existing.length - 1].toMs >= until) return [];
    return this.db.tx(async (q) => {
      await q.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await q.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
      const made: string[] = [];
      const parts = await this.list(table.name, q);
      // A table with none yet starts at today's midnight (UTC).
      let from = parts.length ? parts[parts.length - 1].toMs : Math.floor(now / DAY_MS) * DAY_MS;
      while (from < until) {
        const to = from + widthDays * DAY_MS;
        made.push(await this.create(q, table, from, to));
        from = to;
      }
      if (made.length) this.log.info({ table: table.name, partitions: made }, 'partitions created ahead');
      return made;
    });
  }

  /**
   * Drops each partition whose whole range is older than `cutoffMs` and whose declaration's `dropWhen` holds (checked
   * in the dropping transaction); returns those dropped with their rows (the planner's estimate: counting would read
   * them all). A partition that may not go yet is looked at again next pass.
   */
  async dropExpired(table: PartitionedTable, cutoffMs: number): Promise<Array<{ name: string; rows: number }>> {
    const dropped: Array<{ name: string; rows: number }> = [];
    for (const p of await this.list(table.name)) {
      if (p.toMs > cutoffMs) break;
      const gone = await this.db.tx(async (q) => {
        await q.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
        await q.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
        const when = table.partitions.dropWhen;
        if (when) {
          const { rows } = await q.query<{ ok: boolean }>(`SELECT (${when.replaceAll('{partition}', p.name)}) AS ok`);
          if (!rows[0]?.ok) return false;
        }
        const { rows } = await q.query<{ n: string }>(`SELECT greatest(reltuples, 0)::int8 AS n FROM pg_class WHERE oid = to_regclass($1)`, [p.name]);
        await q.query(`ALTER TABLE ${table.name} DETACH PARTITION ${p.name}`);
        await q.query(`DROP TABLE ${p.name}`);
        return Number(rows[0]?.n ?? 0);
      });
      if (gone === false) {
        this.log.info({ table: table.name, partition: p.name }, 'partition past its retention kept: rows in it are still needed');
        break;
      }
      dropped.push({ name: p.name, rows: gone });
      this.log.info({ table: table.name, partition: p.name, rows: gone }, 'partition past its retention dropped');
    }
    return dropped;
  }

  /** One partition [from, to): rows the default partition holds for the range move into it in the same transaction. */
  private async create(q: Queryable, table: PartitionedTable, from: number, to: number): Promise<string> {
    const name = partitionName(table.name, from);
    const column = table.partitions.column;
    const fallback = `${table.name}_default`;
    const range = `FOR VALUES FROM ('${stamp(from)}') TO ('${stamp(to)}')`;
    const { rows } = await q.query<{ stray: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${fallback} WHERE ${column} >= $1 AND ${column} < $2) AS stray`,
      [stamp(from), stamp(to)],
    );
    if (!rows[0]?.stray) {
      await q.query(`CREATE TABLE ${name} PARTITION OF ${table.name} ${range}`);
      return name;
    }
    await q.query(`CREATE TABLE ${name} (LIKE ${table.name} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    await q.query(
      `WITH moved AS (DELETE FROM ${fallback} WHERE ${column} >= $1 AND ${column} < $2 RETURNING *) INSERT INTO ${name} SELECT * FROM moved`,
      [stamp(from), stamp(to)],
    );
    await q.query(`ALTER TABLE ${table.name} ATTACH PARTITION ${name} ${range}`);
    return name;
  }
}
