// A product's CLI commands, simulator commands and admin routes come from its module (issue 43): a fixture module
// gets `ferry echo ping`, `ferry sim echo-sim reset` and its admin routes with no core edit; a route outside its
// admin paths fails the boot.
import { randomBytes } from 'node:crypto';
import { Command } from 'commander';
import t from 'tap';
import { adminRoutes } from '../../src/admin/admin-routes.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { CLI_CONTEXT, type CliContext } from '../../src/cli/cli-context.js';
import { addModuleCommands } from '../../src/cli/module-commands.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics.js';
import { adminPathsOf, checkAdminPath } from '../../src/platform/admin-paths.js';
import { ModuleHost } from '../../src/platform/module-host.js';
import { echoModule } from './fixtures/echo-module.js';

const log = createLogger('silent');

async function adminApp(host: ModuleHost, token: string) {
  const app = await createApp({ log, metrics: new Metrics(), bodyLimitBytes: 1 << 20 });
  await app.register(adminRoutes, { token, accounts: {} as never, keys: {} as never, moduleRoutes: (scope) => host.adminRoutes(scope) });
  return app;
}

/** The program as `ferry` builds it (core commands left out), with print captured. */
function program(printed: unknown[]): Command {
  const ctx: CliContext = { ...CLI_CONTEXT, print: (v) => void printed.push(v) };
  const p = new Command('ferry').option('-c, --config <path>').exitOverride();
  addModuleCommands(p, [...CHANNEL_MODULES, echoModule()], ctx);
  return p;
}

t.test('a module brings its CLI command, its simulator command and its admin routes', async (t) => {
  const host = new ModuleHost([echoModule()]);
  await host.create({ rootLog: log, facilities: () => ({}) } as never);
  const token = 'fat_' + randomBytes(16).toString('hex');
  const app = await adminApp(host, token);
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());

  const unauthorised = await fetch(`${base}/admin/echo/ping`);
  t.equal(unauthorised.status, 401, 'behind the admin token');
  const historic = await fetch(`${base}/admin/echoes/old`, { headers: { authorization: `Bearer ${token}` } });
  t.same(((await historic.json()) as { data: unknown }).data, { historic: true }, 'a declared historic path is mounted');

  const env = { url: process.env.FERRY_ADMIN_URL, token: process.env.FERRY_ADMIN_TOKEN };
  process.env.FERRY_ADMIN_URL = base;
  process.env.FERRY_ADMIN_TOKEN = token;
  t.teardown(() => {
    for (const [k, v] of [['FERRY_ADMIN_URL', env.url], ['FERRY_ADMIN_TOKEN', env.token]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  const printed: unknown[] = [];
  await program(printed).parseAsync(['echo', 'ping'], { from: 'user' });
  await program(printed).parseAsync(['echo', 'ping', '--json'], { from: 'user' });
  await program(printed).parseAsync(['sim', 'echo-sim', 'reset'], { from: 'user' });
  t.same(printed, [{ pings: 1 }, { pings: 2 }, { pings: 0 }], '`ferry echo ping` and `ferry sim echo-sim reset` reached its admin routes');

  const sim = program([]).commands.find((c) => c.name() === 'sim');
  t.ok(sim?.commands.some((c) => c.name() === 'echo-sim' && c.description() === 'echo simulator'), 'ferry sim echo-sim, with its description');
  t.ok(
    ['run', 'messages', 'behaviour', 'messenger', 'mail', 'ussd'].every((n) => sim?.commands.some((c) => c.name() === n)),
    'the real products’ simulators are there too',
  );
});

t.test('an admin route outside the module’s paths fails the boot', async (t) => {
  t.same(adminPathsOf(echoModule()), ['/admin/echo', '/admin/sim/echo-sim', '/admin/echoes/old']);
  for (const outside of ['/admin/accounts/:ref/echo', '/admin/echo2', '/admin/sim/echo', '/admin/echoes', '/v1/echo']) {
    const host = new ModuleHost([echoModule({ extraAdminRoute: outside })]);
    await host.create({ rootLog: log, facilities: () => ({}) } as never);
    await t.rejects(adminApp(host, 'x'), { message: `module echo registers the admin route ${outside} outside its paths (/admin/echo, /admin/sim/echo-sim, /admin/echoes/old)` }, outside);
  }
  t.doesNotThrow(() => checkAdminPath(echoModule(), '/admin/echo'));
  t.doesNotThrow(() => checkAdminPath(echoModule(), '/admin/echoes/old/:id'));
  t.throws(() => checkAdminPath({ name: 'sms', historicAdminPaths: ['/admin/routes'] }, '/admin/routesx'), /outside its paths/);
});
