import { readdirSync, readFileSync } from 'node:fs';
import { assetPath } from '../../util/paths.js';
import type { Db } from '../types.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
// Arbitrary constant shared by every Ferry instance: only one of them migrates at a time.
const MIGRATION_LOCK = 7_246_001;

/**
 * The core's migrations plus those of any extra folders (a module's own), as one sequence: versions are unique
 * across every folder, so the one schema_migrations table orders them all.
 */
export function loadMigrations(extraDirs: readonly string[] = [], coreDir = assetPath('store', 'sql', 'migrations')): Migration[] {
  const all = [coreDir, ...extraDirs].flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => MIGRATION_FILE.test(f))
      .map((f) => {
        const [, v, name] = MIGRATION_FILE.exec(f)!;
        return { version: Number(v), name, sql: readFileSync(`${dir}/${f}`, 'utf8'), file: `${dir}/${f}` };
      }),
  );
  all.sort((a, b) => a.version - b.version);
  for (let i = 1; i < all.length; i++) {
    if (all[i].version === all[i - 1].version) throw new Error(`migration version ${all[i].version} is used twice: ${all[i - 1].file} and ${all[i].file}`);
  }
  return all.map(({ version, name, sql }) => ({ version, name, sql }));
}

/** Applies pending migrations in order, each in its own transaction. Returns the versions applied. */
export async function migrate(db: Db, migrations = loadMigrations()): Promise<Migration[]> {
  await db.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const applied: Migration[] = [];
  for (const m of migrations) {
    const done = await db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const { rows } = await q.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
      if (rows.length) return false;
      // Migration files may hold several statements; run them as one simple-protocol batch each.
      for (const stmt of splitStatements(m.sql)) await q.query(stmt);
      await q.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      return true;
    });
    if (done) applied.push(m);
  }
  return applied;
}

export async function appliedVersions(db: Db): Promise<number[]> {
  const { rows } = await db.query<{ version: number }>(
    `SELECT version FROM schema_migrations ORDER BY version`,
  ).catch(() => ({ rows: [] as { version: number }[] }));
  return rows.map((r) => r.version);
}

/**
 * Splits a migration into statements on semicolons at line ends, outside dollar-quoted bodies.
 * Parameterised query paths accept one statement at a time in both drivers.
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let buf = '';
  let inDollar = false;
  for (const line of sql.split('\n')) {
    const trimmed = line.trim();
    if (!inDollar && (trimmed.startsWith('--') || trimmed === '')) {
      if (buf) buf += '\n';
      continue;
    }
    const dollars = (line.match(/\$\$/g) ?? []).length;
    if (dollars % 2 === 1) inDollar = !inDollar;
    buf += line + '\n';
    if (!inDollar && trimmed.endsWith(';')) {
      out.push(buf.trim());
      buf = '';
    }
  }
  if (buf.trim()) out.push(buf.trim());
  return out;
}
