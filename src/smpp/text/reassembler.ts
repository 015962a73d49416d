export interface ReassemblerOptions {
  /** Incomplete messages kept at most; the oldest is dropped beyond this. */
  maxPending?: number;
  /** An incomplete message older than this is dropped. */
  ttlMs?: number;
}

interface Pending {
  parts: Array<Buffer | undefined>;
  received: number;
  firstAt: number;
}

/**
 * Collects concatenated parts (from UDH or SAR) until a message is whole. Bounded in entries and age so a
 * peer that never sends the last part cannot grow memory.
 */
export class Reassembler {
  private readonly pending = new Map<string, Pending>();
  private readonly maxPending: number;
  private readonly ttlMs: number;
  dropped = 0;

  constructor(options: ReassemblerOptions = {}) {
    this.maxPending = options.maxPending ?? 10_000;
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
  }

  get size(): number {
    return this.pending.size;
  }

  /**
   * Adds part `seq` (1-based) of `total` for the message `key` (e.g. source|destination|reference). Returns the
   * parts in order once all have arrived, else undefined. A repeated part replaces the earlier copy.
   */
  add(key: string, total: number, seq: number, payload: Buffer, now = Date.now()): Buffer[] | undefined {
    if (total < 1 || seq < 1 || seq > total) return undefined;
    if (total === 1) return [payload];
    this.expire(now);
    const fullKey = `${key}|${total}`;
    let entry = this.pending.get(fullKey);
    if (!entry) {
      if (this.pending.size >= this.maxPending) this.dropOldest();
      entry = { parts: new Array<Buffer | undefined>(total).fill(undefined), received: 0, firstAt: now };
      this.pending.set(fullKey, entry);
    }
    if (entry.parts[seq - 1] === undefined) entry.received++;
    entry.parts[seq - 1] = payload;
    if (entry.received < total) return undefined;
    this.pending.delete(fullKey);
    return entry.parts as Buffer[];
  }

  private dropOldest(): void {
    const first = this.pending.keys().next();
    if (!first.done) {
      this.pending.delete(first.value);
      this.dropped++;
    }
  }

  private expire(now: number): void {
    // Map order is insertion order, so the oldest entries are first.
    for (const [key, entry] of this.pending) {
      if (now - entry.firstAt < this.ttlMs) break;
      this.pending.delete(key);
      this.dropped++;
    }
  }
}
