// The module shape: boot order from dependsOn, stop in reverse, routes mounted, migrations applied, scopes checked,
// and a product added to a running daemon by one more entry in its module list.
import { join } from 'node:path';
import t from 'tap';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { loadConfig } from '../../src/config/load.js';
import { Daemon } from '../../src/daemon.js';
import { createLogger } from '../../src/log.js';
import type { ChannelModule } from '../../src/platform/channel-module.js';
import { ModuleHost } from '../../src/platform/module-host.js';
import { bootOrder } from '../../src/platform/module-order.js';
import { loadMigrations } from '../../src/store/sql/migrate.js';
import { packageRoot } from '../../src/util/paths.js';
import { accountWithKey, call, testEnv } from '../helpers/daemon.js';
import { StateMachine } from '../../src/outbound/state-machine.js';
import { FailOnDemandProvider } from '../outbound/fail-on-demand-provider.js';
import { HttpTestAdapter, type TestPayload } from '../outbound/http-test-adapter.js';

const mod = (name: string, dependsOn: string[] = []) => ({ name, dependsOn });

t.test('boot order follows dependsOn, keeps list order otherwise, and refuses what cannot boot', async (t) => {
  t.same(
    bootOrder([mod('otp', ['sms', 'webhooks']), mod('sms'), mod('webhooks'), mod('email', ['webhooks'])]).map((m) => m.name),
    ['sms', 'webhooks', 'otp', 'email'],
  );
  t.same(bootOrder(CHANNEL_MODULES).map((m) => m.name), ['sms', 'webhooks', 'otp', 'messenger', 'email', 'ussd', 'shortlink', 'push', 'chat', 'voice', 'logs', 'mcp'], 'the daemon’s own list');
  t.throws(() => bootOrder([mod('a', ['b']), mod('b', ['a'])]), /cycle: a -> b -> a/);
  t.throws(() => bootOrder([mod('a', ['nope'])]), /a depends on nope, which is not in the list/);
  t.throws(() => bootOrder([mod('a'), mod('a')]), /listed twice/);
});

t.test('a module declares scopes only in its namespace and uses only what it depends on', async (t) => {
  const base = { maturity: 'beta' as const, tag: { name: 'x', description: 'x' }, create: async () => ({ service: null }) };
  t.throws(() => new ModuleHost([{ ...base, name: 'x', scopes: { 'y:do': 'do y things' } }]), /module x declares the scope y:do outside its namespace \(x:…\)/);
  const host = new ModuleHost([
    { ...base, name: 'a', create: async () => ({ service: 'a-service' }) },
    { ...base, name: 'b', create: async (ctx) => ({ service: ctx.use<string>('a') }) },
  ]);
  const log = createLogger('silent');
  await t.rejects(host.create({ rootLog: log, facilities: () => ({}) } as never), /module b uses a without declaring it in dependsOn/);
});

t.test('migration versions are one sequence across folders; a duplicate is refused', async (t) => {
  const extra = join(packageRoot, 'test/platform/fixtures/echo-migrations');
  const all = loadMigrations([extra]);
  t.equal(all.at(-1)?.version, 9001);
  t.throws(() => loadMigrations([extra, extra]), /migration version 9001 is used twice/);
});

const ECHO = new StateMachine({
  product: 'echo',
  initial: 'queued',
  sent: 'sent',
  failed: 'failed',
  states: { queued: { rank: 0 }, sent: { rank: 1, event: 'sent' }, failed: { rank: 9, final: true, event: 'failed' } },
});

