// The host hands each module the platform's facilities scoped to it: its own key purposes, its own pub/sub channels,
// its own event types, the one guarded HTTP policy, the one Redis factory (null when embedded); no master key.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import type { ChannelModule, ModuleContext } from '../../src/platform/channel-module.js';
import { ModuleHost, type CoreContext } from '../../src/platform/module-host.js';
import { ModulePlatform } from '../../src/platform/module-platform.js';
import { TargetGuard } from '../../src/security/target-guard.js';
import { deriveKey } from '../../src/security/secrets.js';
import type { Db } from '../../src/store/types.js';

t.test('each module gets the facilities scoped to it', async (t) => {
  const log = createLogger('silent');
  const master = randomBytes(32);
  const http = new TargetGuard(false);
  const platform = new ModulePlatform({ db: {} as Db, master, redisUrl: null, keyPrefix: 'ferry:', http, log });
  const seen: Record<string, ModuleContext> = {};
  const mod = (name: string, events?: Record<string, string>): ChannelModule => ({
    name,
    maturity: 'beta',
    tag: { name, description: name },
    scopes: {},
    events,
    async create(ctx) {
      seen[name] = ctx;
      return { service: null };
    },
  });
  const host = new ModuleHost([mod('alpha', { 'alpha.done': 'done' }), mod('beta')]);
  await host.create({ rootLog: log, facilities: platform.forModule } as unknown as CoreContext);
  const { alpha, beta } = seen;
  t.notOk('masterKey' in alpha, 'no master key in the context');
  t.same(alpha.deriveKey('alpha-cookie'), deriveKey(master, 'alpha-cookie'));
  t.throws(() => beta.deriveKey('alpha-cookie'), /module beta may not derive the key "alpha-cookie"/);
  t.equal(alpha.http, beta.http, 'one guarded HTTP policy');
  t.equal(alpha.http, http);
  t.equal(alpha.redis.client('x'), null, 'embedded: no Redis client');
  const heard: string[] = [];
  await beta.pubsub.subscribe('news', (m) => heard.push(m));
  await alpha.pubsub.publish('news', 'from alpha');
  await beta.pubsub.publish('news', 'from beta');
  t.same(heard, ['from beta'], "alpha's channel is not beta's");
  await t.rejects(beta.events.emitNow({ accountId: 'a', type: 'alpha.done' as never, data: {} }), /module beta emits event type "alpha.done"/);
  await alpha.events.emitNow({ accountId: 'a', type: 'alpha.done' as never, data: {} });
  await platform.close();
});
