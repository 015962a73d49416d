/**
 * Child processes for the bench: spawning with logs to a file, stopping (SIGTERM, then SIGKILL), free loopback
 * ports, and CPU / RSS sampling from /proc.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, type WriteStream } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';

export interface ChildOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  logDir: string;
  /** Open an IPC channel (the load generators report through it). */
  ipc?: boolean;
  /** Called with every stdout line (the simulator's JSON log lines, for its port and stats). */
  onStdoutLine?: (line: string) => void;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One spawned process: its pid, its log file, the last lines it wrote, and its exit. */
export class Child {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly logFile: string;
  readonly exited: Promise<Exit>;
  exit: Exit | undefined;
  private readonly tail: string[] = [];
  private readonly log: WriteStream;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    opts: ChildOptions,
  ) {
    this.logFile = join(opts.logDir, `${name}.log`);
    this.log = createWriteStream(this.logFile);
    this.proc = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
      detached: false,
    });
    if (this.proc.pid === undefined) throw new Error(`${name}: could not spawn ${command}`);
    this.pid = this.proc.pid;
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
    this.exited.then(() => this.log.end(), () => undefined);
    this.proc.once('error', (err) => this.remember(`spawn error: ${err.message}`));
    const lines = (onLine?: (line: string) => void) => {
      let buf = '';
      return (chunk: Buffer) => {
        this.log.write(chunk);
        buf += chunk.toString('utf8');
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          this.remember(line);
          onLine?.(line);
        }
        if (buf.length > 65_536) buf = buf.slice(-65_536); // a runaway line cannot grow memory
      };
    };
    this.proc.stdout!.on('data', lines(opts.onStdoutLine));
    this.proc.stderr!.on('data', lines());
  }

  private remember(line: string): void {
    this.tail.push(line);
    if (this.tail.length > 40) this.tail.shift();
  }

  /** The last lines the process wrote (stdout and stderr), for error messages. */
  lastLines(n = 20): string {
    return this.tail.slice(-n).join('\n');
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 10_000): Promise<Exit> {
    if (!this.running) return this.exit!;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (this.running) this.proc.kill('SIGKILL');
    }, graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }

  /** Immediate SIGKILL (the emergency path). */
  kill(): void {
    if (this.running) this.proc.kill('SIGKILL');
  }
}

/** A free TCP port on 127.0.0.1 (asked from the kernel, then released for the child to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

let clockTicks: number | undefined;

/** Clock ticks per second for /proc/<pid>/stat times (getconf CLK_TCK; 100 on Linux almost always). */
export function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** utime + stime of a process in seconds, or undefined when it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm (field 2) may hold spaces and parentheses: split after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); utime is field 14, stime field 15.
    return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond();
  } catch {
    return undefined;
  }
}

