import { Command } from 'commander';
import { AmountError, checkPlaces, parseAmount, type ParsedAmount } from '../../accounts/money.js';
import { NUMBER_VALIDATIONS } from '../../numbers/number-validation.js';
import { adminCall, adminTarget, CliError } from '../admin-client.js';
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

  // Credit and debit: AMOUNT is checked here before anything is sent (a finite, positive decimal within the money
  // range, with no more decimal places than the account currency has) and sent as typed, so nothing is lost to
  // floating point; the daemon checks it again.
  const movement = (kind: 'credit' | 'debit') => async (name: string, amount: string, o: { reference?: string; reason?: string; json?: boolean }) => {
    if (o.reference !== undefined && o.reason !== undefined) throw new CliError('give --reason or --reference, not both');
    const reference = o.reason ?? o.reference;
    let parsed: ParsedAmount;
    try {
      parsed = parseAmount(amount);
    } catch (err) {
      if (!(err instanceof AmountError)) throw err;
      const hint = err.rule === 'negative' ? (kind === 'credit' ? '; to take credit away, use `ferry accounts debit NAME AMOUNT`' : '; to add credit, use `ferry accounts credit NAME AMOUNT`') : '';
      throw new CliError(`INVALID_AMOUNT: AMOUNT ${err.message}${hint}`);
    }
    const t = target();
    const path = `/admin/accounts/${encodeURIComponent(name)}`;
    const account = await adminCall<{ currency: string }>(t, 'GET', path);
    try {
      checkPlaces(parsed, account.currency);
    } catch (err) {
      if (!(err instanceof AmountError)) throw err;
      throw new CliError(`INVALID_AMOUNT: AMOUNT ${err.message}`);
    }
    print(await adminCall(t, 'POST', `${path}/${kind}`, { amount: amount.trim(), ...(reference ? { reference } : {}) }), !!o.json);
  };

  cmd
    .command('credit NAME AMOUNT')
    .description('add credit: AMOUNT in the account currency, positive, at most its decimal places (debit takes it away)')
    .option('--reason <text>', 'why, recorded with the transaction')
    .option('--reference <text>', 'same as --reason (an invoice number, a ticket)')
    .option('--json', 'print JSON')
    .action(movement('credit'));

  cmd
    .command('debit NAME AMOUNT')
    .description('take credit away: AMOUNT positive; refused below the credit limit (below zero without one)')
    .option('--reason <text>', 'why, recorded with the transaction')
    .option('--reference <text>', 'same as --reason (an invoice number, a ticket)')
    .option('--json', 'print JSON')
    .action(movement('debit'));

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
    .option('--credit-limit <amount>', 'how far below zero debits may take the balance (account currency); 0: no overdraft')
    .option('--number-validation <policy>', 'recipient check: strict (valid for its country), possible (a possible length for its calling code), off (digits), or "default"')
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
      if (o.numberValidation !== undefined) {
        const policy = String(o.numberValidation);
        if (policy !== 'default' && !(NUMBER_VALIDATIONS as readonly string[]).includes(policy)) {
          throw new Error(`--number-validation must be ${NUMBER_VALIDATIONS.join(', ')} or "default", got ${policy}`);
        }
        body.numberValidation = policy === 'default' ? null : policy;
      }
      if (o.creditLimit !== undefined) {
        try {
          parseAmount(o.creditLimit, { allowZero: true });
        } catch (err) {
          if (!(err instanceof AmountError)) throw err;
          throw new CliError(`INVALID_AMOUNT: --credit-limit ${err.message}`);
        }
        // Sent as typed; the daemon checks the account currency's decimal places.
        body.creditLimit = String(o.creditLimit).trim();
      }
      if (!Object.keys(body).length) throw new Error('nothing to change: give --max-tps, --country, --allowed-recipients, --credit-limit or --number-validation');
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
