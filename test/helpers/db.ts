import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDb } from '../../src/store/sql/db.js';
import { migrate } from '../../src/store/sql/migrate.js';
import type { Db } from '../../src/store/types.js';
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
  await costed('pglite-seed', () => seedFromTemplate(dataDir));
}

async function seedFromTemplate(dataDir: string): Promise<void> {
  const version = (JSON.parse(readFileSync(join(process.cwd(), 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;
  const template = join(tmpdir(), `ferry-pglite-template-${version}`);
  if (!existsSync(template)) {
    const building = mkdtempSync(join(tmpdir(), 'ferry-pglite-build-'));
    const { PGlite } = await import('@electric-sql/pglite');
    const lite = await PGlite.create(join(building, 'pg'));
    await lite.close();
    try {
      renameSync(join(building, 'pg'), template);
    } catch {
      /* another process won the race; use its template */
    }
    rmSync(building, { recursive: true, force: true });
  }
  cpSync(template, join(dataDir, 'pg'), { recursive: true });
}

/** Where a daemon under test keeps its data: a private Postgres schema (URL) or a seeded PGlite folder. */
export async function testDatabase(): Promise<{ url: string | null; dataDir: string; cleanup(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  if (!DATABASE_URL) {
    await seedPglite(dataDir);
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

/** A freshly migrated database private to the caller: its own schema on Postgres, its own folder on PGlite. */
export async function testDb(opts: { migrate?: boolean } = {}): Promise<TestDb> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  let url: string | null = null;
  let schema: string | null = null;
  if (DATABASE_URL) {
    schema = 't_' + randomBytes(6).toString('hex');
    await adminQuery(`CREATE SCHEMA ${schema}`);
    url = withSearchPath(DATABASE_URL, schema);
  } else {
    await seedPglite(dataDir);
  }
  const db = await openDb({ url, dataDir, poolSize: 4 });
  if (opts.migrate !== false) await costed('migrate', () => migrate(db));
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
