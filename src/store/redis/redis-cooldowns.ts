import type { CooldownPolicy, FailureCooldowns } from '../types.js';
import type { RedisKeys } from './keys.js';
import { scriptNow, type ScriptedRedis } from './scripts.js';

/**
 * Failure cool-downs shared by every instance: one hash per key, counted by one script on the server's clock (TIME),
 * so instances whose clocks differ agree; the hash's TTL only clears it away once forgotten.
 */
export class RedisCooldowns implements FailureCooldowns {
  private readonly clock: () => number;
  private readonly now: () => number | '';

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    opts: { clock?: () => number; scriptClock?: () => number } = {},
  ) {
    this.clock = opts.scriptClock ?? opts.clock ?? Date.now;
    this.now = scriptNow(opts.scriptClock);
  }

  async remainingMs(key: string): Promise<number> {
    const [until, forgetAt] = await this.redis.hmget(this.keys.cooldown(key), 'until', 'forgetAt');
    const now = Math.floor(this.clock());
    return until === null || Number(forgetAt) <= now ? 0 : Math.max(0, Number(until) - now);
  }

  async fail(key: string, policy: CooldownPolicy): Promise<{ failures: number; cooldownMs: number }> {
    const r = (await this.redis.cooldownFail(
      this.keys.cooldown(key),
      this.now(),
      policy.threshold,
      policy.firstMs,
      policy.maxMs,
      policy.forgetMs,
    )) as [number, number];
    return { failures: Number(r[0]), cooldownMs: Number(r[1]) };
  }

  async reset(key: string): Promise<void> {
    await this.redis.del(this.keys.cooldown(key));
  }
}
