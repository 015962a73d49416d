import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config/load.js';

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
  t.equal(config.webhooks.allowPrivateTargets, true);
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
