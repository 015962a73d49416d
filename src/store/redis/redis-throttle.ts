import { randomBytes } from 'node:crypto';
import type { TakeResult, Throttle, WindowResult } from '../types.js';
import type { RedisKeys } from './keys.js';
import type { ScriptedRedis } from './scripts.js';

/** Throttles shared by every instance: token bucket and sliding-window log, each one Lua call. */
export class RedisThrottle implements Throttle {
  private readonly clock: () => number;
  // Sliding-window members must be unique across instances: a per-process tag plus a counter.
  private readonly tag = randomBytes(4).toString('hex');
  private seq = 0;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    opts: { clock?: () => number } = {},
  ) {
    this.clock = opts.clock ?? Date.now;
  }

  async take(key: string, ratePerSec: number, burst: number, cost = 1): Promise<TakeResult> {
    if (!(ratePerSec > 0) || !(burst > 0)) throw new RangeError('ratePerSec and burst must be > 0');
    const r = (await this.redis.throttleTake(this.keys.throttleBucket(key), ratePerSec, burst, cost, Math.floor(this.clock()))) as number[];
    return { allowed: r[0] === 1, remaining: r[1], retryAfterMs: r[2] };
  }

  async hit(key: string, limit: number, windowMs: number): Promise<WindowResult> {
    if (!(windowMs > 0)) throw new RangeError('windowMs must be > 0');
    const now = Math.floor(this.clock());
    const member = `${now}:${this.tag}:${(this.seq = (this.seq + 1) % 1e9)}`;
    const r = (await this.redis.throttleHit(this.keys.throttleWindow(key), limit, windowMs, now, member)) as number[];
    return { allowed: r[0] === 1, count: r[1], retryAfterMs: r[2] };
  }

  async count(key: string, windowMs: number): Promise<number> {
    const now = Math.floor(this.clock());
    return this.redis.zcount(this.keys.throttleWindow(key), `(${now - windowMs}`, '+inf');
  }

  async reset(key: string): Promise<void> {
    // Both keys share one hash tag, so this is a single-slot DEL on Cluster too.
    await this.redis.del(this.keys.throttleBucket(key), this.keys.throttleWindow(key));
  }
}
