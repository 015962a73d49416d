import type { Logger } from 'pino';
import type { FerryConfig } from '../config/schema.js';
import { privateTargetsAllowed, TargetGuard } from '../security/target-guard.js';
import type { Db } from '../store/types.js';
import { ModulePlatform } from './module-platform.js';

/**
 * The guard's setting: security.allowPrivateTargets, else webhooks.allowPrivateTargets, where it was first documented
 * (read by name from the config, not from the webhooks product), else auto.
 */
function privateTargetsSetting(config: FerryConfig): boolean | 'auto' {
  if (config.security.allowPrivateTargets !== null) return config.security.allowPrivateTargets;
  const historic = (config.webhooks as { allowPrivateTargets?: boolean | 'auto' } | undefined)?.allowPrivateTargets;
  return historic ?? 'auto';
}

/**
 * The daemon's ModulePlatform from its config: Redis from redis.url and redis.keyPrefix, the SSRF guard from
 * webhooks.allowPrivateTargets (decided once, logged once, the same policy for webhooks, USSD apps and media links).
 */
export function buildModulePlatform(o: { config: FerryConfig; db: Db; readDb?: Db; master: Buffer; log: Logger }): ModulePlatform {
  const { config } = o;
  const privateTargets = privateTargetsAllowed(privateTargetsSetting(config), {
    httpHost: config.http.host,
    embeddedDatabase: o.db.kind !== 'postgres',
    trustProxy: Boolean(config.http.trustProxy),
    publicUrl: config.http.publicUrl,
  });
  o.log.info(
    { component: 'guarded-http', allowed: privateTargets.allowed, reason: privateTargets.reason },
    privateTargets.allowed ? 'customer URLs (webhooks, USSD apps, media): private and loopback addresses allowed' : 'customer URLs (webhooks, USSD apps, media): public https only (SSRF guard on)',
  );
  return new ModulePlatform({
    db: o.db,
    readDb: o.readDb,
    master: o.master,
    redisUrl: config.redis.url,
    redisCluster: config.redis.cluster,
    keyPrefix: config.redis.keyPrefix,
    http: new TargetGuard(privateTargets.allowed),
    log: o.log,
  });
}
