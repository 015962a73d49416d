// What `npm ci` installs must run on the Node versions Ferry says it runs on, or the install warns (EBADENGINE) and a
// package may not work: every production package accepts the oldest Node that package.json's engines allows, and
// every package, development tools included, accepts DEV_NODE_FLOOR and the Node running this test.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import t from 'tap';
import { packageRoot } from '../src/util/paths.js';

// semver comes with the dependencies (fastify's); it has no type declarations of its own here.
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string, opts?: { includePrerelease?: boolean }): boolean;
  minVersion(range: string): { version: string } | null;
};

/** The oldest Node the development tools (tap, eslint, tsx and theirs) accept: the README states it. */
const DEV_NODE_FLOOR = '20.19.0';

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  engines?: { node?: string } | string[];
}

const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(packageRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };

/** [path, version, engines.node] of every locked package that declares a Node range. */
function nodeRanges(filter: (e: LockEntry) => boolean): Array<[string, string, string]> {
  const out: Array<[string, string, string]> = [];
  for (const [path, e] of Object.entries(lock.packages)) {
    if (path === '' || !filter(e)) continue;
    const range = Array.isArray(e.engines) ? undefined : e.engines?.node;
    if (range) out.push([path.replace(/^.*node_modules\//, ''), e.version ?? '?', range]);
  }
  return out;
}

function refusing(version: string, ranges: Array<[string, string, string]>): string[] {
  return ranges.filter(([, , range]) => !semver.satisfies(version, range, { includePrerelease: true })).map(([name, v, range]) => `${name}@${v} needs node ${range}`);
}

t.test('the lockfile is the one package.json describes', async (t) => {
  t.same((lock.packages[''] as { engines?: unknown }).engines, pkg.engines, 'same engines at its root');
  t.ok(Object.keys(lock.packages).length > 100, 'a full lockfile (packages section) was read');
});

t.test('every production package runs on the oldest Node that package.json allows', async (t) => {
  const floor = semver.minVersion(pkg.engines.node)!.version;
  t.equal(floor, '20.0.0');
  const production = nodeRanges((e) => !e.dev && !e.devOptional);
  t.ok(production.length > 10, 'production packages that declare a range were found');
  t.same(refusing(floor, production), [], `all accept node ${floor}`);
});

t.test('every package, development tools included, runs on the development floor and on this Node', async (t) => {
  const all = nodeRanges(() => true);
  t.same(refusing(DEV_NODE_FLOOR, all), [], `all accept node ${DEV_NODE_FLOOR}`);
  t.same(refusing(process.versions.node, all), [], `all accept this node (${process.versions.node}): npm ci warns about none`);
});

t.test('the check itself refuses what it should', async (t) => {
  // The package the lockfile had before its override (light-my-request's cookie 2.x) would fail the checks above.
  t.same(refusing('20.20.2', [['cookie', '2.0.2', '>=22']]), ['cookie@2.0.2 needs node >=22']);
  t.same(refusing('20.0.0', [['eslint', '9.39.5', '^18.18.0 || ^20.9.0 || >=21.1.0']]), ['eslint@9.39.5 needs node ^18.18.0 || ^20.9.0 || >=21.1.0']);
  t.same(refusing('20.19.0', [['yargs', '18.2.0', '^20.19.0 || ^22.12.0 || >=23']]), []);
});
