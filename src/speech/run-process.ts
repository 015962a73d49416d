import { spawn } from 'node:child_process';

export interface ProcessLimits {
  timeoutMs: number;
  maxStdoutBytes: number;
}

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  /** The first 2 KB, for error messages. */
  stderr: string;
  /** Why it was killed, if it was. */
  killedFor?: 'timeout' | 'output';
}

const STDERR_KEPT = 2_048;

/**
 * Runs a program with an argument array (never a shell), writes `input` to its stdin, and collects its stdout up to a
 * cap. Killed with SIGKILL at the deadline or when the output passes the cap. Rejects only when the program cannot
 * be started (the spawn error, e.g. ENOENT); a failing run resolves with its exit code for the caller to judge.
 */
export function runProcess(
  program: string,
  args: readonly string[],
  input: string,
  limits: ProcessLimits,
  env: NodeJS.ProcessEnv,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], env, windowsHide: true });
    const chunks: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let killedFor: ProcessResult['killedFor'];
    const kill = (reason: NonNullable<ProcessResult['killedFor']>): void => {
      killedFor ??= reason;
      child.kill('SIGKILL');
      // A grandchild holding the pipes open must not hold up 'close'.
      child.stdout.destroy();
      child.stderr.destroy();
    };
    const timer = setTimeout(() => kill('timeout'), limits.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      if (killedFor) return;
      stdoutBytes += chunk.length;
      if (stdoutBytes > limits.maxStdoutBytes) kill('output');
      else chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < STDERR_KEPT) stderr += chunk.toString('utf8').slice(0, STDERR_KEPT - stderr.length);
    });
    // EPIPE when the program exits before reading all of stdin: its exit status tells the story.
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(chunks), stderr: stderr.trim(), killedFor });
    });
    child.stdin.end(input, 'utf8');
  });
}
