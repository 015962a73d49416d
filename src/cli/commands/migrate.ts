import { Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import { openDb } from '../../store/sql/db.js';
import { appliedVersions, loadMigrations, migrate } from '../../store/sql/migrate.js';
import { lockDataDir } from '../../util/lock.js';
import { CHANNEL_MODULES } from '../../channels/index.js';
import { migrationFolders } from '../../platform/module-order.js';
import { print } from '../output.js';

export function migrateCommand(): Command {
  return new Command('migrate')
    .description('apply pending database migrations (the daemon also does this at start)')
    .option('--status', 'only list applied and pending migrations')
    .option('--json', 'print JSON')
    .action(async (o, cmd: Command) => {
      const { config } = loadConfig({ path: cmd.parent?.opts().config ?? null, modules: CHANNEL_MODULES });
      // The embedded database allows one process at a time.
      const unlock = config.database.url ? () => {} : lockDataDir(config.dataDir);
      const db = await openDb({ url: config.database.url, dataDir: config.dataDir, poolSize: 1 });
      try {
        if (o.status) {
          const done = new Set(await appliedVersions(db));
          print(loadMigrations(migrationFolders(CHANNEL_MODULES)).map((m) => ({ version: m.version, name: m.name, applied: done.has(m.version) })), !!o.json);
        } else {
          const applied = await migrate(db, loadMigrations(migrationFolders(CHANNEL_MODULES)));
          print({ applied: applied.map((m) => `${m.version} ${m.name}`) }, !!o.json);
        }
      } finally {
        await db.close();
        unlock();
      }
    });
}
