import { Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import type { ChannelModule } from '../../platform/channel-module.js';
import { migrationFolders } from '../../platform/module-order.js';
import { openDb } from '../../store/sql/db.js';
import { loadMigrations, migrate, migrationStatus } from '../../store/sql/migrate.js';
import { lockDataDir } from '../../util/lock.js';
import { print } from '../output.js';

/** `ferry migrate`: the core's migrations and those of the modules the composition root (src/cli/index.ts) passes. */
export function migrateCommand(modules: readonly Pick<ChannelModule, 'name' | 'migrations' | 'config'>[]): Command {
  return new Command('migrate')
    .description('apply pending database migrations (the daemon also does this at start)')
    .option('--status', 'only list applied and pending migrations')
    .option('--json', 'print JSON')
    .action(async (o, cmd: Command) => {
      const { config } = loadConfig({ path: cmd.parent?.opts().config ?? null, modules });
      const migrations = loadMigrations(migrationFolders(modules));
      // The embedded database allows one process at a time.
      const unlock = config.database.url ? () => {} : lockDataDir(config.dataDir);
      const db = await openDb({ url: config.database.url, dataDir: config.dataDir, poolSize: 1 });
      try {
        if (o.status) {
          print(await migrationStatus(db, migrations), !!o.json);
        } else {
          const applied = await migrate(db, migrations);
          print({ applied: applied.map((m) => `${m.version} ${m.name}`) }, !!o.json);
        }
      } finally {
        await db.close();
        unlock();
      }
    });
}
