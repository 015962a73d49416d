import { Command } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';

/** `ferry webhooks list|show`: webhook endpoints and their deliveries, through the running daemon's admin API. */
export function webhooksCli(program: Command, ctx: CliContext): void {
  program.addCommand(
    ctx.inspect(new Command('webhooks').description('inspect webhook endpoints and their deliveries'), {
      path: '/admin/webhooks',
      what: 'webhook endpoints (show: with the last 20 deliveries)',
      columns: ['id', 'accountId', 'enabled', 'url', 'events', 'createdAt'],
      statuses: 'enabled or disabled',
    }),
  );
}
