import type { Db, Lane, PushItem, Queue, QueueItem, QueueStats, RetryOptions } from '../types.js';
import { LANES } from '../types.js';

export interface SqlQueueOptions {
  /** Epoch-ms clock, the same role as the one the Redis queue passes to its scripts. */
  clock?: () => number;
  /** Dead items kept per queue. */
  deadCap?: number;
  /** Trim the dead list every this many deaths in this process (the trim walks `deadCap` index entries). */
  trimEvery?: number;
}

const LANE_NO: Readonly<Record<Lane, number>> = { receipt: 0, priority: 1, bulk: 2 };
const READY = 0;
const LEASED = 1;
const DEAD = 2;
const PUSH_CHUNK = 5000;
const DEFAULT_MAX_ATTEMPTS = 10;

// Three lane ranges in serving order, each an index range scan; a lane only gets what the earlier
// lanes left of `max`. SKIP LOCKED makes parallel leasers (several processes on Postgres) pass each
// other instead of waiting or double-leasing. A leased row whose deadline passed is simply visible
// again (visible_at <= now); if that lease had used the last attempt it turns dead here instead.
// The picked ids go in as one array (= ANY(ARRAY(...))): a join against the CTEs makes the planner
// guess 10% of the table and hash-join over all of it.
const LEASE_SQL = `
WITH r AS (
  SELECT id FROM queue_items
  WHERE queue = $1 AND lane = 0 AND state < 2 AND visible_at <= $2
  ORDER BY visible_at, seq
  LIMIT CASE WHEN $5::bool THEN $3::int ELSE 0 END
  FOR UPDATE SKIP LOCKED
), p AS (
  SELECT id FROM queue_items
  WHERE queue = $1 AND lane = 1 AND state < 2 AND visible_at <= $2
  ORDER BY visible_at, seq
  LIMIT CASE WHEN $6::bool THEN $3::int - (SELECT count(*) FROM r) ELSE 0 END
  FOR UPDATE SKIP LOCKED
), b AS (
  SELECT id FROM queue_items
  WHERE queue = $1 AND lane = 2 AND state < 2 AND visible_at <= $2
  ORDER BY visible_at, seq
  LIMIT CASE WHEN $7::bool THEN $3::int - (SELECT count(*) FROM r) - (SELECT count(*) FROM p) ELSE 0 END
  FOR UPDATE SKIP LOCKED
)
UPDATE queue_items q SET
  state = CASE WHEN q.state = 1 AND q.attempts >= q.max_attempts THEN 2 ELSE 1 END,
  attempts = CASE WHEN q.state = 1 AND q.attempts >= q.max_attempts THEN q.attempts ELSE q.attempts + 1 END,
  visible_at = CASE WHEN q.state = 1 AND q.attempts >= q.max_attempts THEN q.visible_at ELSE $4::bigint END,
  dead_at = CASE WHEN q.state = 1 AND q.attempts >= q.max_attempts THEN $2::bigint ELSE NULL END,
  last_error = CASE WHEN q.state = 1 AND q.attempts >= q.max_attempts THEN 'lease expired' ELSE q.last_error END
WHERE q.queue = $1 AND q.id = ANY(ARRAY(SELECT id FROM r UNION ALL SELECT id FROM p UNION ALL SELECT id FROM b))
RETURNING q.id, q.lane, q.state, q.run_at, q.attempts, q.max_attempts, q.last_error, q.payload`;

// A dead row is replaced by a fresh item; any other existing row is left alone (idempotent push).
const PUSH_SQL = `
INSERT INTO queue_items (queue, id, lane, run_at, visible_at, max_attempts, payload)
SELECT $1, u.id, u.lane, u.run_at, u.run_at, u.max_attempts, u.payload
FROM unnest($2::text[], $3::smallint[], $4::bigint[], $5::int[], $6::text[]) AS u(id, lane, run_at, max_attempts, payload)
ON CONFLICT (queue, id) DO UPDATE SET
  lane = EXCLUDED.lane, state = 0, run_at = EXCLUDED.run_at, visible_at = EXCLUDED.visible_at,
  attempts = 0, max_attempts = EXCLUDED.max_attempts, last_error = NULL, dead_at = NULL, payload = EXCLUDED.payload
WHERE queue_items.state = 2`;

