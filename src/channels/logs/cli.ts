import { Command } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';

/** `ferry logs list|show`: the request logs, through the running daemon's admin API. */
export function logsCli(program: Command, ctx: CliContext): void {
  program.addCommand(
    ctx.inspect(new Command('logs').description('inspect the request logs'), {
      path: '/admin/logs',
      what: 'API requests',
      columns: ['id', 'accountId', 'method', 'path', 'status', 'errorCode', 'latencyMs', 'createdAt'],
      statuses: 'one status, 404, or a class, 4xx',
    }),
  );
}
