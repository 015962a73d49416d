import type { RedisClient } from '../../../platform/redis-clients.js';
import type { Logger } from 'pino';

/** Who has a live socket: this process's sockets always, every instance's with Redis. */
export interface Presence {
  /** Registers a live socket here; true when it is the user's first anywhere (the user came online). */
  add(accountId: string, userId: string, socketId: string): Promise<boolean>;
  /** Forgets a socket; true when it was the user's last anywhere (the user went offline). */
  remove(accountId: string, userId: string, socketId: string): Promise<boolean>;
  /** Of these users, those with a live socket on some instance. */
  online(accountId: string, userIds: readonly string[]): Promise<Set<string>>;
  /** Whether the user has a socket in this process (no I/O). */
  hasLocal(accountId: string, userId: string): boolean;
  /** Renews this process's sockets (Redis: before their TTL runs out); nothing to do in-process. */
  heartbeat(): Promise<void>;
}

const userKey = (accountId: string, userId: string) => `${accountId}\u0000${userId}`;

/** This process's sockets by user: the whole truth embedded, the fast path with Redis. */
class LocalSockets {
  readonly byUser = new Map<string, Set<string>>();

  add(accountId: string, userId: string, socketId: string): boolean {
    const k = userKey(accountId, userId);
    let set = this.byUser.get(k);
    if (!set) this.byUser.set(k, (set = new Set()));
    set.add(socketId);
    return set.size === 1;
  }

  remove(accountId: string, userId: string, socketId: string): boolean {
    const k = userKey(accountId, userId);
    const set = this.byUser.get(k);
    if (!set || !set.delete(socketId)) return false;
    if (set.size) return false;
    this.byUser.delete(k);
    return true;
  }

  has(accountId: string, userId: string): boolean {
    return this.byUser.has(userKey(accountId, userId));
  }
}

/** Embedded: one process is the deployment. */
export class LocalPresence implements Presence {
  private readonly local = new LocalSockets();

  async add(accountId: string, userId: string, socketId: string): Promise<boolean> {
    return this.local.add(accountId, userId, socketId);
  }

  async remove(accountId: string, userId: string, socketId: string): Promise<boolean> {
    return this.local.remove(accountId, userId, socketId);
  }

  async online(accountId: string, userIds: readonly string[]): Promise<Set<string>> {
    return new Set(userIds.filter((u) => this.local.has(accountId, u)));
  }

  hasLocal(accountId: string, userId: string): boolean {
    return this.local.has(accountId, userId);
  }

  async heartbeat(): Promise<void> {}
}

/** How long a user seen online on another instance is taken as online without asking Redis again. */
const REMOTE_ONLINE_CACHE_MS = 1000;

/**
 * Redis: a sorted set per user, `<prefix>chat:presence:<account>:<user>`, of socket ids scored by when each runs out
 * (now + the TTL, renewed by the heartbeat). Online = a member not yet run out, so an instance that dies takes its
 * users offline within the TTL. A Redis error counts as offline for the caller (a push too many, not one missed).
 */
export class RedisPresence implements Presence {
  private readonly local = new LocalSockets();
  private readonly remoteOnline = new Map<string, number>();
  private readonly ttlMs: number;

  constructor(
    private readonly o: { redis: RedisClient; keyPrefix: string; ttlSeconds: number; log: Logger; clock?: () => number },
  ) {
    this.ttlMs = o.ttlSeconds * 1000;
  }

  private now(): number {
    return (this.o.clock ?? Date.now)();
  }

  private key(accountId: string, userId: string): string {
    return `${this.o.keyPrefix}chat:presence:${accountId}:${userId}`;
  }

  async add(accountId: string, userId: string, socketId: string): Promise<boolean> {
    this.local.add(accountId, userId, socketId);
    const now = this.now();
    const key = this.key(accountId, userId);
    try {
      const r = await this.o.redis
        .multi()
        .zremrangebyscore(key, '-inf', now)
        .zadd(key, now + this.ttlMs, socketId)
        .zcard(key)
        .pexpire(key, this.ttlMs)
        .exec();
      return Number(r?.[2]?.[1] ?? 0) === 1;
    } catch (err) {
      this.o.log.debug({ err: (err as Error).message }, 'chat presence: Redis add failed');
      return false;
    }
  }

  async remove(accountId: string, userId: string, socketId: string): Promise<boolean> {
    this.local.remove(accountId, userId, socketId);
    this.remoteOnline.delete(userKey(accountId, userId));
    const key = this.key(accountId, userId);
    try {
      const r = await this.o.redis.multi().zrem(key, socketId).zremrangebyscore(key, '-inf', this.now()).zcard(key).exec();
      return Number(r?.[0]?.[1] ?? 0) === 1 && Number(r?.[2]?.[1] ?? 1) === 0;
    } catch (err) {
      this.o.log.debug({ err: (err as Error).message }, 'chat presence: Redis remove failed');
      return false;
    }
  }

  async online(accountId: string, userIds: readonly string[]): Promise<Set<string>> {
    const now = this.now();
    const online = new Set<string>();
    const ask: string[] = [];
    for (const u of userIds) {
      if (this.local.has(accountId, u) || (this.remoteOnline.get(userKey(accountId, u)) ?? 0) > now) online.add(u);
      else ask.push(u);
    }
    if (!ask.length) return online;
    try {
      // One command per user, sent together by auto-pipelining (grouped per node on a Cluster, where one pipeline
      // could not span the users' slots); a failed lookup counts as offline.
      const r = await Promise.all(ask.map((u) => this.o.redis.zcount(this.key(accountId, u), now, '+inf').catch(() => 0)));
      ask.forEach((u, i) => {
        if (Number(r[i]) > 0) {
          online.add(u);
          this.remoteOnline.set(userKey(accountId, u), now + REMOTE_ONLINE_CACHE_MS);
        }
      });
    } catch (err) {
      this.o.log.debug({ err: (err as Error).message }, 'chat presence: Redis lookup failed');
    }
    return online;
  }

  hasLocal(accountId: string, userId: string): boolean {
    return this.local.has(accountId, userId);
  }

  /** Renews every socket of this process, one pipeline; drops the cache entries that ran out. */
  async heartbeat(): Promise<void> {
    const now = this.now();
    for (const [k, until] of this.remoteOnline) if (until <= now) this.remoteOnline.delete(k);
    if (!this.local.byUser.size) return;
    // Per user, the same auto-pipelined batch (a Cluster groups it per node; one pipeline could not span the slots).
    const writes: Promise<unknown>[] = [];
    for (const [k, sockets] of this.local.byUser) {
      const [accountId, userId] = k.split('\u0000');
      const key = this.key(accountId, userId);
      for (const sid of sockets) writes.push(this.o.redis.zadd(key, now + this.ttlMs, sid));
      writes.push(this.o.redis.pexpire(key, this.ttlMs));
    }
    const failed = (await Promise.allSettled(writes)).find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }
}