// $6 (refund): the attempt does not count (back-pressure, not the message's fault): never dead, attempts - 1.
const RETRY_SQL = `
UPDATE queue_items SET
  attempts = CASE WHEN $6::bool THEN greatest(attempts - 1, 0) ELSE attempts END,
  state = CASE WHEN attempts >= max_attempts AND NOT $6::bool THEN 2 ELSE 0 END,
  run_at = CASE WHEN attempts >= max_attempts AND NOT $6::bool THEN run_at ELSE $3::bigint END,
  visible_at = CASE WHEN attempts >= max_attempts AND NOT $6::bool THEN visible_at ELSE $3::bigint END,
  dead_at = CASE WHEN attempts >= max_attempts AND NOT $6::bool THEN $4::bigint ELSE NULL END,
  last_error = $5
WHERE queue = $1 AND id = $2 AND state < 2
RETURNING state`;

const TRIM_SQL = `
DELETE FROM queue_items
WHERE queue = $1 AND state = 2 AND (dead_at, seq) < (
  SELECT dead_at, seq FROM queue_items WHERE queue = $1 AND state = 2
  ORDER BY dead_at DESC, seq DESC OFFSET $2 LIMIT 1)`;

interface Row {
  id: string;
  lane: number;
  state: number;
  run_at: number;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  payload: string;
}

/** The embedded queue: durable rows in SQL (PGlite or Postgres), leased with FOR UPDATE SKIP LOCKED. */
export class SqlQueue<P = unknown> implements Queue<P> {
  private readonly clock: () => number;
  private readonly deadCap: number;
  private readonly trimEvery: number;
  private deaths = 0;

  constructor(
    private readonly db: Db,
    readonly name: string,
    opts: SqlQueueOptions = {},
  ) {
    this.clock = opts.clock ?? Date.now;
    this.deadCap = opts.deadCap ?? 10_000;
    this.trimEvery = opts.trimEvery ?? 100;
  }

  async push(items: readonly PushItem<P>[]): Promise<void> {
    if (items.length === 0) return;
    const now = Math.floor(this.clock());
    for (let start = 0; start < items.length; start += PUSH_CHUNK) {
      const end = Math.min(items.length, start + PUSH_CHUNK);
      const n = end - start;
      const ids: string[] = new Array(n);
      const lanes: number[] = new Array(n);
      const runAts: number[] = new Array(n);
      const maxes: number[] = new Array(n);
      const payloads: string[] = new Array(n);
      // ON CONFLICT DO UPDATE may not touch one row twice in a statement: drop repeats within the batch.
      const seen = n > 1 ? new Set<string>() : null;
      let k = 0;
      for (let i = start; i < end; i++) {
        const it = items[i];
        if (seen) {
          if (seen.has(it.id)) continue;
          seen.add(it.id);
        }
        const lane = LANE_NO[it.lane];
        if (lane === undefined) throw new Error(`unknown lane: ${String(it.lane)}`);
        ids[k] = it.id;
        lanes[k] = lane;
        runAts[k] = Math.floor(it.runAt ?? now);
        maxes[k] = it.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
        payloads[k] = JSON.stringify(it.payload) ?? 'null';
        k++;
      }
      if (k < n) {
        ids.length = lanes.length = runAts.length = maxes.length = payloads.length = k;
      }
      await this.db.query(PUSH_SQL, [this.name, ids, lanes, runAts, maxes, payloads]);
    }
  }

  async lease(max: number, leaseMs: number, lanes?: readonly Lane[]): Promise<QueueItem<P>[]> {
    if (max <= 0) return [];
    const now = Math.floor(this.clock());
    const on = (lane: Lane) => !lanes || lanes.includes(lane);
    const { rows } = await this.db.query<Row>(LEASE_SQL, [
      this.name,
      now,
      Math.floor(max),
      now + Math.max(1, Math.floor(leaseMs)),
      on('receipt'),
      on('priority'),
      on('bulk'),
    ]);
    const out: QueueItem<P>[] = [];
    let died = 0;
    for (const r of rows) {
      if (r.state === LEASED) out.push(toItem<P>(r));
      else died++;
    }
    if (died) await this.noteDeaths(died);
    // RETURNING has no order: restore the serving order of the lanes.
    if (out.length > 1) out.sort(byLane);
    return out;
  }

