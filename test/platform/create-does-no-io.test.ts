// The module lifecycle: create() builds objects and does no I/O (no query, no Redis or pub/sub connection, no socket,
// no listener, no timer); start() loads state, opens what listens and starts the workers. Every product is created
// here on a context whose database refuses and records every use and whose Redis clients point at a closed port,
// while an async hook writes down every timer, socket, request or listener made during its create().
import { createHook } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { AccountService } from '../../src/accounts/account-service.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics.js';
import type { ChannelModule } from '../../src/platform/channel-module.js';
import { ModuleHost, type CoreContext } from '../../src/platform/module-host.js';
import { ModulePlatform } from '../../src/platform/module-platform.js';
import { OutboundRegistry } from '../../src/platform/outbound-registry.js';
import { TargetGuard } from '../../src/security/target-guard.js';
import { openBackends } from '../../src/store/backends.js';
import type { Backends, Db } from '../../src/store/types.js';

/** A database that is never reached: every statement, transaction or ping is written down and refused. */
function refusingDb(used: string[]): Db {
  const refuse = (what: string): Promise<never> => {
    used.push(what);
    return Promise.reject(new Error(`the database was used during create(): ${what}`));
  };
  return {
    kind: 'postgres',
    query: (text) => refuse(`query ${text.replace(/\s+/g, ' ').slice(0, 80)}`),
    tx: () => refuse('tx'),
    ping: () => refuse('ping'),
    close: () => refuse('close'),
  };
}

/**
 * Async resources that are not I/O: promises, the microtask and nextTick queues, and a callback on the loop's next
 * turn (nodemailer's pool announces it is idle so); what such a callback does is watched too (create() is followed
 * by one turn of the loop under the hook). A RANDOMBYTESREQUEST is made by crypto.randomUUID() itself when it refills
 * its batch of random bytes (synchronously, every 128th call), so whether a create() that names something with a UUID
 * sees one depends on how many were made before it: random bytes are not I/O.
 */
const NOT_IO = new Set(['PROMISE', 'TickObject', 'Microtask', 'Immediate', 'RANDOMBYTESREQUEST']);

for (const shape of ['embedded', 'redis'] as const) {
  t.test(`create() of every product does no I/O (${shape} context)`, async (t) => {
    const log = createLogger('silent');
    const used: Record<string, string[]> = {};
    const made: Record<string, string[]> = {};
    let creating: string | null = null;
    const hook = createHook({
      init(_id, type) {
        if (creating && !NOT_IO.has(type)) made[creating].push(type);
      },
    });
    const dbUses: string[] = [];
    const db = refusingDb(dbUses);
    const local = await openBackends({ db, redisUrl: null });
    // The Redis shape: modules take their Redis paths (kind 'redis', lazy clients), and any connection shows as a socket.
    const backends: Backends = shape === 'redis' ? Object.create(local, { kind: { value: 'redis' } }) : local;
    const config = loadConfig({ env: { FERRY_DATA_DIR: t.testdir() }, modules: CHANNEL_MODULES }).config;
    const platform = new ModulePlatform({ db, master: randomBytes(32), redisUrl: shape === 'redis' ? 'redis://127.0.0.1:1' : null, keyPrefix: 'ferry:', http: new TargetGuard(false), log });
    // Each product's create() under the hook, its uses of the database attributed to it.
    const watched: ChannelModule[] = CHANNEL_MODULES.map((m) => ({
      ...m,
      async create(ctx) {
        used[m.name] = [];
        made[m.name] = [];
        const before = dbUses.length;
        creating = m.name;
        hook.enable();
        try {
          return await m.create(ctx);
        } catch (err) {
          throw new Error(`${m.name}: ${(err as Error).message}`);
        } finally {
          await new Promise((resolve) => setImmediate(resolve));
          hook.disable();
          creating = null;
          used[m.name].push(...dbUses.slice(before));
        }
      },
    }));
    const host = new ModuleHost(watched);
    const core = {
      outbound: new OutboundRegistry(),
      config,
      rootLog: log,
      metrics: new Metrics(),
      db,
      backends,
      accounts: new AccountService(db),
      roles: host.roles,
      facilities: platform.forModule,
      mcpTools: () => host.mcpTools(),
      warn: () => undefined,
      unwarn: () => undefined,
    } as CoreContext;
    try {
      await host.create(core);
      t.same(Object.keys(used).sort(), CHANNEL_MODULES.map((m) => m.name).sort(), 'every product was created');
      for (const m of host.order) {
        t.same(used[m.name], [], `${m.name}: create() sent nothing to the database`);
        t.same(made[m.name], [], `${m.name}: create() made no timer, socket, listener or request`);
      }
    } finally {
      // A product that opened something anyway is stopped, so the test ends; its stop may use the refusing database.
      for (const step of host.stopSteps()) await step.close().catch(() => undefined);
      await platform.close();
    }
  });
}
