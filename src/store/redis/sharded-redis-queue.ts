import type { Lane, LaneStats, PushItem, Queue, QueueItem, QueueStats, RetryOptions } from '../types.js';
import { LANES } from '../types.js';
import { LANE_INDEX, queueShardName, type QueueKeys, type RedisKeys } from './keys.js';
import { RedisQueue, type RedisQueueOptions } from './redis-queue.js';
import { scriptNow, type ScriptedRedis } from './scripts.js';

export interface ShardedRedisQueueOptions extends RedisQueueOptions {
  /** Shards new items go to (redis.queueShards), 1..MAX_QUEUE_SHARDS. Lowering it later strands nothing. */
  shards: number;
  /** How long the shard counts read from Redis are trusted before they are read again (default 5 s). */
  layoutTtlMs?: number;
}

export const MAX_QUEUE_SHARDS = 64;

// The same bounds as RedisQueue: a lease returns at most LEASE_MAX items, a lease call reclaims RECLAIM_PER_CALL.
const LEASE_MAX = 1000;
const RECLAIM_PER_CALL = 500;
const PROBE_CHUNK = 1000;
/** Leased id → shard entries kept for ack and retry; past this the oldest are forgotten (they fall back to a probe). */
const LEASE_MEMORY = 100_000;
const DEFAULT_LAYOUT_TTL_MS = 5000;
/** After a failed read of the shard counts, the last ones are used this long before the next try. */
const LAYOUT_RETRY_MS = 1000;
/** How long a lease waits for a shard's peek before it leases from the shards that answered. */
const PEEK_WAIT_MS = 300;


interface Layout {
  /** Every shard count the queue has been run with (1 always: the unsharded queue), the configured one included. */
  counts: readonly number[];
  /** Shards served: the highest count. */
  visit: number;
  /** Whether an item's shard under some recorded count can differ from its shard under the configured one. */
  moved: boolean;
  readAt: number;
}

interface ShardPeek {
  due: [number, number, number];
  expired: number;
}

/**
 * One queue spread over N shards, each a RedisQueue under its own hash tag, so that one busy queue spreads over a
 * Redis Cluster's masters. Shard 0 is the queue itself (today's keys, untouched); shard i is `<name>:s<i>`.
 *
 * Where an item goes: the shard of its shard key (PushItem.shardKey, default its id) by rendezvous hashing over the
 * configured shards. Items with one shard key share a shard, so they keep the single queue's order (runAt, then id).
 * Rendezvous hashing moves few keys when the count changes (to N+1: 1/(N+1) of them; down: only those of the removed
 * shards), but some do move, and an id that is already queued must not be queued again elsewhere (push is idempotent
 * by id: the reconciler re-pushes queued messages, every one of them at start). So Redis keeps the set of shard counts
 * the queue has ever been run with (`{q:<name>}:shards`, SADD only, 1 always in it: the unsharded queue and instances
 * that predate sharding), and a push first looks for each id in the shards it would have had under those counts
 * (one HMGET per shard probed); an id found there is pushed there (a no-op, or the replacement of a dead item, as on
 * one queue). Nothing probes while the counts agree; with {1, N} (sharding turned on) ids outside shard 0 probe
 * shard 0. Once nothing queued before a change remains, an operator may `SREM` the old count (never the highest).
 * The highest count recorded is how many shards lease, get, cancel, stats and dead visit, so lowering the
 * configured count strands nothing; only new ids go to the configured shards.
 *
 * Lease keeps strict lane order across shards: a peek script on every shard (read-only: per lane, the items due,
 * expired leases counted in their lane) tells where the due items are; the lease then takes, lane by lane, from the
 * shards in turn, starting one shard further each call (fairness), and leases from each chosen shard only the lanes
 * planned for it. No shard gives a bulk item while any shard had a due receipt or priority item. A shard with expired
 * leases and nothing planned is still reclaimed (a lease call for no lane), as every lease call reclaims on one queue.
 *
 * Cost per lease with N shards served (N = 1 is exactly RedisQueue: one script call): an empty poll is N peek calls,
 * sent together (one round trip); a full poll is N peeks, then one lease call per shard it takes from (one when the
 * first shard in turn has enough; at most N), so 2 round trips instead of 1. Not 3N: the lanes are never asked one
 * by one. Plus a SADD and SMEMBERS of the shard counts every layoutTtlMs. Measured in
 * test/store/sharded-redis-queue.test.ts (3 shards: empty 3 calls, full 4).
 *
 * By id: ack and retry go to the shard the item was leased from (this instance remembers, LEASE_MEMORY ids); an id
 * it did not lease is acked on every shard (ack ignores unknown ids), and retry, get and cancel look it up first (an
 * HEXISTS per shard, one round trip), since an item pushed under a shard key cannot be found from its id alone.
 */
