/**
 * What the two RateWindows implementations (Redis script, in-process) share: window sizes and indexes, the checks
 * on a call's arguments, merging entries of one key, and turning the per-window counts into a result.
 */
import { RATE_WINDOWS, type RateLimitEntry, type RateWindow, type RateWindowResult, type WindowLimits } from './types.js';

/** Window sizes in ms. Epoch ms count no leap seconds, so every day window is one UTC day, 00:00 to 24:00. */
export const WINDOW_MS: Readonly<Record<RateWindow, number>> = { second: 1000, minute: 60_000, day: 86_400_000 };
const SIZES = RATE_WINDOWS.map((w) => WINDOW_MS[w]);

/** One key of a call after checks and merging: its cost and, per window (second, minute, day), its limit or -1. */
export interface NormalEntry {
  key: string;
  cost: number;
  limits: [number, number, number];
}

/** Where one window of one key stands after the take: the window counted (its index) and its count. */
export interface WindowCount {
  index: number;
  count: number;
}

/** The index of the window holding `now`, per window (second, minute, day). */
export function windowIndexes(now: number): [number, number, number] {
  return [Math.floor(now / SIZES[0]), Math.floor(now / SIZES[1]), Math.floor(now / SIZES[2])];
}

/** When window w (0 second, 1 minute, 2 day) of that index ends, epoch ms. */
export function windowEnd(w: number, index: number): number {
  return (index + 1) * SIZES[w];
}

function checkCost(cost: number): number {
  if (!Number.isSafeInteger(cost) || cost < 1) throw new RangeError(`rate window cost must be a positive integer, not ${cost}`);
  return cost;
}

function checkLimits(key: string, limits: WindowLimits): [number, number, number] {
  return RATE_WINDOWS.map((w) => {
    const l = limits[w];
    if (l === undefined) return -1;
    if (!Number.isSafeInteger(l) || l < 0) throw new RangeError(`rate window limit ${w} of ${JSON.stringify(key)} must be an integer >= 0, not ${l}`);
    return l;
  }) as [number, number, number];
}

/**
 * Checks a call and merges entries naming the same key (costs add up, the smallest limit of each window applies),
 * so that a key is checked and counted once per call. Order is kept (first occurrence).
 */
export function normalize(entries: readonly RateLimitEntry[], cost: number): NormalEntry[] {
  checkCost(cost);
  const byKey = new Map<string, NormalEntry>();
  for (const e of entries) {
    if (typeof e.key !== 'string' || e.key === '') throw new RangeError('rate window key must be a non-empty string');
    const c = e.cost === undefined ? cost : checkCost(e.cost);
    const limits = checkLimits(e.key, e.limits);
    const seen = byKey.get(e.key);
    if (!seen) {
      byKey.set(e.key, { key: e.key, cost: c, limits });
      continue;
    }
    seen.cost += c;
    for (let w = 0; w < 3; w++) if (limits[w] >= 0 && (seen.limits[w] < 0 || limits[w] < seen.limits[w])) seen.limits[w] = limits[w];
  }
  return [...byKey.values()];
}

/**
 * The result of a take from where every limited window stands: counts after the take when allowed, before it when
 * refused. A refusal names the window that keeps the take out longest (its reset is when the take can fit again,
 * as far as this instant knows); on a tie, the larger window, then the first key.
 */
export function toResult(entries: readonly NormalEntry[], counts: readonly (readonly WindowCount[])[], allowed: boolean, now: number): RateWindowResult {
  if (allowed) {
    const remaining: { [W in RateWindow]?: number } = {};
    for (let k = 0; k < entries.length; k++) {
      for (let w = 0; w < 3; w++) {
        const limit = entries[k].limits[w];
        if (limit < 0) continue;
        const left = Math.max(0, limit - counts[k][w].count);
        const prev = remaining[RATE_WINDOWS[w]];
        if (prev === undefined || left < prev) remaining[RATE_WINDOWS[w]] = left;
      }
    }
    return { allowed: true, remaining };
  }
  let refusal: { key: string; window: RateWindow; limit: number; retryAfterMs: number } | null = null;
  let refusedW = -1;
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k];
    for (let w = 0; w < 3; w++) {
      const limit = e.limits[w];
      if (limit < 0 || counts[k][w].count + e.cost <= limit) continue;
      const retryAfterMs = Math.max(1, windowEnd(w, counts[k][w].index) - now);
      if (!refusal || retryAfterMs > refusal.retryAfterMs || (retryAfterMs === refusal.retryAfterMs && w > refusedW)) {
        refusal = { key: e.key, window: RATE_WINDOWS[w], limit, retryAfterMs };
        refusedW = w;
      }
    }
  }
  // Not allowed means some window of some key did not fit; reaching here without one is a bug in the caller.
  if (!refusal) throw new Error('rate windows: refused without a full window');
  return { allowed: false, ...refusal };
}
