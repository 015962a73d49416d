import { prepared } from '../../store/sql/prepared.js';
import type { Db } from '../../store/types.js';
import type { CorrelationEntry, CorrelationMatch, CorrelationStore, KeptReceipt, KeptReceiptData, KeptReceiptMatch } from './correlation-store.js';

// One primary-key probe per key. As a plain join, a batch of a few hundred keys made the planner hash the whole table
// (a sequential scan per batch, growing with the table); OFFSET 0 keeps the subquery per key.
const LOOKUP_SQL = prepared(`SELECT c.upstream_id, c.upstream_key, c.message_id, c.part_index, c.parts
  FROM unnest($1::text[], $2::text[]) AS k(up, key)
  CROSS JOIN LATERAL (
    SELECT * FROM upstream_correlations u WHERE u.upstream_id = k.up AND u.upstream_key = k.key OFFSET 0
  ) c`);

// One statement with one array per column: the text never changes with the batch size.
const UPSERT_SQL = prepared(`INSERT INTO upstream_correlations (upstream_id, upstream_key, message_id, part_index, parts, created_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int8[])
  ON CONFLICT (upstream_id, upstream_key) DO UPDATE SET message_id = EXCLUDED.message_id, part_index = EXCLUDED.part_index,
    parts = EXCLUDED.parts, created_at = EXCLUDED.created_at`);

// Kept receipts (migration 0041) whose correlation exists now: one primary-key probe per key of each kept receipt.
const MATCH_KEPT_SQL = `SELECT k.id::text AS id, k.upstream_id, k.keys, k.receipt, k.kept_at, c.message_id, c.part_index, c.parts, c.key_index
  FROM upstream_kept_receipts k
  CROSS JOIN LATERAL (
    SELECT u.message_id, u.part_index, u.parts, array_position(k.keys, u.upstream_key) - 1 AS key_index
    FROM upstream_correlations u WHERE u.upstream_id = k.upstream_id AND u.upstream_key = ANY(k.keys)
    ORDER BY 4 LIMIT 1
  ) c
  ORDER BY k.id LIMIT $1`;

interface KeptRow {
  id: string;
  upstream_id: string;
  keys: string[];
  receipt: KeptReceiptData | string;
  kept_at: string | number;
}

function keptOf(r: KeptRow): KeptReceipt {
  const receipt = typeof r.receipt === 'string' ? (JSON.parse(r.receipt) as KeptReceiptData) : r.receipt;
  return { upstreamId: r.upstream_id, keys: r.keys, receipt, keptAt: Number(r.kept_at) };
}

export interface SqlCorrelationStoreOptions {
  /** How long a write or lookup waits for company before its batch is sent (default 2 ms). */
  lingerMs?: number;
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
  private finds: Array<{ upstreamId: string; keys: readonly string[]; resolve: (m: CorrelationMatch | undefined) => void; reject: (e: unknown) => void }> = [];
  private findTimer: NodeJS.Timeout | undefined;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly lingerMs: number;

  constructor(private readonly db: Db, options: SqlCorrelationStoreOptions = {}) {
    this.lingerMs = options.lingerMs ?? 2;
  }

  put(entries: readonly CorrelationEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ entries: [...entries], resolve, reject });
      if (!this.timer) this.timer = setTimeout(() => this.flush(), this.lingerMs);
    });
  }

  /**
   * Lookups are batched like writes: every receipt arriving within the linger shares one query, so receipts at
   * submit rates cost one round trip per batch instead of one each.
   */
  find(upstreamId: string, keys: readonly string[]): Promise<CorrelationMatch | undefined> {
    return new Promise((resolve, reject) => {
      this.finds.push({ upstreamId, keys, resolve, reject });
      if (!this.findTimer) this.findTimer = setTimeout(() => void this.flushFinds(), this.lingerMs);
    });
  }

  private async flushFinds(): Promise<void> {
    this.findTimer = undefined;
    const batch = this.finds;
    this.finds = [];
    const ups: string[] = [];
    const keys: string[] = [];
    for (const f of batch) for (const k of f.keys) {
      ups.push(f.upstreamId);
      keys.push(k);
    }
    try {
      const { rows } = await this.db.query<{ upstream_id: string; upstream_key: string; message_id: string; part_index: number; parts: number }>(
        LOOKUP_SQL,
        [ups, keys],
      );
      const found = new Map<string, { messageId: string; partIndex: number; parts: number }>();
      for (const r of rows) found.set(r.upstream_id + '\u0000' + r.upstream_key, { messageId: r.message_id, partIndex: Number(r.part_index), parts: Number(r.parts) });
      for (const f of batch) {
        let best: CorrelationMatch | undefined;
        for (let i = 0; i < f.keys.length && !best; i++) {
          const ref = found.get(f.upstreamId + '\u0000' + f.keys[i]);
          if (ref) best = { ref, keyIndex: i };
        }
        f.resolve(best);
      }
    } catch (err) {
      for (const f of batch) f.reject(err);
    }
  }

  async purge(before: number): Promise<number> {
    const r = await this.db.query('DELETE FROM upstream_correlations WHERE created_at < $1', [before]);
    return r.rowCount;
  }

  async keep(k: KeptReceipt): Promise<void> {
    await this.db.query('INSERT INTO upstream_kept_receipts (upstream_id, keys, receipt, kept_at) VALUES ($1, $2::text[], $3::jsonb, $4)', [
      k.upstreamId,
      k.keys,
      JSON.stringify(k.receipt),
      k.keptAt,
    ]);
  }

  async matchKept(limit: number): Promise<KeptReceiptMatch[]> {
    const { rows } = await this.db.query<KeptRow & { message_id: string; part_index: number; parts: number; key_index: number }>(MATCH_KEPT_SQL, [limit]);
    return rows.map((r) => ({
      id: r.id,
      kept: keptOf(r),
      match: { ref: { messageId: r.message_id, partIndex: Number(r.part_index), parts: Number(r.parts) }, keyIndex: Number(r.key_index) },
    }));
  }

  async dropKept(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query('DELETE FROM upstream_kept_receipts WHERE id = ANY($1::int8[])', [ids]);
  }

  async purgeKept(before: number): Promise<KeptReceipt[]> {
    const { rows } = await this.db.query<KeptRow>(
      'DELETE FROM upstream_kept_receipts WHERE kept_at < $1 RETURNING id::text AS id, upstream_id, keys, receipt, kept_at',
      [before],
    );
    return rows.map(keptOf);
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
      await this.db.query(
        UPSERT_SQL,
        [all.map((e) => e.upstreamId), all.map((e) => e.key), all.map((e) => e.messageId), all.map((e) => e.partIndex), all.map((e) => e.parts), all.map((e) => e.createdAt)],
      );
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}
