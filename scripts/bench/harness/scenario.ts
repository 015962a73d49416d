/**
 * What the end-to-end scenarios share: the common options, the stack's life cycle (always cleaned up, also on
 * SIGINT/SIGTERM and on a watchdog that bounds the whole run), CPU/RSS sampling, and the FAIL/exit-code rules.
 */
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Args, UsageError } from './args.js';
import { machineInfo, type MachineInfo } from './machine.js';
import { cpuDelta, ProcSampler, type Child } from './proc.js';
import { Stack, type Backend, type Runtime } from './stack.js';

export interface CommonOptions {
  backend: Backend;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  runtime: Runtime | 'auto';
  json: boolean;
  profileDir: string | undefined;
  receiptDelayMs: number;
  upstreamBinds: number;
  upstreamWindow: number;
  finalTimeoutSeconds: number;
  /** Price per segment for every destination (0: unpriced, no debit), with credit enough for the whole run. */
  price: number;
  /** Keep the per-key HTTP limit and the per-account submit limit on (set too high to refuse), so their cost counts. */
  limits: boolean;
  /** The daemon's log level (default warn; info writes the access log, one line per HTTP request, as by default). */
  logLevel: string;
}

export const COMMON_FLAGS = [
  'backend',
  'database-url',
  'redis-url',
  'runtime',
  'json',
  'profile',
  'receipt-delay-ms',
  'upstream-binds',
  'upstream-window',
  'final-timeout',
  'price',
  'limits',
  'log-level',
  'help',
] as const;

