import { Command, InvalidArgumentError } from 'commander';
import type { SimMailMessage } from '../../admin/sim-mail-routes.js';
import { CliError, adminCall, adminTarget } from '../admin-client.js';
import { print } from '../output.js';

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

/** `ferry sim mail messages`: the running daemon's embedded mail simulator's mailbox, newest first (as `ferry sim messages` for SMS). */
function simMailMessagesCommand(): Command {
  return new Command('messages')
    .description("what the running daemon's embedded mail simulator received, newest first (read a mail without a mailbox)")
    .option('--to <address>', 'only mail to this address')
    .option('--limit <n>', 'at most this many (1-500)', int, 20)
    .option('--wait <seconds>', 'wait up to this long for at least one mail (scripts: the mail is sent a moment after the API answers)', int, 0)
    .option('--json', 'print JSON')
    .action(async (o: { to?: string; limit: number; wait: number; json?: boolean }, cmd: Command) => {
      const q = new URLSearchParams({ limit: String(o.limit) });
      if (o.to) q.set('to', o.to);
      const target = adminTarget(cmd.optsWithGlobals().config);
      const until = Date.now() + o.wait * 1000;
      let data = await adminCall<{ messages: SimMailMessage[] }>(target, 'GET', `/admin/sim/mail/messages?${q}`);
      while (!data.messages.length && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        data = await adminCall<{ messages: SimMailMessage[] }>(target, 'GET', `/admin/sim/mail/messages?${q}`);
      }
      if (!data.messages.length && o.wait > 0) throw new CliError(`no mail${o.to ? ` to ${o.to}` : ''} reached the mail simulator within ${o.wait} s`);
      if (o.json) return print(data.messages, true);
      if (!data.messages.length) return void process.stdout.write('(none)\n');
      for (const m of data.messages) {
        const body = m.text ? '\n' + m.text.split('\n').map((l) => `  ${l}`).join('\n') : '';
        process.stdout.write(`${m.receivedAt}  ${m.from} -> ${m.to.join(', ')}\n  Subject: ${m.subject}${body}\n`);
      }
    });
}

/**
 * `ferry sim mail`: `run` (the default, so `ferry sim mail --port 2525` still runs a standalone mail server) and
 * `messages`, the embedded one's mailbox.
 */
export function simMailGroup(run: Command): Command {
  const mail = new Command('mail').description('mail simulator (SMTP): run one standalone, or read the running daemon’s embedded one (messages)');
  mail.addCommand(run.name('run'), { isDefault: true });
  mail.addCommand(simMailMessagesCommand());
  return mail;
}
