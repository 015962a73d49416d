// The README's quick start, run as written: every ```sh block between the quickstart markers, in order, in one
// bash with `set -euo pipefail`, from the package folder, against the daemon `npm start` runs (the built
// dist/cli/index.js on the embedded default). The one change is the address: the daemon listens on ephemeral
// ports here, so http://127.0.0.1:8080 becomes its real address and FERRY_ADMIN_URL points the CLI at its admin API.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/util/paths.js';
import { childEnv } from '../helpers/child-env.js';
import { ensureBuilt } from '../helpers/fresh-build.js';
import { awaitStarted } from '../helpers/daemon.js';
import { quickstartBlocks } from '../helpers/doc-blocks.js';

// Each `ferry` call here is a process that loads the CLI through tsx (seconds each on a 2-core machine): the file's
// bound is set for that, above the suite's default.
t.setTimeout(420_000);

const haveCurl = spawnSync('curl', ['--version']).status === 0;

t.test('the README quick start runs as written', { skip: process.env.DATABASE_URL ? 'the quick start is the embedded default; it runs in the embedded pass' : !haveCurl ? 'curl is not installed' : false }, async (t) => {
  const blocks = quickstartBlocks(readFileSync(join(packageRoot, 'README.md'), 'utf8'));
  t.ok(blocks.length >= 3, `found ${blocks.length} shell blocks`);

  // `npm start` builds first (prestart); tap's before step already built dist/ from this very source, so the build
  // runs here only when that stamp does not match (a tsc run is tens of seconds of CPU on a loaded machine).
  const build = ensureBuilt();
  t.notOk(typeof build === 'object' && build.failed, `the build: ${typeof build === 'object' ? build.failed : build}`);

  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-quickstart-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = { ...(childEnv() as Record<string, string>), FERRY_DATA_DIR: dataDir, FERRY_HTTP_PORT: '0', FERRY_ADMIN_PORT: '0', FERRY_SMPP_PORT: '0', FERRY_SHORTLINK_PORT: '0' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  for (const k of Object.keys(env)) if (k.startsWith('FERRY_') && !['FERRY_DATA_DIR', 'FERRY_HTTP_PORT', 'FERRY_ADMIN_PORT', 'FERRY_SMPP_PORT', 'FERRY_SHORTLINK_PORT'].includes(k)) delete env[k];

  const { child: daemon, api, admin, exited } = await awaitStarted(
    spawn(process.execPath, ['dist/cli/index.js', 'start'], { cwd: packageRoot, env, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  t.teardown(async () => {
    daemon.kill('SIGTERM');
    await exited;
  });

  const script = ['set -euo pipefail', ...blocks].join('\n').replaceAll('http://127.0.0.1:8080', api);
  t.notMatch(script, /127\.0\.0\.1:8080/, 'every address was the documented one');
  const run = spawnSync('bash', ['-c', script], {
    cwd: packageRoot,
    env: { ...env, FERRY_ADMIN_URL: admin, PATH: `${join(packageRoot, 'node_modules/.bin')}:${process.env.PATH}` },
    encoding: 'utf8',
    timeout: 120_000,
  });
  t.equal(run.status, 0, run.status === 0 ? 'the quick start exits 0' : `the quick start exits 0\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  t.match(run.stdout, /"code":"HEALTHY"/, 'the key works');
  t.match(run.stdout, /"code":"SMS_SENT"/, 'the SMS was accepted');
  t.match(run.stdout, /Acme -> 233241234567\n {2}Your order shipped/, 'the simulator shows the SMS');
  t.match(run.stdout, /"code":"OTP_VERIFIED"/, 'the OTP read from the simulator verifies');
});
