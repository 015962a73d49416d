import { Command } from 'commander';
import { adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';

export function keysCommand(): Command {
  const cmd = new Command('keys').description('manage API keys (through the running daemon’s admin API)');
  const target = () => adminTarget(cmd.parent?.opts().config);

  cmd
    .command('create')
    .description('create a key; prints keyId, secret and the ready Basic token once')
    .requiredOption('--account <name>', 'account name or id')
    .requiredOption('--scopes <list>', 'comma-separated scopes, or all')
    .option('--env <label>', 'environment label (live, test, …)', 'live')
    .option('--name <text>', 'what the key is for')
    .option('--expires-at <iso>', 'expiry time (ISO 8601)')
    .option('--allowed-recipients <list>', 'comma-separated numbers or prefixes ending in *')
    .option('--json', 'print JSON')
    .action(async (o) => {
      const data = await adminCall<Record<string, unknown>>(target(), 'POST', '/admin/keys', {
        account: o.account,
        scopes: o.scopes,
        environment: o.env,
        ...(o.name ? { name: o.name } : {}),
        ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
        ...(o.allowedRecipients ? { allowedRecipients: String(o.allowedRecipients).split(',').map((s: string) => s.trim()) } : {}),
      });
      print(data, !!o.json);
    });

  cmd
    .command('list')
    .option('--account <name>', 'only this account’s keys')
    .option('--json', 'print JSON')
    .action(async (o) => print(await adminCall(target(), 'GET', `/admin/keys${o.account ? `?account=${encodeURIComponent(o.account)}` : ''}`), !!o.json));

  cmd
    .command('rotate KEYID')
    .description('new secret; the old one keeps working for the grace period')
    .option('--grace-seconds <n>', 'how long the old secret stays valid (default from config)')
    .option('--json', 'print JSON')
    .action(async (keyId: string, o) =>
      print(
        await adminCall(target(), 'POST', `/admin/keys/${encodeURIComponent(keyId)}/rotate`, o.graceSeconds !== undefined ? { graceSeconds: Number(o.graceSeconds) } : {}),
        !!o.json,
      ),
    );

  cmd
    .command('revoke KEYID')
    .option('--json', 'print JSON')
    .action(async (keyId: string, o) => print(await adminCall(target(), 'POST', `/admin/keys/${encodeURIComponent(keyId)}/revoke`), !!o.json));

  return cmd;
}