t.test('a product added by one entry in the list: booted after its dependency, routes mounted, migration applied, its provider reached through the outbound pipeline, stopped first', async (t) => {
  const provider = await FailOnDemandProvider.start();
  t.teardown(() => provider.close());
  const adapter = new HttpTestAdapter('echo-http', provider.url);
  t.teardown(() => adapter.close());
  const events: string[] = [];
  const echo: ChannelModule<{ notes: number }> = {
    name: 'echo',
    maturity: 'beta',
    tag: { name: 'echo', description: 'a test product' },
    scopes: { 'echo:write': 'write echo notes (a test product)' },
    migrations: join(packageRoot, 'test/platform/fixtures/echo-migrations'),
    events: { 'echo.sent': 'the echo reached its provider', 'echo.failed': 'the echo failed' },
    dependsOn: ['sms'],
    async create(ctx) {
      events.push(`create (sms gateway ${ctx.use<{ gateway: unknown }>('sms').gateway ? 'ready' : 'missing'})`);
      ctx.outbound.product('echo', { machine: ECHO, deadlineMs: 60_000 });
      ctx.outbound.provider({ adapter, maxConcurrency: 4 });
      const service = { notes: 0 };
      return {
        service,
        async routes(app) {
          app.post<{ Body: { id: string; body: string } }>('/v1/echo/notes', { schema: { tags: ['echo'] }, config: { scope: 'echo:write' as never } }, async (req) => {
            // Accepted means durable: the product's row and its outbound job in one transaction, pushed after commit.
            await ctx.outbound.pipeline.submit([{ product: 'echo', provider: 'echo-http', accountId: req.auth.accountId, messageId: req.body.id, payload: { to: '233241234567', body: req.body.body } satisfies TestPayload }], async (q) => {
              await q.query('INSERT INTO echo_notes (id, body) VALUES ($1, $2)', [req.body.id, req.body.body]);
            });
            service.notes++;
            return { success: true, code: 'ECHOED', message: 'OK', data: { id: req.body.id, account: req.auth.accountId }, requestId: req.id };
          });
        },
        async start() {
          events.push('start');
        },
        async stop() {
          events.push('stop');
        },
      };
    },
  };
  // The real modules, each recording when it stops.
  const recorded = CHANNEL_MODULES.map(
    (m): ChannelModule => ({
      ...m,
      async create(ctx) {
        const instance = await m.create(ctx);
        return { ...instance, stop: async () => (events.push(`${m.name} stop`), instance.stop?.()) };
      },
    }),
  );
  const { env, store } = await testEnv();
  const daemon = await Daemon.start(loadConfig({ env, modules: CHANNEL_MODULES }).config, createLogger('silent'), [...recorded, echo]);
  t.teardown(() => store.cleanup());
  t.same(daemon.modules.order.map((m) => m.name), ['sms', 'webhooks', 'otp', 'messenger', 'email', 'ussd', 'shortlink', 'push', 'chat', 'voice', 'logs', 'mcp', 'echo']);
  const d = { adminCall: async (method: string, path: string, body?: unknown) => (await call(daemon.addresses.admin, method, path, { body, headers: { authorization: `Bearer ${(await import('node:fs')).readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim()}` } })).json.data };
  // Its scope joined the catalogue at boot: a key can be made with it, and the route requires it.
  const { token, account } = await accountWithKey(d as never, 'echo-user', ['echo:write']);
  const other = await accountWithKey(d as never, 'echo-other', ['account:read']);
  t.equal((await call(daemon.addresses.http, 'POST', '/v1/echo/notes', { token: other.token, body: { id: 'n0', body: 'x' } })).json.code, 'INSUFFICIENT_SCOPE');
  const r = await call(daemon.addresses.http, 'POST', '/v1/echo/notes', { token, body: { id: 'n1', body: 'hello' } });
  t.equal(r.status, 200);
  t.same(r.json.data, { id: 'n1', account: account.id }, 'behind the same authentication');
  t.equal((await call(daemon.addresses.http, 'POST', '/v1/echo/notes', { body: { id: 'n2', body: 'x' } })).json.code, 'AUTH_HEADER_MISSING');
  const { rows } = await daemon.db.query<{ body: string }>('SELECT body FROM echo_notes');
  t.same(rows, [{ body: 'hello' }], 'its own migration ran');
  t.equal(daemon.modules.service<{ notes: number }>('echo').notes, 1);
  const until = Date.now() + 15_000;
  while (!provider.requests.length && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
  t.equal(provider.requests.length, 1, 'the provider got the echo through the pipeline');
  t.match(provider.requests[0], { to: '233241234567', body: 'hello' });
  const admin = await accountWithKey(d as never, 'echo-admin', 'all');
  const types = (await call(daemon.addresses.http, 'GET', '/v1/webhooks/event-types', { token: admin.token })).json.data;
  t.ok(JSON.stringify(types).includes('"echo.sent"'), 'its events join the one catalogue');
  await daemon.stop();
  t.same(events, ['create (sms gateway ready)', 'start', 'stop', 'mcp stop', 'logs stop', 'voice stop', 'chat stop', 'push stop', 'shortlink stop', 'ussd stop', 'email stop', 'messenger stop', 'otp stop', 'webhooks stop', 'sms stop'], 'created after sms; stopped first, in reverse boot order');
});
