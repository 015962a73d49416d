import { Command, InvalidArgumentError, Option } from 'commander';
import type { CliContext } from '../../cli/cli-context.js';
import type { PortRange } from '../../rtp/index.js';
import { NUMBER_PLAN_TEXT } from './number-plan.js';
import type { SimVoiceCallView } from './sim-admin-routes.js';
import { simVoiceCallView } from './sim-admin-routes.js';
import type { SimVoiceCall } from './sim-voice-call.js';
import { VoiceTrunkSimulator, type SimTransport } from './trunk-simulator.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port (0-65535)');
  return n;
}

function portRange(value: string): PortRange {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(value);
  const range = m ? { min: Number(m[1]), max: Number(m[2]) } : undefined;
  if (!range || range.min < 1024 || range.max > 65535 || range.max - range.min < 3) throw new InvalidArgumentError('expected MIN-MAX within 1024-65535, e.g. 30000-30999');
  return range;
}

/** One line per call: when, who, what happened, what was heard. */
function callLine(c: SimVoiceCallView): string {
  const heard = c.audio ? ` heard ${c.audio.seconds.toFixed(1)} s (${Math.round(c.audio.nonSilentShare * 100)}% sound, ${Math.round(c.audio.dominantFrequencyHz)} Hz)` : '';
  const digits = c.digitsReceived ? ` digits ${c.digitsReceived}` : '';
  const by = c.endedBy ? ` by ${c.endedBy}` : '';
  return `${c.startedAt} #${c.id} ${c.transport} ${c.from} -> ${c.to} ${c.state}${by} (${c.status ?? '-'}${c.codec ? ` ${c.codec}` : ''})${digits}${heard}\n`;
}

interface RunOptions {
  host: string;
  port: number;
  transport: SimTransport;
  mediaPorts: PortRange;
  user?: string;
  password?: string;
  realm: string;
}

/** `ferry sim voice` (run): a standalone SIP trunk simulator; `ferry sim voice calls`: what the daemon's embedded one saw. */
export function voiceSimulatorCli(cmd: Command, ctx: CliContext): void {
  const run = new Command('run')
    .description('a standalone SIP trunk simulator on loopback: answers, rings, refuses or hangs up by the called number, records what it hears')
    .option('--host <address>', 'address for SIP and RTP', '127.0.0.1')
    .option('--port <port>', 'SIP port, UDP and TCP (0: a free one)', port, 5060)
    .addOption(new Option('--transport <kind>', 'udp, tcp or both').choices(['udp', 'tcp', 'both']).default('both'))
    .option('--media-ports <min-max>', 'RTP port range', portRange, { min: 30000, max: 30999 })
    .option('--user <name>', 'challenge every INVITE (digest) and accept this user')
    .option('--password <pw>', "the user's password")
    .option('--realm <realm>', 'digest realm', 'ferry-trunk-sim')
    .action(async (o: RunOptions) => {
      if ((o.user === undefined) !== (o.password === undefined)) throw ctx.error('--user and --password go together');
      const sim = new VoiceTrunkSimulator();
      await sim.start({
        host: o.host,
        port: o.port,
        transport: o.transport,
        mediaPortRange: o.mediaPorts,
        auth: o.user !== undefined ? { realm: o.realm, users: { [o.user]: o.password! } } : undefined,
      });
      const auth = o.user !== undefined ? `digest, user ${o.user}, realm ${o.realm}` : 'none';
      process.stdout.write(
        `SIP trunk simulator    ${sim.url} (${o.transport === 'both' ? 'UDP and TCP' : o.transport.toUpperCase()})\n` +
          `authentication         ${auth}\nRTP ports              ${o.mediaPorts.min}-${o.mediaPorts.max}\n\n` +
          `number plan (by the called number's last digits):\n${NUMBER_PLAN_TEXT}\n\ncalls follow as they end; Ctrl-C stops.\n`,
      );
      // Printed once each, when complete (a terminal state).
      const printed = new WeakSet<SimVoiceCall>();
      const timer = setInterval(() => {
        for (const c of sim.calls()) {
          if (printed.has(c) || c.state === 'ringing' || c.state === 'answered') continue;
          printed.add(c);
          process.stdout.write(callLine(simVoiceCallView(c)));
        }
      }, 500);
      await new Promise<void>((done) => {
        const stop = () => done();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      clearInterval(timer);
      await sim.stop();
    });
  cmd.addCommand(run, { isDefault: true });
  cmd.addCommand(
    new Command('calls')
      .description("the running daemon's embedded trunk simulator: its calls, newest first")
      .option('--limit <n>', 'at most this many (1-200)', (v) => Number(v), 20)
      .option('--json', 'print JSON')
      .action(async function (this: Command, o: { limit: number; json?: boolean }) {
        const data = await ctx.admin(this).call<{ calls: SimVoiceCallView[] }>('GET', `/admin/sim/voice/calls?limit=${o.limit}`);
        if (o.json) ctx.print(data.calls, true);
        else if (!data.calls.length) process.stdout.write('(none)\n');
        else for (const c of data.calls) process.stdout.write(callLine(c));
      }),
  );
}
