import type { Lane, LaneStats, PushItem, Queue, QueueItem, QueueStats, RetryOptions } from '../types.js';
import { LANES } from '../types.js';
import { LANE_INDEX, type QueueKeys, type RedisKeys } from './keys.js';
import { scriptNow, type ScriptedRedis } from './scripts.js';

export interface RedisQueueOptions {
  /** Epoch-ms clock of this instance: delays are measured on it; the scripts go by the server's TIME. */
  clock?: () => number;
  /** Tests only: the time the scripts use instead of Redis's TIME (src/store/redis/scripts.ts). */
  scriptClock?: () => number;
  /** Dead items kept per queue (oldest dropped first). */
  deadCap?: number;
}

const PUSH_CHUNK = 1000;
// A lease call returns at most this many items (Lua unpack and reply size stay small).
const LEASE_MAX = 1000;
const RECLAIM_PER_CALL = 500;
const DEFAULT_MAX_ATTEMPTS = 10;
const ALL_LANES = '012';

/** The queue on Redis: hashes of items, a zset per lane scored by due time, a zset of leases, a zset of dead. */
export class RedisQueue<P = unknown> implements Queue<P> {
  private readonly keys: QueueKeys;
  /** The 8 keys every queue script takes, in its order. */
  private readonly keyArgs: string[];
  private readonly clock: () => number;
  private readonly now: () => number | '';
  private readonly deadCap: number;

  constructor(
    private readonly redis: ScriptedRedis,
    keys: RedisKeys,
    readonly name: string,
    opts: RedisQueueOptions = {},
  ) {
    this.keys = keys.queue(name);
    const k = this.keys;
    this.keyArgs = [k.payload, k.meta, k.error, k.leases, k.dead, k.lanes[0], k.lanes[1], k.lanes[2]];
    this.clock = opts.scriptClock ?? opts.clock ?? Date.now;
    this.now = scriptNow(opts.scriptClock);
    this.deadCap = opts.deadCap ?? 10_000;
  }

  async push(items: readonly PushItem<P>[]): Promise<void> {
    if (items.length === 0) return;
    // runAt goes as a delay from this clock: the script adds it to its own time (a skewed clock shifts nothing).
    const local = Math.floor(this.clock());
    const now = this.now();
    const calls: Promise<unknown>[] = [];
    for (let start = 0; start < items.length; start += PUSH_CHUNK) {
      const end = Math.min(items.length, start + PUSH_CHUNK);
      const args: (string | number)[] = [...this.keyArgs, now];
      for (let i = start; i < end; i++) {
        const it = items[i];
        const lane = LANE_INDEX[it.lane];
        if (lane === undefined) throw new Error(`unknown lane: ${String(it.lane)}`);
        args.push(it.id, lane, it.runAt === undefined ? 0 : Math.floor(it.runAt) - local, it.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, JSON.stringify(it.payload) ?? 'null');
      }
      calls.push(this.redis.queuePush(...args));
    }
    await Promise.all(calls);
  }

  async lease(max: number, leaseMs: number, lanes?: readonly Lane[]): Promise<QueueItem<P>[]> {
    if (max <= 0) return [];
    const laneArg = lanes ? lanesDigits(lanes) : ALL_LANES;
    if (laneArg === '') return [];
    const r = (await this.redis.queueLease(
      ...this.keyArgs,
      this.now(),
      Math.max(1, Math.floor(leaseMs)),
      Math.min(max, LEASE_MAX),
      laneArg,
      RECLAIM_PER_CALL,
      this.deadCap,
    )) as (string | number)[];
    const out: QueueItem<P>[] = new Array(r.length / 7);
    for (let i = 0, j = 0; i < r.length; i += 7, j++) {
      const err = r[i + 6] as string;
      out[j] = {
        id: r[i] as string,
        lane: LANES[Number(r[i + 1])],
        payload: JSON.parse(r[i + 5] as string) as P,
        runAt: Number(r[i + 4]),
        attempts: Number(r[i + 2]),
        maxAttempts: Number(r[i + 3]),
        lastError: err === '' ? null : err.slice(1),
      };
    }
    return out;
  }

