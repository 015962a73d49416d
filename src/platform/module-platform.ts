import type { Logger } from 'pino';
import { BalanceHolds, type ModuleHolds } from '../billing/balance-holds.js';
import { CredentialStore, type CredentialView, type ModuleCredentials } from '../security/credential-store.js';
import type { TargetGuard } from '../security/target-guard.js';
import type { Db } from '../store/types.js';
import { EventSinkSlot, type ModuleEvents } from './event-sink.js';
import { moduleKeyDeriver } from './module-keys.js';
import { PubSubHub, type ModulePubSub } from './pubsub.js';
import { RedisClientFactory, type ModuleRedis } from './redis-clients.js';

/** The parts of a module's context that are its own (scoped to it by name); see ModuleContext. */
export interface ModuleFacilities {
  deriveKey(purpose: string): Buffer;
  readonly readDb: Db;
  readonly events: ModuleEvents;
  readonly redis: ModuleRedis;
  readonly pubsub: ModulePubSub;
  readonly http: TargetGuard;
  readonly credentials: ModuleCredentials;
  readonly holds: ModuleHolds;
}

export interface ModulePlatformOptions {
  db: Db;
  /** Reads that tolerate replica lag (database.readUrl, src/store/sql/read-db.ts); `db` itself when unset. */
  readDb?: Db;
  /** The daemon's secret key: it stays here; modules get keys derived from it. */
  master: Buffer;
  redisUrl: string | null;
  /** redis.cluster: redisUrl names seed nodes of a Redis Cluster. */
  redisCluster?: boolean;
  keyPrefix: string;
  /** The one guarded HTTP client policy (SSRF guard) for URLs customers give. */
  http: TargetGuard;
  log: Logger;
}

/**
 * What the core builds once per daemon and hands each module a scoped view of: derived keys, the event sink slot, the
 * Redis client factory, pub/sub, the guarded HTTP policy, the credential store and credit holds. close() (at shutdown, after every
 * module stopped) closes every Redis client made for them.
 */
export class ModulePlatform {
  readonly events: EventSinkSlot;
  readonly redis: RedisClientFactory;
  private readonly pubsub: PubSubHub;

  constructor(private readonly o: ModulePlatformOptions) {
    this.events = new EventSinkSlot(o.log.child({ component: 'events' }));
    this.redis = new RedisClientFactory({ url: o.redisUrl, cluster: o.redisCluster, keyPrefix: o.keyPrefix, log: o.log.child({ component: 'redis' }) });
    this.pubsub = new PubSubHub({ redis: this.redis, keyPrefix: o.keyPrefix, log: o.log.child({ component: 'pubsub' }) });
  }

  /** The facilities of one module, scoped by its name (and its event catalogue). */
  readonly forModule = (module: { name: string; events?: Readonly<Record<string, unknown>> }): ModuleFacilities => {
    const deriveKey = moduleKeyDeriver(this.o.master, module.name);
    return {
      deriveKey,
      readDb: this.o.readDb ?? this.o.db,
      events: this.events.forModule(module),
      redis: this.redis.forModule(module.name),
      pubsub: this.pubsub.forModule(module.name),
      http: this.o.http,
      credentials: new CredentialStore({
        db: this.o.db,
        module: module.name,
        sealKey: deriveKey(`${module.name}-credentials`),
        fingerprintKey: deriveKey(`${module.name}-credential-fingerprint`),
      }),
      holds: new BalanceHolds(module.name),
    };
  };

  /** An account's credentials of every module (or one), as fingerprints: each read with its module's keys. */
  async credentialViews(accountId: string, module?: string): Promise<Array<CredentialView & { module: string }>> {
    const { rows } = await this.o.db.query<{ module: string }>(
      `SELECT DISTINCT module FROM provider_credentials WHERE account_id = $1 AND ($2::text IS NULL OR module = $2) ORDER BY module`,
      [accountId, module ?? null],
    );
    const out: Array<CredentialView & { module: string }> = [];
    for (const { module: name } of rows) {
      for (const v of await this.forModule({ name }).credentials.list(accountId)) out.push({ module: name, ...v });
    }
    return out;
  }

  async close(): Promise<void> {
    await this.redis.close();
  }
}
