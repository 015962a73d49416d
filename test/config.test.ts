import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHANNEL_MODULES } from '../src/channels/index.js';
import { ConfigError, envKeys, loadConfig as load, type LoadOptions } from '../src/config/load.js';
import { buildConfigSchema } from '../src/config/module-sections.js';

/** Loads with the daemon's own module list unless a test gives another. */
const loadConfig = (o: Omit<LoadOptions, 'modules'> & { modules?: LoadOptions['modules'] }) => load({ modules: CHANNEL_MODULES, ...o });

const dir = mkdtempSync(join(tmpdir(), 'ferry-config-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

t.test('defaults on an empty environment', async (t) => {
  const { config, source } = loadConfig({ env: {} });
  t.equal(source, null);
  t.equal(config.http.port, 8080);
  t.equal(config.http.host, '127.0.0.1');
  t.equal(config.smpp.port, 2775);
  t.equal(config.admin.port, 9090);
  t.equal(config.database.url, null);
  t.equal(config.redis.url, null);
  t.match(config.dataDir, /\/data$/);
});

t.test('file, then environment on top', async (t) => {
  const path = file('a.yaml', 'http:\n  port: 8181\nsmpp:\n  port: 2777\nredis:\n  url: redis://127.0.0.1:6379\n');
  const { config } = loadConfig({ path, env: { FERRY_SMPP_PORT: '2888', DATABASE_URL: 'postgres://u@127.0.0.1/db', FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' } });
  t.equal(config.http.port, 8181, 'from the file');
  t.equal(config.smpp.port, 2888, 'environment wins');
  t.equal(config.database.url, 'postgres://u@127.0.0.1/db');
  t.equal(config.redis.url, 'redis://127.0.0.1:6379');
  t.equal((config.webhooks as { allowPrivateTargets: boolean }).allowPrivateTargets, true, 'a module section from the environment');
  const viaEnv = loadConfig({ env: { FERRY_CONFIG: path } });
  t.equal(viaEnv.config.http.port, 8181, 'FERRY_CONFIG names the file');
});

t.test('every bad key is reported at once, with its path', async (t) => {
  const path = file('bad.yaml', 'http:\n  port: "eighty"\n  colour: blue\nlog:\n  level: loud\nsmpp:\n  upstreams:\n    - {id: a, host: h, port: 99999, systemId: x, password: toolongpassword}\n');
  const err = t.throws(() => loadConfig({ path, env: { FERRY_ADMIN_PORT: 'x' } })) as unknown as ConfigError;
  t.type(err, ConfigError);
  const text = err.problems.join('\n');
  t.match(text, /http\.port: must be integer/);
  t.match(text, /http\.colour: unknown key/);
  t.match(text, /log\.level: must be one of/);
  t.match(text, /admin\.port: must be integer/);
  t.match(text, /smpp\.upstreams\.0\.port/);
  t.match(text, /smpp\.upstreams\.0\.password/);
});

t.test('references between keys are checked', async (t) => {
  const path = file('refs.yaml', 'smpp:\n  upstreams:\n    - {id: a, host: h, port: 2775, systemId: x, password: y}\nrouting:\n  rules:\n    - {id: r1, upstreams: [a, b]}\n');
  const err = t.throws(() => loadConfig({ path, env: {} })) as unknown as ConfigError;
  t.match(err.problems.join('\n'), /routing\.rules\.0\.upstreams\.1: unknown upstream b/);
});

t.test('unreadable and unparseable files', async (t) => {
  t.throws(() => loadConfig({ path: join(dir, 'missing.yaml'), env: {} }), /cannot read config file .*ENOENT/);
  t.throws(() => loadConfig({ path: file('broken.yaml', 'http: [\n'), env: {} }), /cannot parse/);
});

t.test('config/ferry.example.yaml is current and loads as the defaults', async (t) => {
  const { exampleConfig } = await import('../scripts/gen-example-config.js');
  const { readFileSync } = await import('node:fs');
  const { packageRoot } = await import('../src/util/paths.js');
  const path = join(packageRoot, 'config/ferry.example.yaml');
  t.equal(readFileSync(path, 'utf8'), exampleConfig(), 'regenerate with npm run config:example');
  const fromExample = loadConfig({ path, env: {} }).config;
  const defaults = loadConfig({ env: {} }).config;
  t.same(fromExample, defaults, 'the example states exactly the defaults');
});

/** A module of this test only, with a small section. */
const pager = { name: 'pager', config: { key: 'pager', schema: { type: 'object', additionalProperties: false, default: {}, properties: { beepMs: { type: 'integer', minimum: 1, default: 250 }, sound: { type: ['string', 'null'], default: null } } } } };

t.test("a module's section: defaults, environment and validation with its path", async (t) => {
  const { config } = loadConfig({ env: { FERRY_PAGER_SOUND: 'chime' }, modules: [pager] });
  t.same(config.pager, { beepMs: 250, sound: 'chime' }, 'defaults filled in, FERRY_PAGER_SOUND applied');
  t.ok(envKeys([pager]).some((e) => e.env === 'FERRY_PAGER_BEEP_MS' && e.path === 'pager.beepMs'), 'its keys have FERRY_* names');
  const err = t.throws(() => loadConfig({ path: file('pager.yaml', 'pager:\n  beepMs: 0\n  volume: 11\n'), env: {}, modules: [pager] })) as unknown as ConfigError;
  t.type(err, ConfigError);
  t.match(err.problems.join('\n'), /pager\.beepMs: must be >= 1/);
  t.match(err.problems.join('\n'), /pager\.volume: unknown key/);
});

t.test("the environment overrides a product module's key (FERRY_EMAIL_…)", async (t) => {
  const { config } = loadConfig({ env: { FERRY_EMAIL_SMTP_URL: 'smtp://relay.example:25', FERRY_EMAIL_INBOUND_PORT: '2626' } });
  const email = config.email as { smtp: { url: string | null }; inbound: { port: number } };
  t.equal(email.smtp.url, 'smtp://relay.example:25');
  t.equal(email.inbound.port, 2626, 'coerced to a number');
  t.equal((loadConfig({ env: {} }).config.email as typeof email).smtp.url, null, 'the default without it');
});

t.test('a section of a module not in the list is an unknown key, with its path', async (t) => {
  const path = file('stray.yaml', 'http:\n  port: 8181\nemail:\n  smtp:\n    url: smtp://relay.example:25\n');
  t.equal(loadConfig({ path, env: {} }).config.http.port, 8181, 'accepted while the email module is in the list');
  const err = t.throws(() => loadConfig({ path, env: {}, modules: CHANNEL_MODULES.filter((m) => m.name !== 'email') })) as unknown as ConfigError;
  t.type(err, ConfigError);
  t.same(err.problems, ['email: unknown key']);
  t.notOk(envKeys([]).some((e) => e.env.startsWith('FERRY_EMAIL_')), 'nor has it FERRY_* names');
});

t.test('two modules declaring one section, or a core section, stop the boot naming them', async (t) => {
  const twin = { name: 'beeper', config: { key: 'pager', schema: { type: 'object', default: {} } } };
  t.throws(() => loadConfig({ env: {}, modules: [pager, twin] }), /the config section pager is declared by two modules: pager and beeper/);
  t.throws(() => buildConfigSchema([{ name: 'rogue', config: { key: 'http', schema: { type: 'object' } } }]), /module rogue declares the config section http, which is a section of the core/);
});

t.test('the core schema names no product section', async (t) => {
  const core = Object.keys(buildConfigSchema([]).properties);
  for (const m of CHANNEL_MODULES) if (m.config) t.notOk(core.includes(m.config.key), `${m.config.key} comes from its module`);
  t.notOk(core.includes('mcp'), 'mcp is a module too (src/channels/mcp)');
});
