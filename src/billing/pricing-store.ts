import type { Logger } from 'pino';
import type { Db } from '../store/types.js';
import type { PriceBook, PriceTable } from './price-book.js';

const KEY = 'pricing';

/**
 * The price table set through the admin API, kept in the settings table so it survives restarts and reaches every
 * instance (`restore()`, polled by the SMS module's job `sms.pricing-refresh`). Until one is set, the config file's
 * table applies.
 */
export class PricingStore {
  private seen: string | null = null;

  constructor(
    private readonly db: Db,
    private readonly prices: PriceBook,
    private readonly log: Logger,
  ) {}

  /** Applies the stored table, if any. */
  async restore(): Promise<void> {
    const { rows } = await this.db.query<{ value: PriceTable; updated_at: Date | string }>(`SELECT value, updated_at FROM settings WHERE key = $1`, [KEY]);
    const r = rows[0];
    if (!r) return;
    const stamp = String(r.updated_at);
    if (stamp === this.seen) return;
    this.seen = stamp;
    try {
      this.prices.replace(r.value);
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'stored price table is invalid; keeping the current one');
    }
  }

  /** Applies and stores a table (the admin API logs the change, with who made it). */
  async save(table: PriceTable): Promise<void> {
    this.prices.replace(table); // validates before anything is stored
    await this.db.query(
      `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2::jsonb, now()) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
      [KEY, JSON.stringify(table)],
    );
  }
}
