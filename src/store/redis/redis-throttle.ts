import { randomBytes } from 'node:crypto';
import type { TakeResult, Throttle, WindowResult } from '../types.js';
import type { RedisKeys } from './keys.js';
import { scriptNow, type ScriptedRedis } from './scripts.js';
import { TurnBatch } from './turn-batch.js';

interface PendingTake {
  cost: number;
  resolve(r: TakeResult): void;
  reject(err: unknown): void;
}

interface TakeGroup {
  bucket: string;
  ratePerSec: number;
  burst: number;
  takes: PendingTake[];
}

/**
 * Throttles shared by every instance: token bucket and sliding-window log, each one Lua call. Token-bucket takes of
 * one turn of the event loop on the same bucket (every request of an API key, every submit of an account) go as one
 * call that takes them in order, as the same takes one by one at that instant would: a busy key costs one script per
 * turn instead of one per request.
 */
export class RedisThrottle implements Throttle {
  private readonly clock: () => number;
  /** The scripts' `now`: '' (the server's TIME) in production. */
  private readonly now: () => number | '';
  // Sliding-window members must be unique across instances: a per-process tag plus a counter.
  private readonly tag = randomBytes(4).toString('hex');
  private seq = 0;
  private readonly batch = new TurnBatch<TakeGroup>((groups) => this.flush(groups));

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    opts: { clock?: () => number; scriptClock?: () => number } = {},
  ) {
    this.clock = opts.scriptClock ?? opts.clock ?? Date.now;
    this.now = scriptNow(opts.scriptClock);
  }

  take(key: string, ratePerSec: number, burst: number, cost = 1): Promise<TakeResult> {
    if (!(ratePerSec > 0) || !(burst > 0)) return Promise.reject(new RangeError('ratePerSec and burst must be > 0'));
    const bucket = this.keys.throttleBucket(key);
    // A bucket's rate and burst are its caller's; takes that disagree on them are not mixed.
    const id = `${bucket}\u0000${ratePerSec}\u0000${burst}`;
    let group = this.batch.get(id);
    if (!group) this.batch.add(id, (group = { bucket, ratePerSec, burst, takes: [] }));
    const takes = group.takes;
    return new Promise<TakeResult>((resolve, reject) => takes.push({ cost, resolve, reject }));
  }

  private flush(groups: ReadonlyMap<string, TakeGroup>): void {
    const now = this.now();
    for (const g of groups.values()) {
      const costs = g.takes.map((p) => p.cost);
      this.redis.throttleTake(g.bucket, g.ratePerSec, g.burst, now, ...costs).then(
        (reply) => {
          const r = reply as number[];
          for (let i = 0; i < g.takes.length; i++) g.takes[i].resolve({ allowed: r[3 * i] === 1, remaining: r[3 * i + 1], retryAfterMs: r[3 * i + 2] });
        },
        (err: unknown) => {
          for (const p of g.takes) p.reject(err);
        },
      );
    }
  }

  async hit(key: string, limit: number, windowMs: number): Promise<WindowResult> {
    if (!(windowMs > 0)) throw new RangeError('windowMs must be > 0');
    const now = Math.floor(this.clock());
    const member = `${now}:${this.tag}:${(this.seq = (this.seq + 1) % 1e9)}`;
    const r = (await this.redis.throttleHit(this.keys.throttleWindow(key), limit, windowMs, this.now(), member)) as number[];
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
