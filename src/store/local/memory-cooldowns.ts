import { trimOldest } from '../../util/trim-oldest.js';
import { cooldownAfter, type CooldownPolicy, type FailureCooldowns } from '../types.js';

interface Entry {
  failures: number;
  /** When the cool-down ends (epoch ms); at or before now: none. */
  until: number;
  /** When the entry is forgotten. */
  forgetAt: number;
}

export interface MemoryCooldownsOptions {
  clock?: () => number;
  /** Keys kept; past it, forgotten ones are swept and, if still too many, the least recently failed dropped. */
  maxKeys?: number;
}

/** In-process failure cool-downs for the embedded single-instance mode. Same arithmetic as cooldown-fail.lua. */
export class MemoryCooldowns implements FailureCooldowns {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: () => number;
  private readonly maxKeys: number;

  constructor(opts: MemoryCooldownsOptions = {}) {
    this.clock = opts.clock ?? Date.now;
    this.maxKeys = opts.maxKeys ?? 100_000;
  }

  /** Keys held, for tests. */
  get size(): number {
    return this.entries.size;
  }

  async remainingMs(key: string): Promise<number> {
    const now = Math.floor(this.clock());
    const e = this.live(key, now);
    return e ? Math.max(0, e.until - now) : 0;
  }

  async fail(key: string, policy: CooldownPolicy): Promise<{ failures: number; cooldownMs: number }> {
    const now = Math.floor(this.clock());
    const failures = (this.live(key, now)?.failures ?? 0) + 1;
    const cooldownMs = cooldownAfter(failures, policy);
    const until = Math.max(this.entries.get(key)?.until ?? 0, now + cooldownMs);
    // Deleted and set again: the map's order is then the order of last failure, which is what the trim drops by.
    this.entries.delete(key);
    this.entries.set(key, { failures, until, forgetAt: until + policy.forgetMs });
    if (this.entries.size > this.maxKeys) this.sweep(now);
    return { failures, cooldownMs };
  }

  async reset(key: string): Promise<void> {
    this.entries.delete(key);
  }

  private live(key: string, now: number): Entry | undefined {
    const e = this.entries.get(key);
    if (e && e.forgetAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  private sweep(now: number): void {
    for (const [k, e] of this.entries) if (e.forgetAt <= now) this.entries.delete(k);
    trimOldest(this.entries, this.maxKeys);
  }
}
