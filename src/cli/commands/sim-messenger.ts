import { Command, InvalidArgumentError } from 'commander';
import pino from 'pino';
import { MessengerSimulator } from '../../sim/messenger/messenger-simulator.js';

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

/** `ferry sim messenger`: a standalone messenger platform simulator (Cloud API over HTTP on loopback) until a signal. */
export function simMessengerCommand(): Command {
  return new Command('messenger')
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