  async ack(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const calls: Promise<unknown>[] = [];
    for (let start = 0; start < ids.length; start += PUSH_CHUNK) {
      calls.push(this.redis.queueAck(...this.keyArgs, ...ids.slice(start, start + PUSH_CHUNK)));
    }
    await Promise.all(calls);
  }

  async retry(id: string, delayMs: number, error: string, options: RetryOptions = {}): Promise<'scheduled' | 'dead' | 'unknown'> {
    const refund = options.refund ? 1 : 0;
    return (await this.redis.queueRetry(...this.keyArgs, id, this.now(), Math.max(0, Math.floor(delayMs)), error, this.deadCap, refund)) as
      | 'scheduled'
      | 'dead'
      | 'unknown';
  }

  async cancel(id: string): Promise<boolean> {
    return (await this.redis.queueCancel(...this.keyArgs, id)) === 1;
  }

  async get(id: string): Promise<QueueItem<P> | null> {
    const k = this.keys;
    const r = await this.redis.pipeline().hget(k.meta, id).hget(k.payload, id).hget(k.error, id).exec();
    if (!r) return null;
    for (const [err] of r) if (err) throw err;
    const meta = r[0][1] as string | null;
    if (meta === null) return null;
    return toItem<P>(id, meta, r[1][1] as string | null, r[2][1] as string | null);
  }

  async stats(): Promise<QueueStats> {
    const k = this.keys;
    const now = Math.floor(this.clock());
    const p = this.redis.pipeline();
    // Per lane: due, scheduled, and the first item by due time (its score says when it became due).
    for (const lane of k.lanes) p.zcount(lane, '-inf', now).zcount(lane, `(${now}`, '+inf').zrange(lane, '0', '0', 'WITHSCORES');
    p.zcard(k.leases).zcard(k.dead);
    const r = await p.exec();
    if (!r) throw new Error('redis pipeline returned nothing');
    for (const [err] of r) if (err) throw err;
    const n = (i: number) => Number(r[i][1]);
    const first = (i: number): number | null => {
      const head = r[i][1] as string[];
      return head.length === 2 && Number(head[1]) <= now ? Number(head[1]) : null;
    };
    const lanes: LaneStats[] = LANES.map((lane, i) => ({ lane, due: n(3 * i), scheduled: n(3 * i + 1), oldestDueAt: first(3 * i + 2) }));
    return { lanes, leased: n(3 * LANES.length), dead: n(3 * LANES.length + 1) };
  }

  async dead(limit: number): Promise<QueueItem<P>[]> {
    if (limit <= 0) return [];
    const k = this.keys;
    const ids = await this.redis.zrevrange(k.dead, 0, limit - 1);
    if (ids.length === 0) return [];
    const r = await this.redis.pipeline().hmget(k.meta, ...ids).hmget(k.payload, ...ids).hmget(k.error, ...ids).exec();
    if (!r) return [];
    for (const [err] of r) if (err) throw err;
    const metas = r[0][1] as (string | null)[];
    const payloads = r[1][1] as (string | null)[];
    const errors = r[2][1] as (string | null)[];
    const out: QueueItem<P>[] = [];
    for (let i = 0; i < ids.length; i++) {
      const meta = metas[i];
      if (meta !== null) out.push(toItem<P>(ids[i], meta, payloads[i], errors[i]));
    }
    return out;
  }
}

function lanesDigits(lanes: readonly Lane[]): string {
  // Always in serving order, whatever order the caller listed them in.
  let s = '';
  for (const lane of LANES) if (lanes.includes(lane)) s += LANE_INDEX[lane];
  return s;
}

/** meta is "lane|attempts|maxAttempts|runAt". */
function toItem<P>(id: string, meta: string, payload: string | null, error: string | null): QueueItem<P> {
  const [lane, attempts, maxAttempts, runAt] = meta.split('|');
  return {
    id,
    lane: LANES[Number(lane)],
    payload: JSON.parse(payload ?? 'null') as P,
    runAt: Number(runAt),
    attempts: Number(attempts),
    maxAttempts: Number(maxAttempts),
    lastError: error,
  };
}
