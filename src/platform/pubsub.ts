import { EventEmitter } from 'node:events';
import { isCluster, type RedisClient } from '../store/redis/redis-client.js';
import type { Logger } from 'pino';
import type { RedisClientFactory } from './redis-clients.js';

/** A subscription's options. */
export interface SubscribeOptions {
  /**
   * Called when messages may have been missed (the link to Redis came back after a drop): a cache forgets what it
   * holds. Never called in-process.
   */
  onResync?(): void;
}

/** What every module gets as `ctx.pubsub`: messages to every instance of the daemon (this one included). */
export interface ModulePubSub {
  /** Sends to every subscriber of the module's channel on every instance; at most once, lost while Redis is down. */
  publish(channel: string, payload: string): Promise<void>;
  /** Receives the module's channel; resolves once subscribed; the returned function ends the subscription. */
  subscribe(channel: string, handler: (payload: string) => void, o?: SubscribeOptions): Promise<() => Promise<void>>;
}

/** Transport under every module's pub/sub: one per daemon (two connections on Redis, an emitter embedded). */
interface Transport {
  publish(channel: string, payload: string): Promise<void>;
  subscribe(channel: string, handler: (payload: string) => void, o?: SubscribeOptions): Promise<() => Promise<void>>;
}

/** Embedded: one process is the whole deployment. */
class LocalTransport implements Transport {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  async publish(channel: string, payload: string): Promise<void> {
    this.emitter.emit(channel, payload);
  }

  async subscribe(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    const listener = (payload: string) => handler(payload);
    this.emitter.on(channel, listener);
    return async () => void this.emitter.off(channel, listener);
  }
}

/**
 * Redis: one publishing and one subscribed connection for every module's channels. On a Cluster, sharded pub/sub
 * (SPUBLISH/SSUBSCRIBE, Redis 7): a message travels only within the shard that owns its channel's slot instead of
 * being broadcast over the whole cluster bus, and the subscriber keeps one connection per master.
 */
class RedisTransport implements Transport {
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private readonly resyncs = new Set<() => void>();
  private readyOnce = false;
  private readonly sharded: boolean;

  constructor(
    private readonly pub: RedisClient,
    private readonly sub: RedisClient,
    private readonly log: Logger,
  ) {
    this.sharded = isCluster(sub);
    sub.on(this.sharded ? 'smessage' : 'message', (channel: string, payload: string) => {
      for (const h of this.handlers.get(channel) ?? []) {
        try {
          h(payload);
        } catch (err) {
          this.log.warn({ err: (err as Error).message, channel }, 'pub/sub handler failed');
        }
      }
    });
    // ioredis subscribes again after a reconnect; messages sent meanwhile are gone: the subscribers resync.
    sub.on('ready', () => {
      if (this.readyOnce) this.resync();
      this.readyOnce = true;
    });
    // On a Cluster a lost master drops its shard's subscriptions until the replica takes over (the client subscribes
    // again there); what was published meanwhile is gone.
    if (this.sharded) sub.on('-node', () => this.readyOnce && this.resync());
  }

  private resync(): void {
    for (const r of this.resyncs) r();
  }

  /** Connects a lazy client once (concurrent first uses share the attempt). */
  private connected(client: RedisClient): Promise<void> {
    let p = this.connecting.get(client);
    if (!p) {
      p = client.status === 'wait' ? client.connect() : Promise.resolve();
      p.catch(() => this.connecting.delete(client));
      this.connecting.set(client, p);
    }
    return p;
  }

  private readonly connecting = new Map<RedisClient, Promise<void>>();

  async publish(channel: string, payload: string): Promise<void> {
    // Offline queue on: a publish while the link is down waits for it (bounded by the client's retries).
    await this.connected(this.pub).catch(() => undefined);
    if (this.sharded) await this.pub.spublish(channel, payload);
    else await this.pub.publish(channel, payload);
  }

  async subscribe(channel: string, handler: (payload: string) => void, o?: SubscribeOptions): Promise<() => Promise<void>> {
    await this.connected(this.sub);
    let set = this.handlers.get(channel);
    if (!set) {
      this.handlers.set(channel, (set = new Set()));
      if (this.sharded) await this.sub.ssubscribe(channel);
      else await this.sub.subscribe(channel);
    }
    set.add(handler);
    const resync = o?.onResync ? () => o.onResync!() : null;
    if (resync) this.resyncs.add(resync);
    return async () => {
      set.delete(handler);
      if (resync) this.resyncs.delete(resync);
      if (!set.size && this.handlers.get(channel) === set) {
        this.handlers.delete(channel);
        await (this.sharded ? this.sub.sunsubscribe(channel) : this.sub.unsubscribe(channel)).catch(() => undefined);
      }
    };
  }
}

/**
 * Pub/sub across the daemon's instances, namespaced per module: a module's channel `c` is `<keyPrefix><module>:<c>` on
 * Redis (two instances with one prefix hear each other; another prefix is another deployment), in-process when
 * embedded. The Redis connections come from the one client factory and close with it.
 */
export class PubSubHub {
  private readonly transport: Transport;

  constructor(o: { redis: RedisClientFactory; keyPrefix: string; log: Logger }) {
    const pub = o.redis.create('core', 'publish', true);
    const sub = o.redis.create('core', 'subscribe', true, true);
    this.transport = pub && sub ? new RedisTransport(pub, sub, o.log) : new LocalTransport();
    this.prefix = o.keyPrefix;
  }

  private readonly prefix: string;

  forModule(name: string): ModulePubSub {
    const full = (channel: string) => {
      if (!channel || /\s/.test(channel)) throw new Error(`pub/sub channel ${JSON.stringify(channel)} of module ${name}: a non-empty name without spaces`);
      return `${this.prefix}${name}:${channel}`;
    };
    return {
      publish: async (channel, payload) => this.transport.publish(full(channel), payload),
      subscribe: async (channel, handler, o) => this.transport.subscribe(full(channel), handler, o),
    };
  }
}
