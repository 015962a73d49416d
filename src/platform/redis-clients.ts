import type { Logger } from 'pino';
import { newRedisClient, type RedisClient } from '../store/redis/redis-client.js';

/** A module's Redis client: a single Redis or a Cluster (redis.cluster), with the same commands. */
export type { RedisClient };

/** What every module gets as `ctx.redis`. */
export interface ModuleRedis {
  /** False on an embedded daemon (no redis.url): client() and subscriber() answer null, use the SQL/in-process path. */
  readonly configured: boolean;
  /** The daemon's key prefix (redis.keyPrefix, e.g. `ferry:`); a module adds its own name after it. */
  readonly keyPrefix: string;
  /**
   * A lazy client (the module connects it, usually in start()), named `ferry:<module>:<purpose>`, closed by the core at
   * shutdown. Commands sent while disconnected fail at once unless offlineQueue (as the core's own clients do).
   */
  client(purpose: string, o?: { offlineQueue?: boolean }): RedisClient | null;
  /**
   * A client for SUBSCRIBE (subscriptions wait for the connection and are renewed on reconnect). On a Cluster it holds
   * one connection per master for SSUBSCRIBE: a module there uses sharded pub/sub (`ssubscribe`, `spublish`).
   */
  subscriber(purpose: string): RedisClient | null;
  /** Whether the clients are Cluster clients (redis.cluster). */
  readonly cluster: boolean;
}

/**
 * The daemon's one Redis client factory: one option set (src/store/redis/redis-client.ts), redis.url and keyPrefix from
 * the config, a connection name per module and purpose, errors logged at debug (ioredis reconnects by itself), every
 * client closed at shutdown. With redis.cluster every client is an ioredis Cluster on the same seed nodes.
 */
export class RedisClientFactory {
  private readonly clients: RedisClient[] = [];

  constructor(private readonly o: { url: string | null; cluster?: boolean; keyPrefix: string; log: Logger }) {}

  get cluster(): boolean {
    return this.o.url !== null && this.o.cluster === true;
  }

  get configured(): boolean {
    return this.o.url !== null;
  }

  /** A named client of the core or of a module; null without Redis. */
  create(owner: string, purpose: string, offlineQueue = false, shardedSubscriber = false): RedisClient | null {
    if (!this.o.url) return null;
    const connectionName = `ferry:${owner}:${purpose}`;
    const client = newRedisClient({ url: this.o.url, cluster: this.cluster }, { connectionName, offlineQueue, shardedSubscriber });
    client.on('error', (err: Error) => this.o.log.debug({ err: err.message, connection: connectionName }, 'Redis connection error'));
    this.clients.push(client);
    return client;
  }

  forModule(name: string): ModuleRedis {
    return {
      configured: this.configured,
      cluster: this.cluster,
      keyPrefix: this.o.keyPrefix,
      client: (purpose, o) => this.create(name, purpose, o?.offlineQueue ?? false),
      subscriber: (purpose) => this.create(name, purpose, true, true),
    };
  }

  /** Closes every client made here (QUIT, or a hard disconnect when that fails). */
  async close(): Promise<void> {
    const all = this.clients.splice(0);
    await Promise.all(
      all.map(async (c) => {
        if (c.status === 'end') return;
        const ended = new Promise<void>((resolve) => c.once('end', () => resolve()));
        if (c.status === 'wait') c.disconnect();
        else await c.quit().catch(() => c.disconnect());
        // Resolved when the connection is gone (QUIT answered and the socket closed), so nothing outlives shutdown.
        await ended;
      }),
    );
  }
}
