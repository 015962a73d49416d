import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RetentionConfig } from '../../config/schema.js';
import type { Db } from '../types.js';
import { idFloor } from '../../util/ids.js';
import { isPartitioned, RangePartitions } from './range-partitions.js';
import type { TableDeclaration, TableRetention } from './table-declaration.js';

/** A declared table with a retention: what one purge works on. */
type Purged = TableDeclaration & { retention: TableRetention };

const LEASE = 'retention';
const DAY_MS = 86_400_000;

export interface RetentionOptions {
  db: Db;
  log: Logger;
  config: RetentionConfig;
  /** Rows deleted from a table by one statement (metrics). */
  onPurged?: (table: string, rows: number) => void;
  clock?: () => number;
  /** The declared tables (the core's and every module's, `ModuleHost.tables()`); those with a retention are purged, in this order. */
  tables: readonly TableDeclaration[];
  /** Drops the partitions of partitioned tables past their retention (default: its own on `db`). */
  partitions?: RangePartitions;
}

/**
 * Purges rows in a final state older than their family's retention, in batches (`batchRows` per statement, at most
 * `maxRowsPerPass` per table per pass), children with their parents in one statement. One instance of a cluster
 * purges at a time: a pass runs under a lease in maintenance_leases that another instance takes only once it ran out.
 */
export class Retention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;
  private readonly clock: () => number;
  private readonly holder = randomUUID();
  private readonly partitions: RangePartitions;

  constructor(private readonly o: RetentionOptions) {
    this.clock = o.clock ?? Date.now;
    this.partitions = o.partitions ?? new RangePartitions(o.db, o.log);
  }

  /** The retention of a family in days (0: kept forever): its override in the config, else `retention.days`. */
  days(family: string): number {
    const override = (this.o.config as unknown as Record<string, unknown>)[family];
    return typeof override === 'number' ? override : this.o.config.days;
  }

  start(): void {
    if (this.o.config.intervalSeconds <= 0) return;
    this.schedule(true);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass; returns rows deleted per table, or null when another instance holds the lease. */
  async runOnce(): Promise<Record<string, number> | null> {
    // The lease outlives a pass's worst case by far; it is given back at the end.
    const leaseMs = Math.max(600_000, this.o.config.intervalSeconds * 1000);
    if (!(await this.take(leaseMs))) return null;
    const out: Record<string, number> = {};
    try {
      for (const table of this.o.tables) {
        if (!table.retention) continue;
        const days = this.days(table.retention.family);
        if (days <= 0 || this.stopped) continue;
        const cutoff = this.clock() - days * DAY_MS;
        if (isPartitioned(table)) {
          for (const p of await this.partitions.dropExpired(table, cutoff)) {
            out[table.name] = (out[table.name] ?? 0) + p.rows;
            this.o.onPurged?.(table.name, p.rows);
          }
          // A table partitioned by id ranges purges row by row where no drop reaches: its default partition (rows kept
          // past their partition's drop) and the first, unbounded one (the table from before it was partitioned).
          if (table.partitions.idPrefix && table.retention.key) {
            for (const suffix of await this.partitions.rowPurgedSuffixes(table)) {
              if (this.stopped) break;
              await this.purge(onPartition(table as Purged, suffix), table.retention.ageUnit === 'ms' ? cutoff : new Date(cutoff).toISOString(), out, table as Purged);
            }
          }
          continue;
        }
        await this.purge(table as Purged, table.retention.ageUnit === 'ms' ? cutoff : new Date(cutoff).toISOString(), out);
      }
    } finally {
      await this.o.db.query(`UPDATE maintenance_leases SET until_ms = 0 WHERE name = $1 AND holder = $2`, [LEASE, this.holder]).catch(() => undefined);
    }
    const total = Object.values(out).reduce((a, n) => a + n, 0);
    if (total) this.o.log.info({ purged: out }, 'retention purged rows past their retention');
    return out;
  }

  private async take(leaseMs: number): Promise<boolean> {
    const now = this.clock();
    const { rows } = await this.o.db.query<{ holder: string }>(
      `INSERT INTO maintenance_leases (name, holder, until_ms) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, until_ms = EXCLUDED.until_ms
       WHERE maintenance_leases.until_ms <= $4 OR maintenance_leases.holder = EXCLUDED.holder
       RETURNING holder`,
      [LEASE, this.holder, now + leaseMs, now],
    );
    return rows.length === 1;
  }

  /** Purges `spec` in batches; counts go under `tallied`'s names (the declared table, when `spec` is one of its partitions). */
  private async purge(spec: Purged, cutoff: number | string, out: Record<string, number>, tallied: Purged = spec): Promise<void> {
    const batch = this.o.config.batchRows;
    const sql = statement(spec);
    let done = 0;
    while (done < this.o.config.maxRowsPerPass && !this.stopped) {
      const limit = Math.min(batch, this.o.config.maxRowsPerPass - done);
      const params: unknown[] = [cutoff, limit];
      if (spec.retention.keyTimeOrdered) params.push(idFloor(spec.retention.keyTimeOrdered, typeof cutoff === 'number' ? cutoff : Date.parse(cutoff)));
      const { rows } = await this.o.db.query<Record<string, number>>(sql, params);
      const counts = rows[0] ?? { n: 0 };
      const n = Number(counts.n);
      const tally = (table: string, rowsDeleted: number): void => {
        if (!rowsDeleted) return;
        out[table] = (out[table] ?? 0) + rowsDeleted;
        this.o.onPurged?.(table, rowsDeleted);
      };
      tally(tallied.name, n);
      (tallied.retention.children ?? []).forEach((c, i) => tally(c.table, Number(counts[`c${i}`] ?? 0)));
      done += n;
      if (n < limit) break;
    }
  }

  /** The first pass a minute after start (a daemon restarted more often than the interval still purges), then every interval. */
  private schedule(first = false): void {
    const seconds = first ? Math.min(60, this.o.config.intervalSeconds) : this.o.config.intervalSeconds;
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .catch((err: Error) => this.o.log.warn({ err: err.message }, 'retention pass failed; retried at the next pass'))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule();
        });
    }, seconds * 1000);
    this.timer.unref();
  }
}

