import { trimOldest } from '../../util/trim-oldest.js';
import type { CorrelationEntry, CorrelationMatch, CorrelationRef, CorrelationStore, KeptReceipt, KeptReceiptMatch } from './correlation-store.js';

export interface MemoryCorrelationStoreOptions {
  /** Entries kept; the oldest go first, a quarter at a time once it holds a quarter more (default 500,000, roughly 100 MB). */
  maxEntries?: number;
}

interface Stored extends CorrelationRef {
  createdAt: number;
}

/** In-process correlation for a single instance. Lost on restart: use a durable store in production. */
export class MemoryCorrelationStore implements CorrelationStore {
  readonly shared = false;
  // Insertion order is creation order, so the oldest entries are always at the front.
  private readonly map = new Map<string, Stored>();
  private readonly maxEntries: number;
  /** Kept receipts by id, oldest first; bounded like the entries. */
  private readonly kept = new Map<string, KeptReceipt>();
  private keptSeq = 0;
  evicted = 0;

  constructor(options: MemoryCorrelationStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? 500_000;
  }

  get size(): number {
    return this.map.size;
  }

  async put(entries: readonly CorrelationEntry[]): Promise<void> {
    for (const e of entries) {
      const k = e.upstreamId + '\u0000' + e.key;
      this.map.delete(k); // re-insert at the back when an id is reused
      this.map.set(k, { messageId: e.messageId, partIndex: e.partIndex, parts: e.parts, createdAt: e.createdAt });
    }
    this.evicted += trimOldest(this.map, this.maxEntries);
  }

  async find(upstreamId: string, keys: readonly string[]): Promise<CorrelationMatch | undefined> {
    for (let i = 0; i < keys.length; i++) {
      const hit = this.map.get(upstreamId + '\u0000' + keys[i]);
      if (hit) return { ref: { messageId: hit.messageId, partIndex: hit.partIndex, parts: hit.parts }, keyIndex: i };
    }
    return undefined;
  }

  async purge(before: number): Promise<number> {
    let n = 0;
    for (const [k, v] of this.map) {
      if (v.createdAt >= before) break;
      this.map.delete(k);
      n++;
    }
    return n;
  }

  async keep(receipt: KeptReceipt): Promise<void> {
    this.kept.set(String(++this.keptSeq), receipt);
    this.evicted += trimOldest(this.kept, this.maxEntries);
  }

  async matchKept(limit: number): Promise<KeptReceiptMatch[]> {
    const out: KeptReceiptMatch[] = [];
    for (const [id, kept] of this.kept) {
      if (out.length >= limit) break;
      const match = await this.find(kept.upstreamId, kept.keys);
      if (match) out.push({ id, kept, match });
    }
    return out;
  }

  async dropKept(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.kept.delete(id);
  }

  async purgeKept(before: number): Promise<KeptReceipt[]> {
    const out: KeptReceipt[] = [];
    for (const [id, k] of this.kept) {
      if (k.keptAt >= before) break;
      this.kept.delete(id);
      out.push(k);
    }
    return out;
  }

  async close(): Promise<void> {
    this.map.clear();
    this.kept.clear();
  }
}
