import calculateSlot from 'cluster-key-slot';
import type { Lane } from '../types.js';

/** Keys of one queue, all under the hash tag `{q:<name>}` so every script runs on one Cluster slot. */
export interface QueueKeys {
  /** hash id → payload (JSON text) */
  payload: string;
  /** hash id → "lane|attempts|maxAttempts|runAt" */
  meta: string;
  /** hash id → last error */
  error: string;
  /** zset id → lease deadline */
  leases: string;
  /** zset id → time of death */
  dead: string;
  /** zset per lane id → time due, in serving order (receipt, priority, bulk) */
  lanes: readonly [string, string, string];
}

/** Keys of one (account, phone) for OTP, under one hash tag so create/verify touch a single slot. */
export interface OtpPhoneKeys {
  /** string: id of the active OTP */
  active: string;
  /** zset: recent creates, scored by time (sliding-window rate limit) */
  rate: string;
}

export const LANE_INDEX: Readonly<Record<Lane, number>> = { receipt: 0, priority: 1, bulk: 2 };
export const DEFAULT_KEY_PREFIX = 'ferry:';

const QUEUE_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;

/** Every Redis key Ferry uses is built here, under one configurable prefix. */
export class RedisKeys {
  constructor(readonly prefix: string = DEFAULT_KEY_PREFIX) {}

  queue(name: string): QueueKeys {
    // Braces in the name would move the hash tag; keep names plain.
    if (!QUEUE_NAME.test(name)) throw new Error(`invalid queue name: ${JSON.stringify(name)}`);
    const base = `${this.prefix}{q:${name}}:`;
    return {
      payload: base + 'payload',
      meta: base + 'meta',
      error: base + 'error',
      leases: base + 'leases',
      dead: base + 'dead',
      lanes: [base + 'lane:receipt', base + 'lane:priority', base + 'lane:bulk'],
    };
  }

  /**
   * The shard counts a sharded queue (ShardedRedisQueue) has been run with (set of decimal counts), beside shard 0's
   * keys: its highest is how many shards every instance serves, whatever it is configured with now.
   */
  queueShards(name: string): string {
    if (!QUEUE_NAME.test(name)) throw new Error(`invalid queue name: ${JSON.stringify(name)}`);
    return `${this.prefix}{q:${name}}:shards`;
  }

  /** Token bucket state (hash: tokens, ts). Shares its tag with the window so reset is one DEL. */
  throttleBucket(key: string): string {
    return `${this.prefix}{t:${key}}:tb`;
  }

  /** Sliding window hits (zset scored by time). */
  throttleWindow(key: string): string {
    return `${this.prefix}{t:${key}}:sw`;
  }

  /**
   * Rate-window counters of one key (hash: per window its index and count). A key that carries its own hash tag
   * (`recipient:{acc_1}:233201234567`) keeps it, so the keys of one RateWindows.takeAll can share a Cluster slot;
   * any other key is its own tag.
   */
  rateWindows(key: string): string {
    return hasHashTag(key) ? `${this.prefix}rw:${key}` : `${this.prefix}{rw:${key}}`;
  }

  /** A key's failures and the end of its cool-down (hash: failures, until). */
  cooldown(key: string): string {
    return `${this.prefix}{cd:${key}}`;
  }

  otpPhone(accountId: string, phone: string): OtpPhoneKeys {
    const base = this.otpTagBase(accountId, phone);
    return { active: base + 'active', rate: base + 'rate' };
  }

  /** The OTP record (hash), stored beside its phone's keys. */
  otpRecord(accountId: string, phone: string, id: string): string {
    return this.otpTagBase(accountId, phone) + 'r:' + id;
  }

  /** id → record key: verify/resend/get know only the id, and must find the record's slot. */
  otpIndex(id: string): string {
    return `${this.prefix}otp:id:${id}`;
  }

  /** zset account id → latest expiry of its OTPs for the phone: finds a phone's OTPs without an account (USSD). */
  otpPhoneIndex(phone: string): string {
    return `${this.prefix}otp:ph:${phone}`;
  }

  // The account id is length-prefixed so ("a:b", "c") and ("a", "b:c") never share keys.
  private otpTagBase(accountId: string, phone: string): string {
    return `${this.prefix}{o:${accountId.length}:${accountId}:${phone}}:`;
  }
}

const SLOTS = 16384;
/**
 * Where shard i's slot sits from shard 0's, in twelfths of the slot space: any 3 consecutive shards are a third apart,
 * any 6 a sixth, so on a Cluster whose masters hold equal runs of slots (what `redis-cli --cluster create` makes),
 * queueShards a multiple of the masters (3, 6, 12, or 2 with a multiple of 6) puts the same number of shards on each.
 */
const SHARD_SPREAD = [0, 4, 8, 2, 6, 10, 1, 5, 9, 3, 7, 11];
const shardNames = new Map<string, string>();

/**
 * The queue name of shard `shard` of a sharded queue: shard 0 is the queue itself (today's keys, unchanged), shard i
 * is `<name>:s<i>.<salt>`, under its own hash tag `{q:<name>:s<i>.<salt>}`, the salt being the first that puts the
 * tag on shard i's slot (SHARD_SPREAD): a plain `:s<i>` lands where its hash happens to, and 3 shards of one queue
 * were seen on 2 of 3 masters. The name depends on the queue's name and i only, so every instance and every shard
 * count agree on it. A queue must not be named like another's shard.
 */
export function queueShardName(name: string, shard: number): string {
  if (shard === 0) return name;
  const memo = `${name}\u0000${shard}`;
  const known = shardNames.get(memo);
  if (known) return known;
  const slot0 = calculateSlot(`q:${name}`);
  const target = (slot0 + Math.round((SHARD_SPREAD[shard % 12] * SLOTS) / 12) + Math.floor(shard / 12) * 97) % SLOTS;
  // About SLOTS tries on average (a CRC16 of a short string each); deterministic, bounded well past any real need.
  for (let salt = 0; salt < 50 * SLOTS; salt++) {
    const candidate = `${name}:s${shard}.${salt}`;
    if (calculateSlot(`q:${candidate}`) === target) {
      shardNames.set(memo, candidate);
      return candidate;
    }
  }
  throw new Error(`no shard name found for queue ${name} shard ${shard}`);
}

/**
 * What Redis Cluster hashes a key by: the text between the first `{` and the first `}` after it when that is not
 * empty, else the whole key. Keys with the same tag live on the same slot.
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** Whether the key carries a hash tag of its own. */
export function hasHashTag(key: string): boolean {
  return hashTagOf(key) !== key;
}
