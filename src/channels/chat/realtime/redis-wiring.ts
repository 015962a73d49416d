import type { RedisClient } from '../../../platform/redis-clients.js';

/** Methods of an ioredis client the Socket.IO adapter calls without handling their promise. */
const UNHANDLED_BY_ADAPTER = new Set(['publish', 'subscribe', 'psubscribe', 'unsubscribe', 'punsubscribe', 'spublish', 'ssubscribe', 'sunsubscribe']);

/**
 * The client as the Redis adapter gets it: the adapter fires publish/subscribe calls and drops their promises, and
 * the daemon's clients fail fast while Redis is down, so a rejection would be unhandled (and end the process). Here
 * each is caught and reported instead; an event lost while Redis is down is what the clients' resync by seq is for.
 */
export function adapterSafe<C extends RedisClient>(client: C, onError: (err: Error) => void): C {
  return new Proxy(client, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function' || prop === 'constructor') return v;
      const fn = v as (...args: unknown[]) => unknown;
      if (typeof prop === 'string' && UNHANDLED_BY_ADAPTER.has(prop)) {
        return (...args: unknown[]) => {
          const r = fn.apply(target, args) as Promise<unknown> | undefined;
          if (typeof r?.catch === 'function') r.catch(onError);
          return r;
        };
      }
      return fn.bind(target);
    },
  });
}

/**
 * The pub/sub channel on which a process without the realtime role hands its events to those with it (each emits to
 * its own sockets). Under the module's part of the daemon's prefix, like ctx.pubsub's channels.
 */
export const forwardChannel = (keyPrefix: string) => `${keyPrefix}chat:rt-forward`;

/** The Redis adapter's key: its channels are `<key>#/chat-sdk#…` (on a Cluster, the sharded adapter's channel prefix). */
export const adapterKey = (keyPrefix: string) => `${keyPrefix}chat:sio`;
