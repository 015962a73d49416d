#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
// The composition root: the one CLI file that knows the product list, and passes it down.
import { CHANNEL_MODULES } from '../channels/index.js';
import { ConfigError } from '../config/load.js';
import { VERSION } from '../version.js';
import { CliError } from './admin-client.js';
import { accountsCommand } from './commands/accounts.js';
import { inspectCommands } from './commands/inspect.js';
import { keysCommand } from './commands/keys.js';
import { messagesCommand } from './commands/messages.js';
import { messengerCommand } from './commands/messenger.js';
import { migrateCommand } from './commands/migrate.js';
import { receiptsCommand } from './commands/receipts.js';
import { routesCommand } from './commands/routes.js';
import { simCommand } from './commands/sim.js';
import { startCommand } from './commands/start.js';
import { upstreamsCommand } from './commands/upstreams.js';
import { ussdCommand } from './commands/ussd.js';

const program = new Command('ferry')
  .description('Ferry messaging gateway')
  .version(VERSION)
  .option('-c, --config <path>', 'config file (YAML); default $FERRY_CONFIG')
  .exitOverride();

program.addCommand(startCommand());
program.addCommand(migrateCommand(CHANNEL_MODULES));
program.addCommand(accountsCommand());
program.addCommand(keysCommand());
program.addCommand(routesCommand());
program.addCommand(upstreamsCommand());
program.addCommand(messagesCommand());
program.addCommand(receiptsCommand());
program.addCommand(simCommand());
program.addCommand(messengerCommand());
program.addCommand(ussdCommand());
for (const c of inspectCommands()) program.addCommand(c);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  const msg = err instanceof ConfigError ? err.message : err instanceof CliError ? err.message : (err as Error).message;
  process.stderr.write(`ferry: ${msg}\n`);
  process.exit(err instanceof CliError ? 2 : 1);
}
