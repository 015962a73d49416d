// The host runs a module's parts in their roles: start/stop in the module's roles, routes in api, listeners in
// theirs (opened after start, closed before stop, reported by name), jobs in theirs (default workers).
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import pino from 'pino';
import type { ChannelModule, ModuleListener } from '../../src/platform/channel-module.js';
import { ModuleHost, type CoreContext } from '../../src/platform/module-host.js';
import { parseRoles } from '../../src/platform/roles.js';

function tcpListener(name: string, role: ModuleListener['role'], events: string[], port = 0): ModuleListener {
  let server: Server | null = null;
  return {
    name,
    kind: 'tcp',
    role,
    host: '127.0.0.1',
    port,
    open: async () => {
      server = createServer();
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(port, '127.0.0.1', resolve);
      });
      events.push(`open ${name}`);
      return `127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    close: async () => {
      events.push(`close ${name}`);
      await new Promise<void>((r) => server!.close(() => r()));
    },
  };
}

function testModule(events: string[], roles?: ChannelModule['roles'], port = 0): ChannelModule {
  return {
    name: 'probe',
    maturity: 'alpha',
    tag: { name: 'probe', description: 'probe' },
    scopes: {},
    roles,
    async create() {
      return {
        service: null,
        routes: async () => void events.push('routes'),
        start: async () => void events.push('start'),
        stop: async () => void events.push('stop'),
        listeners: [tcpListener('front', 'api', events, port), tcpListener('binds', 'smpp', events)],
        jobs: [
          { name: 'probe.cluster', everyMs: 1000, scope: 'cluster', run: async () => 0 },
          { name: 'probe.edge', everyMs: 1000, scope: 'instance', roles: ['api', 'smpp'], run: async () => 0 },
        ],
      };
    },
  };
}

async function run(roles: string, module: ChannelModule) {
  const host = new ModuleHost([module]);
  host.roles = parseRoles(roles);
  await host.create({ rootLog: pino({ level: 'silent' }), roles: host.roles, facilities: () => ({}) } as unknown as CoreContext);
  await host.start();
  // Enough of an app for the host to mount a module's routes in a scope of its own.
  const scope = { addHook: () => undefined };
  await host.routes({ register: async (plugin: (s: typeof scope) => Promise<void>) => plugin(scope) } as never);
  return host;
}

t.test('every role: every part runs, listeners reported by name and closed before stop', async (t) => {
  const events: string[] = [];
  const host = await run('all', testModule(events));
  t.same(events, ['start', 'open front', 'open binds', 'routes']);
  t.match(host.listenerAddresses, { front: /^127\.0\.0\.1:\d+$/, binds: /^127\.0\.0\.1:\d+$/ });
  t.same(host.jobs().map((j) => j.name), ['probe.cluster', 'probe.edge']);
  t.match(host.listeners(), [{ module: 'probe', name: 'front', kind: 'tcp', role: 'api', address: /:\d+$/ }, { name: 'binds', role: 'smpp' }]);
  for (const step of host.stopSteps()) await step.close();
  t.same(events.slice(4), ['close binds', 'close front', 'stop'], 'listeners close (in reverse) before the module stops');
  t.same(host.listenerAddresses, {});
});

t.test('workers only: no routes, no api or smpp listener, the workers jobs', async (t) => {
  const events: string[] = [];
  const host = await run('workers', testModule(events));
  t.same(events, ['start']);
  t.same(host.listenerAddresses, {});
  t.same(host.jobs().map((j) => j.name), ['probe.cluster']);
  t.match(host.listeners(), [{ name: 'front', address: null }, { name: 'binds', address: null }], 'declared listeners are listed, not open');
  for (const step of host.stopSteps()) await step.close();
  t.same(events, ['start', 'stop']);
});

t.test("a module's roles bound its start and stop; its listeners follow their own role", async (t) => {
  const events: string[] = [];
  const host = await run('api', testModule(events, ['workers']));
  t.same(events, ['open front', 'routes'], 'not started outside its roles');
  t.same(host.jobs().map((j) => j.name), ['probe.edge']);
  for (const step of host.stopSteps()) await step.close();
  t.same(events, ['open front', 'routes', 'close front'], 'nor stopped');
});

t.test('a listener whose port is taken fails the start with one line naming it', async (t) => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => taken.close(() => r())));
  const port = (taken.address() as AddressInfo).port;
  const host = new ModuleHost([testModule([], undefined, port)]);
  await host.create({ rootLog: pino({ level: 'silent' }), roles: host.roles, facilities: () => ({}) } as unknown as CoreContext);
  await t.rejects(host.start(), { message: `front listener: 127.0.0.1:${port} is already in use` });
});
