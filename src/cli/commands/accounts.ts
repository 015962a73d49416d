import { Command } from 'commander';
import { adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';

export function accountsCommand(): Command {
  const cmd = new Command('accounts').description('manage accounts (through the running daemon’s admin API)');
  const target = () => adminTarget(cmd.parent?.opts().config);

  cmd
    .command('create NAME')
    .description('create an account with SMPP credentials (password generated unless given)')
    .option('--smpp-password <pw>', 'SMPP password, 1-8 characters')
    .option('--smpp-system-id <id>', 'SMPP system_id (default: the name, cut to 15 characters)')
    .option('--currency <code>', 'ISO 4217 currency', 'USD')
    .option('--country <cc>', 'default country for local numbers (ISO 3166 alpha-2)')
    .option('--json', 'print JSON')
    .action(async (name: string, o) => {
      const data = await adminCall(target(), 'POST', '/admin/accounts', {
        name,
        currency: o.currency,
        ...(o.country ? { defaultCountry: o.country } : {}),
        ...(o.smppPassword ? { smppPassword: o.smppPassword } : {}),
        ...(o.smppSystemId ? { smppSystemId: o.smppSystemId } : {}),
      });
      print(data, !!o.json);
    });

  cmd
    .command('list')
    .option('--json', 'print JSON')
    .action(async (o) => print(await adminCall(target(), 'GET', '/admin/accounts'), !!o.json));

  cmd
    .command('show NAME')
    .option('--json', 'print JSON')
    .action(async (name: string, o) => print(await adminCall(target(), 'GET', `/admin/accounts/${encodeURIComponent(name)}`), !!o.json));

  cmd
    .command('suspend NAME')
    .option('--reason <text>', 'why (shown to operators)')
    .option('--json', 'print JSON')
    .action(async (name: string, o) =>
      print(await adminCall(target(), 'POST', `/admin/accounts/${encodeURIComponent(name)}/suspend`, o.reason ? { reason: o.reason } : {}), !!o.json),
    );

  cmd
    .command('resume NAME')
    .option('--json', 'print JSON')
    .action(async (name: string, o) => print(await adminCall(target(), 'POST', `/admin/accounts/${encodeURIComponent(name)}/resume`), !!o.json));

  cmd
    .command('credit NAME AMOUNT')
    .description('add credit (a negative amount removes it)')
    .option('--reference <text>', 'note recorded with the transaction')
    .option('--json', 'print JSON')
    .action(async (name: string, amount: string, o) => {
      const n = Number(amount);
      if (!Number.isFinite(n)) throw new Error(`AMOUNT must be a number, got ${amount}`);
      print(
        await adminCall(target(), 'POST', `/admin/accounts/${encodeURIComponent(name)}/credit`, { amount: n, ...(o.reference ? { reference: o.reference } : {}) }),
        !!o.json,
      );
    });

  cmd
    .command('smpp-credentials NAME')
    .description('set or replace the account’s SMPP credentials (password generated unless given)')
    .option('--system-id <id>', 'SMPP system_id, at most 15 characters')
    .option('--password <pw>', 'SMPP password, 1-8 characters')
    .option('--allowed-ips <cidrs>', 'comma-separated source addresses or CIDR ranges; "any" clears')
    .option('--max-binds <n>', 'concurrent binds allowed')
    .option('--json', 'print JSON')
    .action(async (name: string, o) => {
      const body: Record<string, unknown> = {};
      if (o.systemId) body.systemId = o.systemId;
      if (o.password) body.password = o.password;
      if (o.allowedIps) body.allowedIps = o.allowedIps === 'any' ? null : String(o.allowedIps).split(',').map((s: string) => s.trim());
      if (o.maxBinds) body.maxBinds = Number(o.maxBinds);
      print(await adminCall(target(), 'POST', `/admin/accounts/${encodeURIComponent(name)}/smpp-credentials`, body), !!o.json);
    });

  cmd
    .command('update NAME')
    .description('change limits and defaults; "default" puts a value back to the server default')
    .option('--max-tps <n>', 'submits per second over SMPP and REST together, or "default"')
    .option('--country <cc>', 'default country for local numbers (ISO 3166 alpha-2), or "default"')
    .option('--allowed-recipients <list>', 'comma-separated numbers or prefixes ending in *, or "any"')
    .option('--json', 'print JSON')
    .action(async (name: string, o) => {
      const body: Record<string, unknown> = {};
      if (o.allowedRecipients !== undefined) {
        body.allowedRecipients = o.allowedRecipients === 'any' ? null : String(o.allowedRecipients).split(',').map((s: string) => s.trim()).filter(Boolean);
      }
      if (o.maxTps !== undefined) {
        const n = Number(o.maxTps);
        if (o.maxTps !== 'default' && !(Number.isInteger(n) && n >= 0)) throw new Error(`--max-tps must be a whole number ≥ 0 or "default", got ${o.maxTps}`);
        body.maxTps = o.maxTps === 'default' ? null : n;
      }
      if (o.country !== undefined) body.defaultCountry = o.country === 'default' ? null : o.country;
      if (!Object.keys(body).length) throw new Error('nothing to change: give --max-tps, --country or --allowed-recipients');
      print(await adminCall(target(), 'PATCH', `/admin/accounts/${encodeURIComponent(name)}`, body), !!o.json);
    });

  cmd
    .command('numbers NAME [ACTION] [NUMBER]')
    .description('list the numbers the account owns (MO to them reach its binds); ACTION add|remove NUMBER changes them')
    .option('--json', 'print JSON')
    .action(async (name: string, action: string | undefined, number: string | undefined, o) => {
      const path = `/admin/accounts/${encodeURIComponent(name)}/numbers`;
      if (action === undefined) return print(await adminCall(target(), 'GET', path), !!o.json);
      if (action !== 'add' && action !== 'remove') throw new Error(`ACTION must be add or remove, got ${action}`);
      if (!number) throw new Error(`${action} needs a NUMBER`);
      if (action === 'add') print(await adminCall(target(), 'POST', path, { number }), !!o.json);
      else print(await adminCall(target(), 'DELETE', `${path}/${encodeURIComponent(number)}`), !!o.json);
    });

  return cmd;
}
