#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
// The composition root: the one CLI file that knows the product list, and passes it down.
import { CHANNEL_MODULES } from '../channels/index.js';
import { ConfigError } from '../config/load.js';
import { VERSION } from '../version.js';
import { CliError } from './admin-client.js';
import { CLI_CONTEXT } from './cli-context.js';
import { accountsCommand } from './commands/accounts.js';
import { keysCommand } from './commands/keys.js';
import { migrateCommand } from './commands/migrate.js';
import { startCommand } from './commands/start.js';
import { addModuleCommands } from './module-commands.js';

const program = new Command('ferry')
  .description('Ferry messaging gateway')
  .version(VERSION)
  .option('-c, --config <path>', 'config file (YAML); default $FERRY_CONFIG')
  .exitOverride();

program.addCommand(startCommand());
program.addCommand(migrateCommand(CHANNEL_MODULES));
program.addCommand(accountsCommand());
program.addCommand(keysCommand());
// The composition root: the products' commands and simulators (`ferry sim <name>`) come from their modules.
addModuleCommands(program, CHANNEL_MODULES, CLI_CONTEXT);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  const msg = err instanceof ConfigError ? err.message : err instanceof CliError ? err.message : (err as Error).message;
  process.stderr.write(`ferry: ${msg}\n`);
  process.exit(err instanceof CliError ? 2 : 1);
}
