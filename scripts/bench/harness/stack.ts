/**
 * What an end-to-end scenario runs against: the SMSC simulator (`ferry sim`) and the daemon (`ferry start`) as
 * separate processes on loopback, with private storage — a throw-away Postgres database and a Redis key prefix, or
 * embedded stores in a temp data folder — and the admin calls a run needs. `close()` always undoes everything.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Redis } from 'ioredis';
import { packageRoot } from '../../../src/util/paths.js';
import { openDb } from '../../../src/store/sql/db.js';
import type { SimulatorStats } from '../../../src/sim/smpp/simulator.js';
import { Child, freePort } from './proc.js';
import type { HistogramSnapshot } from './stats.js';

export type Backend = 'redis+postgres' | 'embedded';
export type Runtime = 'dist' | 'tsx';

export interface StackOptions {
  scenario: string;
  backend: Backend;
  /** Postgres server on which the throw-away database is created (redis+postgres). */
  databaseUrl?: string;
  redisUrl?: string;
  /** 'auto': dist when it is built and newer than src, else tsx. */
  runtime: Runtime | 'auto';
  receiptDelayMs: number;
  /** More `ferry sim` flags. */
  simArgs?: string[];
  /**
   * Run the simulator through scripts/bench/harness/sim-tap.ts instead of `ferry sim`: the same simulator, plus a
   * loopback port streaming every received message's destination and text (the otp scenario reads codes there).
   */
  simTap?: boolean;
  upstreamBinds: number;
  upstreamWindow: number;
  /** Price per segment for every destination; 0 leaves messages unpriced (no debit at accept). */
  price: number;
  /** Per-key and per-account rate limits on, at 1,000,000/s (else off). */
  limits?: boolean;
  /** The daemon's log level (default warn). */
  logLevel?: string;
  /** More environment for the daemon (wins over the harness defaults). */
  daemonEnv?: Record<string, string>;
  /** Run the daemon with --cpu-prof into this folder. */
  profileDir?: string;
}

/** Counters the simulator logs every interval (`ferry sim --stats-interval-ms`): its own stats, parsed from JSON. */
export type SimStats = SimulatorStats;

export interface PgCounters {
  commits: number;
  inserted: number;
  updated: number;
  deleted: number;
  /** Rows inserted + updated + deleted, by table. */
  tables: Record<string, number>;
}

export interface LedgerCounts {
  total: number;
  final: number;
  open: number;
  byStatus: Record<string, number>;
}

const FINAL = ['delivered', 'undelivered', 'expired', 'rejected', 'failed', 'cancelled'];
const OPEN = ['queued', 'scheduled', 'submitted'];
const SIM_STATS_INTERVAL_MS = 250;

function newestMtime(dir: string, suffix: string): number {
  let newest = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(suffix)) newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  if (existsSync(dir)) walk(dir);
  return newest;
}

/** dist/ when it exists and is at least as new as every source file (it starts faster), else tsx. */
export function pickRuntime(wanted: Runtime | 'auto'): Runtime {
  const built = join(packageRoot, 'dist/cli/index.js');
  if (wanted === 'dist') {
    if (!existsSync(built)) throw new Error('--runtime dist: dist/cli/index.js is missing (npm run build)');
    return 'dist';
  }
  if (wanted === 'tsx') return 'tsx';
  if (!existsSync(built)) return 'tsx';
  return newestMtime(join(packageRoot, 'dist'), '.js') >= newestMtime(join(packageRoot, 'src'), '.ts') ? 'dist' : 'tsx';
}

function ferryArgs(runtime: Runtime): string[] {
  return runtime === 'dist' ? [join(packageRoot, 'dist/cli/index.js')] : ['--import', 'tsx', join(packageRoot, 'src/cli/index.ts')];
}

/** --limits: a rate every limit allows, so the limits are checked on every request and never refuse. */
const UNREACHED_LIMIT = 1_000_000;