/** Resident set size in bytes (VmRSS), or undefined when the process is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Open file descriptors (sockets, files) of a process, or undefined when it is gone. */
export function openFds(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

/** RSS and open descriptors at the start and the end of a window: the soak's "flat memory and handles" check. */
export interface Drift {
  rssStartMB: number;
  rssEndMB: number;
  rssChangePct: number;
  fdsStart: number;
  fdsEnd: number;
}

/** Samples VmRSS of named processes every `intervalMs` and keeps each one's peak; reads CPU on demand. */
export class ProcSampler {
  private readonly pids = new Map<string, number>();
  readonly peakRss: Record<string, number> = {};
  /** One point a second per process: epoch ms, RSS bytes, open descriptors. */
  readonly series: Record<string, Array<{ at: number; rss: number; fds: number }>> = {};
  private lastPoint = 0;
  private timer: NodeJS.Timeout | undefined;

  add(name: string, pid: number): void {
    this.pids.set(name, pid);
    this.sample();
  }

  start(intervalMs = 250): void {
    this.timer ??= setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  sample(): void {
    const now = Date.now();
    const point = now - this.lastPoint >= 1000;
    if (point) this.lastPoint = now;
    for (const [name, pid] of this.pids) {
      const rss = rssBytes(pid);
      if (rss !== undefined && rss > (this.peakRss[name] ?? 0)) this.peakRss[name] = rss;
      if (point && rss !== undefined) (this.series[name] ??= []).push({ at: now, rss, fds: openFds(pid) ?? 0 });
    }
  }

  /**
   * RSS averaged over the first and the last tenth of [from, to] (a single sample is noisy: GC), and descriptors at
   * both ends. Undefined without enough points.
   */
  drift(name: string, from: number, to: number): Drift | undefined {
    const pts = (this.series[name] ?? []).filter((p) => p.at >= from && p.at <= to);
    if (pts.length < 10) return undefined;
    const tenth = Math.max(1, Math.floor(pts.length / 10));
    const avg = (xs: typeof pts) => xs.reduce((s, p) => s + p.rss, 0) / xs.length;
    const start = avg(pts.slice(0, tenth));
    const end = avg(pts.slice(-tenth));
    return {
      rssStartMB: start / 2 ** 20,
      rssEndMB: end / 2 ** 20,
      rssChangePct: ((end - start) / start) * 100,
      fdsStart: pts[0].fds,
      fdsEnd: pts[pts.length - 1].fds,
    };
  }

  /**
   * CPU seconds so far of every process (NaN for one that is gone), plus `postgres` and `redis`: every process of
   * those servers on this machine (the loopback services the daemon uses; 0 when none runs here), and the whole
   * machine's `machine.busy`, `machine.steal` and `machine.all` (see machineCpu).
   */
  cpu(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, pid] of this.pids) out[name] = cpuSeconds(pid) ?? NaN;
    Object.assign(out, serverCpu());
    const m = machineCpu();
    out['machine.busy'] = m?.busy ?? NaN;
    out['machine.steal'] = m?.steal ?? NaN;
    out['machine.all'] = m?.all ?? NaN;
    return out;
  }
}

const SERVERS: Record<string, string> = { postgres: 'postgres', 'redis-server': 'redis' };

/** CPU seconds of the Postgres and Redis server processes (every backend and worker) running on this machine. */
export function serverCpu(): { postgres: number; redis: number } {
  const out = { postgres: 0, redis: 0 };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let comm: string;
    try {
      comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const server = SERVERS[comm];
    if (server) out[server as 'postgres' | 'redis'] += cpuSeconds(Number(entry)) ?? 0;
  }
  return out;
}

/**
 * The whole machine's CPU time so far, in seconds summed over its cores (/proc/stat): `busy` running anything (user,
 * nice, system, interrupts), `steal` taken by the hypervisor for other guests while this one wanted to run, `all`
 * every state including idle and I/O wait. Undefined where /proc/stat cannot be read.
 */
export function machineCpu(): { busy: number; steal: number; all: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    // cpu user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already inside user.
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const hz = clockTicksPerSecond();
    const busy = user + nice + system + irq + softirq;
    const all = busy + idle + iowait + (steal || 0);
    return Number.isFinite(all) ? { busy: busy / hz, steal: (steal || 0) / hz, all: all / hz } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How busy the machine was over a `cpuDelta` window: cores in use on average, and the share of its CPU time that the
 * hypervisor gave to other guests (a noisy neighbour makes every figure of the run lower). Undefined without
 * /proc/stat.
 */
export function machineLoad(delta: Record<string, number>, cores: number): { coresBusy: number; busyPct: number; stealPct: number } | undefined {
  const all = delta['machine.all'];
  if (!(all > 0)) return undefined;
  return { coresBusy: (delta['machine.busy'] / all) * cores, busyPct: (delta['machine.busy'] / all) * 100, stealPct: (delta['machine.steal'] / all) * 100 };
}

/** CPU seconds spent between two `ProcSampler.cpu()` snapshots, per process. */
export function cpuDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of Object.keys(before)) out[name] = (after[name] ?? NaN) - before[name];
  return out;
}
