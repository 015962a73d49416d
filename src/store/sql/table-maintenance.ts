import type { Logger } from 'pino';
import type { Db } from '../types.js';
import type { TableDeclaration } from './table-declaration.js';

export interface TableMaintenanceOptions {
  db: Db;
  log: Logger;
  /** Seconds between passes; 0 turns maintenance off. */
  intervalSeconds: number;
  /** The declared tables (the core's and every module's, `ModuleHost.tables()`); those with `vacuum` are maintained. */
  tables: readonly TableDeclaration[];
  /**
   * The ledger tables are looked at every Nth pass only (default 6 on Postgres, 60 on embedded storage, where they are
   * vacuumed by the clock): the churn tables need it within seconds, the large ledger tables far less often.
   */
  ledgerEvery?: number;
  /**
   * Postgres: a table is vacuumed when its dead rows reach this many and a fifth of its live rows, and analyzed when its
   * changes since the last analyze reach this many and a tenth of its rows (default 1,000), as autovacuum would.
   */
  minDeadRows?: number;
  /** Each vacuum (or analyze of a table that only grew) done, with its duration (metrics). */
  onVacuum?: (table: string, seconds: number, kind: 'vacuum' | 'analyze') => void;
}

export interface VacuumResult {
  table: string;
  deadRows: number | null;
  seconds: number;
  /** Only the statistics were refreshed (the table grew, nothing to reclaim). */
  analyzeOnly?: boolean;
}

/** The declared tables vacuumed on every pass (`churn`) and every Nth pass (`ledger`). */
export function vacuumedTables(tables: readonly TableDeclaration[]): { churn: string[]; ledger: string[] } {
  return {
    churn: tables.filter((t) => t.vacuum === 'churn').map((t) => t.name),
    ledger: tables.filter((t) => t.vacuum === 'ledger').map((t) => t.name),
  };
}

/**
 * Vacuums the declared high-churn tables (and, less often, the large ledger ones). Embedded PGlite has no autovacuum
 * at all, and a Postgres server may run with it off or tuned for slower tables; either way the outboxes and the queue
 * would otherwise grow without bound, and every scan of them would walk the dead rows too. On
 * Postgres the dead-row statistics pick the tables that need it, and `SKIP_LOCKED` lets another instance's (or
 * autovacuum's) vacuum of the same table win instead of waiting behind it.
 */
export class TableMaintenance {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private passes = 0;
  private stopped = false;
  private readonly churn: readonly string[];
  private readonly ledger: readonly string[];

  constructor(private readonly o: TableMaintenanceOptions) {
    ({ churn: this.churn, ledger: this.ledger } = vacuumedTables(o.tables));
  }

  start(): void {
    if (this.o.intervalSeconds <= 0) return;
    this.schedule();
  }

  /** One pass: the tables vacuumed (or only analyzed), those with the most dead rows first. */
  async runOnce(): Promise<VacuumResult[]> {
    const pass = this.passes++;
    const candidates = await this.candidates(pass);
    const done: VacuumResult[] = [];
    for (const c of candidates) {
      if (this.stopped) break;
      const t0 = process.hrtime.bigint();
      // Table names come from the modules' declarations (identifiers, checked), never from input.
      await this.o.db.query(c.analyzeOnly ? `ANALYZE (SKIP_LOCKED) ${c.table}` : `VACUUM (SKIP_LOCKED, ANALYZE) ${c.table}`);
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      this.o.onVacuum?.(c.table, seconds, c.analyzeOnly ? 'analyze' : 'vacuum');
      done.push({ table: c.table, deadRows: c.deadRows, seconds, ...(c.analyzeOnly ? { analyzeOnly: true } : {}) });
    }
    if (done.length) this.o.log.debug({ vacuumed: done }, 'table maintenance');
    return done;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .catch((err: Error) => this.o.log.warn({ err: err.message }, 'table maintenance failed; retried at the next pass'))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule();
        });
    }, this.o.intervalSeconds * 1000);
    this.timer.unref();
  }

  /** A partitioned table has no storage of its own: its partitions are what is vacuumed (and what the statistics list). */
  private async leaves(tables: string[]): Promise<string[]> {
    const { rows } = await this.o.db.query<{ parent: string; name: string }>(
      `SELECT p.relname AS parent, c.relname AS name FROM pg_class p JOIN pg_inherits i ON i.inhparent = p.oid JOIN pg_class c ON c.oid = i.inhrelid
       WHERE p.relkind = 'p' AND p.oid IN (SELECT to_regclass(x) FROM unnest($1::text[]) AS x)`,
      [tables],
    );
    if (!rows.length) return tables;
    const parents = new Set(rows.map((r) => r.parent));
    return [...tables.filter((t) => !parents.has(t)), ...rows.map((r) => r.name)];
  }

  private async candidates(pass: number): Promise<Array<{ table: string; deadRows: number | null; analyzeOnly?: boolean }>> {
    const embedded = this.o.db.kind === 'pglite';
    const ledgerDue = pass % (this.o.ledgerEvery ?? (embedded ? 60 : 6)) === 0;
    const all = await this.leaves(ledgerDue ? [...this.churn, ...this.ledger] : [...this.churn]);
    // PGlite's single backend never flushes its table statistics, so go by the clock instead.
    if (embedded) return all.map((table) => ({ table, deadRows: null }));
    const minDead = this.o.minDeadRows ?? 1000;
    const { rows } = await this.o.db.query<{ relname: string; live: number; dead: number; changed: number }>(
      `SELECT relname, n_live_tup::int8 AS live, n_dead_tup::int8 AS dead, n_mod_since_analyze::int8 AS changed
       FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = ANY($1::text[])
       ORDER BY n_dead_tup DESC`,
      [all],
    );
    const out: Array<{ table: string; deadRows: number | null; analyzeOnly?: boolean }> = [];
    for (const r of rows) {
      const live = Number(r.live);
      const dead = Number(r.dead);
      const changed = Number(r.changed);
      if (dead >= minDead && dead * 5 >= live) out.push({ table: r.relname, deadRows: dead });
      // Insert-only growth leaves no dead rows but stale statistics: the planner then misjudges the table's size.
      else if (changed >= minDead && changed * 10 >= live) out.push({ table: r.relname, deadRows: dead, analyzeOnly: true });
    }
    return out;
  }
}
