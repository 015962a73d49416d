import { Command } from 'commander';
import type { CliContext } from '../../../cli/cli-context.js';

export function messagesCommand(ctx: CliContext): Command {
  const cmd = new Command('messages').description('inspect messages in the ledger (through the running daemon’s admin API)');
  const admin = ctx.admin(cmd);

  cmd
    .command('show ID')
    .description('a message with its status history and, when split, its parts')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => ctx.print(await admin.call('GET', `/admin/messages/${encodeURIComponent(id)}`), !!o.json));

  // `ferry messages list`; `show` is the gateway's own above (ledger row, history, parts, route).
  return ctx.inspect(cmd, {
    path: '/admin/messages',
    what: 'SMS messages',
    columns: ['id', 'accountId', 'status', 'ingress', 'from', 'to', 'segments', 'errorCode', 'createdAt'],
    statuses: 'queued, scheduled, submitted, delivered, undelivered, expired, rejected, failed, cancelled',
    noShow: true,
  });
}
