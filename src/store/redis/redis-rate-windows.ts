import { normalize, toResult, type NormalEntry, type WindowCount } from '../rate-windows.js';
import type { RateLimitEntry, RateWindowResult, RateWindows, WindowLimits } from '../types.js';
import { hashTagOf, type RedisKeys } from './keys.js';
import { scriptNow, type ScriptedRedis } from './scripts.js';
import { TurnBatch } from './turn-batch.js';

/**
 * How long a key's counters outlive the end of their longest window (windows go by the server's TIME; the grace
 * covers a test clock or a script arriving late).
 */
export const RATE_WINDOW_GRACE_MS = 5000;

/** Takes per script call at most: a script blocks Redis while it runs, so a huge turn is cut into several calls. */
const MAX_TAKES_PER_CALL = 256;

interface PendingTake {
  entries: NormalEntry[];
  keys: string[];
  resolve(r: RateWindowResult): void;
  reject(err: unknown): void;
}

/**
 * Rate windows shared by every instance: one hash per key holding, per window, the window counted and its count,
 * updated by one script (src/store/redis/lua/rate-windows.lua) that checks and counts a take over all its keys at
 * once. As for the token bucket, the takes of one turn of the event loop whose keys share a hash tag (every request
 * of an account, when the keys carry the account as their tag) go as one call that takes them in order, as the
 * same takes one after another at that instant would: a busy account costs one script per turn, not one per
 * request. Every take is still one round trip.
 *
 * Time is the server's (TIME in the script), so instances whose clocks differ count in the same windows; tests pass
 * their clock instead (scriptClock). A window a take counts in is still never older than one already counted in.
 */
export class RedisRateWindows implements RateWindows {
  private readonly now: () => number | '';
  private readonly batch = new TurnBatch<PendingTake[]>((groups) => this.flush(groups));

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    opts: { clock?: () => number; scriptClock?: () => number } = {},
  ) {
    this.now = scriptNow(opts.scriptClock);
  }

  take(key: string, limits: WindowLimits, cost = 1): Promise<RateWindowResult> {
    return this.takeAll([{ key, limits }], cost);
  }

  takeAll(list: readonly RateLimitEntry[], cost = 1): Promise<RateWindowResult> {
    let entries: NormalEntry[];
    try {
      entries = normalize(list, cost);
    } catch (err) {
      return Promise.reject(err);
    }
    if (entries.length === 0) return Promise.resolve({ allowed: true, remaining: {} });
    const keys = entries.map((e) => this.keys.rateWindows(e.key));
    // One script per hash tag (a Cluster slot). A take whose keys span tags goes on its own: it only works on a
    // single Redis, not on Cluster.
    const tags = [...new Set(keys.map(hashTagOf))];
    const group = tags.length === 1 ? tags[0] : `\u0000${tags.join('\u0000')}`;
    let takes = this.batch.get(group);
    if (!takes) this.batch.add(group, (takes = []));
    const pending = takes;
    return new Promise<RateWindowResult>((resolve, reject) => pending.push({ entries, keys, resolve, reject }));
  }

  private flush(groups: ReadonlyMap<string, PendingTake[]>): void {
    const now = this.now();
    for (const takes of groups.values()) {
      for (let i = 0; i < takes.length; i += MAX_TAKES_PER_CALL) this.call(takes.slice(i, i + MAX_TAKES_PER_CALL), now);
    }
  }

  private call(takes: PendingTake[], now: number | ''): void {
    const keyIndex = new Map<string, number>();
    const args: (number | '')[] = [now, RATE_WINDOW_GRACE_MS, takes.length];
    for (const t of takes) {
      args.push(t.entries.length);
      t.entries.forEach((e, j) => {
        let k = keyIndex.get(t.keys[j]);
        if (k === undefined) keyIndex.set(t.keys[j], (k = keyIndex.size + 1));
        args.push(k, e.cost, e.limits[0], e.limits[1], e.limits[2]);
      });
    }
    this.redis.rateWindows(keyIndex.size, ...keyIndex.keys(), ...args).then(
      (reply) => {
        const r = reply as number[];
        // The script's time first: retry-after is counted from it.
        const at = r[0];
        let p = 1;
        for (const t of takes) {
          const allowed = r[p++] === 1;
          const counts: WindowCount[][] = t.entries.map(() => [0, 1, 2].map(() => ({ index: r[p++], count: r[p++] })));
          t.resolve(toResult(t.entries, counts, allowed, at));
        }
      },
      (err: unknown) => {
        for (const t of takes) t.reject(err);
      },
    );
  }
}
