import { Command, InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import type { CliContext } from '../../cli/cli-context.js';
import { serveUntilSignal } from '../smpp/serve-until-signal.js';
import type { SimMailMessage } from './sim-mail-routes.js';
import { MailSimulator } from './simulator.js';

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

/** `ferry sim mail messages`: the running daemon's embedded mail simulator's mailbox, newest first (as `ferry sim messages` for SMS). */
function simMailMessagesCommand(ctx: CliContext): Command {
  return new Command('messages')
    .description("what the running daemon's embedded mail simulator received, newest first (read a mail without a mailbox)")
    .option('--to <address>', 'only mail to this address')
    .option('--limit <n>', 'at most this many (1-500)', int, 20)
    .option('--wait <seconds>', 'wait up to this long for at least one mail (scripts: the mail is sent a moment after the API answers)', int, 0)
    .option('--json', 'print JSON')
    .action(async (o: { to?: string; limit: number; wait: number; json?: boolean }, cmd: Command) => {
      const q = new URLSearchParams({ limit: String(o.limit) });
      if (o.to) q.set('to', o.to);
      const admin = ctx.admin(cmd);
      const until = Date.now() + o.wait * 1000;
      let data = await admin.call<{ messages: SimMailMessage[] }>('GET', `/admin/sim/mail/messages?${q}`);
      while (!data.messages.length && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        data = await admin.call<{ messages: SimMailMessage[] }>('GET', `/admin/sim/mail/messages?${q}`);
      }
      if (!data.messages.length && o.wait > 0) throw ctx.error(`no mail${o.to ? ` to ${o.to}` : ''} reached the mail simulator within ${o.wait} s`);
      if (o.json) return ctx.print(data.messages, true);
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
export function mailSimulatorCli(mail: Command, ctx: CliContext): void {
  mail.addCommand(simMailRunCommand(), { isDefault: true });
  mail.addCommand(simMailMessagesCommand(ctx));
}

/**
 * `ferry sim mail`: a standalone receiving mail server (SMTP, smtp-server) that accepts, defers (`defer`), greylists
 * (`greylist`), rejects (`reject`) or bounces later (`bounce`, a real DSN) and sends complaints (`complain`, ARF) by
 * the recipient's local part, mailing reports to Ferry's inbound listener. Each message received is a JSON line.
 */
function simMailRunCommand(): Command {
  return new Command('run')
    .description('run a standalone mail server simulator (SMTP): accept / defer / greylist / reject / bounce / complain by address pattern')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', int, 2525)
    .option('--report-host <host>', "where DSN and ARF reports go (Ferry's email.inbound listener)", '127.0.0.1')
    .option('--report-port <port>', 'its port (0: send no reports)', int, 0)
    .option('--report-delay-ms <ms>', 'delay before a report is mailed', int, 50)
    .option('--quiet', 'do not print each message received')
    .option('--stats-interval-ms <ms>', 'log counters this often (0 never)', int, 10_000)
    .option('--log-level <level>', 'pino log level', 'info')
    .action(async (opts: { host: string; port: number; reportHost: string; reportPort: number; reportDelayMs: number; quiet?: boolean; statsIntervalMs: number; logLevel: string }) => {
      const logger = pino({ name: 'ferry-sim-mail', level: opts.logLevel });
      const sim = new MailSimulator({
        host: opts.host,
        port: opts.port,
        reportDelayMs: opts.reportDelayMs,
        reportTo: () => (opts.reportPort ? { host: opts.reportHost, port: opts.reportPort } : null),
        keep: 1000,
        onMail: opts.quiet ? undefined : (m) => logger.info({ mailFrom: m.mailFrom, rcptTo: m.rcptTo, bytes: m.raw.length, subject: /^Subject: (.*)$/m.exec(m.raw)?.[1] }, 'mail received'),
      });
      const port = await sim.listen();
      logger.info({ host: opts.host, port }, 'mail simulator listening');
      const stats = { get stats() { return { accepted: sim.accepted, rejected: sim.rejected, reportsSent: sim.reportsSent } as never; } };
      await serveUntilSignal(stats, logger, opts.statsIntervalMs);
      await sim.close();
    });
}