/** The parent's environment without anything that would point a child at other storage or config. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('FERRY_') || k === 'DATABASE_URL' || k === 'REDIS_URL' || k === 'NODE_OPTIONS') continue;
    env[k] = v;
  }
  return env;
}

/** One client of the database at `url` for `fn`, closed after. */
export async function withPg<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

export class Stack {
  readonly runDir: string;
  readonly dataDir: string;
  readonly logDir: string;
  readonly runtime: Runtime;
  sim: Child | undefined;
  daemon: Child | undefined;
  simStats: SimStats | undefined;
  simStatsAt = 0;
  ports = { http: 0, admin: 0, smpp: 0, sim: 0, simTap: 0 };
  adminToken = '';
  /** The throw-away database's URL (redis+postgres). */
  dbUrl: string | undefined;
  private redisPrefix: string | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly cleanups: Array<() => Promise<void> | void> = [];

  constructor(readonly opts: StackOptions) {
    this.runtime = pickRuntime(opts.runtime);
    this.runDir = mkdtempSync(join(tmpdir(), `ferry-bench-${opts.scenario}-`));
    this.dataDir = join(this.runDir, 'data');
    this.logDir = join(this.runDir, 'logs');
    mkdirSync(this.dataDir);
    mkdirSync(this.logDir);
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.ports.http}`;
  }

  get adminUrl(): string {
    return `http://127.0.0.1:${this.ports.admin}`;
  }

  /** Starts storage, simulator and daemon. On a failure the caller still owns close(), which undoes what was started. */
  async start(log: (line: string) => void): Promise<void> {
    await this.prepareStorage();
    await this.startSimulator();
    log(`simulator pid ${this.sim!.pid} on 127.0.0.1:${this.ports.sim} (receipt delay ${this.opts.receiptDelayMs} ms)`);
    await this.startDaemon();
    log(
      `daemon pid ${this.daemon!.pid} (${this.runtime}, ${this.opts.backend}) http :${this.ports.http} smpp :${this.ports.smpp} admin :${this.ports.admin}` +
        `, upstream ${this.opts.upstreamBinds} binds × window ${this.opts.upstreamWindow}`,
    );
  }

  private async prepareStorage(): Promise<void> {
    if (this.opts.backend !== 'redis+postgres') return;
    if (!this.opts.databaseUrl || !this.opts.redisUrl) throw new Error('--backend redis+postgres needs DATABASE_URL and REDIS_URL (or --database-url / --redis-url)');
    const name = `ferry_bench_${process.pid}`;
    await withPg(this.opts.databaseUrl, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${name}`);
    });
    this.cleanups.push(() => withPg(this.opts.databaseUrl!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined));
    const u = new URL(this.opts.databaseUrl);
    u.pathname = `/${name}`;
    this.dbUrl = u.toString();

    this.redisPrefix = `ferrybench:${process.pid}-${randomBytes(3).toString('hex')}:`;
    const redis = new Redis(this.opts.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      await redis.ping();
    } finally {
      redis.disconnect();
    }
    this.cleanups.push(() => this.dropRedisKeys());
  }

  private async dropRedisKeys(): Promise<void> {
    const redis = new Redis(this.opts.redisUrl!, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      let cursor = '0';
      for (let rounds = 0; rounds < 100_000; rounds++) {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${this.redisPrefix}*`, 'COUNT', 1000);
        if (keys.length) await redis.del(...keys);
        cursor = next;
        if (cursor === '0') break;
      }
    } finally {
      redis.disconnect();
    }
  }

  private async startSimulator(): Promise<void> {
    this.ports.sim = await freePort();
    let listening!: () => void;
    const ready = new Promise<void>((r) => (listening = r));
    if (this.opts.simTap) this.ports.simTap = await freePort();
    const command = this.opts.simTap
      ? ['--import', 'tsx', join(packageRoot, 'scripts/bench/harness/sim-tap.ts'), '--tap-port', String(this.ports.simTap)]
      : [...ferryArgs(this.runtime), 'sim'];
    const args = [
      ...command,
      '--port',
      String(this.ports.sim),
      '--receipt-delay-ms',
      String(this.opts.receiptDelayMs),
      '--stats-interval-ms',
      String(SIM_STATS_INTERVAL_MS),
      '--log-level',
      'info',
      ...(this.opts.simArgs ?? []),
    ];
    this.sim = new Child('simulator', process.execPath, args, {
      cwd: packageRoot,
      env: cleanEnv(),
      logDir: this.logDir,
      onStdoutLine: (line) => {
        if (!line.startsWith('{')) return;
        try {
          const j = JSON.parse(line);
          if (j.msg === 'SMSC simulator listening') listening();
          else if (j.stats && typeof j.stats === 'object') {
            this.simStats = j.stats as SimStats;
            this.simStatsAt = Date.now();
          }
        } catch {
          /* not a log line */
        }
      },
    });
    this.cleanups.push(() => this.sim!.stop(5000).then(() => undefined));
    await this.until('simulator to listen', 60_000, this.sim, ready);
  }

  private async startDaemon(): Promise<void> {
    const { opts } = this;
    this.ports.http = await freePort();
    this.ports.admin = await freePort();
    this.ports.smpp = await freePort();
    const configFile = join(this.runDir, 'ferry.yaml');
    // JSON is YAML.
    const config = {
      smpp: {
        upstreams: [
          {
            id: 'sim',
            host: '127.0.0.1',
            port: this.ports.sim,
            systemId: 'ferry',
            password: 'bench',
            binds: opts.upstreamBinds,
            window: opts.upstreamWindow,
          },
        ],
        simulator: { enabled: 'off' },
        // Every load bind comes from 127.0.0.1: lift the per-address connection cap (default 10) for the load.
        maxSessionsPerAddress: 1000,
      },
      // Priced: every message is debited at accept, as for a billed customer.
      ...(opts.price > 0 ? { pricing: { defaultPrice: opts.price, entries: [] } } : {}),
    };
    writeFileSync(configFile, JSON.stringify(config, null, 2) + '\n');
    const env: NodeJS.ProcessEnv = {
      ...cleanEnv(),
      FERRY_CONFIG: configFile,
      FERRY_DATA_DIR: this.dataDir,
      FERRY_HTTP_PORT: String(this.ports.http),
      FERRY_ADMIN_PORT: String(this.ports.admin),
      FERRY_SMPP_PORT: String(this.ports.smpp),
      FERRY_HTTP_HOST: '127.0.0.1',
      FERRY_ADMIN_HOST: '127.0.0.1',
      FERRY_SMPP_HOST: '127.0.0.1',
      FERRY_LOG_LEVEL: opts.logLevel ?? 'warn',
      FERRY_SMPP_SIMULATOR_ENABLED: 'off',
      // The bench measures the pipeline, not the limits: no per-key or per-account rate limit, unless --limits keeps
      // them on, too high to refuse anything, so that what they cost is measured.
      FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: opts.limits ? String(UNREACHED_LIMIT) : '0',
      ...(opts.limits ? { FERRY_HTTP_RATE_LIMIT_BURST: String(2 * UNREACHED_LIMIT) } : {}),
      FERRY_MESSAGES_DEFAULT_ACCOUNT_TPS: '0',
      FERRY_SHUTDOWN_DRAIN_TIMEOUT_MS: '5000',
      ...(this.dbUrl ? { DATABASE_URL: this.dbUrl } : {}),
      ...(this.redisPrefix ? { REDIS_URL: this.opts.redisUrl, FERRY_REDIS_KEY_PREFIX: this.redisPrefix } : {}),
      ...(opts.daemonEnv ?? {}),
    };
    // As `npm start` and the systemd unit run it (a larger young generation; see docs/performance.md).
    const nodeFlags: string[] = ['--max-semi-space-size=32'];
    if (opts.profileDir) {
      mkdirSync(opts.profileDir, { recursive: true });
      nodeFlags.push('--cpu-prof', '--cpu-prof-dir', opts.profileDir);
    }
    this.daemon = new Child('daemon', process.execPath, [...nodeFlags, ...ferryArgs(this.runtime), 'start'], {
      cwd: packageRoot,
      env,
      logDir: this.logDir,
    });
    // Stopped before the storage cleanups run (they are undone in reverse order).
    this.cleanups.push(() => this.stopDaemon().then(() => undefined));

    await this.until('daemon /readyz', 120_000, this.daemon, this.poll(async () => (await fetch(`${this.adminUrl}/readyz`)).status === 200));
    this.adminToken = readFileSync(join(this.dataDir, 'admin.token'), 'utf8').trim();
    await this.until(
      'upstream binds to the simulator',
      30_000,
      this.daemon,
      this.poll(async () => {
        const ups = (await this.admin('GET', '/admin/upstreams')) as Array<{ id: string; bindsUp: number }>;
        return (ups.find((u) => u.id === 'sim')?.bindsUp ?? 0) >= opts.upstreamBinds;
      }),
    );
  }

  /** Resolves when `check` answers true (errors count as not yet), polling every 100 ms. */
  private poll(check: () => Promise<boolean>): Promise<void> {
    return (async () => {
      while (!this.closed) {
        if (await check().catch(() => false)) return;
        await sleep(100);
      }
      throw new Error('stack closed');
    })();
  }

  /** Waits for `p`, failing after `ms` or when `child` exits first (with its last output). */
  private async until<T>(what: string, ms: number, child: Child, p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms / 1000} s waiting for ${what}; ${child.name} said:\n${child.lastLines()}`)), ms);
    });
    const died = child.exited.then((e) => {
      throw new Error(`${child.name} exited (${e.code ?? e.signal}) while waiting for ${what}:\n${child.lastLines()}`);
    });
    try {
      return await Promise.race([p, timeout, died]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One admin API call; returns `data` or throws with the envelope's code and message. */
  async admin(method: string, path: string, body?: unknown): Promise<any> {
    const res = await fetch(this.adminUrl + path, {
      method,
      headers: { authorization: `Bearer ${this.adminToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`admin ${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
    }
    if (!json.success) throw new Error(`admin ${method} ${path}: ${json.code}: ${json.message}`);
    return json.data;
  }

  /**
   * The bench account: SMPP credentials (system_id = name), no rate limit, enough binds, and an API key with every
   * scope. Pricing is unset by default, so sends are free and need no credit.
   */
  async createAccount(name: string, smppPassword: string, maxBinds: number): Promise<{ accountId: string; systemId: string; token: string }> {
    const account = await this.admin('POST', '/admin/accounts', { name, smppPassword });
    await this.admin('PATCH', `/admin/accounts/${name}`, { maxTps: this.opts.limits ? UNREACHED_LIMIT : 0 });
    // Credit for any run the bench can make (millions of messages of a few segments each).
    if (this.opts.price > 0) await this.admin('POST', `/admin/accounts/${name}/credit`, { amount: Math.ceil(this.opts.price * 100_000_000) });
    const smpp = await this.admin('POST', `/admin/accounts/${name}/smpp-credentials`, { password: smppPassword, maxBinds: Math.max(10, maxBinds) });
    const key = await this.admin('POST', '/admin/keys', { account: name, scopes: 'all' });
    return { accountId: account.id as string, systemId: smpp.systemId ?? account.smpp?.systemId ?? name, token: key.token as string };
  }

  /** The daemon's Prometheus text. */
  async metrics(): Promise<string> {
    return (await fetch(`${this.adminUrl}/metrics`)).text();
  }

  /** One of the daemon's histograms so far, summed over its label sets (all upstreams, say). */
  async histogram(name: string): Promise<HistogramSnapshot> {
    const h: HistogramSnapshot = { buckets: new Map(), sum: 0, count: 0 };
    for (const m of (await this.metrics()).matchAll(new RegExp(`^${name}_(bucket|sum|count)(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
      const v = Number(m[3]);
      if (m[1] === 'sum') h.sum += v;
      else if (m[1] === 'count') h.count += v;
      else {
        const le = /le="([^"]+)"/.exec(m[2] ?? '')?.[1];
        if (le === undefined) continue;
        const bound = le === '+Inf' ? Infinity : Number(le);
        h.buckets.set(bound, (h.buckets.get(bound) ?? 0) + v);
      }
    }
    return h;
  }

  /** The daemon's garbage collections so far, by kind (minor, major, incremental, weakcb): count and seconds. */
  async gc(): Promise<Record<string, { count: number; seconds: number }>> {
    const out: Record<string, { count: number; seconds: number }> = {};
    for (const m of (await this.metrics()).matchAll(/^ferry_nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"\} (\S+)$/gm)) {
      const k = (out[m[2]] ??= { count: 0, seconds: 0 });
      if (m[1] === 'sum') k.seconds = Number(m[3]);
      else k.count = Number(m[3]);
    }
    return out;
  }

  /**
   * Postgres's WAL position in bytes (redis+postgres only; null on the embedded backend). The difference over a phase
   * is the WAL the phase wrote: a work counter that moves with the statements and schema, not with the machine's
   * speed. It is the server's, so it includes any other database's writes; the bench's own are nearly all of it.
   */
  async walBytes(): Promise<bigint | null> {
    if (!this.dbUrl) return null;
    return withPg(this.dbUrl, async (c) => BigInt((await c.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS b`)).rows[0].b));
  }

  /**
   * Postgres' own counters for the throw-away database (redis+postgres only): commits, rows written by kind, and
   * rows written per table. The server publishes them within about a second, so read them after a pause.
   */
  async pgCounters(): Promise<PgCounters | null> {
    if (!this.dbUrl) return null;
    return withPg(this.dbUrl, async (c) => {
      await c.query('SELECT pg_stat_clear_snapshot()');
      const db = (
        await c.query<{ commits: string; inserted: string; updated: string; deleted: string }>(
          `SELECT xact_commit::text AS commits, tup_inserted::text AS inserted, tup_updated::text AS updated, tup_deleted::text AS deleted
             FROM pg_stat_database WHERE datname = current_database()`,
        )
      ).rows[0];
      const tables: Record<string, number> = {};
      for (const r of (await c.query<{ relname: string; n: string }>(`SELECT relname, (n_tup_ins + n_tup_upd + n_tup_del)::text AS n FROM pg_stat_user_tables`)).rows) {
        tables[r.relname] = Number(r.n);
      }
      return { commits: Number(db.commits), inserted: Number(db.inserted), updated: Number(db.updated), deleted: Number(db.deleted), tables };
    });
  }

  /** The simulator's counters from a report made after this call (it reports every 250 ms), or the last ones after 2 s. */
  async freshSimStats(): Promise<SimStats | undefined> {
    const asked = Date.now();
    for (let i = 0; i < 40 && this.simStatsAt <= asked && this.sim?.running; i++) await sleep(50);
    return this.simStats;
  }

  /** Receipts the daemon acknowledged to the simulator so far (the simulator's own count, logged every 250 ms). */
  get simReceiptsAcked(): number {
    return this.simStats?.receiptsAcked ?? 0;
  }

  /** Messages not yet final, from the partial index (cheap enough to poll); redis+postgres only. */
  async openCount(): Promise<number> {
    return withPg(this.dbUrl!, async (c) => {
      const r = await c.query(`SELECT count(*)::int AS n FROM messages WHERE final_at IS NULL AND status IN (${OPEN.map((s) => `'${s}'`).join(',')})`);
      return r.rows[0].n as number;
    });
  }

  /**
   * Message rows by status. redis+postgres: read live. embedded: PGlite cannot be opened while the daemon holds it,
   * so this stops the daemon first (gracefully) and reads the data folder.
   */
  async ledgerCounts(accountId?: string): Promise<LedgerCounts> {
    // One account's (a ledger preloaded with other accounts' history), else every message.
    const sql = `SELECT status, count(*)::int AS n FROM messages${accountId ? ` WHERE account_id = '${accountId.replace(/'/g, "''")}'` : ''} GROUP BY status`;
    let rows: Array<{ status: string; n: number }>;
    if (this.dbUrl) {
      rows = await withPg(this.dbUrl, async (c) => (await c.query(sql)).rows);
    } else {
      await this.stopDaemon();
      const db = await openDb({ url: null, dataDir: this.dataDir });
      try {
        rows = (await db.query<{ status: string; n: number }>(sql)).rows;
      } finally {
        await db.close();
      }
    }
    const byStatus: Record<string, number> = {};
    let total = 0;
    let final = 0;
    for (const r of rows) {
      byStatus[r.status] = Number(r.n);
      total += Number(r.n);
      if (FINAL.includes(r.status)) final += Number(r.n);
    }
    return { total, final, open: total - final, byStatus };
  }

  /**
   * Waits until every accepted message is final, at most `timeoutMs`; true when reached. redis+postgres: the ledger
   * holds no open message on two polls in a row. embedded (the ledger is the daemon's own): the simulator has had at
   * least `minParts` receipts acknowledged, an answer to every receipt of every part it accepted, and nothing pending,
   * over three of its stats reports in a row. Resolves with the performance.now() at which that first held, or null.
   */
  async waitFinal(minParts: number, timeoutMs: number): Promise<number | null> {
    const deadline = Date.now() + timeoutMs;
    let stable = 0;
    let since = 0; // performance.now() when the condition first held in the current run of reports
    let lastStatsAt = 0;
    while (Date.now() < deadline) {
      if (this.daemon && !this.daemon.running) throw new Error(`daemon exited (${this.daemon.exit?.code ?? this.daemon.exit?.signal}):\n${this.daemon.lastLines()}`);
      if (this.dbUrl) {
        const now = performance.now();
        if ((await this.openCount()) === 0) {
          if (stable++ === 0) since = now;
          if (stable >= 2) return since;
        } else stable = 0;
        await sleep(200);
        continue;
      }
      const s = this.simStats;
      if (s && this.simStatsAt !== lastStatsAt) {
        lastStatsAt = this.simStatsAt;
        const settled = s.receiptsAcked >= minParts && s.receiptsAcked + s.receiptsFailed + s.receiptsDropped >= s.accepted && s.receiptsPending === 0;
        if (settled) {
          if (stable++ === 0) since = performance.now();
          if (stable >= 3) return since;
        } else stable = 0;
      }
      await sleep(50);
    }
    return null;
  }

  /** SIGTERM (graceful: the daemon drains and, with --profile, writes its CPU profile), SIGKILL after 15 s. */
  async stopDaemon(): Promise<void> {
    if (this.daemon?.running) await this.daemon.stop(15_000);
  }

  /** Undoes everything, in reverse order; `keepLogs` leaves the logs folder (printed by the caller). Idempotent. */
  close(keepLogs: boolean): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      for (const fn of this.cleanups.reverse()) {
        try {
          await fn();
        } catch (err) {
          process.stderr.write(`bench cleanup: ${(err as Error).message}\n`);
        }
      }
      rmSync(this.dataDir, { recursive: true, force: true });
      if (!keepLogs) rmSync(this.runDir, { recursive: true, force: true });
    })();
    return this.closing;
  }

  /** Last resort on a signal or the watchdog: kill the children at once (close() then undoes the storage). */
  killNow(): void {
    this.daemon?.kill();
    this.sim?.kill();
  }
}
