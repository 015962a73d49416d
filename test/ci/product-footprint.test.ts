import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { footprint } from '../../scripts/ci/product-footprint.js';

// A throwaway repository: a base commit, then a product's commits, some of them touching the core.
const repo = mkdtempSync(join(tmpdir(), 'ferry-footprint-'));
t.teardown(() => rmSync(repo, { recursive: true, force: true }));
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const write = (path: string, text: string) => {
  mkdirSync(dirname(join(repo, path)), { recursive: true });
  writeFileSync(join(repo, path), text);
};
const commit = (message: string) => {
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', message);
  return git('rev-parse', 'HEAD');
};

git('init', '-q');
write('src/channels/index.ts', "import { smsModule } from './sms/index.js';\nexport const CHANNEL_MODULES = [smsModule];\n");
write('src/channels/sms/index.ts', 'export const smsModule = {};\n');
write('src/http/errors.ts', 'export {};\n');
const base = commit('base');

t.test('a product that is its folder and one line', async (t) => {
  write('src/channels/push/index.ts', 'export const pushModule = {};\n');
  write('src/sim/push/fcm.ts', 'export {};\n');
  write('test/channels/push/send.test.ts', '');
  write('docs/push.md', '# Push\n');
  write('CHANGELOG.md', '- push\n');
  write(
    'src/channels/index.ts',
    "import { smsModule } from './sms/index.js';\nimport { pushModule } from './push/index.js';\nexport const CHANNEL_MODULES = [smsModule, pushModule];\n",
  );
  commit('push: the product');
  // A core commit that does not touch the product is not the product's.
  write('src/http/errors.ts', 'export const X = 1;\n');
  commit('core: unrelated');
  const f = footprint(repo, 'push', base);
  t.equal(f.commits, 1);
  t.same(f.outside, []);
  t.same(f.indexLines, []);
  t.same(f.allowed, ['CHANGELOG.md']);
});

t.test('a product commit that edits the core is listed', async (t) => {
  write('src/channels/push/service.ts', 'export {};\n');
  write('src/http/errors.ts', "export const X = 1;\nexport const PUSH_ERROR = 'x';\n");
  write('src/channels/index.ts', "import { smsModule } from './sms/index.js';\nimport { pushModule } from './push/index.js';\nimport './sms/extra.js';\nexport const CHANNEL_MODULES = [smsModule, pushModule];\n");
  commit('push: reach into the core');
  const f = footprint(repo, 'push', base);
  t.equal(f.commits, 2);
  t.same(f.outside, ['src/http/errors.ts']);
  t.equal(f.indexLines.length, 1, 'an index line that is not the product is listed');
  t.match(f.indexLines[0], /sms\/extra/);
});

t.test('the command exits non-zero on a footprint beyond the folder', async (t) => {
  // tsx is resolved from this project, not from the throwaway repository the command runs in.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  let code = 0;
  let out = '';
  try {
    out = execFileSync(process.execPath, [`--import=${tsx}`, join(process.cwd(), 'scripts/ci/product-footprint.ts'), '--product', 'push', '--since', base], { cwd: repo, encoding: 'utf8' });
  } catch (err) {
    code = (err as { status: number }).status;
    out = (err as { stdout: string }).stdout;
  }
  t.equal(code, 1);
  t.match(out, /outside its folder: src\/http\/errors\.ts/);
  t.throws(() => footprint(repo, '../x', base), /not a product name/);
});
