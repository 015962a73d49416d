import type { TakeResult, Throttle, WindowResult } from '../types.js';

interface Bucket {
  tokens: number;
  ts: number;
  /** When the bucket is full again: from then on it equals a missing bucket and may be dropped. */
  idleAt: number;
}

interface Window {
  /** Hit times, oldest first, live from `head` on (shifting an array per hit would be O(n)). */
  hits: number[];
  head: number;
  /** When the newest hit leaves the window. */
  idleAt: number;
}

export interface MemoryThrottleOptions {
  clock?: () => number;
  /** Keys kept per kind before idle ones are swept and, if still too many, the oldest dropped. */
  maxKeys?: number;
}

/**
 * In-process throttle for the embedded single-instance mode. Same arithmetic as the Redis scripts.
 * Memory stays bounded: idle keys (full bucket, empty window) are swept when the map grows past maxKeys.
 */
export class MemoryThrottle implements Throttle {
  private readonly buckets = new Map<string, Bucket>();
  private readonly windows = new Map<string, Window>();
  private readonly clock: () => number;
  private readonly maxKeys: number;

  constructor(opts: MemoryThrottleOptions = {}) {
    this.clock = opts.clock ?? Date.now;
    this.maxKeys = opts.maxKeys ?? 100_000;
  }

  /** Keys held (both kinds), for tests and metrics. */
  get size(): number {
    return this.buckets.size + this.windows.size;
  }

  async take(key: string, ratePerSec: number, burst: number, cost = 1): Promise<TakeResult> {
    if (!(ratePerSec > 0) || !(burst > 0)) throw new RangeError('ratePerSec and burst must be > 0');
    const now = Math.floor(this.clock());
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) sweep(this.buckets, now, this.maxKeys);
      b = { tokens: burst, ts: now, idleAt: now };
      this.buckets.set(key, b);
    } else if (now > b.ts) {
      b.tokens += ((now - b.ts) * ratePerSec) / 1000;
      b.ts = now;
    }
    if (b.tokens > burst) b.tokens = burst;
    let allowed = false;
    let retryAfterMs = 0;
    if (b.tokens + 1e-9 >= cost) {
      b.tokens = Math.max(0, b.tokens - cost);
      allowed = true;
    } else {
      retryAfterMs = Math.max(1, Math.ceil(((cost - b.tokens) * 1000) / ratePerSec - 1e-6));
    }
    b.idleAt = b.ts + Math.ceil(((burst - b.tokens) * 1000) / ratePerSec);
    return { allowed, remaining: Math.floor(b.tokens + 1e-9), retryAfterMs };
  }

  async hit(key: string, limit: number, windowMs: number): Promise<WindowResult> {
    if (!(windowMs > 0)) throw new RangeError('windowMs must be > 0');
    const now = Math.floor(this.clock());
    let w = this.windows.get(key);
    if (!w) {
      if (this.windows.size >= this.maxKeys) sweep(this.windows, now, this.maxKeys);
      w = { hits: [], head: 0, idleAt: now };
      this.windows.set(key, w);
    }
    const n = prune(w, now - windowMs);
    if (n < limit) {
      // Keep the log sorted even if the clock stepped back a little.
      const last = w.hits.length > w.head ? w.hits[w.hits.length - 1] : now;
      const t = now < last ? last : now;
      w.hits.push(t);
      w.idleAt = t + windowMs;
      return { allowed: true, count: n + 1, retryAfterMs: 0 };
    }
    const retryAfterMs = n > 0 ? Math.max(1, w.hits[w.head] + windowMs - now) : windowMs;
    return { allowed: false, count: n, retryAfterMs };
  }

  async count(key: string, windowMs: number): Promise<number> {
    const w = this.windows.get(key);
    if (!w) return 0;
    const cutoff = Math.floor(this.clock()) - windowMs;
    let n = 0;
    for (let i = w.head; i < w.hits.length; i++) if (w.hits[i] > cutoff) n++;
    return n;
  }

  async reset(key: string): Promise<void> {
    this.buckets.delete(key);
    this.windows.delete(key);
  }
}

/** Drops hits at or before cutoff; returns how many remain. */
function prune(w: Window, cutoff: number): number {
  const hits = w.hits;
  while (w.head < hits.length && hits[w.head] <= cutoff) w.head++;
  if (w.head > 32 && w.head * 2 > hits.length) {
    hits.splice(0, w.head);
    w.head = 0;
  }
  return hits.length - w.head;
}

/** Removes idle entries; if the map is still full, drops the least recently created ones. */
function sweep(map: Map<string, { idleAt: number }>, now: number, maxKeys: number): void {
  for (const [k, v] of map) if (v.idleAt <= now) map.delete(k);
  // Still full of live keys: forget the oldest tenth (a forgotten key starts fresh, i.e. is allowed).
  if (map.size >= maxKeys) {
    let drop = Math.max(1, Math.floor(maxKeys / 10));
    for (const k of map.keys()) {
      if (drop-- <= 0) break;
      map.delete(k);
    }
  }
}
