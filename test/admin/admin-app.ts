// The admin API on its own, over a real listener: accounts, keys, a pool of two config-file upstreams ("a", "b") to
// one simulator, a rule "uk" over them, the ledger with the customer outbox, runtime upstreams, and optionally the
// price table. Shared by the admin tests that do not need a whole daemon.
import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import type { Logger } from 'pino';
import { AccountService } from '../../src/accounts/account-service.js';
import { KeyService } from '../../src/accounts/key-service.js';
import { installModuleScopes } from '../../src/accounts/scopes.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { adminRoutes } from '../../src/admin/admin-routes.js';
import { registerGatewayRoutes } from '../../src/channels/sms/gateway-admin-routes.js';
import { registerPricingRoutes } from '../../src/channels/sms/pricing-admin-routes.js';
import { PriceBook } from '../../src/billing/price-book.js';
import { PricingStore } from '../../src/billing/pricing-store.js';
import { createApp } from '../../src/http/app.js';
import { Ledger } from '../../src/ledger/ledger.js';
import { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import { Metrics } from '../../src/metrics.js';
import { CustomerOutbox } from '../../src/receipts/customer-outbox.js';
import { Router } from '../../src/routing/router.js';
import { SecretCipher } from '../../src/security/cipher.js';
import { deriveKey } from '../../src/security/secrets.js';
import { UpstreamPool } from '../../src/smpp/upstream/upstream-pool.js';
import { UpstreamStore } from '../../src/smpp/upstream/upstream-store.js';
import type { Db } from '../../src/store/types.js';
import { upstreamConfig } from '../upstream/upstream-helpers.js';

export async function startAdminApp(t: Test, db: Db, smscPort: number, opts: { log: Logger; onOwed?: () => void; pricing?: boolean }) {
  // Keys carry the products' scopes, which join the catalogue when the modules boot (the daemon does it; here, without one).
  installModuleScopes(CHANNEL_MODULES);
  const accounts = new AccountService(db);
  const keys = new KeyService(db, accounts, deriveKey(randomBytes(32), 'api-secret'), { rotationGraceSeconds: 60, cacheSeconds: 0 });
  const fileUpstreams = [upstreamConfig('a', smscPort), upstreamConfig('b', smscPort)];
  const pool = UpstreamPool.start(fileUpstreams, { drainMs: 100 });
  t.teardown(() => pool.close());
  const router = new Router([{ id: 'uk', match: { prefix: ['44'] }, upstreams: ['a', 'b'] }], { knowsUpstream: (id) => pool.has(id) });
  const ledger = new Ledger(db);
  const outbox = new CustomerOutbox(db);
  ledger.addEffect(outbox.effect);
  t.teardown(() => ledger.close());
  const writer = new LedgerWriter(db);
  t.teardown(() => writer.close());
  const upstreamStore = new UpstreamStore(db, new SecretCipher({ current: { id: 'k1', key: randomBytes(32) } }));
  const prices = new PriceBook();

  const app = await createApp({ log: opts.log, metrics: new Metrics(), bodyLimitBytes: 1 << 20 });
  const token = 'fat_' + randomBytes(16).toString('hex');
  await app.register(adminRoutes, {
    token,
    accounts,
    keys,
    // What the SMS module registers of its own (src/channels/sms/sms-admin-routes.ts), without the whole module.
    moduleRoutes: async (scope) => {
      registerGatewayRoutes(scope, {
        router,
        pool,
        ledger,
        outbox,
        upstreamStore,
        configUpstreamIds: new Set(fileUpstreams.map((u) => u.id)),
        configUpstream: (id) => fileUpstreams.find((u) => u.id === id),
        onOwed: opts.onOwed,
      });
      if (opts.pricing) registerPricingRoutes(scope, { prices, store: new PricingStore(db, prices, opts.log) });
    },
  });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  return { base, token, accounts, keys, fileUpstreams, pool, router, ledger, outbox, writer, upstreamStore, prices };
}
