import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { dial, has, startCaller, until } from './helpers.js';
import type { VoiceTrunkSimulator } from '../../../src/sim/voice/trunk-simulator.js';

// Media ports of this file's own.
const CALLER_PORTS = { min: 42800, max: 42899 };
const SIM_PORTS = '42900-42999';

t.test('ferry sim voice run: standalone, challenged, prints its address, the plan and each call; stops on SIGINT', async (t) => {
  const script = fileURLToPath(new URL('./fixtures/run-voice-sim-cli.ts', import.meta.url));
  const register = fileURLToPath(new URL('../../helpers/ts-register.mjs', import.meta.url));
  const child = spawn(process.execPath, ['--import', register, script, 'run', '--port', '0', '--transport', 'udp', '--media-ports', SIM_PORTS, '--user', 'ferry', '--password', 'pw'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await until(() => /Ctrl-C stops/.test(out), 30_000, 'the simulator header');
  const m = /SIP trunk simulator +sip:127\.0\.0\.1:(\d+) \(udp\)/i.exec(out);
  t.ok(m, 'its SIP address');
  t.match(out, /authentication +digest, user ferry/);
  t.match(out, /…486 busy/, 'the number plan');

  const caller = await startCaller(t, CALLER_PORTS);
  const sim = { port: Number(m![1]) } as VoiceTrunkSimulator; // dial() needs only the port
  const d = await dial(caller, sim, '+233201234567', { credentials: { username: 'ferry', password: 'pw' } });
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  d.call.bye();
  await until(() => /#1 udp \+233200000001 -> \+233201234567 ended by caller \(200 PCMU\)/.test(out), 5000, 'the call line');
  t.match(out, /ended by caller \(200 PCMU\)/, 'the finished call printed');
  await d.media.stop();

  const code = await new Promise<number | null>((resolve) => {
    child.once('exit', (c) => resolve(c));
    child.kill('SIGINT');
  });
  t.equal(code, 0, 'exits 0 after SIGINT');
});
