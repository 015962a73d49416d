import { readFileSync } from 'node:fs';
import type { RedisClient } from '../../platform/redis-clients.js';
import { assetPath } from '../../util/paths.js';
import type { Link } from './link.js';
import type { LinkStore } from './link-store.js';

/**
 * Exact `maxClicks` under concurrency, across instances: with Redis, one Lua script per click on a counter per link
 * (seeded from SQL's used_clicks if the key is gone); embedded, one conditional UPDATE. `take` answers the new count
 * or null when the limit is used up.
 */
export interface ClickLimiter {
  take(link: Link): Promise<number | null>;
  /** Whether a click is left, taking none. */
  peek(link: Link): Promise<boolean>;
  /** Forgets the counter (link deleted, or its limit changed). */
  reset(linkId: string): Promise<void>;
}

export class SqlClickLimiter implements ClickLimiter {
  constructor(private readonly store: LinkStore) {}
  take(link: Link): Promise<number | null> {
    return this.store.consumeClick(link.id);
  }
  async peek(link: Link): Promise<boolean> {
    const fresh = await this.store.bySlug(link.slug);
    return fresh !== null && fresh.maxClicks !== null && fresh.usedClicks < fresh.maxClicks;
  }
  async reset(): Promise<void> {}
}

const TAKE = readFileSync(assetPath('channels/shortlink/lua/click-take.lua'), 'utf8');
const PEEK = readFileSync(assetPath('channels/shortlink/lua/click-peek.lua'), 'utf8');

type ScriptedRedis = RedisClient & {
  shortlinkClickTake(key: string, max: number, floor: number): Promise<number>;
  shortlinkClickPeek(key: string, max: number, floor: number): Promise<number>;
};

export class RedisClickLimiter implements ClickLimiter {
  private readonly redis: ScriptedRedis;
  constructor(
    redis: RedisClient,
    /** Every key of this limiter starts with it (the daemon's Redis key prefix + "shortlink:"). */
    private readonly prefix: string,
  ) {
    redis.defineCommand('shortlinkClickTake', { numberOfKeys: 1, lua: TAKE });
    redis.defineCommand('shortlinkClickPeek', { numberOfKeys: 1, lua: PEEK });
    this.redis = redis as ScriptedRedis;
  }
  key(linkId: string): string {
    return `${this.prefix}clicks:${linkId}`;
  }
  async take(link: Link): Promise<number | null> {
    const n = Number(await this.redis.shortlinkClickTake(this.key(link.id), link.maxClicks ?? 0, link.usedClicks));
    return n > 0 ? n : null;
  }
  async peek(link: Link): Promise<boolean> {
    return Number(await this.redis.shortlinkClickPeek(this.key(link.id), link.maxClicks ?? 0, link.usedClicks)) === 1;
  }
  async reset(linkId: string): Promise<void> {
    await this.redis.del(this.key(linkId));
  }
}
