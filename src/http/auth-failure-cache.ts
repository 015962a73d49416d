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
 */
export class AuthFailureCache {
  private readonly readings = new Map<string, Reading>();

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

  /** A fresh count from the store (a read, or the result of recording a failure). */
  record(address: string, count: number, now: number): void {
    this.readings.delete(address);
    // A fresh read lets its own request through: it counts as the first use.
    this.readings.set(address, { count, readAt: now, passed: 1 });
    trimOldest(this.readings, this.maxEntries);
  }

  get size(): number {
    return this.readings.size;
  }
}
