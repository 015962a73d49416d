import { Command } from 'commander';
import type { CliContext } from '../../../cli/cli-context.js';

export function receiptsCommand(ctx: CliContext): Command {
  const cmd = new Command('receipts').description('customer delivery receipts (through the running daemon’s admin API)');
  const admin = ctx.admin(cmd);

  cmd
    .command('replay ID')
    .description('send the receipt of a final SMPP message to the customer again')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => ctx.print(await admin.call('POST', `/admin/receipts/${encodeURIComponent(id)}/replay`), !!o.json));

  return cmd;
}
