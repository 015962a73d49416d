import { Command } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';

/** `ferry email list|show`: email messages across accounts, through the running daemon's admin API. */
export function emailCli(program: Command, ctx: CliContext): void {
  program.addCommand(
    ctx.inspect(new Command('email').description('inspect email messages'), {
      path: '/admin/email/messages',
      what: 'email messages',
      columns: ['id', 'accountId', 'status', 'from', 'to', 'subject', 'createdAt'],
      statuses: 'queued, sending, deferred, delivered, bounced, complained, failed, dropped, …',
    }),
  );
}