  async ack(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(`DELETE FROM queue_items WHERE queue = $1 AND id = ANY($2::text[])`, [this.name, ids]);
  }

  async retry(id: string, delayMs: number, error: string, options: RetryOptions = {}): Promise<'scheduled' | 'dead' | 'unknown'> {
    const now = Math.floor(this.clock());
    const { rows } = await this.db.query<{ state: number }>(RETRY_SQL, [this.name, id, now + Math.max(0, Math.floor(delayMs)), now, error, options.refund === true]);
    if (rows.length) {
      if (rows[0].state === DEAD) {
        await this.noteDeaths(1);
        return 'dead';
      }
      return 'scheduled';
    }
    const cur = await this.db.query<{ state: number }>(`SELECT state FROM queue_items WHERE queue = $1 AND id = $2`, [this.name, id]);
    return cur.rows.length ? 'dead' : 'unknown';
  }

  async cancel(id: string): Promise<boolean> {
    const r = await this.db.query(`DELETE FROM queue_items WHERE queue = $1 AND id = $2 AND state <> ${LEASED}`, [this.name, id]);
    return r.rowCount > 0;
  }

  async get(id: string): Promise<QueueItem<P> | null> {
    const { rows } = await this.db.query<Row>(
      `SELECT id, lane, state, run_at, attempts, max_attempts, last_error, payload FROM queue_items WHERE queue = $1 AND id = $2`,
      [this.name, id],
    );
    return rows.length ? toItem<P>(rows[0]) : null;
  }

  async stats(): Promise<QueueStats> {
    const now = Math.floor(this.clock());
    const { rows } = await this.db.query<{ lane: number; due: number; scheduled: number; leased: number; dead: number; oldest: string | null }>(
      `SELECT lane,
         count(*) FILTER (WHERE state = ${READY} AND visible_at <= $2)::int AS due,
         min(visible_at) FILTER (WHERE state = ${READY} AND visible_at <= $2)::text AS oldest,
         count(*) FILTER (WHERE state = ${READY} AND visible_at > $2)::int AS scheduled,
         count(*) FILTER (WHERE state = ${LEASED})::int AS leased,
         count(*) FILTER (WHERE state = ${DEAD})::int AS dead
       FROM queue_items WHERE queue = $1 GROUP BY lane`,
      [this.name, now],
    );
    const stats: QueueStats = { lanes: LANES.map((lane) => ({ lane, due: 0, scheduled: 0, oldestDueAt: null })), leased: 0, dead: 0 };
    for (const r of rows) {
      stats.lanes[r.lane].due = r.due;
      stats.lanes[r.lane].oldestDueAt = r.oldest === null ? null : Number(r.oldest);
      stats.lanes[r.lane].scheduled = r.scheduled;
      stats.leased += r.leased;
      stats.dead += r.dead;
    }
    return stats;
  }

  async dead(limit: number): Promise<QueueItem<P>[]> {
    if (limit <= 0) return [];
    const { rows } = await this.db.query<Row>(
      `SELECT id, lane, state, run_at, attempts, max_attempts, last_error, payload FROM queue_items
       WHERE queue = $1 AND state = ${DEAD} ORDER BY dead_at DESC, seq DESC LIMIT $2`,
      [this.name, Math.floor(limit)],
    );
    return rows.map((r) => toItem<P>(r));
  }

  private async noteDeaths(n: number): Promise<void> {
    const before = this.deaths;
    this.deaths += n;
    if (Math.floor(before / this.trimEvery) !== Math.floor(this.deaths / this.trimEvery)) {
      await this.db.query(TRIM_SQL, [this.name, this.deadCap]);
    }
  }
}

function byLane(a: QueueItem, b: QueueItem): number {
  return LANE_NO[a.lane] - LANE_NO[b.lane];
}

function toItem<P>(r: Row): QueueItem<P> {
  return {
    id: r.id,
    lane: LANES[r.lane],
    payload: JSON.parse(r.payload) as P,
    runAt: r.run_at,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    lastError: r.last_error,
  };
}
