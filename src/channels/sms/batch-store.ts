import type { Queryable } from '../../store/types.js';

/** A bulk request's totals, as its answer gave them. */
export interface BatchTotals {
  id: string;
  accountId: string;
  total: number;
  accepted: number;
  rejected: number;
}

export interface BatchRecord extends BatchTotals {
  createdAt: number;
}

/** The sms_batches table (migration 0019): one row per accepted bulk request. */
export class BatchStore {
  constructor(private readonly db: Queryable) {}

  async record(b: BatchTotals): Promise<void> {
    await this.db.query(`INSERT INTO sms_batches (id, account_id, total, accepted, rejected) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, [
      b.id,
      b.accountId,
      b.total,
      b.accepted,
      b.rejected,
    ]);
  }

  /** The batch of the account, or null (unknown, another account's, or recorded before migration 0019). */
  async get(id: string, accountId: string): Promise<BatchRecord | null> {
    const { rows } = await this.db.query<{ total: number; accepted: number; rejected: number; created_at: unknown }>(
      `SELECT total, accepted, rejected, created_at FROM sms_batches WHERE id = $1 AND account_id = $2`,
      [id, accountId],
    );
    const r = rows[0];
    if (!r) return null;
    const createdAt = r.created_at instanceof Date ? r.created_at.getTime() : new Date(String(r.created_at)).getTime();
    return { id, accountId, total: Number(r.total), accepted: Number(r.accepted), rejected: Number(r.rejected), createdAt };
  }
}
