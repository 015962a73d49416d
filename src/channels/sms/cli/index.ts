import type { Command } from 'commander';
import type { CliContext } from '../../../cli/cli-context.js';
import { messagesCommand } from './messages.js';
import { receiptsCommand } from './receipts.js';
import { routesCommand } from './routes.js';
import { upstreamsCommand } from './upstreams.js';

/** `ferry routes|upstreams|messages|receipts`: the SMS gateway through the running daemon's admin API. */
export function smsCli(program: Command, ctx: CliContext): void {
  program.addCommand(routesCommand(ctx));
  program.addCommand(upstreamsCommand(ctx));
  program.addCommand(messagesCommand(ctx));
  program.addCommand(receiptsCommand(ctx));
}
