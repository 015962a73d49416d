// Every docs page's runnable examples, run as written: the ```sh blocks between `<!-- example:start -->` and
// `<!-- example:end -->` of each docs/*.md page that has them, in order, in one bash with `set -euo pipefail`, from
// the package folder, against the daemon `npm start` runs (the built dist/cli/index.js on the embedded default).
// Before a page's blocks come the README quick start's first block (the account and its key: $TOKEN, as a reader
// has them) for an account of the page's own (`acme` becomes `acme-<page>`), so pages share one daemon without
// sharing data. As in the quick start test, http://127.0.0.1:8080 becomes the daemon's real address and
// FERRY_ADMIN_URL points the CLI at its admin API; `npx ferry` runs the same built CLI without npm's start-up
// (test/readme/quickstart.test.ts runs it through npx itself).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/util/paths.js';
import { childEnv } from '../helpers/child-env.js';
import { ensureBuilt } from '../helpers/fresh-build.js';
import { awaitStarted } from '../helpers/daemon.js';
import { exampleBlocks, quickstartBlocks } from '../helpers/doc-blocks.js';

// Each `ferry` call here is a process that loads the CLI through tsx (seconds each on a 2-core machine): the file's
// bound is set for that, above the suite's default.
t.setTimeout(420_000);

const haveCurl = spawnSync('curl', ['--version']).status === 0;
const docs = join(packageRoot, 'docs');
const pages = readdirSync(docs)
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => ({ name: f.replace(/\.md$/, ''), blocks: exampleBlocks(readFileSync(join(docs, f), 'utf8')) }))
  .filter((p) => p.blocks.length > 0);
// DOCS_EXAMPLES=email,ussd runs only those pages (while writing one).
const only = process.env.DOCS_EXAMPLES?.split(',');

t.test('the docs pages with examples include the ones the issue names', async (t) => {
  for (const name of ['email', 'logs', 'otp', 'shortlink', 'sms', 'ussd', 'webhooks']) t.ok(pages.some((p) => p.name === name), `docs/${name}.md has marked examples`);
});

t.test('every docs page example runs as written', { skip: process.env.DATABASE_URL ? 'the examples run on the embedded default; they run in the embedded pass' : !haveCurl ? 'curl is not installed' : false }, async (t) => {
  const [accountBlock] = quickstartBlocks(readFileSync(join(packageRoot, 'README.md'), 'utf8'));
  t.match(accountBlock, /npx ferry accounts create acme [\s\S]*TOKEN=/, 'the quick start starts with the account and its key');

  // `npm start` builds first (prestart); tap's before step already built dist/ from this very source, so the build
  // runs here only when that stamp does not match (a tsc run is tens of seconds of CPU on a loaded machine).
  const build = ensureBuilt();
  t.notOk(typeof build === 'object' && build.failed, `the build: ${typeof build === 'object' ? build.failed : build}`);

  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-docs-examples-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const ports = ['FERRY_HTTP_PORT', 'FERRY_ADMIN_PORT', 'FERRY_SMPP_PORT', 'FERRY_SHORTLINK_PORT'];
  const env: Record<string, string> = { ...(childEnv() as Record<string, string>), FERRY_DATA_DIR: dataDir, ...Object.fromEntries(ports.map((p) => [p, '0'])) };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  for (const k of Object.keys(env)) if (k.startsWith('FERRY_') && k !== 'FERRY_DATA_DIR' && !ports.includes(k)) delete env[k];

  const { child: daemon, api, admin, exited } = await awaitStarted(
    spawn(process.execPath, ['dist/cli/index.js', 'start'], { cwd: packageRoot, env, stdio: ['ignore', 'pipe', 'pipe'] }),
    300_000, // a bound, not a measure: a loaded machine can take minutes to start it
  );
  t.teardown(async () => {
    daemon.kill('SIGTERM');
    await exited;
  });

  const npx = `npx() { if [ "$1" = ferry ]; then shift; node ${JSON.stringify(join(packageRoot, 'dist/cli/index.js'))} "$@"; else command npx "$@"; fi; }`;
  for (const page of pages.filter((p) => !only || only.includes(p.name))) {
    const account = `acme-${page.name}`.slice(0, 15);
    const script = ['set -euo pipefail', npx, accountBlock, ...page.blocks].join('\n').replaceAll('http://127.0.0.1:8080', api).replace(/\bacme\b/g, account);
    t.notMatch(script, /127\.0\.0\.1:8080|localhost:8080/, `docs/${page.name}.md: every address was the documented one`);
    t.notMatch(script, /\$KEY|\$SECRET|^\s*ferry /m, `docs/${page.name}.md: $TOKEN as the README sets it, and npx ferry`);
    const run = spawnSync('bash', ['-c', script], {
      cwd: packageRoot,
      env: { ...env, FERRY_ADMIN_URL: admin, PATH: `${join(packageRoot, 'node_modules/.bin')}:${process.env.PATH}` },
      encoding: 'utf8',
      timeout: 600_000, // a bound, not a measure
    });
    t.equal(run.status, 0, run.status === 0 ? `docs/${page.name}.md: the examples exit 0` : `docs/${page.name}.md: the examples exit 0\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
    t.notMatch(run.stdout, /"success":false/, `docs/${page.name}.md: no call was refused`);
  }
});
