import type { Logger } from 'pino';
import { prepared } from '../store/sql/prepared.js';
import type { Db } from '../store/types.js';

export interface Tick {
  id: number;
  lastSeq: number;
}

/** The last event seq handed out (a fresh sequence reads 1 before it has given out anything). */
export const EVENT_SEQ_NOW_SQL = `(SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM webhook_events_seq_seq)`;

/**
 * Ticks are taken one at a time (this lock, then the snapshot, in one transaction), so a later tick's snapshot never
 * misses a transaction an earlier one saw: two tickers, or a tick taken for a new endpoint, cannot interleave.
 */
export const TICK_LOCK_SQL = `SELECT pg_advisory_xact_lock(7102455001)`;

/** A tick taken now: where a new or re-enabled endpoint's cursor starts (after TICK_LOCK_SQL, in its transaction). */
export const FRESH_TICK_SQL = `INSERT INTO webhook_ticks (snap, last_seq) SELECT pg_current_snapshot(), ${EVENT_SEQ_NOW_SQL} RETURNING id`;

/**
 * A tick when anything may have become visible since the last one: an event was written (the sequence moved), a
 * transaction that was still running at the last tick has committed since (it may hold events numbered before it),
 * or, at most every IDLE_TICK_MS, any transaction id was handed out since: an INSERT takes its event's number before
 * its transaction id, so a transaction can hold an event numbered before the last tick without being in that tick's
 * running list (PgQ ticks when idle for the same reason). One statement, so a tick costs nothing when nothing happened.
 */
const TICK_SQL = prepared(`WITH cur AS (SELECT pg_current_snapshot() AS snap, ${EVENT_SEQ_NOW_SQL} AS seq),
  l AS (SELECT last_seq, snap, at FROM webhook_ticks ORDER BY id DESC LIMIT 1)
  INSERT INTO webhook_ticks (snap, last_seq)
  SELECT cur.snap, cur.seq FROM cur LEFT JOIN l ON true
  WHERE l.last_seq IS NULL OR cur.seq > l.last_seq
    OR EXISTS (SELECT 1 FROM pg_snapshot_xip(l.snap) x WHERE pg_visible_in_snapshot(x, cur.snap))
    OR (l.at < clock_timestamp() - make_interval(secs => $1::float8 / 1000.0) AND pg_snapshot_xmax(cur.snap) > pg_snapshot_xmax(l.snap))
  RETURNING id, last_seq`);

/** How long a transaction may hold events without a tick seeing them, at most (see TICK_SQL). */
const IDLE_TICK_MS = 1000;

const LATEST_SQL = prepared(`SELECT id, last_seq FROM webhook_ticks ORDER BY id DESC LIMIT 1`);

// Ticks no cursor of an enabled endpoint still starts from (a disabled endpoint's cursor starts anew when enabled).
const PRUNE_SQL = `DELETE FROM webhook_ticks WHERE id < LEAST(
    COALESCE((SELECT min(c.tick_id) FROM webhook_cursors c JOIN webhook_endpoints e ON e.id = c.endpoint_id AND e.enabled), 9223372036854775807),
    (SELECT max(id) FROM webhook_ticks))`;

export interface EventLogTickerOptions {
  db: Db;
  log: Logger;
  /** The wait after a tick that found something (events keep coming while messages flow). */
  busyMs: number;
  /** The wait after one that found nothing. */
  idleMs: number;
  pruneEveryMs?: number;
  /** Called with each new tick this instance wrote. */
  onTick?: (tick: Tick) => void;
}

/**
 * Writes the event log's ticks (PgQ's ticker): each a snapshot of which transactions had committed, so that a reader
 * can take "every event committed after tick A and by tick B" without missing one whose transaction began before A
 * and committed after it. Every instance that delivers may tick; two tickers only make more, smaller batches.
 */
export class EventLogTicker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;
  private lastPrune = 0;
  private busy = false;

  constructor(private readonly o: EventLogTickerOptions) {}

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Ticks soon (events were just committed). */
  wake(): void {
    if (this.stopped || this.running) return;
    this.schedule(0);
  }

  /** The newest tick, whoever wrote it. */
  async latest(): Promise<Tick | null> {
    const { rows } = await this.o.db.query<{ id: string; last_seq: string }>(LATEST_SQL);
    return rows[0] ? { id: Number(rows[0].id), lastSeq: Number(rows[0].last_seq) } : null;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => {
        this.running = null;
        this.schedule(this.busy ? this.o.busyMs : this.o.idleMs);
      });
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      const rows = await this.o.db.tx(async (q) => {
        await q.query(TICK_LOCK_SQL);
        return (await q.query<{ id: string; last_seq: string }>(TICK_SQL, [IDLE_TICK_MS])).rows;
      });
      this.busy = rows.length > 0;
      if (rows[0]) this.o.onTick?.({ id: Number(rows[0].id), lastSeq: Number(rows[0].last_seq) });
      const now = Date.now();
      if (now - this.lastPrune >= (this.o.pruneEveryMs ?? 10_000)) {
        this.lastPrune = now;
        await this.o.db.query(PRUNE_SQL);
      }
    } catch (err) {
      this.busy = false;
      this.o.log.warn({ err: (err as Error).message }, 'event log tick failed; retrying');
    }
  }
}
