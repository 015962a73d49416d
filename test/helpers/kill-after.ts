import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { childEnv } from './child-env.js';
import { recordCost } from './costs.js';

export interface KilledRun {
  /** What followed `ok ` on each acknowledgement line the child printed, in order. */
  acked: string[];
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Runs a TypeScript child (through tsx) that prints `ok <id>` for each acknowledged unit of work,
 * and SIGKILLs it once `killAfter` acknowledgements were seen (or after `timeoutMs` at the latest):
 * the crash half of every "nothing acknowledged is lost" test.
 */
export async function runUntilKilled(script: string, env: Record<string, string>, killAfter: number, timeoutMs = 60_000): Promise<KilledRun> {
  const spawned = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', script], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  child.on('exit', () => recordCost('tsx-child', performance.now() - spawned));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const acked: string[] = [];
  let buf = '';
  let killed = false;
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith('ok ')) acked.push(line.slice(3));
      if (acked.length >= killAfter && !killed) {
        killed = true;
        child.kill('SIGKILL');
      }
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const signal = await exited;
  clearTimeout(timer);
  return { acked, signal, stderr };
}
