import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceHash as hashOfSource } from './source-hash.mjs';

/**
 * The compiled CLI (dist/) for tests that spawn `ferry`, only when it was compiled from the source as it is now.
 * Loading the CLI through tsx costs seconds per process on a loaded 2-core machine; `node dist/cli/index.js` is
 * several times cheaper. tap's `before` step (test/helpers/build-before-tests.ts) builds dist/ and writes a stamp:
 * a hash of every compiler input. A dist/ whose stamp does not match the source is never used: the caller falls
 * back to tsx, which always runs the source.
 */
// Found from this file rather than src/util/paths.js: tap's build step loads this, and no module of src/ should load
// before the build it decides on.
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const STAMP = join(packageRoot, 'dist', '.source-hash');
const LOCK = join(packageRoot, 'dist', '.build-lock');

/** A hash of what `npm run build` compiles: every .ts file under src/ (path and content) and the tsconfig files. */
export function sourceHash(root = packageRoot): string {
  return hashOfSource(root);
}

/** Whether `root`'s dist/ holds a CLI built from its source as it is now (its stamp is the source's hash). */
export function builtFromSource(root: string): boolean {
  const stamp = join(root, 'dist', '.source-hash');
  return existsSync(stamp) && existsSync(join(root, 'dist', 'cli', 'index.js')) && readFileSync(stamp, 'utf8').trim() === sourceHash(root);
}

let fresh: boolean | undefined;

/** Whether dist/ was built from the current source (checked once per process: the source does not change under a test). */
export function distIsFresh(): boolean {
  fresh ??= builtFromSource(packageRoot);
  return fresh;
}

/** The node arguments that run the ferry CLI: the compiled one when it is fresh, else the source through tsx. */
export function cliEntry(): string[] {
  return distIsFresh() ? [join(packageRoot, 'dist', 'cli', 'index.js')] : ['--import', 'tsx', join(packageRoot, 'src', 'cli', 'index.ts')];
}

/**
 * Builds dist/ unless its stamp already matches the source, then writes the stamp. One build at a time per
 * checkout (a lock folder; a lock older than ten minutes is a crashed build's and is taken over). Returns what it did.
 */
export function ensureBuilt(): 'fresh' | 'built' | { failed: string } {
  const before = sourceHash();
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === before) return 'fresh';
  mkdirSync(join(packageRoot, 'dist'), { recursive: true });
  takeLock();
  try {
    if (existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === before) return 'fresh'; // built while we waited
    const tsc = createRequire(join(packageRoot, 'package.json')).resolve('typescript/bin/tsc');
    const run = spawnSync(process.execPath, [tsc, '-p', join(packageRoot, 'tsconfig.build.json')], { cwd: packageRoot, encoding: 'utf8' });
    if (run.status !== 0) return { failed: `tsc exited ${run.status}:\n${run.stdout}${run.stderr}` };
    // The package's bin, as `npm run build` leaves it (postbuild): `npx ferry` runs the file itself.
    chmodSync(join(packageRoot, 'dist', 'cli', 'index.js'), 0o755);
    // A file edited during the build may not be in dist/: stamp only what was compiled from one state of the source.
    if (sourceHash() === before) writeFileSync(STAMP, before + '\n');
    return 'built';
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function takeLock(): void {
  const until = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let age = 0;
      try {
        age = Date.now() - statSync(LOCK).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      if (age > 10 * 60_000 || Date.now() > until) rmSync(LOCK, { recursive: true, force: true });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
}
