/**
 * The parent ↔ load generator channel. The load generator is its own process (so its CPU is measured apart) and
 * reports phase boundaries through Node's IPC channel; the parent takes CPU snapshots at those moments and
 * answers `go` when the next phase may start.
 */
import { join } from 'node:path';
import { packageRoot } from '../../../src/util/paths.js';
import { Child } from './proc.js';

export interface IpcMessage {
  type: string;
  [k: string]: unknown;
}

/** Parent side: spawns `scripts/bench/harness/<script>` with its config and reads its messages in order. */
export class LoadGen {
  readonly child: Child;
  private readonly inbox: IpcMessage[] = [];
  private waiter: (() => void) | undefined;

  constructor(script: string, config: unknown, logDir: string) {
    this.child = new Child('loadgen', process.execPath, ['--import', 'tsx', join(packageRoot, 'scripts/bench/harness', script)], {
      cwd: packageRoot,
      env: { ...process.env, FERRY_BENCH_LOADGEN_CONFIG: JSON.stringify(config) },
      logDir,
      ipc: true,
    });
    this.child.proc.on('message', (m: IpcMessage) => {
      this.inbox.push(m);
      this.waiter?.();
    });
    this.child.exited.then(() => this.waiter?.(), () => undefined);
  }

  get pid(): number {
    return this.child.pid;
  }

  /** The next message, which must be of `type` (an `error` message or an exit fails with the generator's words). */
  async next<T extends IpcMessage = IpcMessage>(type: string, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const m = this.inbox.shift();
      if (m) {
        if (m.type === 'error') throw new Error(`load generator: ${String(m.message)}`);
        if (m.type !== type) throw new Error(`load generator sent ${m.type}, expected ${type}`);
        return m as T;
      }
      if (!this.child.running) throw new Error(`load generator exited (${this.child.exit?.code ?? this.child.exit?.signal}) before ${type}:\n${this.child.lastLines()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`load generator: no ${type} within ${Math.round(timeoutMs / 1000)} s`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 1000));
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = undefined;
    }
  }

  /** Lets the generator exit (after its CPU time was read), SIGTERM/SIGKILL if it lingers. */
  async finish(): Promise<void> {
    this.send({ type: 'exit' });
    const timer = setTimeout(() => void this.child.stop(5000), 15_000);
    await this.child.exited;
    clearTimeout(timer);
  }

  send(m: IpcMessage): void {
    if (this.child.running && this.child.proc.connected) this.child.proc.send(m);
  }
}

/** Child side: the config the parent passed. */
export function loadgenConfig<T>(): T {
  const raw = process.env.FERRY_BENCH_LOADGEN_CONFIG;
  if (!raw) throw new Error('run by the bench harness only (FERRY_BENCH_LOADGEN_CONFIG is unset)');
  return JSON.parse(raw) as T;
}

/** Child side: sends one message to the parent. */
export function report(m: IpcMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(m, undefined, {}, () => resolve());
  });
}

// Child side: the parent's messages, kept until asked for (one may arrive before anyone waits for it).
const fromParent: IpcMessage[] = [];
let parentWaiter: (() => void) | undefined;
let parentGone = false;

/** Child side: waits for the parent's next message of `type` (others are skipped). */
export async function expectFromParent(type: string): Promise<IpcMessage> {
  while (true) {
    const i = fromParent.findIndex((m) => m.type === type);
    if (i >= 0) return fromParent.splice(i, 1)[0];
    if (parentGone) throw new Error('parent went away');
    await new Promise<void>((resolve) => (parentWaiter = resolve));
  }
}

/** Child side: runs `main`, reporting a failure as an `error` message; exits when done. */
export function runLoadgen(main: () => Promise<void>): void {
  process.on('message', (m: IpcMessage) => {
    fromParent.push(m);
    parentWaiter?.();
  });
  // The generator must not outlive the parent.
  process.once('disconnect', () => {
    parentGone = true;
    process.exit(3);
  });
  main().then(
    () => process.exit(0),
    async (err: unknown) => {
      process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
      await report({ type: 'error', message: (err as Error)?.message ?? String(err) });
      process.exit(1);
    },
  );
}
