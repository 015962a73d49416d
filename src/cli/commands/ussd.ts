import { createInterface } from 'node:readline/promises';
import { Command } from 'commander';
import { AfricasTalkingSimulator } from '../../sim/ussd/africastalking-sim.js';
import type { PhoneScreen } from '../../sim/ussd/ussd-phone.js';
import { CliError, adminCall, adminTarget } from '../admin-client.js';
import { addUssdInspect } from './inspect.js';

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
export function ussdCommand(): Command {
  const cmd = new Command('ussd').description('USSD tools: dial a service code as a handset');
  cmd.addCommand(dialCommand('dial'));
  addUssdInspect(cmd);
  return cmd;
}

/** The program's --config, from whichever command this one hangs under (`ferry ussd dial`, `ferry sim ussd`). */
function rootConfig(c: Command): string | undefined {
  let root = c;
  while (root.parent) root = root.parent;
  return root.opts().config as string | undefined;
}

/** The handset command, under `ferry ussd dial` and `ferry sim ussd`. */
export function dialCommand(name: string): Command {
  const dial: Command = new Command(name);
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
        const target = adminTarget(rootConfig(dial));
        const phone = o.phone.replace(/^\+/, '');
        let s = await adminCall<PhoneScreen>(target, 'POST', '/admin/sim/ussd', { phone, code });
        show(s);
        while (!s.end) {
          const input = await nextInput(scripted, rl);
          if (input === null || input === '') {
            await adminCall(target, 'POST', '/admin/sim/ussd', { phone, session: s.session, release: true });
            return;
          }
          s = await adminCall<PhoneScreen>(target, 'POST', '/admin/sim/ussd', { phone, session: s.session, input });
          show(s);
        }
      } catch (err) {
        if (err instanceof CliError) throw err;
        throw new CliError(`ussd dial: ${(err as Error).message}`);
      } finally {
        rl?.close();
      }
    });
}
