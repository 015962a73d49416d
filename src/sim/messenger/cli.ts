import { Command, InvalidArgumentError } from 'commander';
import pino from 'pino';
import type { CliContext } from '../../cli/cli-context.js';
import { MessengerSimulator } from './messenger-simulator.js';

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

function list(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

interface Options {
  port: number;
  accessToken: string;
  appSecret: string;
  phoneNumberId: string;
  businessAccountId: string;
  webhookUrl?: string;
  statusDelayMs: number;
  duplicates?: boolean;
  reorder?: boolean;
  offPlatform?: string[];
}

/**
 * `ferry sim messenger` (`ferry sim messenger run`): a standalone messenger platform simulator; `ferry sim messenger
 * reply` plays its test user.
 */
export function messengerSimulatorCli(cmd: Command, ctx: CliContext): void {
  cmd.addCommand(simMessengerRunCommand(), { isDefault: true });
  cmd.addCommand(simMessengerReplyCommand(ctx));
}

/**
 * `ferry sim messenger reply --from <user> --text …`: the platform's test user writes to a business number, which
 * opens that number's 24-hour window for free-form messages. Against the running daemon's embedded simulator (admin
 * API), or with --sim-url against a standalone one. Returns once Ferry has taken the inbound webhook, so a send right
 * after finds the window open.
 */
function simMessengerReplyCommand(ctx: CliContext): Command {
  const cmd: Command = new Command('reply');
  return cmd
    .description("the simulator's test user writes to a business number (opens its 24-hour window); returns once Ferry took the webhook")
    .requiredOption('--from <number>', "the user's number (international digits)")
    .requiredOption('--text <text>', 'what the user writes')
    .option('--to <phoneNumberId>', 'the business phone number id written to (default: the config number)')
    .option('--name <name>', "the user's profile name")
    .option('--sim-url <url>', 'a standalone simulator (ferry sim messenger) instead of the daemon’s embedded one')
    .option('--access-token <token>', "with --sim-url: the number's access token")
    .option('--json', 'print JSON')
    .action(async (o: { from: string; text: string; to?: string; name?: string; simUrl?: string; accessToken?: string; json?: boolean }) => {
      const body = { from: o.from.replace(/^\+/, ''), text: o.text, ...(o.to ? { to: o.to } : {}), ...(o.name ? { name: o.name } : {}) };
      if (!o.simUrl) {
        ctx.print(await ctx.admin(cmd).call('POST', '/admin/sim/messenger/reply', body), !!o.json);
        return;
      }
      if (!o.accessToken) throw ctx.error('--sim-url needs --access-token (the number’s token the simulator was started with)');
      const res = await fetch(`${o.simUrl.replace(/\/+$/, '')}/_sim/reply`, {
        method: 'POST',
        headers: { authorization: `Bearer ${o.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      }).catch((err: Error) => {
        throw ctx.error(`cannot reach the simulator at ${o.simUrl} (${err.message})`);
      });
      const answer = (await res.json().catch(() => null)) as { delivered?: boolean; error?: { message?: string } } | null;
      if (!res.ok) throw ctx.error(answer?.error?.message ?? (answer?.delivered === false ? 'the simulator could not deliver the webhook to Ferry (--webhook-url)' : `HTTP ${res.status}`));
      ctx.print(answer, !!o.json);
    });
}

function simMessengerRunCommand(): Command {
  return new Command('run')
    .description('run a standalone messenger platform simulator speaking the Cloud API over HTTP on 127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', int, 8765)
    .requiredOption('--access-token <token>', 'the Bearer token sends must carry (messenger.accessToken)')
    .requiredOption('--app-secret <secret>', 'signs the webhooks, X-Hub-Signature-256 (messenger.appSecret)')
    .option('--phone-number-id <id>', 'the business phone number id', '100000000000001')
    .option('--business-account-id <id>', 'the business account id', '200000000000001')
    .option('--webhook-url <url>', "Ferry's webhook, e.g. http://127.0.0.1:8080/v1/messenger/webhook")
    .option('--status-delay-ms <ms>', 'delay before each status webhook', int, 500)
    .option('--duplicates', 'send every status webhook twice')
    .option('--reorder', 'send statuses read, delivered, sent')
    .option('--off-platform <number>', 'a number that is not on the platform (repeatable)', list)
    .action(async (o: Options) => {
      const log = pino({ name: 'ferry-sim-messenger' });
      const sim = new MessengerSimulator({
        accessToken: o.accessToken,
        appSecret: o.appSecret,
        phoneNumberId: o.phoneNumberId,
        businessAccountId: o.businessAccountId,
        webhookUrl: () => o.webhookUrl ?? null,
        statusDelayMs: o.statusDelayMs,
        duplicates: o.duplicates ?? false,
        reorder: o.reorder ?? false,
      });
      for (const n of o.offPlatform ?? []) sim.offPlatform.add(n.replace(/\D/g, ''));
      await sim.start(o.port);
      log.info({ url: sim.url, webhookUrl: o.webhookUrl ?? null }, 'messenger simulator listening');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await sim.stop();
    });
}
