// A module's API routes are under /v1/<name> (issue 43), as its admin routes are under /admin/<name>: a route elsewhere
// fails the boot, naming the module; a historic product keeps the URLs it had through historicApiPaths.
import t from 'tap';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics.js';
import type { ChannelModule } from '../../src/platform/channel-module.js';
import { ModuleHost } from '../../src/platform/module-host.js';
import { apiPathsOf, checkApiPath } from '../../src/platform/route-paths.js';

const log = createLogger('silent');

function moduleWithRoutes(urls: string[], historicApiPaths?: string[]): ChannelModule<null> {
  return {
    name: 'notes',
    maturity: 'alpha',
    tag: { name: 'notes', description: 'a test product' },
    scopes: {},
    historicApiPaths,
    async create() {
      return {
        service: null,
        async routes(app) {
          for (const url of urls) app.get(url, async () => ({ url }));
        },
      };
    },
  };
}

async function mount(m: ChannelModule) {
  const host = new ModuleHost([m]);
  await host.create({ rootLog: log, facilities: () => ({}) } as never);
  const app = await createApp({ log, metrics: new Metrics(), bodyLimitBytes: 1 << 20 });
  await host.routes(app);
  await app.ready();
  return app;
}

t.test('routes under /v1/<name> mount and answer', async (t) => {
  const app = await mount(moduleWithRoutes(['/v1/notes', '/v1/notes/:id']));
  t.teardown(() => app.close());
  t.equal((await app.inject({ method: 'GET', url: '/v1/notes/7' })).json().url, '/v1/notes/:id');
});

t.test('a route outside /v1/<name> fails the boot, naming the module and the route', async (t) => {
  for (const outside of ['/v1/other', '/v1/notesx', '/v1', '/notes', '/v2/notes', '/v1/sms/send']) {
    await t.rejects(mount(moduleWithRoutes(['/v1/notes/ok', outside])), { message: `module notes registers the API route ${outside} outside its paths (/v1/notes)` }, outside);
  }
});

t.test('a historic path (and what is under it) is allowed; its neighbours are not', async (t) => {
  const app = await mount(moduleWithRoutes(['/old', '/old/:id', '/v1/notes/a'], ['/old']));
  t.teardown(() => app.close());
  t.equal((await app.inject({ method: 'GET', url: '/old/1' })).statusCode, 200);
  t.same(apiPathsOf({ name: 'notes', historicApiPaths: ['/old'] }), ['/v1/notes', '/old']);
  t.throws(() => checkApiPath({ name: 'notes', historicApiPaths: ['/old'] }, '/older'), /outside its paths/);
});

t.test('the products: only the logs page and the MCP server keep historic API paths', async (t) => {
  const historic = Object.fromEntries(CHANNEL_MODULES.filter((m) => m.historicApiPaths?.length).map((m) => [m.name, m.historicApiPaths]));
  t.same(historic, { logs: ['/logs', '/v1/keys/stats'], mcp: ['/mcp'] });
});
