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

/** The core's own migrations (a product's are in `src/channels/<name>/migrations/`, given by its module). */
export const CORE_MIGRATIONS = assetPath('store', 'sql', 'migrations');

/**
 * The core's migrations plus those of any extra folders (each module's own), as one sequence ordered by version:
 * a version is used once across every folder (a module's may not take a core number, nor another module's), gaps
 * are allowed (a number may be held by a branch not merged yet), and a `.sql` file not named `NNNN_name.sql` is an
 * error rather than silently skipped.
 */
export function loadMigrations(extraDirs: readonly string[] = [], coreDir = CORE_MIGRATIONS): Migration[] {
  const all = [coreDir, ...extraDirs].flatMap((dir) => {
    let files: string[];
    try {
      files = readdirSync(dir);
    } catch (err) {
      throw new Error(`migration folder ${dir} cannot be read: ${(err as Error).message}`);
    }
    return files
      .filter((f) => f.endsWith('.sql'))
      .map((f) => {
        const m = MIGRATION_FILE.exec(f);
        if (!m) throw new Error(`migration file ${dir}/${f} is not named NNNN_name.sql (four digits, lower-case name)`);
        return { version: Number(m[1]), name: m[2], sql: readFileSync(`${dir}/${f}`, 'utf8'), file: `${dir}/${f}`, core: dir === coreDir };
      });
  });
  all.sort((a, b) => a.version - b.version || Number(b.core) - Number(a.core));
  for (let i = 1; i < all.length; i++) {
    const [a, b] = [all[i - 1], all[i]];
    if (a.version !== b.version) continue;
    if (a.core && !b.core) throw new Error(`module migration ${b.file} takes version ${b.version}, which the core's ${a.file} holds`);
    throw new Error(`migration version ${b.version} is used twice: ${a.file} and ${b.file}`);
  }
  return all.map(({ version, name, sql }) => ({ version, name, sql }));
}

/**
 * Applies pending migrations in order, each in its own transaction (the core's alone unless the modules' are given:
 * `loadMigrations(folders)`). Returns the versions applied. A version recorded under another name than its file's
 * stops it: a migration was renumbered or renamed, and the database is not what this code expects.
 */
export async function migrate(db: Db, migrations = loadMigrations()): Promise<Migration[]> {
  await db.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const recorded = new Map((await db.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations')).rows.map((r) => [Number(r.version), r.name]));
  for (const m of migrations) {
    const name = recorded.get(m.version);
    if (name !== undefined && name !== m.name) throw new Error(`migration ${m.version} is recorded as ${name} in schema_migrations but its file is ${m.name}: migrations are never renumbered or renamed`);
  }
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

/** Each migration with whether the database has it (for `ferry migrate --status`). */
export async function migrationStatus(db: Db, migrations: readonly Migration[]): Promise<Array<{ version: number; name: string; applied: boolean }>> {
  const done = new Set(await appliedVersions(db));
  return migrations.map((m) => ({ version: m.version, name: m.name, applied: done.has(m.version) }));
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
