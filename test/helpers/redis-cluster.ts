// A real Redis Cluster for a test: six redis-server processes on 127.0.0.1 (three masters, three replicas), started
// and stopped by scripts/ci/redis-cluster.sh (the one CI uses), plus what a failover test needs: kill a master, wait
// for its replica to take over, bring the killed node back. Every wait is bounded; nothing here builds shell strings.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'scripts', 'ci', 'redis-cluster.sh');
const NODES = 6;
const SLOTS = 16384;
/** How long a failover or a rejoin may take; with cluster-node-timeout 2000 it takes a few seconds. */
const WAIT_MS = 30_000;
const POLL_MS = 200;

export interface ClusterNode {
  port: number;
  pid: number;
}

export interface ClusterReplica extends ClusterNode {
  /** The port of the master it replicates. */
  masterPort: number;
}

export interface Failover {
  /** The port of the master that was killed. */
  killed: number;
  /** The port of the replica that took over its slots. */
  promoted: number;
  /** From the SIGKILL until every live node reported cluster_state:ok with the replica promoted. */
  seconds: number;
}

export interface RedisClusterHarness {
  /** Every node as a comma-separated list of redis:// URLs (a client can start from any that answers). */
  seeds: string;
  ports: number[];
  /** The masters serving slots, by port. */
  masters(): Promise<ClusterNode[]>;
  /** The replicas, by port. */
  replicas(): Promise<ClusterReplica[]>;
  /** SIGKILLs a master (the lowest-port one by default) and waits until its replica serves its slots. */
  killMaster(port?: number): Promise<Failover>;
  /** Starts a killed node again and waits until it is a replica and the cluster is healthy (`redis-cluster.sh status`). */
  restartNode(port: number): Promise<void>;
  /** Kills every node and removes their folder. Idempotent. */
  stop(): Promise<void>;
}

let available: boolean | undefined;

/** Whether redis-server and redis-cli are installed and new enough for `redis-cli --cluster create` (Redis 5+). */
export function redisClusterAvailable(): boolean {
  if (available === undefined) {
    const major = (program: string): number => {
      const r = spawnSync(program, ['--version'], { encoding: 'utf8', timeout: 5000 });
      const m = r.status === 0 ? /(?:v=|redis-cli )(\d+)\./.exec(r.stdout) : null;
      return m ? Number(m[1]) : 0;
    };
    available = major('redis-server') >= 5 && major('redis-cli') >= 5 && spawnSync('timeout', ['--version'], { stdio: 'ignore' }).status === 0;
  }
  return available;
}

/** For tap's `skip` option: false when the cluster can run, else the one-line reason. */
export function redisClusterSkip(): false | string {
  return redisClusterAvailable() ? false : 'needs redis-server and redis-cli 5+ with cluster support (Debian redis-server)';
}

interface NodeLine {
  id: string;
  port: number;
  flags: string[];
  masterId: string | null;
  connected: boolean;
  /** Slot ranges as CLUSTER NODES prints them (importing/migrating entries left out). */
  slots: string[];
}

/** One redis-cli command to one node; null when it does not answer or answers with an error. */
async function cli(port: number, ...args: string[]): Promise<string | null> {
  try {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 5000 });
    // redis-cli exits 0 on an error reply too.
    return /^(ERR|CLUSTERDOWN|LOADING|MASTERDOWN)\b/.test(stdout) ? null : stdout.replace(/\r/g, '');
  } catch {
    return null;
  }
}

function parseNodes(text: string): NodeLine[] {
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const f = l.trim().split(/\s+/);
      return {
        id: f[0],
        port: Number(/:(\d+)@/.exec(f[1])?.[1] ?? 0),
        flags: f[2].split(','),
        masterId: f[3] === '-' ? null : f[3],
        connected: f[7] === 'connected',
        slots: f.slice(8).filter((s) => !s.startsWith('[')),
      };
    });
}

const failed = (n: NodeLine): boolean => n.flags.includes('fail') || n.flags.includes('fail?');
const servesSlots = (n: NodeLine): boolean => n.flags.includes('master') && !failed(n) && n.slots.length > 0;

