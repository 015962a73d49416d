import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { packageRoot } from '../../src/util/paths.js';

/**
 * The compiled CLI (dist/) for tests that spawn `ferry`, only when it was compiled from the source as it is now.
 * Loading the CLI through tsx costs seconds per process on a loaded 2-core machine; `node dist/cli/index.js` is
 * several times cheaper. tap's `before` step (test/helpers/build-before-tests.ts) builds dist/ and writes a stamp:
 * a hash of every compiler input. A dist/ whose stamp does not match the source is never used: the caller falls
 * back to tsx, which always runs the source.
 */
const STAMP = join(packageRoot, 'dist', '.source-hash');
const LOCK = join(packageRoot, 'dist', '.build-lock');

/** A hash of what `npm run build` compiles: every .ts file under src/ (path and content) and the tsconfig files. */
export function sourceHash(root = packageRoot): string {
  const hash = createHash('sha256');
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.push(path);
    }
  };
  walk(join(root, 'src'));
  files.push(join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json'));
  for (const file of files.sort()) {
    hash.update(relative(root, file)).update('\0');
    hash.update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
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
