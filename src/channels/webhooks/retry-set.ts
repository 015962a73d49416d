import { prepared } from '../../store/sql/prepared.js';
import type { Db } from '../../store/types.js';

// Due open rows, earliest first; the claim is the due time moved past the lease, so a crash brings them back.
const CLAIM_SQL = prepared(`UPDATE webhook_deliveries SET next_attempt_at = now() + make_interval(secs => $2::float8 / 1000.0)
  WHERE id IN (
    SELECT id FROM webhook_deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= now()
    ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
  ) RETURNING id`);

const DUE_IN_SQL = `UPDATE webhook_deliveries SET next_attempt_at = now() + make_interval(secs => $2::float8 / 1000.0)
  WHERE id = ANY($1::text[]) AND status IN ('pending', 'failed')`;

/**
 * The retry set: open rows of webhook_deliveries (an attempt failed, an event waits behind one that did, a test event
 * or a replay), claimed straight from Postgres by due time. Instances skip each other's claimed rows; no Redis.
 */
export class RetrySet {
  constructor(private readonly db: Db) {}

  /** Up to `limit` due rows, each held for leaseMs (not due again until then). */
  async claim(limit: number, leaseMs: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(CLAIM_SQL, [limit, leaseMs]);
    return rows.map((r) => r.id);
  }

  /** Due again after delayMs (0: now): a delivery handed back without an attempt, or brought forward. */
  async dueIn(ids: readonly string[], delayMs: number): Promise<void> {
    if (ids.length) await this.db.query(DUE_IN_SQL, [ids, delayMs]);
  }
}