function slotCount(ranges: string[]): number {
  return ranges.reduce((sum, r) => {
    const [from, to = from] = r.split('-').map(Number);
    return sum + to - from + 1;
  }, 0);
}

async function pidOf(port: number): Promise<number> {
  const info = await cli(port, 'INFO', 'server');
  const m = info && /^process_id:(\d+)$/m.exec(info);
  if (!m) throw new Error(`redis-cluster: 127.0.0.1:${port} does not answer INFO server`);
  return Number(m[1]);
}

/** Polls `check` until it returns a value (not a string); a string is why not yet, reported when time runs out. */
async function waitUntil<T>(what: string, check: () => Promise<T | string>, limitMs = WAIT_MS): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const r = await check();
    if (typeof r !== 'string') return r;
    if (Date.now() > deadline) throw new Error(`redis-cluster: ${what} not reached within ${limitMs / 1000} s: ${r}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Starts a fresh cluster on basePort..basePort+5 (cluster bus on port+10000): a cluster a crashed earlier run left on
 * those ports is stopped first, so each test starts from three masters with one replica each. A detached watchdog
 * stops the cluster should this process die without calling stop() (a tap timeout's SIGKILL runs no teardown).
 */
export async function startRedisCluster({ basePort }: { basePort: number }): Promise<RedisClusterHarness> {
  const ports = Array.from({ length: NODES }, (_, i) => basePort + i);
  const root = `/tmp/ferry-redis-cluster-${basePort}`;
  const script = async (action: 'start' | 'stop' | 'status'): Promise<string> => {
    try {
      return (await run('bash', [SCRIPT, action, String(basePort)], { timeout: 120_000 })).stdout.trim();
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`redis-cluster.sh ${action} ${basePort} failed: ${e.stderr?.trim() || e.message}`);
    }
  };
  // A constant script; the pid, script path and port are its arguments. Started first, so that it also covers a death
  // while the script starts the nodes.
  const watchdog = spawn(
    'bash',
    ['-c', 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2" stop "$3"', 'ferry-redis-cluster-watchdog', String(process.pid), SCRIPT, String(basePort)],
    { detached: true, stdio: 'ignore' },
  );
  watchdog.unref();
  const stopWatchdog = (): void => {
    // Its whole process group (it was started detached): bash and the sleep it waits in.
    if (watchdog.exitCode !== null || watchdog.signalCode !== null || !watchdog.pid) return;
    try {
      process.kill(-watchdog.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  try {
    await script('stop');
    const seed = await script('start');
    if (seed !== `redis://127.0.0.1:${basePort}`) throw new Error(`redis-cluster.sh start printed ${JSON.stringify(seed)}`);
  } catch (err) {
    stopWatchdog();
    await script('stop').catch(() => undefined);
    throw err;
  }

  const live = async (): Promise<number[]> => (await Promise.all(ports.map(async (p) => ((await cli(p, 'PING'))?.trim() === 'PONG' ? p : 0)))).filter(Boolean);

  /** The topology as the first answering node sees it. */
  const view = async (): Promise<NodeLine[]> => {
    for (const p of ports) {
      const text = await cli(p, 'CLUSTER', 'NODES');
      if (text) return parseNodes(text);
    }
    throw new Error(`redis-cluster: no node on ${basePort}..${basePort + NODES - 1} answers`);
  };

  /** Why the live nodes are not all ok with every slot served; null when they are. */
  const notOk = async (nodes: number[]): Promise<string | null> => {
    for (const p of nodes) {
      const info = await cli(p, 'CLUSTER', 'INFO');
      if (!info) return `127.0.0.1:${p} does not answer CLUSTER INFO`;
      if (!/^cluster_state:ok$/m.test(info)) return `127.0.0.1:${p} is not cluster_state:ok`;
      if (!new RegExp(`^cluster_slots_ok:${SLOTS}$`, 'm').test(info)) return `127.0.0.1:${p} does not see all ${SLOTS} slots served`;
    }
    return null;
  };

  const masters = async (): Promise<ClusterNode[]> => {
    const nodes = (await view()).filter(servesSlots).sort((a, b) => a.port - b.port);
    return Promise.all(nodes.map(async (n) => ({ port: n.port, pid: await pidOf(n.port) })));
  };

  const replicas = async (): Promise<ClusterReplica[]> => {
    const nodes = await view();
    const portOf = new Map(nodes.map((n) => [n.id, n.port]));
    const list = nodes.filter((n) => n.flags.includes('slave') && !failed(n)).sort((a, b) => a.port - b.port);
    return Promise.all(list.map(async (n) => ({ port: n.port, pid: await pidOf(n.port), masterPort: portOf.get(n.masterId ?? '') ?? 0 })));
  };

  const killMaster = async (port?: number): Promise<Failover> => {
    const nodes = await view();
    const master = port === undefined ? nodes.filter(servesSlots).sort((a, b) => a.port - b.port)[0] : nodes.find((n) => n.port === port);
    if (!master || !servesSlots(master)) throw new Error(`redis-cluster: ${port ?? 'no node'} is not a master serving slots`);
    const candidates = nodes.filter((n) => n.masterId === master.id && !failed(n)).map((n) => n.port);
    if (!candidates.length) throw new Error(`redis-cluster: master ${master.port} has no replica to take over`);
    const slots = slotCount(master.slots);
    const pid = await pidOf(master.port);
    const killedAt = performance.now();
    process.kill(pid, 'SIGKILL');
    const promoted = await waitUntil(`a replica of ${master.port} serving its slots`, async () => {
      const up = await live();
      if (up.includes(master.port)) return `127.0.0.1:${master.port} still answers`;
      if (!up.length) return 'no node answers';
      const why = await notOk(up);
      if (why) return why;
      // Every live node must agree, so that a client refreshing its slot map from any of them finds the new master.
      let promoted = 0;
      for (const p of up) {
        const text = await cli(p, 'CLUSTER', 'NODES');
        const taken = text ? parseNodes(text).find((n) => candidates.includes(n.port) && servesSlots(n) && slotCount(n.slots) === slots) : undefined;
        if (!taken) return `127.0.0.1:${p} does not yet see a replica of ${master.port} serving its ${slots} slots`;
        if (promoted && taken.port !== promoted) return `the nodes disagree on the new master (${promoted}, ${taken.port})`;
        promoted = taken.port;
      }
      return promoted;
    });
    return { killed: master.port, promoted, seconds: Math.round((performance.now() - killedAt) / 100) / 10 };
  };

  const restartNode = async (port: number): Promise<void> => {
    const conf = join(root, String(port), 'redis.conf');
    if (!existsSync(conf)) throw new Error(`redis-cluster: ${port} is not a node of the cluster at ${basePort}`);
    if ((await live()).includes(port)) throw new Error(`redis-cluster: 127.0.0.1:${port} is running`);
    // The node's own config (daemonize yes): redis-server forks and returns; nodes.conf gives it back its identity.
    await run('redis-server', [conf], { timeout: 10_000 });
    await waitUntil(`127.0.0.1:${port} back as a replica`, async () => {
      const replication = await cli(port, 'INFO', 'replication');
      if (!replication) return `127.0.0.1:${port} does not answer`;
      if (!/^role:slave$/m.test(replication)) return `127.0.0.1:${port} is not a replica (yet)`;
      if (!/^master_link_status:up$/m.test(replication)) return `127.0.0.1:${port}'s replication link is not up`;
      // Then healthy as the script defines it: every node ok and online, each master with a replica.
      return (await script('status').then(
        () => null,
        (err: Error) => err.message,
      )) ?? true;
    });
  };

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    stopWatchdog();
    await script('stop');
  };

  return {
    seeds: ports.map((p) => `redis://127.0.0.1:${p}`).join(','),
    ports,
    masters,
    replicas,
    killMaster,
    restartNode,
    stop,
  };
}
