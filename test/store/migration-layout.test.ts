// Migrations moved from the one core folder into the products' folders (issue 43) without renumbering anything: a
// database migrated by the old layout is fully applied under the new one, and `ferry migrate` says so.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { migrationFolders } from '../../src/platform/module-order.js';
import { CORE_MIGRATIONS, loadMigrations, migrate } from '../../src/store/sql/migrate.js';
import { packageRoot } from '../../src/util/paths.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

/** Every migration's version and name as the one core folder held them before the move (0001-0036). */
const BEFORE: Array<{ version: number; name: string }> = JSON.parse(readFileSync(join(packageRoot, 'test/store/fixtures/migrations-before-i43.json'), 'utf8'));
const LAST_BEFORE = Math.max(...BEFORE.map((m) => m.version));
const FOLDERS = migrationFolders(CHANNEL_MODULES);

t.test('the new layout holds the same versions under the same names; only later versions are new', async (t) => {
  const now = loadMigrations(FOLDERS).map(({ version, name }) => ({ version, name }));
  t.same(now.filter((m) => m.version <= LAST_BEFORE), BEFORE, 'same versions, same names');
  t.ok(now.every((m) => m.version > LAST_BEFORE || BEFORE.some((b) => b.version === m.version)), 'no new migration in the old range');
  t.ok(FOLDERS.length >= 6, `the products' folders are loaded (${FOLDERS.length})`);
});

t.test('loading refuses a module migration on a core version and a misnamed file, and allows gaps', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-migrations-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const folder = (name: string, files: Record<string, string>) => {
    const d = join(dir, name);
    mkdirSync(d);
    for (const [f, sql] of Object.entries(files)) writeFileSync(join(d, f), sql);
    return d;
  };
  const clash = folder('clash', { '0001_also_accounts.sql': 'SELECT 1;' });
  t.throws(() => loadMigrations([clash]), /module migration .*0001_also_accounts\.sql takes version 1, which the core's .*0001_accounts\.sql holds/);
  const a = folder('a', { '9100_a.sql': 'SELECT 1;' });
  const b = folder('b', { '9100_b.sql': 'SELECT 1;' });
  t.throws(() => loadMigrations([a, b]), /migration version 9100 is used twice: .*9100_a\.sql and .*9100_b\.sql/, 'two modules on one version');
  t.throws(() => loadMigrations([folder('bad', { '37_short.sql': 'SELECT 1;' })]), /37_short\.sql is not named NNNN_name\.sql/);
  t.throws(() => loadMigrations([join(dir, 'missing')]), /migration folder .*missing cannot be read/);
  const gap = folder('gap', { '9200_after_a_gap.sql': 'SELECT 1;', 'README.md': 'not a migration' });
  t.equal(loadMigrations([gap]).at(-1)?.name, 'after_a_gap', 'a gap in the sequence is fine; other files are ignored');
});

t.test(`the core's migrations apply without any product (${backendLabel})`, async (t) => {
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  const applied = await migrate(tdb.db, loadMigrations());
  t.same(applied.map((m) => m.version), readdirSync(CORE_MIGRATIONS).map((f) => Number(f.slice(0, 4))).sort((x, y) => x - y));
  const { rows } = await tdb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'email%'`);
  t.equal(rows[0].n, 0, 'no product table was created');
});

t.test(`a version recorded under another name stops the migration (${backendLabel})`, async (t) => {
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  await migrate(tdb.db, loadMigrations());
  await tdb.db.query(`UPDATE schema_migrations SET name = 'renamed' WHERE version = 1`);
  await t.rejects(migrate(tdb.db, loadMigrations()), /migration 1 is recorded as renamed in schema_migrations but its file is accounts/);
});
