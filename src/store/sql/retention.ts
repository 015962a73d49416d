import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RetentionConfig, RetentionFamily } from '../../config/schema.js';
import type { Db } from '../types.js';

/**
 * A table that grows with traffic: the rows `final` selects (a final state, older than the cutoff $1) are purged, with
 * their `children` (rows keyed by the parent's `key`) in the same statement. `time` is how the table keeps its clock:
 * epoch milliseconds or timestamptz. Conditions are constants here, never input.
 */
export interface RetentionTable {
  family: RetentionFamily;
  table: string;
  /** The column children reference; tables without children are deleted by ctid. */
  key?: string;
  final: string;
  time: 'ms' | 'timestamptz';
  children?: ReadonlyArray<{ table: string; column: string }>;
}

/** Every purged table, in one place (a later platform issue turns this into each module's declaration). */
export const RETENTION_TABLES: readonly RetentionTable[] = [
  // Done jobs (sent or failed; later callbacks only add history) and their history.
  { family: 'outbound', table: 'outbound_jobs', key: 'id', final: 'NOT pending AND updated_at < $1', time: 'ms', children: [{ table: 'outbound_history', column: 'job_id' }] },
  // Events fanned out whose every delivery ended (delivered or dead), with those deliveries.
  {
    family: 'webhooks',
    table: 'webhook_events',
    key: 'id',
    final: `fanned_out AND created_at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id AND d.status IN ('pending', 'failed'))`,
    time: 'timestamptz',
    children: [{ table: 'webhook_deliveries', column: 'event_id' }],
  },
  // SMS messages in a final status (final_at is set then), their status history and parts.
  {
    family: 'sms',
    table: 'messages',
    key: 'id',
    final: 'final_at < $1',
    time: 'timestamptz',
    children: [
      { table: 'message_events', column: 'message_id' },
      { table: 'message_parts', column: 'message_id' },
    ],
  },
  { family: 'messenger', table: 'messenger_messages', final: `status <> 'queued' AND updated_at < $1`, time: 'ms' },
  { family: 'messenger', table: 'messenger_inbound', final: 'received_at < $1', time: 'ms' },
  { family: 'email', table: 'email_messages', key: 'id', final: `status NOT IN ('queued', 'scheduled') AND updated_at < $1`, time: 'ms', children: [{ table: 'email_events', column: 'message_id' }] },
  // A send's content once none of its messages is left.
  { family: 'email', table: 'email_sends', final: 'created_at < $1 AND NOT EXISTS (SELECT 1 FROM email_messages m WHERE m.send_id = email_sends.id)', time: 'ms' },
  // Ended sessions (their transcript is in the row).
  { family: 'ussd', table: 'ussd_sessions', final: `status <> 'active' AND updated_at < $1`, time: 'ms' },
  { family: 'shortlink', table: 'shortlink_clicks', final: 'at < $1', time: 'timestamptz' },
  { family: 'shortlink', table: 'shortlink_rollups', final: 'hour < $1', time: 'timestamptz' },
  { family: 'logs', table: 'log_sessions', final: 'expires_at < $1', time: 'ms' },
];

const LEASE = 'retention';
const DAY_MS = 86_400_000;

export interface RetentionOptions {
  db: Db;
  log: Logger;
  config: RetentionConfig;
  /** Rows deleted from a table by one statement (metrics). */
  onPurged?: (table: string, rows: number) => void;
  clock?: () => number;
  tables?: readonly RetentionTable[];
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

  constructor(private readonly o: RetentionOptions) {
    this.clock = o.clock ?? Date.now;
  }

  /** The retention of a family in days (0: kept forever). */
  days(family: RetentionFamily): number {
    return this.o.config[family] ?? this.o.config.days;
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
      for (const spec of this.o.tables ?? RETENTION_TABLES) {
        const days = this.days(spec.family);
        if (days <= 0 || this.stopped) continue;
        const cutoff = this.clock() - days * DAY_MS;
        await this.purge(spec, spec.time === 'ms' ? cutoff : new Date(cutoff).toISOString(), out);
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

  private async purge(spec: RetentionTable, cutoff: number | string, out: Record<string, number>): Promise<void> {
    const batch = this.o.config.batchRows;
    const sql = statement(spec);
    let done = 0;
    while (done < this.o.config.maxRowsPerPass && !this.stopped) {
      const limit = Math.min(batch, this.o.config.maxRowsPerPass - done);
      const { rows } = await this.o.db.query<Record<string, number>>(sql, [cutoff, limit]);
      const counts = rows[0] ?? { n: 0 };
      const n = Number(counts.n);
      const tally = (table: string, rowsDeleted: number): void => {
        if (!rowsDeleted) return;
        out[table] = (out[table] ?? 0) + rowsDeleted;
        this.o.onPurged?.(table, rowsDeleted);
      };
      tally(spec.table, n);
      (spec.children ?? []).forEach((c, i) => tally(c.table, Number(counts[`c${i}`] ?? 0)));
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

/** One batch: $1 the cutoff, $2 the batch size; returns n (parents) and c0… (each child table's rows). */
function statement(spec: RetentionTable): string {
  if (!spec.key) {
    return `WITH gone AS (DELETE FROM ${spec.table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${spec.table} WHERE ${spec.final} LIMIT $2)) RETURNING 1)
      SELECT count(*)::int AS n FROM gone`;
  }
  const children = spec.children ?? [];
  const ctes = children.map((c, i) => `, c${i} AS (DELETE FROM ${c.table} WHERE ${c.column} IN (SELECT k FROM gone) RETURNING 1)`).join('\n');
  const counts = children.map((_, i) => `, (SELECT count(*) FROM c${i})::int AS c${i}`).join('');
  return `WITH gone AS (DELETE FROM ${spec.table} WHERE ${spec.key} = ANY(ARRAY(SELECT ${spec.key} FROM ${spec.table} WHERE ${spec.final} LIMIT $2)) AND ${spec.final} RETURNING ${spec.key} AS k)
    ${ctes}
    SELECT (SELECT count(*) FROM gone)::int AS n${counts}`;
}
