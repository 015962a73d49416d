import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDb } from '../../src/store/sql/db.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { migrationFolders } from '../../src/platform/module-order.js';
import { loadMigrations, migrate } from '../../src/store/sql/migrate.js';
import type { Db } from '../../src/store/types.js';
import { packageRoot } from '../../src/util/paths.js';
import { costed } from './costs.js';
import { DATABASE_URL } from './env.js';

export interface TestDb {
  db: Db;
  /** Connection string that reaches this test's isolated schema (Postgres), or null (PGlite). */
  url: string | null;
  /** Data folder (PGlite) or a scratch folder (Postgres). */
  dataDir: string;
  cleanup(): Promise<void>;
}

/**
 * Initialising a PGlite data folder costs seconds; copying an initialised one costs ~0.1 s. The first
 * test process to need it builds a template (atomically, by rename) that every later one copies.
 */
export async function seedPglite(dataDir: string): Promise<void> {
  if (existsSync(join(dataDir, 'pg'))) return;
  await costed('pglite-seed', async () => cpSync(await bareTemplate(), join(dataDir, 'pg'), { recursive: true }));
}

/**
 * A PGlite data folder already holding what `migrateFresh` applies, copied from a template: running every migration
 * costs each database that much CPU again, a copy does not. The template's name carries a hash of every migration
 * file under src/, so an edited, added or moved migration builds a new one. If the migrations cannot be applied to
 * a fresh database, the folder is seeded bare and the caller's own migration reports the error as it always did.
 */
export async function seedMigratedPglite(dataDir: string): Promise<void> {
  if (existsSync(join(dataDir, 'pg'))) return;
  const template = await migratedTemplate().catch(() => null);
  if (!template) return seedPglite(dataDir);
  await costed('pglite-seed-migrated', async () => cpSync(template, join(dataDir, 'pg'), { recursive: true }));
}

/** The migrations a fresh test database gets: the one place both testDb() and the migrated template apply them. */
/** Every migration: the core's and the products' (each in its module's folder). */
async function migrateFresh(db: Db): Promise<void> {
  await migrate(db, loadMigrations(migrationFolders(CHANNEL_MODULES)));
}

function pgliteVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;
}

async function bareTemplate(): Promise<string> {
  const template = join(tmpdir(), `ferry-pglite-template-${pgliteVersion()}`);
  if (!existsSync(template)) {
    await buildTemplate(template, async (dir) => {
      const { PGlite } = await import('@electric-sql/pglite');
      const lite = await PGlite.create(join(dir, 'pg'));
      await lite.close();
    });
  }
  return template;
}

let migrated: Promise<string> | undefined;

function migratedTemplate(): Promise<string> {
  migrated ??= (async () => {
    // Migrations that partition a table by time make its first partitions relative to the day they run (every id up
    // to tomorrow's first): a template is one UTC day's, or the tests' "today" would be past it.
    const day = new Date().toISOString().slice(0, 10);
    const template = join(tmpdir(), `ferry-pglite-migrated-${pgliteVersion()}-${migrationsHash()}-${day}`);
    if (!existsSync(template)) {
      removeStaleTemplates();
      const bare = await bareTemplate();
      await costed('pglite-template-migrated', () =>
        buildTemplate(template, async (dir) => {
          cpSync(bare, join(dir, 'pg'), { recursive: true });
          const db = await openDb({ url: null, dataDir: dir, poolSize: 1 });
          try {
            await migrateFresh(db);
          } finally {
            await db.close();
          }
        }),
      );
    }
    return template;
  })();
  return migrated;
}

/** Migrated templates of earlier days (older than two days: a run that spans midnight may still be copying one). */
function removeStaleTemplates(): void {
  const before = Date.now() - 2 * 86_400_000;
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith('ferry-pglite-migrated-')) continue;
    const path = join(tmpdir(), name);
    try {
      if (statSync(path).mtimeMs < before) rmSync(path, { recursive: true, force: true });
    } catch {
      /* gone already, or not ours to remove */
    }
  }
}

/** Builds `<tmp>/pg` with `fill`, then renames it into place: a reader never sees a half-built template. */
async function buildTemplate(template: string, fill: (dir: string) => Promise<void>): Promise<void> {
  const building = mkdtempSync(join(tmpdir(), 'ferry-pglite-build-'));
  try {
    await fill(building);
    try {
      renameSync(join(building, 'pg'), template);
    } catch {
      /* another process won the race; use its template */
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

/** A hash of every migration file (NNNN_name.sql) under `root`/src/, by path and content. */
export function migrationsHash(root = packageRoot): string {
  const hash = createHash('sha256');
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (/^\d{4}_[a-z0-9_]+\.sql$/.test(entry.name)) files.push(join(dir, entry.name));
    }
  };
  walk(join(root, 'src'));
  for (const file of files.sort()) hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/**
 * Where a daemon under test keeps its data: a private Postgres schema (URL) or a seeded PGlite folder, migrated
 * (the daemon finds nothing to apply) unless `bare` (a test of the migrations themselves).
 */
export async function testDatabase(opts: { bare?: boolean } = {}): Promise<{ url: string | null; dataDir: string; cleanup(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  if (!DATABASE_URL) {
    await (opts.bare ? seedPglite(dataDir) : seedMigratedPglite(dataDir));
    return { url: null, dataDir, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const schema = 't_' + randomBytes(6).toString('hex');
  await adminQuery(`CREATE SCHEMA ${schema}`);
  return {
    url: withSearchPath(DATABASE_URL, schema),
    dataDir,
    async cleanup() {
      await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function adminQuery(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: DATABASE_URL! });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** A freshly migrated database (the core's migrations and every product's) private to the caller: its own schema on Postgres, its own folder on PGlite. */
export async function testDb(opts: { migrate?: boolean } = {}): Promise<TestDb> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  let url: string | null = null;
  let schema: string | null = null;
  if (DATABASE_URL) {
    schema = 't_' + randomBytes(6).toString('hex');
    await adminQuery(`CREATE SCHEMA ${schema}`);
    url = withSearchPath(DATABASE_URL, schema);
  } else if (opts.migrate === false) {
    await seedPglite(dataDir);
  } else {
    await seedMigratedPglite(dataDir);
  }
  const db = await openDb({ url, dataDir, poolSize: 4 });
  // On a migrated copy this finds nothing to apply; it stays so a database is migrated whatever it was seeded from.
  if (opts.migrate !== false) await costed('migrate', () => migrateFresh(db));
  return {
    db,
    url,
    dataDir,
    async cleanup() {
      await db.close().catch(() => {});
      if (schema) await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Adds `options=-c search_path=<schema>` so every pooled connection lands in the schema. */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}
