/**
 * The footprint of a product's work: every file outside the product's own folders that the commits touching the
 * product changed. A product is meant to be its folder and one line in src/channels/index.ts (docs/architecture.md);
 * this lists what it took besides, so a review sees it and CI fails on it.
 *
 *   tsx scripts/ci/product-footprint.ts                       # every product under watch in .ci/product-footprint.json
 *   tsx scripts/ci/product-footprint.ts --product push --since <rev>
 *
 * .ci/product-footprint.json maps a product to the commit its work started after: { "push": "<rev>" }.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Footprint {
  product: string;
  since: string;
  commits: number;
  /** Files outside the product's folders that the product's commits changed (besides those below). */
  outside: string[];
  /** Allowed outside the folders: the generated config example, the top-level CHANGELOG and README, dependencies. */
  allowed: string[];
  /** Lines the product's commits added to src/channels/index.ts that do not name the product's folder or the list. */
  indexLines: string[];
}

/** Paths a product owns. Tests and docs are everyone's; a product's tests and page are expected there. */
export function isOwnPath(product: string, path: string): boolean {
  return (
    path.startsWith(`src/channels/${product}/`) ||
    path.startsWith(`src/sim/${product}/`) ||
    path.startsWith('test/') ||
    path.startsWith('docs/')
  );
}

const ALLOWED = new Set(['CHANGELOG.md', 'README.md', 'config/ferry.example.yaml', 'package.json', 'package-lock.json']);
const INDEX = 'src/channels/index.ts';

function git(repo: string, args: string[]): string {
  return execFileSync('git', args, { cwd: repo, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

export function footprint(repo: string, product: string, since: string): Footprint {
  if (!/^[a-z][a-z0-9-]*$/.test(product)) throw new Error(`not a product name: ${product}`);
  const commits = git(repo, ['rev-list', `${since}..HEAD`, '--', `src/channels/${product}`, `src/sim/${product}`])
    .split('\n')
    .filter(Boolean);
  const outside = new Set<string>();
  const allowed = new Set<string>();
  const indexLines: string[] = [];
  for (const commit of commits) {
    const files = git(repo, ['diff-tree', '--root', '--no-commit-id', '--name-only', '-r', commit]).split('\n').filter(Boolean);
    for (const file of files) {
      if (isOwnPath(product, file)) continue;
      if (file === INDEX) {
        const diff = git(repo, ['show', '--format=', '--unified=0', commit, '--', INDEX]);
        for (const line of diff.split('\n')) {
          if (!line.startsWith('+') || line.startsWith('+++')) continue;
          const added = line.slice(1).trim();
          // The product's import, or the one list of modules (which gains its name).
          if (added.includes(`./${product}/`) || added.startsWith('export const CHANNEL_MODULES')) continue;
          indexLines.push(`${commit.slice(0, 10)} ${added}`);
        }
        continue;
      }
      (ALLOWED.has(file) ? allowed : outside).add(file);
    }
  }
  return { product, since, commits: commits.length, outside: [...outside].sort(), allowed: [...allowed].sort(), indexLines };
}

function watched(repo: string): Record<string, string> {
  const file = join(repo, '.ci', 'product-footprint.json');
  if (!existsSync(file)) return {};
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
}

function main(argv: string[]): number {
  const repo = process.cwd();
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const one = arg('--product');
  const list = one ? { [one]: arg('--since') ?? 'HEAD~1' } : watched(repo);
  if (!Object.keys(list).length) {
    console.log('product footprint: no product under watch (.ci/product-footprint.json)');
    return 0;
  }
  let failed = false;
  for (const [product, since] of Object.entries(list)) {
    const f = footprint(repo, product, since);
    console.log(`product footprint: ${product}, ${f.commits} commit(s) since ${since.slice(0, 10)}`);
    for (const file of f.outside) console.log(`  outside its folder: ${file}`);
    for (const line of f.indexLines) console.log(`  src/channels/index.ts beyond its one line: ${line}`);
    for (const file of f.allowed) console.log(`  (allowed) ${file}`);
    if (f.outside.length || f.indexLines.length) failed = true;
    else console.log('  only its folder and its line in src/channels/index.ts');
  }
  return failed ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main(process.argv.slice(2));
