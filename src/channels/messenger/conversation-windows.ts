import type { Queryable } from '../../store/types.js';

/** Spec §3.2: after a user's message, any type may be sent for 24 hours; afterwards only an approved template. */
export const WINDOW_MS = 24 * 3_600_000;

/**
 * The 24-hour customer service window per (business number, user), kept in SQL so every instance sees the same one.
 * An inbound message opens (or extends) it; a 131047 from the platform closes it. Time comes from the injected clock.
 */
export class ConversationWindows {
  constructor(
    private readonly db: Queryable,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Records the user's message at `at` (only ever moves the window forward: webhooks may come out of order). */
  async open(q: Queryable, business: string, user: string, at: number): Promise<void> {
    await q.query(
      `INSERT INTO messenger_windows (business_number, user_number, last_inbound_at) VALUES ($1, $2, $3)
       ON CONFLICT (business_number, user_number) DO UPDATE SET last_inbound_at = GREATEST(messenger_windows.last_inbound_at, EXCLUDED.last_inbound_at)`,
      [business, user, at],
    );
  }

  /** The platform said the window is closed (131047): forget the inbound that opened it. */
  async close(q: Queryable, business: string, user: string): Promise<void> {
    await q.query(`DELETE FROM messenger_windows WHERE business_number = $1 AND user_number = $2`, [business, user]);
  }

  /** When the window closes (epoch ms), or null when it is not open now. */
  async openUntil(business: string, user: string): Promise<number | null> {
    const { rows } = await this.db.query<{ last_inbound_at: string | number }>(
      `SELECT last_inbound_at FROM messenger_windows WHERE business_number = $1 AND user_number = $2`,
      [business, user],
    );
    if (!rows.length) return null;
    const until = Number(rows[0].last_inbound_at) + WINDOW_MS;
    return until > this.clock() ? until : null;
  }
}
