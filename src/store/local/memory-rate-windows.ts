import { normalize, toResult, windowEnd, windowIndexes, type WindowCount } from '../rate-windows.js';
import type { RateLimitEntry, RateWindowResult, RateWindows, WindowLimits } from '../types.js';

interface KeyState {
  /** Per window (second, minute, day): the window counted and its count; index -1 when never counted. */
  index: [number, number, number];
  count: [number, number, number];
  /** When the last window counted ends: from then on the state equals a missing one and may be dropped. */
  idleAt: number;
}

export interface MemoryRateWindowsOptions {
  clock?: () => number;
  /** Keys kept before idle ones are swept and, if still too many, the oldest dropped. */
  maxKeys?: number;
}

/**
 * In-process rate windows for the embedded single-instance mode: the same fixed windows and the same all-or-nothing
 * rule as the Redis script. A take runs without awaiting anything, so it is atomic within the process.
 * Memory stays bounded: a refused take stores nothing, and once the map holds maxKeys keys the idle ones (every
 * counted window ended) are swept; if it is still nearly full of live keys the oldest are forgotten (a forgotten
 * key starts again from zero, so under that flood a limit can let more through: raise maxKeys if that happens).
 */
export class MemoryRateWindows implements RateWindows {
  private readonly keys = new Map<string, KeyState>();
  private readonly clock: () => number;
  private readonly maxKeys: number;

  constructor(opts: MemoryRateWindowsOptions = {}) {
    this.clock = opts.clock ?? Date.now;
    this.maxKeys = opts.maxKeys ?? 100_000;
  }

  /** Keys held, for tests and metrics. */
  get size(): number {
    return this.keys.size;
  }

  async take(key: string, limits: WindowLimits, cost = 1): Promise<RateWindowResult> {
    return this.takeNow([{ key, limits }], cost);
  }

  async takeAll(entries: readonly RateLimitEntry[], cost = 1): Promise<RateWindowResult> {
    return this.takeNow(entries, cost);
  }

  private takeNow(list: readonly RateLimitEntry[], cost: number): RateWindowResult {
    const entries = normalize(list, cost);
    const now = Math.floor(this.clock());
    const current = windowIndexes(now);
    const counts: WindowCount[][] = [];
    let allowed = true;
    for (const e of entries) {
      const s = this.keys.get(e.key);
      const row: WindowCount[] = [];
      for (let w = 0; w < 3; w++) {
        if (e.limits[w] < 0) {
          row.push({ index: 0, count: 0 });
          continue;
        }
        // As in the script: a window counted that is not older than now's (the clock stepped back) is the one counted.
        const live = s !== undefined && s.index[w] >= current[w];
        const wc = live ? { index: s.index[w], count: s.count[w] } : { index: current[w], count: 0 };
        if (wc.count + e.cost > e.limits[w]) allowed = false;
        row.push(wc);
      }
      counts.push(row);
    }
    if (allowed) {
      entries.forEach((e, k) => {
        let s = this.keys.get(e.key);
        if (!s) {
          if (this.keys.size >= this.maxKeys) this.sweep(now);
          s = { index: [-1, -1, -1], count: [0, 0, 0], idleAt: now };
          this.keys.set(e.key, s);
        }
        for (let w = 0; w < 3; w++) {
          if (e.limits[w] < 0) continue;
          const wc = counts[k][w];
          wc.count += e.cost;
          s.index[w] = wc.index;
          s.count[w] = wc.count;
          const end = windowEnd(w, wc.index);
          if (end > s.idleAt) s.idleAt = end;
        }
      });
    }
    return toResult(entries, counts, allowed, now);
  }

  /**
   * Removes idle keys; if fewer than a tenth of the room is then free, drops the least recently created keys until
   * it is (so a sweep, O(keys), runs at most once per maxKeys/10 new keys).
   */
  private sweep(now: number): void {
    for (const [k, v] of this.keys) if (v.idleAt <= now) this.keys.delete(k);
    const keep = this.maxKeys - Math.max(1, Math.floor(this.maxKeys / 10));
    if (this.keys.size > keep) {
      let drop = this.keys.size - keep;
      for (const k of this.keys.keys()) {
        if (drop-- <= 0) break;
        this.keys.delete(k);
      }
    }
  }
}
