/**
 * The loopback Redis Cluster of the `cluster` scenario: three masters and three replicas, started and stopped by
 * scripts/ci/redis-cluster.sh (the one the tests and CI use), the masters and their slots, and each master's command
 * counters (INFO commandstats and INFO stats) and CPU time. A detached watchdog stops the cluster should the bench die
 * without doing so (a SIGKILL runs no cleanup).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { packageRoot } from '../../../src/util/paths.js';
import { cpuSeconds } from './proc.js';

const run = promisify(execFile);
const SCRIPT = join(packageRoot, 'scripts/ci/redis-cluster.sh');

/** Commands that are not the daemon's: replication between a master and its replica, and the bench's own INFO. */
export const HOUSEKEEPING = new Set(['info', 'replconf', 'psync', 'sync']);

export interface ClusterMaster {
  port: number;
  pid: number;
  /** Slot ranges as CLUSTER NODES prints them ("0-5460"). */
  slots: string[];
}

/** One master's counters at a moment, or their change over a phase. */
export interface MasterCounters {
  /** calls by command (commandstats' names: evalsha, hget, cluster|slots, …). */
  calls: Record<string, number>;
  /** INFO stats total_commands_processed. */
  processed: number;
  /** The server process's CPU seconds (user + system). */
  cpuSeconds: number;
}

/** The Redis major version, or 0 when redis-server or redis-cli is missing (the script needs both, and `timeout`). */
export function redisMajorVersion(): number {
  const major = (program: string): number => {
    const r = spawnSync(program, ['--version'], { encoding: 'utf8', timeout: 5000 });
    const m = r.status === 0 ? /(?:v=|redis-cli )(\d+)\./.exec(r.stdout) : null;
    return m ? Number(m[1]) : 0;
  };
  const hasTimeout = spawnSync('timeout', ['--version'], { stdio: 'ignore' }).status === 0;
  return hasTimeout ? Math.min(major('redis-server'), major('redis-cli')) : 0;
}

async function script(action: 'start' | 'stop', basePort: number): Promise<string> {
  try {
    return (await run('bash', [SCRIPT, action, String(basePort)], { timeout: 120_000 })).stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`redis-cluster.sh ${action} ${basePort} failed: ${e.stderr?.trim() || e.message}`);
  }
}

export class BenchCluster {
  private stopped = false;

  private constructor(
    readonly basePort: number,
    readonly seedUrl: string,
    private readonly watchdog: ReturnType<typeof spawn>,
  ) {}

  /** A fresh cluster on basePort..basePort+5 (one an earlier, crashed run left there is stopped first). */
  static async start(basePort: number): Promise<BenchCluster> {
    // A constant script; the pid, script path and port are its arguments. Started first, so that it also covers a
    // death while the nodes start.
    const watchdog = spawn(
      'bash',
      ['-c', 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2" stop "$3"', 'ferry-bench-cluster-watchdog', String(process.pid), SCRIPT, String(basePort)],
      { detached: true, stdio: 'ignore' },
    );
    watchdog.unref();
    const cluster = new BenchCluster(basePort, `redis://127.0.0.1:${basePort}`, watchdog);
    try {
      await script('stop', basePort);
      const seed = await script('start', basePort);
      if (seed !== cluster.seedUrl) throw new Error(`redis-cluster.sh start printed ${JSON.stringify(seed)}`);
    } catch (err) {
      await cluster.stop().catch(() => undefined);
      throw err;
    }
    return cluster;
  }

  /** Kills every node and removes their folder. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const w = this.watchdog;
    if (w.pid && w.exitCode === null && w.signalCode === null) {
      try {
        process.kill(-w.pid, 'SIGKILL'); // its process group: bash and the sleep it waits in
      } catch {
        // already gone
      }
    }
    await script('stop', this.basePort);
  }
}

/** One short-lived connection to one node (the daemon's clients are not disturbed). */
async function withNode<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5000, commandTimeout: 10_000 });
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/** The masters serving slots, by port, as the seed node sees them. */
export async function clusterMasters(seedPort: number): Promise<ClusterMaster[]> {
  const text = await withNode(seedPort, (r) => r.call('CLUSTER', 'NODES') as Promise<string>);
  const masters: ClusterMaster[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 9 || !f[2].split(',').includes('master') || f[2].includes('fail')) continue;
    const port = Number(/:(\d+)@/.exec(f[1])?.[1] ?? 0);
    const slots = f.slice(8).filter((s) => !s.startsWith('['));
    if (slots.length) masters.push({ port, pid: 0, slots });
  }
  for (const m of masters) {
    const info = await withNode(m.port, (r) => r.info('server'));
    m.pid = Number(/^process_id:(\d+)/m.exec(info)?.[1] ?? 0);
  }
  return masters.sort((a, b) => a.port - b.port);
}

/** Whether a slot is in ranges like ["0-5460"]. */
export function slotIn(slot: number, ranges: readonly string[]): boolean {
  return ranges.some((r) => {
    const [from, to = from] = r.split('-').map(Number);
    return slot >= from && slot <= to;
  });
}

/** Every master's counters now, read together. */
export async function readCounters(masters: readonly ClusterMaster[]): Promise<MasterCounters[]> {
  return Promise.all(
    masters.map((m) =>
      withNode(m.port, async (r) => {
        const [commandstats, stats] = [await r.info('commandstats'), await r.info('stats')];
        const calls: Record<string, number> = {};
        for (const [, name, n] of commandstats.matchAll(/^cmdstat_(\S+?):calls=(\d+)/gm)) calls[name] = Number(n);
        const processed = Number(/^total_commands_processed:(\d+)/m.exec(stats)?.[1] ?? NaN);
        return { calls, processed, cpuSeconds: cpuSeconds(m.pid) ?? NaN };
      }),
    ),
  );
}

/** What each master did between two readings. */
export function countersSince(before: readonly MasterCounters[], after: readonly MasterCounters[]): MasterCounters[] {
  return after.map((a, i) => {
    const b = before[i];
    const calls: Record<string, number> = {};
    for (const [name, n] of Object.entries(a.calls)) {
      const d = n - (b.calls[name] ?? 0);
      if (d > 0) calls[name] = d;
    }
    return { calls, processed: a.processed - b.processed, cpuSeconds: a.cpuSeconds - b.cpuSeconds };
  });
}

/** The daemon's commands in a change of counters: every call but replication and the bench's own INFO. */
export function workload(c: MasterCounters): number {
  return Object.entries(c.calls).reduce((sum, [name, n]) => (HOUSEKEEPING.has(name) ? sum : sum + n), 0);
}

/** Drops every key on every master (a run's keys span slots, which the harness's DEL by prefix cannot take). */
export async function flushMasters(masters: readonly ClusterMaster[]): Promise<void> {
  await Promise.all(masters.map((m) => withNode(m.port, (r) => r.flushall())));
}
