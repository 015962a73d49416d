import { createInterface } from 'node:readline/promises';
import { Command } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';
import { AfricasTalkingSimulator } from '../../sim/ussd/africastalking-sim.js';
import type { PhoneScreen } from '../../sim/ussd/ussd-phone.js';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

interface DialOptions {
  phone: string;
  input?: string[];
  callback?: string;
  events?: string;
  json?: boolean;
}

/** The next input: scripted ones first; then, on a terminal, typed ones; else the session is left (hung up). */
async function nextInput(scripted: string[], rl: ReturnType<typeof createInterface> | null): Promise<string | null> {
  if (scripted.length) return scripted.shift()!;
  if (!rl) return null;
  const line = await rl.question('> ').catch(() => null);
  return line === null ? null : line.trim();
}

/**
 * `ferry ussd dial '*384*1#' --phone 233…`: a USSD handset. By default it dials through the running daemon's
 * embedded SMSC simulator, over SMPP into Ferry like a carrier's session; with --callback it plays Africa's Talking
 * against an aggregator endpoint instead. Screens are printed; inputs come from --input (repeatable, in order), then
 * from the terminal when there is one. An empty line or end of input hangs up.
 */
export function ussdCli(program: Command, ctx: CliContext): void {
  const cmd = new Command('ussd').description('USSD tools: dial a service code as a handset');
  cmd.addCommand(dialCommand(new Command('dial'), ctx));
  ctx.inspect(cmd, {
    path: '/admin/ussd/sessions',
    what: 'USSD sessions (show: with the transcript)',
    columns: ['id', 'accountId', 'status', 'endStatus', 'serviceCode', 'phone', 'channel', 'hops', 'createdAt'],
    statuses: 'active, ended, or how it ended: Success, Incomplete, Failed',
  });
  program.addCommand(cmd);
}

/** The handset command, as `ferry ussd dial` and as the USSD simulator `ferry sim ussd` (the same command). */
export function dialCommand(dial: Command, ctx: CliContext): Command {
  return dial
    .description("dial a USSD code as a handset (through the daemon's embedded SMSC simulator over SMPP, or as Africa's Talking with --callback)")
    .argument('<code>', "the code, e.g. '*384*1#'")
    .requiredOption('--phone <number>', 'the calling number, international digits')
    .option('--input <text>', 'an answer to the next screen (repeatable, in order)', collect)
    .option('--callback <url>', "play Africa's Talking: POST each hop to this callback URL (with its ?key=)")
    .option('--events <url>', "with --callback: the end-of-session notice URL (…/events?key=)")
    .option('--json', 'print every screen as a JSON line')
    .action(async (code: string, o: DialOptions) => {
      const scripted = [...(o.input ?? [])];
      const rl = process.stdin.isTTY && !o.json ? createInterface({ input: process.stdin, output: process.stdout }) : null;
      const show = (s: { text: string; end: boolean }) => {
        if (o.json) process.stdout.write(JSON.stringify(s) + '\n');
        else process.stdout.write(`\n${s.text}\n${s.end ? '[session ended]\n' : ''}`);
      };
      try {
        if (o.callback) {
          const at = new AfricasTalkingSimulator({ callbackUrl: o.callback, eventsUrl: o.events });
          const session = at.session(o.phone.replace(/^\+/, ''), code);
          let s = await session.hop();
          show(s);
          while (!s.end) {
            const input = await nextInput(scripted, rl);
            if (input === null || input === '') return void (await session.abandon());
            s = await session.hop(input);
            show(s);
          }
          return;
        }
        const admin = ctx.admin(dial);
        const phone = o.phone.replace(/^\+/, '');
        let s = await admin.call<PhoneScreen>('POST', '/admin/sim/ussd', { phone, code });
        show(s);
        while (!s.end) {
          const input = await nextInput(scripted, rl);
          if (input === null || input === '') {
            await admin.call('POST', '/admin/sim/ussd', { phone, session: s.session, release: true });
            return;
          }
          s = await admin.call<PhoneScreen>('POST', '/admin/sim/ussd', { phone, session: s.session, input });
          show(s);
        }
      } catch (err) {
        if (ctx.isError(err)) throw err;
        throw ctx.error(`ussd dial: ${(err as Error).message}`);
      } finally {
        rl?.close();
      }
    });
}
