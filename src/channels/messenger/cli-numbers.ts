import { Command } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';

/**
 * `ferry messenger numbers add|list|show|remove|rotate`: the business numbers (phone number ids) and which account
 * owns each, through the running daemon's admin API. Credentials go in as given (plain, or sealed:… from `ferry
 * messenger seal`, which reads stdin and so keeps the plain value out of the shell history) and never come out:
 * list and show print fingerprints.
 */
export function messengerNumbersCommand(ctx: CliContext): Command {
  const cmd: Command = new Command('numbers').description("messenger business numbers: each account's own phone number ids and credentials");
  const admin = ctx.admin(cmd);
  const path = (id: string) => `/admin/messenger/numbers/${encodeURIComponent(id)}`;

  cmd
    .command('add PHONE_NUMBER_ID')
    .description('add a business number owned by an account (it then sends from it; what comes in on it is its only)')
    .requiredOption('--account <name>', 'the owning account (name or id)')
    .requiredOption('--waba-id <id>', 'its WhatsApp business account id (templates, quality)')
    .requiredOption('--access-token <token>', 'the Cloud API access token (plain or sealed:…)')
    .requiredOption('--app-secret <secret>', "the app secret its webhooks' X-Hub-Signature-256 is checked with (plain or sealed:…)")
    .option('--verify-token <token>', "the app's webhook hub.verify_token (plain or sealed:…)")
    .option('--display-number <number>', 'the number as people dial it')
    .option('--json', 'print JSON')
    .action(async (id: string, o) =>
      ctx.print(
        await admin.call('POST', '/admin/messenger/numbers', {
          phoneNumberId: id,
          account: o.account,
          wabaId: o.wabaId,
          accessToken: o.accessToken,
          appSecret: o.appSecret,
          ...(o.verifyToken ? { verifyToken: o.verifyToken } : {}),
          ...(o.displayNumber ? { displayNumber: o.displayNumber } : {}),
        }),
        !!o.json,
      ),
    );

  cmd
    .command('list')
    .description('the config number and the added ones (credentials as fingerprints)')
    .option('--account <name>', "only this account's")
    .option('--json', 'print JSON')
    .action(async (o) => {
      const data = await admin.call<{ numbers: unknown[] }>('GET', `/admin/messenger/numbers${o.account ? `?account=${encodeURIComponent(o.account)}` : ''}`);
      ctx.print(o.json ? data : data.numbers, !!o.json);
    });

  cmd
    .command('show PHONE_NUMBER_ID')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => ctx.print(await admin.call('GET', path(id)), !!o.json));

  cmd
    .command('remove PHONE_NUMBER_ID')
    .description('remove a number (messages not sent yet from it fail: PROVIDER_AUTH_FAILED)')
    .option('--json', 'print JSON')
    .action(async (id: string, o) => ctx.print(await admin.call('DELETE', path(id)), !!o.json));

  cmd
    .command('rotate PHONE_NUMBER_ID')
    .description('new credentials for a number (those not given are kept); used at once by every instance')
    .option('--access-token <token>', 'plain or sealed:…')
    .option('--app-secret <secret>', 'plain or sealed:…')
    .option('--verify-token <token>', 'plain or sealed:…')
    .option('--json', 'print JSON')
    .action(async (id: string, o) =>
      ctx.print(
        await admin.call('POST', `${path(id)}/rotate`, {
          ...(o.accessToken ? { accessToken: o.accessToken } : {}),
          ...(o.appSecret ? { appSecret: o.appSecret } : {}),
          ...(o.verifyToken ? { verifyToken: o.verifyToken } : {}),
        }),
        !!o.json,
      ),
    );
  return cmd;
}
