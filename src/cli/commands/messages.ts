import { Command } from 'commander';
import { adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';
import { addMessagesList } from './inspect.js';

export function messagesCommand(): Command {
  const cmd = new Command('messages').description('inspect messages in the ledger (through the running daemon’s admin API)');
  const target = () => adminTarget(cmd.parent?.opts().config);

  cmd
    .command('show ID')
    .description('a message with its status history and, when split, its parts')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => print(await adminCall(target(), 'GET', `/admin/messages/${encodeURIComponent(id)}`), !!o.json));

  addMessagesList(cmd);
  return cmd;
}
