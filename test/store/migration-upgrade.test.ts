// A database migrated by the old layout (every migration in the one core folder, before issue 43 moved the products'
// into their folders) is fully applied under the new one, and `ferry migrate` (the CLI, with the modules its
// composition root passes) says so and applies only what was added since.
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { migrationFolders } from '../../src/platform/module-order.js';
import { openDb } from '../../src/store/sql/db.js';
import { CORE_MIGRATIONS, loadMigrations, migrate } from '../../src/store/sql/migrate.js';
import { packageRoot } from '../../src/util/paths.js';
import { ferryRun } from '../helpers/daemon.js';
import { testDatabase } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

// Migrations through the CLI three times (a process each, on PGlite): bounded above the suite's default on a loaded 2-core machine.
t.setTimeout(300_000);

/** Every migration's version and name as the one core folder held them before the move (0001-0036). */
const BEFORE: Array<{ version: number; name: string }> = JSON.parse(readFileSync(join(packageRoot, 'test/store/fixtures/migrations-before-i43.json'), 'utf8'));
const LAST_BEFORE = Math.max(...BEFORE.map((m) => m.version));
const FOLDERS = migrationFolders(CHANNEL_MODULES);

t.test(`a database migrated by the old layout upgrades with nothing to do; ferry migrate says so (${backendLabel})`, async (t) => {
  // The old layout, rebuilt: every file of 0001-0036 in one folder, as the core held them.
  const store = await testDatabase({ bare: true });
  t.teardown(() => store.cleanup());
  const old = mkdtempSync(join(tmpdir(), 'ferry-old-layout-'));
  t.teardown(() => rmSync(old, { recursive: true, force: true }));
  for (const dir of [CORE_MIGRATIONS, ...FOLDERS]) {
    for (const f of readdirSync(dir)) if (BEFORE.some((m) => f === `${String(m.version).padStart(4, '0')}_${m.name}.sql`)) copyFileSync(join(dir, f), join(old, f));
  }
  const db = await openDb({ url: store.url, dataDir: store.dataDir, poolSize: 1 });
  try {
    await migrate(db, loadMigrations([], old));
    const { rows } = await db.query<{ version: number; name: string }>(`SELECT version, name FROM schema_migrations ORDER BY version`);
    t.same(rows, BEFORE, 'the old layout recorded exactly the fixture');
  } finally {
    await db.close();
  }

  const env = { FERRY_DATA_DIR: store.dataDir, FERRY_LOG_LEVEL: 'silent', ...(store.url ? { DATABASE_URL: store.url } : { DATABASE_URL: '' }) };
  const status = async () => {
    const r = await ferryRun(['migrate', '--status', '--json'], env);
    t.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Array<{ version: number; name: string; applied: boolean }>;
  };
  const before = await status();
  t.same(before.filter((m) => m.applied).map(({ version, name }) => ({ version, name })), BEFORE, 'every migration of the old layout is seen as applied');
  const pending = before.filter((m) => !m.applied);
  t.ok(pending.every((m) => m.version > LAST_BEFORE), `pending: only migrations added since (${pending.map((m) => m.version).join(', ') || 'none'})`);

  const run = await ferryRun(['migrate', '--json'], env);
  t.equal(run.code, 0, run.stderr);
  t.same(JSON.parse(run.stdout).applied, pending.map((m) => `${m.version} ${m.name}`), 'ferry migrate applies those and nothing else');
  t.ok((await status()).every((m) => m.applied), 'then nothing is pending');
});
