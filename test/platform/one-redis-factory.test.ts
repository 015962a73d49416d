// Every Redis connection of the daemon is made in one place (src/store/redis/redis-client.ts), with one option set,
// plain or Cluster as redis.cluster says; modules get theirs from ctx.redis. A file that constructs a client itself
// (new Redis, new Cluster, duplicate(), a value import of ioredis) fails the build here.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';

const ROOT = join(import.meta.dirname, '..', '..');
const FACTORY = 'src/store/redis/redis-client.ts';

/** What a source file does that only the factory may do; empty when it does none of it. */
export function clientConstructions(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/^\s*import\s+(?!type\b)([^;]*?)\s+from\s+['"]ioredis['"]/gm)) {
    // `import { type Redis } from 'ioredis'` brings no value either.
    const names = m[1].replace(/[{}]/g, '').split(',').map((n) => n.trim()).filter(Boolean);
    if (names.some((n) => !n.startsWith('type '))) found.push(`imports a value from ioredis (${m[1].trim()})`);
  }
  for (const m of source.matchAll(/\bnew\s+(Redis|Cluster|IORedis)\s*\(/g)) found.push(`constructs ${m[1]}`);
  if (/\.duplicate\s*\(/.test(source)) found.push('duplicates a client');
  return found;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

t.test('the checker sees each way of making a client', async (t) => {
  t.same(clientConstructions(`import { Redis } from 'ioredis';\nconst r = new Redis(url);`), ['imports a value from ioredis ({ Redis })', 'constructs Redis']);
  t.same(clientConstructions(`import IORedis from 'ioredis';`), ['imports a value from ioredis (IORedis)']);
  t.same(clientConstructions(`const c = new Cluster([seed]);`), ['constructs Cluster']);
  t.same(clientConstructions(`const sub = client.duplicate();`), ['duplicates a client']);
  t.same(clientConstructions(`import type { Redis } from 'ioredis';\nimport { type Cluster } from 'ioredis';`), [], 'type imports are fine');
});

t.test('only the factory makes Redis clients', async (t) => {
  const offenders: string[] = [];
  let factorySeen = false;
  for (const file of sources(join(ROOT, 'src'))) {
    const rel = relative(ROOT, file);
    const found = clientConstructions(readFileSync(file, 'utf8'));
    if (rel === FACTORY) {
      factorySeen = found.length > 0;
      continue;
    }
    for (const f of found) offenders.push(`${rel}: ${f}`);
    // A product gets its clients from ctx.redis (named, closed by the core), not from the factory function.
    if (rel.startsWith('src/channels/') && /from\s+['"][./]+\/store\/redis\/redis-client\.js['"]/.test(readFileSync(file, 'utf8')) && !/import\s+type\b[^;]*redis-client\.js/.test(readFileSync(file, 'utf8'))) {
      offenders.push(`${rel}: calls the client factory directly (use ctx.redis)`);
    }
  }
  t.ok(factorySeen, `${FACTORY} is where clients are made`);
  t.same(offenders, [], 'no other file under src/ makes a Redis client (use ctx.redis, or newRedisClient in the core)');
});