/** The same purge on one partition of a table partitioned by id ranges, its children's partitions of the same range with it. */
function onPartition(table: Purged, suffix: string): Purged {
  const r = table.retention;
  return { name: table.name + suffix, retention: { ...r, children: (r.children ?? []).map((c) => ({ table: c.table + suffix, column: c.column })) } };
}

/** What makes a row purgeable, with $1 the cutoff (and $3 the cutoff's first id, for a time-ordered key). */
function finalCondition(r: TableRetention): string {
  const byKey = r.keyTimeOrdered && r.key ? ` AND ${r.key} < $3` : '';
  return `${r.finishedWhere ? `(${r.finishedWhere}) AND ` : ''}${r.ageColumn} < $1${byKey}`;
}

/** One batch: $1 the cutoff, $2 the batch size ($3 the cutoff's first id where the key is time-ordered); returns n (parents) and c0… (each child table's rows). */
function statement({ name: table, retention: r }: Purged): string {
  const final = finalCondition(r);
  if (!r.key) {
    return `WITH gone AS (DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${final} LIMIT $2)) RETURNING 1)
      SELECT count(*)::int AS n FROM gone`;
  }
  const children = r.children ?? [];
  const ctes = children.map((c, i) => `, c${i} AS (DELETE FROM ${c.table} WHERE ${c.column} IN (SELECT k FROM gone) RETURNING 1)`).join('\n');
  const counts = children.map((_, i) => `, (SELECT count(*) FROM c${i})::int AS c${i}`).join('');
  return `WITH gone AS (DELETE FROM ${table} WHERE ${r.key} = ANY(ARRAY(SELECT ${r.key} FROM ${table} WHERE ${final} LIMIT $2)) AND ${final} RETURNING ${r.key} AS k)
    ${ctes}
    SELECT (SELECT count(*) FROM gone)::int AS n${counts}`;
}

/** The row selection one purge batch runs on a declared table ($1 the cutoff, $3 its first id): what an index on its age column (or its time-ordered key) serves. */
export function purgeSelection(table: TableDeclaration): string {
  if (!table.retention) throw new Error(`table ${table.name} declares no retention`);
  return `SELECT ${table.retention.key ?? 'ctid'} FROM ${table.name} WHERE ${finalCondition(table.retention)} LIMIT 100`;
}