export class ShardedRedisQueue<P = unknown> implements Queue<P> {
  private readonly configured: number;
  private readonly opts: RedisQueueOptions;
  private readonly layoutTtlMs: number;
  private readonly now: () => number | '';
  private readonly deadCap: number;
  private readonly shards: RedisQueue<P>[] = [];
  private readonly shardKeys: QueueKeys[] = [];
  private readonly leased = new Map<string, number>();
  private layoutCache: Layout | null = null;
  private layoutLoading: Promise<Layout> | null = null;
  private turn = 0;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    readonly name: string,
    opts: ShardedRedisQueueOptions,
  ) {
    if (!Number.isInteger(opts.shards) || opts.shards < 1 || opts.shards > MAX_QUEUE_SHARDS) {
      throw new Error(`queue shards must be an integer from 1 to ${MAX_QUEUE_SHARDS}, got ${String(opts.shards)}`);
    }
    const { shards, layoutTtlMs, ...queueOpts } = opts;
    this.configured = shards;
    this.opts = queueOpts;
    this.layoutTtlMs = layoutTtlMs ?? DEFAULT_LAYOUT_TTL_MS;
    this.now = scriptNow(opts.scriptClock);
    this.deadCap = opts.deadCap ?? 10_000;
    // Validates every configured shard's name now (a long name plus ":s<i>" may pass no more), not at the first push.
    for (let i = 0; i < shards; i++) this.shard(i);
  }

  async push(items: readonly PushItem<P>[]): Promise<void> {
    if (items.length === 0) return;
    const layout = await this.layout();
    const target = items.map((it) => shardOf(it.shardKey ?? it.id, this.configured));
    if (layout.moved) await this.findQueued(items, target, layout);
    const byShard = new Map<number, PushItem<P>[]>();
    items.forEach((it, i) => {
      const list = byShard.get(target[i]);
      if (list) list.push(it);
      else byShard.set(target[i], [it]);
    });
    await Promise.all([...byShard].map(([s, list]) => this.shard(s).push(list)));
  }

  async lease(max: number, leaseMs: number, lanes?: readonly Lane[]): Promise<QueueItem<P>[]> {
    if (max <= 0) return [];
    const wanted = LANES.filter((l) => !lanes || lanes.includes(l)).map((l) => LANE_INDEX[l]);
    if (wanted.length === 0) return [];
    const { visit } = await this.layout();
    if (visit === 1) return this.remember(0, await this.shard(0).lease(max, leaseMs, lanes));

    const now = this.now();
    const peeks = await this.peekAll(visit, now);
    // Lane by lane, shard after shard from this call's first one: a lower lane gets only what every higher one left.
    const start = this.turn++ % visit;
    if (this.turn >= visit) this.turn = 0;
    const take = peeks.map(() => [0, 0, 0]);
    let left = Math.min(max, LEASE_MAX);
    for (const lane of wanted) {
      for (let k = 0; k < visit && left > 0; k++) {
        const s = (start + k) % visit;
        const n = Math.min(peeks[s]?.due[lane] ?? 0, left);
        take[s][lane] = n;
        left -= n;
      }
    }
    // Per shard, one call for its planned lanes: every lane but its last one is taken whole, so the script, which
    // serves lanes in order, takes exactly the plan (or more of a higher lane, should more have become due).
    const calls: Promise<QueueItem<P>[]>[] = [];
    for (let s = 0; s < visit; s++) {
      const count = take[s][0] + take[s][1] + take[s][2];
      if (count > 0) {
        const shardLanes = LANES.filter((_, i) => take[s][i] > 0);
        calls.push(this.shard(s).lease(count, leaseMs, shardLanes).then((got) => this.remember(s, got)));
      } else if ((peeks[s]?.expired ?? 0) > 0) {
        calls.push(this.reclaim(s, now, leaseMs).then(() => []));
      }
    }
    const out = (await Promise.all(calls)).flat();
    // Lane order first (the contract), then due order across shards; sort is stable, so a shard's own order stays.
    return out.sort((a, b) => LANE_INDEX[a.lane] - LANE_INDEX[b.lane] || a.runAt - b.runAt);
  }

  async ack(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const byShard = new Map<number, string[]>();
    const unknown: string[] = [];
    for (const id of ids) {
      const s = this.leased.get(id);
      this.leased.delete(id);
      if (s === undefined) unknown.push(id);
      else if (byShard.has(s)) byShard.get(s)!.push(id);
      else byShard.set(s, [id]);
    }
    const calls = [...byShard].map(([s, list]) => this.shard(s).ack(list));
    if (unknown.length) {
      const { visit } = await this.layout();
      for (let s = 0; s < visit; s++) calls.push(this.shard(s).ack(unknown));
    }
    await Promise.all(calls);
  }

  async retry(id: string, delayMs: number, error: string, options?: RetryOptions): Promise<'scheduled' | 'dead' | 'unknown'> {
    const s = this.leased.get(id);
    this.leased.delete(id);
    if (s !== undefined) {
      const r = await this.shard(s).retry(id, delayMs, error, options);
      if (r !== 'unknown') return r;
    }
    const found = await this.locate(id);
    return found < 0 || found === s ? 'unknown' : this.shard(found).retry(id, delayMs, error, options);
  }

  async cancel(id: string): Promise<boolean> {
    const found = await this.locate(id);
    if (found < 0) return false;
    const removed = await this.shard(found).cancel(id);
    if (removed) this.leased.delete(id);
    return removed;
  }

  async get(id: string): Promise<QueueItem<P> | null> {
    const found = await this.locate(id);
    return found < 0 ? null : this.shard(found).get(id);
  }

  async stats(): Promise<QueueStats> {
    const { visit } = await this.layout();
    const all = await Promise.all(Array.from({ length: visit }, (_, s) => this.shard(s).stats()));
    const lanes: LaneStats[] = LANES.map((lane) => ({ lane, due: 0, scheduled: 0, oldestDueAt: null }));
    let leased = 0;
    let dead = 0;
    for (const st of all) {
      st.lanes.forEach((l, i) => {
        lanes[i].due += l.due;
        lanes[i].scheduled += l.scheduled;
        const oldest = lanes[i].oldestDueAt;
        if (l.oldestDueAt !== null && (oldest === null || l.oldestDueAt < oldest)) lanes[i].oldestDueAt = l.oldestDueAt;
      });
      leased += st.leased;
      dead += st.dead;
    }
    return { lanes, leased, dead };
  }

  async dead(limit: number): Promise<QueueItem<P>[]> {
    if (limit <= 0) return [];
    const { visit } = await this.layout();
    // The newest `limit` of each shard, by time of death, merged; then only the chosen ones are read.
    const ranked = await Promise.all(Array.from({ length: visit }, (_, s) => this.redis.zrevrange(this.keysOf(s).dead, 0, limit - 1, 'WITHSCORES')));
    const deaths: { s: number; id: string; at: number }[] = [];
    ranked.forEach((r, s) => {
      for (let i = 0; i < r.length; i += 2) deaths.push({ s, id: r[i], at: Number(r[i + 1]) });
    });
    deaths.sort((a, b) => b.at - a.at);
    const items = await Promise.all(deaths.slice(0, limit).map((d) => this.shard(d.s).get(d.id)));
    return items.filter((it): it is QueueItem<P> => it !== null);
  }

  private shard(s: number): RedisQueue<P> {
    let q = this.shards[s];
    if (!q) {
      const name = queueShardName(this.name, s);
      q = this.shards[s] = new RedisQueue<P>(this.redis, this.keys, name, this.opts);
      this.shardKeys[s] = this.keys.queue(name);
    }
    return q;
  }

  private keysOf(s: number): QueueKeys {
    this.shard(s);
    return this.shardKeys[s];
  }

  /**
   * Every shard's peek, null for a shard that did not answer within PEEK_WAIT_MS or failed: while a Cluster master is
   * lost (until its replica is promoted, seconds) the shards on the other masters are still served; strict lanes then
   * hold over the shards that answered. Fails only when every shard failed.
   */
  private async peekAll(visit: number, now: number | ''): Promise<(ShardPeek | null)[]> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), PEEK_WAIT_MS)));
    const errors: unknown[] = [];
    const peeks = await Promise.all(
      Array.from({ length: visit }, (_, s) => {
        const peek = this.peek(s, now).catch((err: unknown) => {
          errors.push(err);
          return null;
        });
        return Promise.race([peek, late]).then((r) => (r === 'late' ? null : r));
      }),
    );
    clearTimeout(timer);
    if (errors.length === visit) throw errors[0];
    return peeks;
  }

  private async peek(s: number, now: number | ''): Promise<ShardPeek> {
    const k = this.keysOf(s);
    const r = (await this.redis.queuePeek(k.leases, k.meta, k.lanes[0], k.lanes[1], k.lanes[2], now, RECLAIM_PER_CALL)) as number[];
    return { due: [Number(r[0]), Number(r[1]), Number(r[2])], expired: Number(r[3]) };
  }

  /** The lease script for no lane: puts the shard's expired leases back (or kills them), leases nothing. */
  private async reclaim(s: number, now: number | '', leaseMs: number): Promise<void> {
    const k = this.keysOf(s);
    await this.redis.queueLease(k.payload, k.meta, k.error, k.leases, k.dead, k.lanes[0], k.lanes[1], k.lanes[2], now, Math.max(1, Math.floor(leaseMs)), 1, '', RECLAIM_PER_CALL, this.deadCap);
  }

  private remember(s: number, items: QueueItem<P>[]): QueueItem<P>[] {
    for (const it of items) {
      // Re-inserted so the Map's order stays oldest lease first.
      this.leased.delete(it.id);
      this.leased.set(it.id, s);
    }
    for (const id of this.leased.keys()) {
      if (this.leased.size <= LEASE_MEMORY) break;
      this.leased.delete(id);
    }
    return items;
  }

  /**
   * The shard holding the id (the one it was leased from here, else its home, else the lowest), or -1. One HEXISTS
   * per shard, all at once; with one shard served, shard 0 without asking.
   */
  private async locate(id: string): Promise<number> {
    const { visit } = await this.layout();
    if (visit === 1) return 0;
    const found = await Promise.all(Array.from({ length: visit }, (_, s) => this.redis.hexists(this.keysOf(s).meta, id)));
    const mine = this.leased.get(id);
    if (mine !== undefined && found[mine]) return mine;
    const home = shardOf(id, this.configured);
    if (found[home]) return home;
    return found.findIndex((n) => n === 1);
  }

  /**
   * Points `target` at the shard already holding the item, for items that the recorded shard counts would have put
   * elsewhere: one HMGET per shard probed, all at once.
   */
  private async findQueued(items: readonly PushItem<P>[], target: number[], layout: Layout): Promise<void> {
    const probes = new Map<number, number[]>();
    items.forEach((it, i) => {
      const key = it.shardKey ?? it.id;
      for (const c of layout.counts) {
        const s = shardOf(key, c);
        if (s === target[i]) continue;
        const list = probes.get(s);
        if (!list) probes.set(s, [i]);
        else if (list[list.length - 1] !== i) list.push(i);
      }
    });
    const calls: Promise<void>[] = [];
    for (const [s, idx] of probes) {
      for (let start = 0; start < idx.length; start += PROBE_CHUNK) {
        const part = idx.slice(start, start + PROBE_CHUNK);
        calls.push(
          this.redis.hmget(this.keysOf(s).meta, ...part.map((i) => items[i].id)).then((metas) => {
            metas.forEach((m, j) => {
              if (m !== null) target[part[j]] = s;
            });
          }),
        );
      }
    }
    await Promise.all(calls);
  }

  private async layout(): Promise<Layout> {
    const cached = this.layoutCache;
    if (cached && performance.now() - cached.readAt < this.layoutTtlMs) return cached;
    this.layoutLoading ??= this.loadLayout(cached).finally(() => {
      this.layoutLoading = null;
    });
    return this.layoutLoading;
  }

  private async loadLayout(cached: Layout | null): Promise<Layout> {
    const key = this.keys.queueShards(this.name);
    // Sent together, in this order, on one slot: the read sees this instance's count.
    let members: string[];
    try {
      [, members] = await Promise.all([this.redis.sadd(key, 1, this.configured), this.redis.smembers(key)]);
    } catch (err) {
      // The layout's master is lost (a Cluster failover): the other shards are served on what was last read.
      if (!cached) throw err;
      return (this.layoutCache = { ...cached, readAt: performance.now() - this.layoutTtlMs + LAYOUT_RETRY_MS });
    }
    const counts = new Set<number>([1, this.configured]);
    for (const m of members) {
      const n = Number(m);
      if (Number.isInteger(n) && n >= 1 && n <= MAX_QUEUE_SHARDS) counts.add(n);
    }
    const sorted = [...counts].sort((a, b) => a - b);
    const visit = sorted[sorted.length - 1];
    for (let s = 0; s < visit; s++) this.shard(s);
    const layout: Layout = { counts: sorted, visit, moved: sorted.some((c) => c !== this.configured), readAt: performance.now() };
    this.layoutCache = layout;
    return layout;
  }
}

/**
 * The shard of a shard key among `count` shards: rendezvous (highest random weight) hashing, so changing the count
 * moves only the keys that must move. Stable across processes and versions: FNV-1a of the key, then a weight per shard.
 */
export function shardOf(key: string, count: number): number {
  if (count <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  let best = 0;
  let top = -1;
  for (let s = 0; s < count; s++) {
    const w = mix32(h ^ Math.imul(s + 1, 0x9e3779b1));
    if (w > top) {
      top = w;
      best = s;
    }
  }
  return best;
}

/** Murmur3's finaliser: every input bit moves every output bit. */
function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}
