// The suite's own mechanics that decide what a test runs: the compiled CLI only when dist/ was built from the source
// as it is (else the source through tsx), and a migrated PGlite template only for the migration files it was built
// from. Checked on a scratch tree, never on this checkout's src/ or dist/.
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { childEnv } from '../helpers/child-env.js';
import { migrationsHash } from '../helpers/db.js';
import { builtFromSource, cliEntry, distIsFresh, sourceHash } from '../helpers/fresh-build.js';

function scratchTree(t: { teardown(fn: () => unknown): void }): string {
  const root = mkdtempSync(join(tmpdir(), 'ferry-mechanics-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'src', 'cli'), { recursive: true });
  mkdirSync(join(root, 'src', 'store', 'migrations'), { recursive: true });
  writeFileSync(join(root, 'tsconfig.json'), '{}');
  writeFileSync(join(root, 'tsconfig.build.json'), '{}');
  writeFileSync(join(root, 'src', 'cli', 'index.ts'), 'export const a = 1;\n');
  writeFileSync(join(root, 'src', 'store', 'migrations', '0001_first.sql'), 'CREATE TABLE a (id int);\n');
  return root;
}

t.test('a dist/ counts as built from the source only while its stamp matches every compiler input', async (t) => {
  const root = scratchTree(t);
  t.notOk(builtFromSource(root), 'no dist/ at all');
  mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
  writeFileSync(join(root, 'dist', 'cli', 'index.js'), '');
  t.notOk(builtFromSource(root), 'a dist/ without a stamp (built by something else, from an unknown source)');
  writeFileSync(join(root, 'dist', '.source-hash'), sourceHash(root) + '\n');
  t.ok(builtFromSource(root), 'stamped with the source as it is');

  writeFileSync(join(root, 'src', 'cli', 'index.ts'), 'export const a = 2;\n');
  t.notOk(builtFromSource(root), 'a source file edited after the build');
  writeFileSync(join(root, 'src', 'cli', 'index.ts'), 'export const a = 1;\n');
  t.ok(builtFromSource(root), 'back as it was built');

  mkdirSync(join(root, 'src', 'messaging'));
  renameSync(join(root, 'src', 'cli', 'index.ts'), join(root, 'src', 'messaging', 'index.ts'));
  t.notOk(builtFromSource(root), 'a file moved, same content');
  renameSync(join(root, 'src', 'messaging', 'index.ts'), join(root, 'src', 'cli', 'index.ts'));

  writeFileSync(join(root, 'tsconfig.build.json'), '{"compilerOptions":{}}');
  t.notOk(builtFromSource(root), 'the compiler options changed');
});

t.test('the CLI a test spawns is the compiled one exactly when this checkout is stamped fresh', async (t) => {
  const entry = cliEntry();
  if (distIsFresh()) t.match(entry, [/dist\/cli\/index\.js$/], 'node dist/cli/index.js');
  else t.same(entry.slice(0, 2), ['--import', 'tsx'], 'the source through tsx');
  t.equal(entry.length, distIsFresh() ? 1 : 3);
});

t.test('the migrated template is keyed by every migration file, wherever it lives under src/', async (t) => {
  const root = scratchTree(t);
  const first = migrationsHash(root);
  t.equal(migrationsHash(root), first, 'stable');
  writeFileSync(join(root, 'src', 'store', 'migrations', '0001_first.sql'), 'CREATE TABLE a (id bigint);\n');
  const edited = migrationsHash(root);
  t.not(edited, first, 'an edited migration');
  mkdirSync(join(root, 'src', 'channels', 'echo', 'migrations'), { recursive: true });
  writeFileSync(join(root, 'src', 'channels', 'echo', 'migrations', '0099_echo.sql'), 'CREATE TABLE e (id int);\n');
  const added = migrationsHash(root);
  t.not(added, edited, "a product's own migration");
  writeFileSync(join(root, 'src', 'channels', 'echo', 'notes.sql'), 'SELECT 1;\n');
  t.equal(migrationsHash(root), added, 'a .sql file that is not a migration does not count');
});

t.test("a spawned child gets tap's process-tracking loader only when coverage is on", async (t) => {
  const saved = { NODE_OPTIONS: process.env.NODE_OPTIONS, TAP_DISABLE_COVERAGE: process.env.TAP_DISABLE_COVERAGE };
  t.teardown(() => Object.assign(process.env, saved));
  process.env.NODE_OPTIONS = '"--import=file:///x/node_modules/@tapjs/processinfo/dist/esm/import.mjs" --max-old-space-size=512';
  process.env.TAP_DISABLE_COVERAGE = '1';
  const off = childEnv({ FERRY_X: '1' });
  t.equal(off.NODE_OPTIONS, '--max-old-space-size=512', 'coverage off: the loader is dropped, other options kept');
  t.equal(off.FERRY_X, '1');
  process.env.NODE_OPTIONS = '"--import=file:///x/node_modules/@tapjs/processinfo/dist/esm/import.mjs"';
  t.notOk('NODE_OPTIONS' in childEnv(), 'nothing left: no NODE_OPTIONS at all');
  process.env.TAP_DISABLE_COVERAGE = '0';
  t.equal(childEnv().NODE_OPTIONS, process.env.NODE_OPTIONS, 'coverage on: the child is tracked as tap expects');
});
