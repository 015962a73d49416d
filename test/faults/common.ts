// Shared pieces of the fault-injection suite: simulator upstreams, SMPP load, ledger checks.
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { FINAL_STATUSES, type MessageStatus } from '../../src/ledger/types.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { startSimulator, type SmscSimulator } from '../../src/sim/smpp/simulator.js';
import { ledgerMessageId } from '../../src/messaging/smpp-ingress/smpp-message-id.js';
import type { CustomerClient } from '../smpp/customer/customer-client.js';
import { call, startDaemon, startDaemonProcess, testEnv, type DaemonProcess, type TestDaemon } from '../helpers/daemon.js';

export const DEST = '233241234567';

export async function simulator(t: { teardown(fn: () => unknown): void }, opts: Parameters<typeof startSimulator>[0] = {}): Promise<SmscSimulator> {
  const s = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20, seed: 7, maxStored: 100_000, ...opts });
  t.teardown(() => s.close());
  return s;
}

/** A config file with one upstream `a` on the simulator's port; returns its path. */
export function upstreamConfig(port: number, extra: Record<string, unknown> = {}): string {
  const file = join(tmpdir(), `ferry-faults-${process.pid}-${Math.random().toString(36).slice(2)}.yaml`);
  const upstreams = [{ id: 'a', host: '127.0.0.1', port, systemId: 'ferry', password: 'pw', binds: 2, window: 50, responseTimeoutMs: 2000, reconnect: { initialMs: 100, maxMs: 500 }, ...extra }];
  writeFileSync(file, stringify({ smpp: { upstreams }, routing: { rules: [] } }));
  return file;
}

export interface LoadResult {
  /** Ferry ids of every submit answered OK, with the text sent. */
  acked: Map<string, string>;
  /** command_status of every refused submit → count. */
  refused: Map<number, number>;
  /** Submits that got no answer (timeout or connection lost): their fate is unknown to the customer. */
  unanswered: number;
}

/**
 * Submits from `workers` parallel loops, one outstanding submit per loop, until `stop()` says so, `max` submits were
 * made, or `maxMs` passed (every loop is bounded). Texts are unique: `${tag} ${n}`.
 */
export async function smppLoad(
  clients: () => CustomerClient | null,
  opts: { tag: string; workers?: number; max: number; maxMs: number; stop?: () => boolean; timeoutMs?: number; pauseMs?: number },
  result: LoadResult = { acked: new Map(), refused: new Map(), unanswered: 0 },
): Promise<LoadResult> {
  const until = Date.now() + opts.maxMs;
  let n = 0;
  const worker = async (): Promise<void> => {
    while (n < opts.max && Date.now() < until && !opts.stop?.()) {
      const c = clients();
      const text = `${opts.tag} ${n++}`;
      if (!c) {
        await sleep(50);
        continue;
      }
      try {
        const r = await c.request('submit_sm', { source_addr: 'Ferry', destination_addr: DEST, dest_addr_ton: 1, short_message: text, registered_delivery: 1 }, opts.timeoutMs ?? 5000);
        if (r.command_status === 0) result.acked.set(ledgerMessageId(String(r.message_id))!, text);
        else {
          result.refused.set(r.command_status, (result.refused.get(r.command_status) ?? 0) + 1);
          await sleep(20);
        }
      } catch {
        result.unanswered++;
        await sleep(50);
      }
      if (opts.pauseMs) await sleep(opts.pauseMs);
    }
  };
  await Promise.all(Array.from({ length: opts.workers ?? 8 }, worker));
  return result;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls the ledger until every id is final (or the time is up); returns the ids still open and the statuses. */
export async function settle(
  ledger: Ledger,
  ids: string[],
  timeoutMs: number,
  /** Ends the wait early with some rows still open (e.g. waiting for a receipt the upstream will not resend). */
  enough: (open: string[], statuses: Map<string, MessageStatus>) => boolean = () => false,
): Promise<{ open: string[]; missing: string[]; statuses: Map<string, MessageStatus>; ms: number }> {
  const start = Date.now();
  for (;;) {
    const statuses = new Map<string, MessageStatus>();
    for (let i = 0; i < ids.length; i += 1000) {
      const rows = await ledger.getMany(ids.slice(i, i + 1000));
      for (const [id, r] of rows) statuses.set(id, r.status);
    }
    const missing = ids.filter((id) => !statuses.has(id));
    const open = ids.filter((id) => statuses.has(id) && !FINAL_STATUSES.includes(statuses.get(id)!));
    if ((!open.length && !missing.length) || (!missing.length && enough(open, statuses)) || Date.now() - start > timeoutMs) return { open, missing, statuses, ms: Date.now() - start };
    await sleep(200);
  }
}

/** Upstream duplicates: submits the simulator saw whose text it had already seen, restricted to texts with `tag`. */
export function duplicates(sim: SmscSimulator, tag: string): number {
  return sim.received().filter((m) => m.text.startsWith(tag) && m.duplicateOf > 0).length;
}

export function countBy<T>(values: Iterable<T>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[String(v)] = (out[String(v)] ?? 0) + 1;
  return out;
}

/** A daemon process to SIGKILL, with an SMPP account, and the restart on its storage (in this process). */
export interface KillableDaemon {
  proc: DaemonProcess;
  smppPort: number;
  systemId: string;
  /** The account's SMPP password. */
  password: string;
  /** The admin token of the daemon's data folder (the restart keeps it). */
  adminToken: string;
  /** Starts a daemon in this process on the killed one's database, data folder and Redis prefix. */
  restart(extra?: Record<string, string>): Promise<TestDaemon>;
}

/**
 * Starts a daemon as its own process on private storage (`env` on top of the test defaults), creates an account with
 * SMPP credentials through its admin API, and at teardown kills what is left and undoes the storage.
 */
export async function killableDaemon(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string>,
  account: string,
): Promise<KillableDaemon> {
  const { env: full, store } = await testEnv(env);
  let restarted: TestDaemon | null = null;
  t.teardown(async () => {
    if (restarted) await restarted.stop();
    else await store.cleanup();
  });
  const proc = await startDaemonProcess(full);
  t.teardown(() => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
  });
  const started = proc.output
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return null;
      }
    })
    .find((j) => j?.msg === 'ferry started');
  const smppPort = Number(String(started.smpp).split(':').pop());
  const adminToken = readFileSync(join(store.dataDir, 'admin.token'), 'utf8').trim();
  const password = 'secret1';
  const created = await call(proc.admin, 'POST', '/admin/accounts', { body: { name: account, smppPassword: password }, headers: { authorization: `Bearer ${adminToken}` } });
  if (created.status !== 201) throw new Error(`creating the account: HTTP ${created.status} ${created.text}`);
  return {
    proc,
    smppPort,
    systemId: created.json.data.smpp.systemId as string,
    password,
    adminToken,
    restart: async (extra = {}) => (restarted = await startDaemon(extra, { env: full, store })),
  };
}
