import { trimOldest } from '../util/trim-oldest.js';

interface Reading {
  count: number;
  readAt: number;
  /** Requests let through on this reading. */
  passed: number;
}

/**
 * What this instance last read of each client address's auth-failure count (the shared sliding window), so that a
 * request need not ask the store each time. A reading serves at most `limit − count` requests and for at most
 * `maxAgeMs`; this instance's own failures replace it at once (recording a failure returns the shared count). So an
 * address that reached the limit through other instances gets at most `limit` more requests through here, within
 * `maxAgeMs`, and its first failure here ends that. Bounded: past `maxEntries` (and a quarter) the oldest readings go.
 * Concurrent requests of one address that find no usable reading share reads of the store (`countOf`).
 */
export class AuthFailureCache {
  private readonly readings = new Map<string, Reading>();
  /** The read of each address under way that requests may still join (see countOf). */
  private readonly reads = new Map<string, { done: Promise<number>; joined: number }>();

  constructor(
    private readonly limit: number,
    private readonly maxAgeMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  /** The count to judge this request by, or undefined: read the store (and `record` what it says). */
  use(address: string, now: number): number | undefined {
    const r = this.readings.get(address);
    if (!r) return undefined;
    if (now - r.readAt >= this.maxAgeMs || now < r.readAt) {
      this.readings.delete(address);
      return undefined;
    }
    // A throttled address is read every time: when its window frees up, or an operator resets it, it is let in at once.
    if (r.passed >= this.limit - r.count) return undefined;
    r.passed++;
    return r.count;
  }

  /**
   * The count to judge a request by: a usable reading, else the store's answer. Under load the concurrent requests
   * of one client would each read; instead a read under way takes along up to `limit − 1` requests that find no
   * usable reading, and one finding it full reads itself, so reads still run side by side. The read's answer lets
   * through its own request and the first `limit − count − 1` that joined (its reading counts them as used); the
   * others go round again. A throttled count they judge as it comes: that read is as fresh as their own would be.
   */
  async countOf(address: string, read: () => Promise<number>, clock: () => number): Promise<number> {
    for (;;) {
      const known = this.use(address, clock());
      if (known !== undefined) return known;
      const pending = this.reads.get(address);
      if (!pending || pending.joined >= this.limit - 1) return this.readNow(address, read, clock());
      const seat = ++pending.joined;
      const count = await pending.done;
      if (count >= this.limit || seat < this.limit - count) return count;
    }
  }

  private readNow(address: string, read: () => Promise<number>, at: number): Promise<number> {
    const entry = { done: Promise.resolve(0), joined: 0 };
    // Closed to newcomers as soon as it is answered, so every request it lets through is counted in its reading.
    const close = () => {
      if (this.reads.get(address) === entry) this.reads.delete(address);
    };
    entry.done = read().then(
      (count) => {
        close();
        this.record(address, count, at, Math.max(1, Math.min(1 + entry.joined, this.limit - count)));
        return count;
      },
      (err: unknown) => {
        close();
        throw err;
      },
    );
    this.reads.set(address, entry);
    return entry.done;
  }

  /**
   * A fresh count from the store (a read, or the result of recording a failure). `passed`: the requests it already
   * let through (the one that read it, and those that joined its read).
   */
  record(address: string, count: number, now: number, passed = 1): void {
    this.readings.delete(address);
    this.readings.set(address, { count, readAt: now, passed });
    trimOldest(this.readings, this.maxEntries);
  }

  get size(): number {
    return this.readings.size;
  }
}
