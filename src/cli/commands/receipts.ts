import { Command } from 'commander';
import { adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';

export function receiptsCommand(): Command {
  const cmd = new Command('receipts').description('customer delivery receipts (through the running daemon’s admin API)');
  const target = () => adminTarget(cmd.parent?.opts().config);

  cmd
    .command('replay ID')
    .description('send the receipt of a final SMPP message to the customer again')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => print(await adminCall(target(), 'POST', `/admin/receipts/${encodeURIComponent(id)}/replay`), !!o.json));

  return cmd;
}
