import { normalize, toResult, windowEnd, windowIndexes, type WindowCount } from '../rate-windows.js';
import type { RateLimitEntry, RateWindowResult, RateWindows, WindowLimits } from '../types.js';
import type { RedisKeys } from './keys.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * How long a key's counters outlive the end of their longest window. An instance whose clock lags behind the others
 * by less than this still finds the counter of the window it thinks is current; beyond it, that window could count
 * again from zero. Instances run NTP, which keeps them within milliseconds.
 */
export const RATE_WINDOW_GRACE_MS = 5000;

/**
 * Rate windows shared by every instance: one hash per key holding, per window, the window counted and its count;
 * one script call per take however many keys and windows (src/store/redis/lua/rate-windows.lua). Time is the
 * caller's clock, as for the throttle scripts (tests drive it; instances agree on it through NTP). A window a
 * take counts in is never older than one another instance has already counted in, so a lagging clock counts in
 * the newer window instead of reopening a closed one.
 */
export class RedisRateWindows implements RateWindows {
  private readonly clock: () => number;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    opts: { clock?: () => number } = {},
  ) {
    this.clock = opts.clock ?? Date.now;
  }

  take(key: string, limits: WindowLimits, cost = 1): Promise<RateWindowResult> {
    return this.takeAll([{ key, limits }], cost);
  }

  async takeAll(list: readonly RateLimitEntry[], cost = 1): Promise<RateWindowResult> {
    const entries = normalize(list, cost);
    if (entries.length === 0) return { allowed: true, remaining: {} };
    const now = Math.floor(this.clock());
    const current = windowIndexes(now);
    const keys: string[] = [];
    const args: number[] = [current[0], current[1], current[2]];
    for (const e of entries) {
      keys.push(this.keys.rateWindows(e.key));
      let end = now;
      for (let w = 0; w < 3; w++) if (e.limits[w] >= 0) end = Math.max(end, windowEnd(w, current[w]));
      args.push(e.cost, e.limits[0], e.limits[1], e.limits[2], end - now + RATE_WINDOW_GRACE_MS);
    }
    const r = (await this.redis.rateWindows(keys.length, ...keys, ...args)) as number[];
    const counts: WindowCount[][] = entries.map((_, k) => [0, 1, 2].map((w) => ({ index: r[1 + 6 * k + 2 * w], count: r[2 + 6 * k + 2 * w] })));
    return toResult(entries, counts, r[0] === 1, now);
  }
}
