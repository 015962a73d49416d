import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { RedisClient } from '../../../platform/redis-clients.js';
import { assetPath } from '../../../util/paths.js';

/** Where a browser dialer identity is registered: the instance holding its WebSocket, and that instance's SIP address. */
export interface DialerLocation {
  instanceId: string;
  host: string;
  port: number;
}

/**
 * The keys of the dialer's presence, built here only. Each key is its own Cluster hash tag (`{…}`): every script and
 * transaction touches one key. The account id is length-prefixed so ("a:b", "c") and ("a", "b:c") never share a key.
 */
export function dialerPresenceKeys(prefix: string) {
  return {
    /** Hash {instance, host, port} of the identity's latest registration, expiring with it. */
    identity: (accountId: string, identity: string) => `${prefix}voice:dialer:{${accountId.length}:${accountId}:${identity}}`,
    /** Present while the instance runs (renewed by voice.dialer-presence): a crashed instance's identities go dead. */
    instance: (instanceId: string) => `${prefix}voice:sip-instance:{${instanceId}}`,
  };
}

/** How long an instance counts as running after its last heartbeat (the job renews it every INSTANCE_HEARTBEAT_MS). */
export const INSTANCE_LIVE_MS = 30_000;
export const INSTANCE_HEARTBEAT_MS = 10_000;

const RELEASE = readFileSync(assetPath('channels', 'voice', 'lua', 'dialer-presence-release.lua'), 'utf8');

type ScriptedClient = RedisClient & { voiceDialerRelease(key: string, instanceId: string, keepMs: number): Promise<number> };

/**
 * The browser dialer's presence across instances (Redis): which instance a browser signed in as an identity of an
 * account registered with, so that a call for it reaching another instance is redirected there (302). The latest
 * registration wins, as it does within one instance. Without Redis there is one instance and no presence at all.
 * Redis failures are logged and never fail a registration; a lookup that fails finds nobody (the caller hears 480).
 */
export class DialerPresence {
  private readonly redis: ScriptedClient;
  private readonly keys: ReturnType<typeof dialerPresenceKeys>;

  constructor(
    private readonly o: {
      /** From ctx.redis (fails fast while Redis is down). */
      redis: RedisClient;
      keyPrefix: string;
      instanceId: string;
      /** This instance's SIP address, where a redirected INVITE is sent. */
      sip: () => { host: string; port: number };
      log: Logger;
    },
  ) {
    o.redis.defineCommand('voiceDialerRelease', { lua: RELEASE, numberOfKeys: 1 });
    this.redis = o.redis as ScriptedClient;
    this.keys = dialerPresenceKeys(o.keyPrefix);
  }

  get instanceId(): string {
    return this.o.instanceId;
  }

  async connect(): Promise<void> {
    if (this.redis.status === 'wait') await this.redis.connect();
    await this.heartbeat();
  }

  /** Marks this instance as running for INSTANCE_LIVE_MS. */
  async heartbeat(): Promise<void> {
    await this.redis.set(this.keys.instance(this.o.instanceId), '1', 'PX', INSTANCE_LIVE_MS);
  }

  /** A browser registered (or refreshed its registration) here for `ttlMs`: the identity is here, overriding any other. */
  async claim(accountId: string, identity: string, ttlMs: number): Promise<void> {
    const key = this.keys.identity(accountId, identity);
    const { host, port } = this.o.sip();
    try {
      await this.redis.multi().hset(key, 'instance', this.o.instanceId, 'host', host, 'port', String(port)).pexpire(key, Math.max(1, Math.ceil(ttlMs))).exec();
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message, identity }, 'voice: the dialer presence could not be written (calls through other instances will not find this browser)');
    }
  }

  /**
   * This instance's browsers under the identity changed: with none left (`keepMs` 0) the presence is deleted, else kept
   * for the one that remains; either only while it still names this instance (a newer registration elsewhere stays).
   */
  async release(accountId: string, identity: string, keepMs = 0): Promise<void> {
    try {
      await this.redis.voiceDialerRelease(this.keys.identity(accountId, identity), this.o.instanceId, Math.max(0, Math.ceil(keepMs)));
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message, identity }, 'voice: the dialer presence could not be released (it lapses with the registration)');
    }
  }

  /** Where another running instance holds a registration of the identity; null when none does (or only this one). */
  async find(accountId: string, identity: string): Promise<DialerLocation | null> {
    try {
      const found = await this.redis.hgetall(this.keys.identity(accountId, identity));
      const port = Number(found.port);
      if (!found.instance || !found.host || !Number.isInteger(port) || port <= 0 || found.instance === this.o.instanceId) return null;
      if (!(await this.redis.exists(this.keys.instance(found.instance)))) return null;
      return { instanceId: found.instance, host: found.host, port };
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message, identity }, 'voice: the dialer presence could not be read');
      return null;
    }
  }

  /** Graceful stop: this instance's identities and its heartbeat go at once, not at their expiry. */
  async stop(held: ReadonlyArray<{ accountId: string; identity: string }>): Promise<void> {
    await Promise.all(held.map((h) => this.release(h.accountId, h.identity)));
    await this.redis.del(this.keys.instance(this.o.instanceId)).catch(() => undefined);
  }
}
