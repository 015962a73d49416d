import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../src/config/load.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import type { OtpService } from '../../src/channels/otp/index.js';
import { Daemon } from '../../src/daemon.js';
import type { Gateway } from '../../src/gateway.js';
import type { SmsGatewayService } from '../../src/messaging/sms-gateway-service.js';
import type { EmbeddedUpstream } from '../../src/sim/smpp/embedded.js';
import type { DestinationStream } from 'pino';
import { createLogger } from '../../src/log.js';
import { packageRoot } from '../../src/util/paths.js';
import { childEnv } from './child-env.js';
import { costed, recordCost } from './costs.js';
import { cliEntry } from './fresh-build.js';
import { testDatabase } from './db.js';
import { REDIS_CLUSTER, REDIS_QUEUE_SHARDS, REDIS_URL } from './env.js';
import { testKeyPrefix } from './redis.js';

export interface TestDaemon {
  daemon: Daemon;
  api: string;
  admin: string;
  adminToken: string;
  /** Calls the admin API; returns data or throws with the error code. */
  adminCall<T = any>(method: string, path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
  /** Stops the daemon but keeps its database, data folder and Redis prefix for the next `startDaemon(…, reuse)`. */
  stopKeepingStore(): Promise<void>;
  /** What a restart needs to come back on the same storage. */
  reuse: { env: Record<string, string>; store: Awaited<ReturnType<typeof testDatabase>> };
}

/** The SMS module's message path (ledger, router, pool, SMPP server) of a daemon: the daemon holds no product getters. */
export function gatewayOf(d: Daemon): Gateway {
  return d.modules.service<SmsGatewayService>('sms').gateway;
}

/** The embedded SMSC simulator the SMS module runs, or null. */
export function simulatorOf(d: Daemon): EmbeddedUpstream | null {
  return d.modules.service<SmsGatewayService>('sms').embeddedUpstream;
}

/** The OTP module's service. */
export function otpOf(d: Daemon): OtpService {
  return d.modules.service<OtpService>('otp');
}

/** The environment a daemon under test runs with: ephemeral loopback ports, private data. */
export async function testEnv(extra: Record<string, string> = {}) {
  const store = await testDatabase();
  const env: Record<string, string> = {
    FERRY_DATA_DIR: store.dataDir,
    FERRY_HTTP_PORT: '0',
    FERRY_ADMIN_PORT: '0',
    FERRY_SMPP_PORT: '0',
    FERRY_SHORTLINK_PORT: '0',
    FERRY_LOG_LEVEL: 'silent',
    FERRY_SHUTDOWN_DRAIN_TIMEOUT_MS: '3000',
    ...(store.url ? { DATABASE_URL: store.url } : {}),
    ...(REDIS_URL ? { REDIS_URL, FERRY_REDIS_KEY_PREFIX: testKeyPrefix() } : {}),
    // A Redis Cluster run (FERRY_REDIS_CLUSTER, FERRY_REDIS_QUEUE_SHARDS) reaches the daemons too.
    ...(REDIS_URL && REDIS_CLUSTER ? { FERRY_REDIS_CLUSTER: 'true' } : {}),
    ...(REDIS_URL && REDIS_QUEUE_SHARDS ? { FERRY_REDIS_QUEUE_SHARDS: String(REDIS_QUEUE_SHARDS) } : {}),
    ...extra,
  };
  return { env, store };
}

/**
 * A daemon in this process, on ephemeral ports, with its own database and Redis prefix. `logTo` receives its log lines
 * (with FERRY_LOG_LEVEL in `extra` to see more than the default, silent).
 */
export async function startDaemon(extra: Record<string, string> = {}, reuse?: TestDaemon['reuse'], logTo?: DestinationStream): Promise<TestDaemon> {
  const { env, store } = reuse ? { env: { ...reuse.env, ...extra }, store: reuse.store } : await testEnv(extra);
  const { config } = loadConfig({ env, modules: CHANNEL_MODULES });
  const daemon = await costed('daemon-start', () => Daemon.start(config, createLogger(env.FERRY_LOG_LEVEL, logTo)));
  const adminToken = (await import('node:fs')).readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim();
  const admin = daemon.addresses.admin;
  return {
    daemon,
    api: daemon.addresses.http,
    admin,
    adminToken,
    async adminCall(method, path, body) {
      const res = await call(admin, method, path, { body, headers: { authorization: `Bearer ${adminToken}` } });
      if (!res.json?.success) throw Object.assign(new Error(`${res.json?.code}: ${res.json?.message}`), { code: res.json?.code, status: res.status });
      return res.json.data;
    },
    async stop() {
      await costed('daemon-stop', () => daemon.stop());
      await store.cleanup();
    },
    async stopKeepingStore() {
      await costed('daemon-stop', () => daemon.stop());
    },
    reuse: { env, store },
  };
}

/**
 * A second instance beside `first`: the same database, Redis prefix and secrets, its own data folder (as a second
 * machine would have), `extra` on top. `first` is stopped if it fails to start; the test's teardown stops both.
 */
export async function startSecondInstance(t: { teardown(fn: () => Promise<void>): void }, first: TestDaemon, extra: Record<string, string>, folderPrefix: string): Promise<TestDaemon> {
  const dir = mkdtempSync(join(tmpdir(), folderPrefix));
  let second: TestDaemon;
  try {
    second = await startDaemon({ FERRY_DATA_DIR: dir, ...extra }, first.reuse);
  } catch (err) {
    await first.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  t.teardown(async () => {
    await second.stopKeepingStore();
    await first.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return second;
}

export interface CallResult {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

/** One HTTP call over a real connection. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; token?: string } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Basic ${opts.token}`;
  let body: string | Buffer | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** Log lines collected from a logger's destination, parsed. */
export class LogLines implements DestinationStream {
  readonly lines: Array<Record<string, any>> = [];
  write(s: string): void {
    for (const line of s.split('\n')) if (line) this.lines.push(JSON.parse(line) as Record<string, any>);
  }
  /** The lines whose msg matches. */
  find(msg: RegExp | string): Array<Record<string, any>> {
    return this.lines.filter((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(String(l.msg))));
  }
}

/** An account with a key holding the given scopes; returns the Basic token. */
export async function accountWithKey(d: TestDaemon, name: string, scopes: string | string[] = 'all') {
  const account = await d.adminCall('POST', '/admin/accounts', { name });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return { account, key, token: key.token as string };
}

export interface DaemonProcess {
  child: ChildProcess;
  api: string;
  admin: string;
  /** Every stdout/stderr line so far. */
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `ferry <args>` as a separate process: the compiled CLI when dist/ was built from this source, else the source through tsx. */
export function ferry(args: string[], env: Record<string, string>): ChildProcess {
  const started = performance.now();
  const child = spawn(process.execPath, [...cliEntry(), ...args], {
    cwd: packageRoot,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.on('exit', () => recordCost(args[0] === 'start' ? 'daemon-process-lifetime' : 'cli', performance.now() - started, args.slice(0, 2).join(' ')));
  return child;
}

/** Runs a short ferry command to completion. */
export async function ferryRun(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = ferry(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/**
 * Runs independent ferry commands side by side, as many at once as there are cores: more only queue for the same
 * CPU, and each then takes longer to start, closer to ferryRun's bound on a loaded machine. Answers in input order.
 */
export async function ferryRunEach(commands: string[][], env: Record<string, string>): Promise<Array<Awaited<ReturnType<typeof ferryRun>>>> {
  const answers: Array<Awaited<ReturnType<typeof ferryRun>>> = new Array(commands.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < commands.length) {
      const i = next++;
      answers[i] = await ferryRun(commands[i], env);
    }
  };
  await Promise.all(Array.from({ length: Math.min(availableParallelism(), commands.length) }, worker));
  return answers;
}

/** Starts `ferry start` as a child and waits for its "ferry started" log line. */
export async function startDaemonProcess(env: Record<string, string>, timeoutMs = 60_000): Promise<DaemonProcess> {
  return awaitStarted(ferry(['start'], { ...env, FERRY_LOG_LEVEL: 'info' }), timeoutMs);
}

/** Collects a daemon child's log lines and waits for its "ferry started" line (or its exit, which fails). */
export async function awaitStarted(child: ChildProcess, timeoutMs = 60_000): Promise<DaemonProcess> {
  const spawned = performance.now();
  const output: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const started = new Promise<{ api: string; admin: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('daemon did not start in time:\n' + output.join('\n'))), timeoutMs);
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        output.push(line);
        try {
          const j = JSON.parse(line);
          if (j.msg === 'ferry started') {
            clearTimeout(timer);
            resolve({ api: j.http, admin: j.admin });
          }
        } catch {
          /* not JSON */
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`daemon exited (${e.code ?? e.signal}) before starting:\n${output.join('\n')}`));
    });
  });
  const { api, admin } = await started;
  recordCost('daemon-process-ready', performance.now() - spawned);
  return { child, api, admin, output, exited };
}