export const COMMON_USAGE = `common options:
  --backend redis+postgres|embedded   default redis+postgres when DATABASE_URL and REDIS_URL are set, else embedded
  --database-url URL --redis-url URL  Postgres server for the throw-away database, Redis (default: the env vars)
  --runtime auto|dist|tsx             how the daemon and simulator run (auto: dist when built and newer than src)
  --receipt-delay-ms N                simulator receipt delay (default 50)
  --upstream-binds N --upstream-window W   Ferry's binds to the simulator (default 4 × 200)
  --final-timeout S                   wait at most S seconds for the last receipts (default 120)
  --price P                           bill every segment P (account currency; default 0: unpriced, no debit)
  --limits                            keep the per-key and per-account rate limits on, as by default (set to
                                      1,000,000/s, so they cost what they cost but never refuse)
  --log-level L                       the daemon's log level (default warn; info, the daemon's own default, adds
                                      the access log: one line per HTTP request)
  --profile [DIR]                     run the daemon with --cpu-prof and print the profile path
  --json                              also print one JSON line with every figure`;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(v: string): string {
  if (!LOG_LEVELS.includes(v)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  return v;
}

/** Scenario defaults that differ from the common ones (e.g. the window a comparison states). */
export interface CommonDefaults {
  upstreamBinds?: number;
  upstreamWindow?: number;
}

export function commonOptions(args: Args, defaults: CommonDefaults = {}): CommonOptions {
  const databaseUrl = args.string('database-url') ?? process.env.DATABASE_URL ?? undefined;
  const redisUrl = args.string('redis-url') ?? process.env.REDIS_URL ?? undefined;
  const backend = (args.string('backend') ?? (databaseUrl && redisUrl ? 'redis+postgres' : 'embedded')) as Backend;
  if (backend !== 'redis+postgres' && backend !== 'embedded') throw new UsageError('--backend must be redis+postgres or embedded');
  if (backend === 'redis+postgres' && (!databaseUrl || !redisUrl)) {
    throw new UsageError('--backend redis+postgres needs DATABASE_URL and REDIS_URL (or --database-url and --redis-url)');
  }
  const runtime = args.string('runtime', 'auto') as Runtime | 'auto';
  if (!['auto', 'dist', 'tsx'].includes(runtime)) throw new UsageError('--runtime must be auto, dist or tsx');
  let profileDir: string | undefined;
  if (args.has('profile')) {
    const i = process.argv.indexOf('--profile');
    const v = process.argv[i + 1];
    profileDir = v && !v.startsWith('--') ? v : join(tmpdir(), `ferry-bench-profile-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  }
  return {
    backend,
    databaseUrl,
    redisUrl,
    runtime,
    json: args.has('json'),
    profileDir,
    receiptDelayMs: args.number('receipt-delay-ms', 50, { min: 0, integer: true }),
    upstreamBinds: args.number('upstream-binds', defaults.upstreamBinds ?? 4, { min: 1, max: 64, integer: true }),
    upstreamWindow: args.number('upstream-window', defaults.upstreamWindow ?? 200, { min: 1, max: 10_000, integer: true }),
    finalTimeoutSeconds: args.number('final-timeout', 120, { min: 1, max: 3600 }),
    price: args.number('price', 0, { min: 0, max: 1 }),
    limits: args.has('limits'),
    logLevel: logLevel(args.string('log-level', 'warn')),
  };
}

export interface ScenarioContext {
  args: Args;
  common: CommonOptions;
  stack: Stack;
  sampler: ProcSampler;
  machine: MachineInfo;
  log: (line: string) => void;
  /** Samples the load generator's CPU and RSS under `name`, and stops it at the end whatever happens. */
  addChild(name: string, child: Child): void;
  /** CPU seconds of every process so far; `cpuSince(mark)` gives what each spent after it. */
  mark(): Record<string, number>;
  cpuSince(mark: Record<string, number>): Record<string, number>;
  /** Records an accounting failure: printed as FAIL, exit 1. */
  fail(reason: string): void;
}

export interface ScenarioDefinition {
  name: string;
  /** Options of this scenario (besides the common ones) and its usage text. */
  flags: readonly string[];
  usage: string;
  /** Defaults of common options that differ for this scenario. */
  defaults?: CommonDefaults;
  /** Refuses (UsageError) options that do not fit together or with the backend, before anything starts. */
  validate?: (args: Args, common: CommonOptions) => void;
  /** Daemon env / upstream tweaks before the stack starts. */
  stackOverrides?: (args: Args, common: CommonOptions) => { daemonEnv?: Record<string, string>; simArgs?: string[]; simTap?: boolean };
  /** An upper bound of the whole run, in seconds, for the watchdog. */
  budgetSeconds: (args: Args, common: CommonOptions) => number;
  /** Runs the load, prints the table (and JSON line). */
  run: (ctx: ScenarioContext) => Promise<void>;
}

const log = (line: string): void => {
  process.stderr.write(`bench: ${line}\n`);
};

/** Runs one scenario end to end and exits: 0 counted, 1 accounting failed or the run broke, 2 usage. */
export async function runScenario(def: ScenarioDefinition): Promise<never> {
  const args = new Args();
  let common: CommonOptions;
  try {
    if (args.has('help')) {
      process.stdout.write(`${def.usage}\n\n${COMMON_USAGE}\n`);
      process.exit(0);
    }
    const unknown = args.unknown([...COMMON_FLAGS, ...def.flags]);
    if (unknown.length) throw new UsageError(`unknown option ${unknown.join(', ')}`);
    common = commonOptions(args, def.defaults);
    def.validate?.(args, common);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`bench ${def.name}: ${err.message}\n\n${def.usage}\n\n${COMMON_USAGE}\n`);
      process.exit(2);
    }
    throw err;
  }

  const failures: string[] = [];
  const extraChildren: Child[] = [];
  let stack: Stack | undefined;
  let exiting = false;
  let emergencyDone: Promise<never> | undefined;
  /** Signal or watchdog: kill the children now, undo the storage, exit (the main flow then only waits for this). */
  const emergency = (why: string, code: number): void => {
    if (exiting) return;
    exiting = true;
    log(why);
    for (const c of extraChildren) c.kill();
    stack?.killNow();
    const s = stack;
    emergencyDone = new Promise<never>(() => {
      const hardStop = setTimeout(() => process.exit(code), 30_000); // cleanup must not hang the exit
      void (s ? s.close(true) : Promise.resolve()).finally(() => {
        clearTimeout(hardStop);
        if (s) log(`logs kept in ${s.logDir}`);
        process.exit(code);
      });
    });
  };
  process.once('SIGINT', () => emergency('interrupted: stopping the daemon, the simulator and the load generator', 130));
  process.once('SIGTERM', () => emergency('terminated: cleaning up', 143));
  const budget = def.budgetSeconds(args, common) + 180; // + start-up, warm-up and cleanup
  const watchdog = setTimeout(() => emergency(`the run exceeded its ${budget} s budget: giving up`, 1), budget * 1000);
  watchdog.unref();

  const machine = machineInfo();
  const sampler = new ProcSampler();
  let code = 0;
  try {
    const overrides = def.stackOverrides?.(args, common) ?? {};
    stack = new Stack({
      scenario: def.name,
      backend: common.backend,
      databaseUrl: common.databaseUrl,
      redisUrl: common.redisUrl,
      runtime: common.runtime,
      receiptDelayMs: common.receiptDelayMs,
      upstreamBinds: common.upstreamBinds,
      upstreamWindow: common.upstreamWindow,
      price: common.price,
      limits: common.limits,
      logLevel: common.logLevel,
      profileDir: common.profileDir,
      daemonEnv: overrides.daemonEnv,
      simArgs: overrides.simArgs,
      simTap: overrides.simTap,
    });
    await stack.start(log);
    sampler.add('daemon', stack.daemon!.pid);
    sampler.add('simulator', stack.sim!.pid);
    sampler.start(250);
    await def.run({
      args,
      common,
      stack,
      sampler,
      machine,
      log,
      addChild: (name, child) => {
        extraChildren.push(child);
        sampler.add(name, child.pid);
      },
      mark: () => sampler.cpu(),
      cpuSince: (m) => cpuDelta(m, sampler.cpu()),
      fail: (reason) => failures.push(reason),
    });
  } catch (err) {
    failures.push(`the run broke: ${(err as Error).message}`);
  } finally {
    sampler.stop();
    clearTimeout(watchdog);
    await Promise.all(extraChildren.map((c) => c.stop(5000)));
    if (stack && !exiting) {
      await stack.stopDaemon();
      if (common.profileDir) {
        const profiles = existsSync(common.profileDir) ? readdirSync(common.profileDir).filter((f) => f.endsWith('.cpuprofile')) : [];
        if (profiles.length) for (const p of profiles) process.stdout.write(`daemon CPU profile: ${join(common.profileDir, p)}\n`);
        else log(`no CPU profile was written to ${common.profileDir} (the daemon did not exit cleanly?)`);
      }
      await stack.close(failures.length > 0);
      if (failures.length) log(`logs kept in ${stack.logDir}`);
    }
  }
  if (exiting) await emergencyDone;
  for (const f of failures) process.stdout.write(`FAIL: ${f}\n`);
  if (failures.length) code = 1;
  process.exit(code);
}
