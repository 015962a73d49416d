import type { Db } from '../../store/types.js';
import type { CorrelationEntry, CorrelationMatch, CorrelationStore } from './correlation-store.js';

export interface SqlCorrelationStoreOptions {
  /** How long a write waits for company before its batch is sent (default 2 ms). */
  lingerMs?: number;
  /** Rows per INSERT statement (default 500). */
  maxRows?: number;
}

interface Pending {
  entries: CorrelationEntry[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Durable correlation on the SQL ledger (table upstream_correlations, migration 0003). Writes are group-committed:
 * every put within the linger shares one transaction, so a busy upstream costs one fsync per batch, not per part.
 */
export class SqlCorrelationStore implements CorrelationStore {
  readonly shared = true;
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly lingerMs: number;
  private readonly maxRows: number;

  constructor(private readonly db: Db, options: SqlCorrelationStoreOptions = {}) {
    this.lingerMs = options.lingerMs ?? 2;
    this.maxRows = options.maxRows ?? 500;
  }

  put(entries: readonly CorrelationEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ entries: [...entries], resolve, reject });
      if (!this.timer) this.timer = setTimeout(() => this.flush(), this.lingerMs);
    });
  }

  async find(upstreamId: string, keys: readonly string[]): Promise<CorrelationMatch | undefined> {
    const { rows } = await this.db.query<{ upstream_key: string; message_id: string; part_index: number; parts: number }>(
      'SELECT upstream_key, message_id, part_index, parts FROM upstream_correlations WHERE upstream_id = $1 AND upstream_key = ANY($2::text[])',
      [upstreamId, keys],
    );
    let best: CorrelationMatch | undefined;
    for (const r of rows) {
      const keyIndex = keys.indexOf(r.upstream_key);
      if (best === undefined || keyIndex < best.keyIndex) {
        best = { ref: { messageId: r.message_id, partIndex: Number(r.part_index), parts: Number(r.parts) }, keyIndex };
      }
    }
    return best;
  }

  async purge(before: number): Promise<number> {
    const r = await this.db.query('DELETE FROM upstream_correlations WHERE created_at < $1', [before]);
    return r.rowCount;
  }

  /** Writes what is pending; the Db itself is closed by its owner. */
  async close(): Promise<void> {
    if (this.timer) this.flush();
    await this.flushing;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    // Batches go one after another so a later write of a reused id never lands before an earlier one.
    this.flushing = this.flushing.then(() => this.write(batch));
  }

  private async write(batch: Pending[]): Promise<void> {
    // One row per key: an upsert statement may not touch the same row twice. The last write wins.
    const rows = new Map<string, CorrelationEntry>();
    for (const p of batch) for (const e of p.entries) rows.set(e.upstreamId + '\u0000' + e.key, e);
    const all = [...rows.values()];
    try {
      await this.db.tx(async (q) => {
        for (let i = 0; i < all.length; i += this.maxRows) {
          const chunk = all.slice(i, i + this.maxRows);
          const params: unknown[] = [];
          const values = chunk.map((e) => {
            const n = params.push(e.upstreamId, e.key, e.messageId, e.partIndex, e.parts, e.createdAt);
            return `($${n - 5}, $${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n})`;
          });
          await q.query(
            `INSERT INTO upstream_correlations (upstream_id, upstream_key, message_id, part_index, parts, created_at) VALUES ${values.join(', ')}
             ON CONFLICT (upstream_id, upstream_key) DO UPDATE SET message_id = EXCLUDED.message_id, part_index = EXCLUDED.part_index,
               parts = EXCLUDED.parts, created_at = EXCLUDED.created_at`,
            params,
          );
        }
      });
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}
