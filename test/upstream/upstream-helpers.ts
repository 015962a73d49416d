import { waitFor } from '../helpers/wait.js';
import type { UpstreamConfig } from '../../src/config/schema.js';
import { startSimulator, type SimulatorOptions, type SmscSimulator } from '../../src/sim/smpp/simulator.js';
import type { OutboundMessage, SubmitOutcome, UpstreamReceipt } from '../../src/smpp/upstream/outbound.js';
import { UpstreamPool, type UpstreamPoolOptions } from '../../src/smpp/upstream/upstream-pool.js';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function sim(t: Teardown, options: SimulatorOptions = {}): Promise<SmscSimulator> {
  const s = await startSimulator({ seed: 7, host: '127.0.0.1', port: 0, ...options });
  t.teardown(() => s.close());
  return s;
}

export function upstreamConfig(id: string, port: number, patch: Partial<UpstreamConfig> = {}): UpstreamConfig {
  return {
    id,
    host: '127.0.0.1',
    port,
    tls: false,
    systemId: 'ferry',
    password: 'pw',
    systemType: '',
    bindMode: 'transceiver',
    binds: 1,
    window: 10,
    maxTps: 0,
    enquireLinkSeconds: 30,
    responseTimeoutMs: 2000,
    reconnect: { initialMs: 100, maxMs: 800 },
    destTon: 1,
    destNpi: 1,
    defaultDataCoding: 0,
    usePayloadTlv: false,
    receiptIdFormat: 'as-is',
    ...patch,
  };
}

let counter = 0;
export function message(patch: Partial<OutboundMessage> = {}): OutboundMessage {
  counter++;
  return {
    id: `m-${counter}-${Math.random().toString(36).slice(2, 8)}`,
    accountId: 'acc1',
    source: 'Ferry',
    destination: '447700900' + String(counter % 1000).padStart(3, '0'),
    text: `hello ${counter}`,
    registeredDelivery: 1,
    priority: 0,
    ...patch,
  };
}

export { waitFor };

export interface TestPool {
  pool: UpstreamPool;
  receipts: UpstreamReceipt[];
}

/** A pool with the given upstreams whose receipts are collected; closed at teardown. */
export function testPool(t: Teardown, configs: UpstreamConfig[], options: UpstreamPoolOptions = {}): TestPool {
  const receipts: UpstreamReceipt[] = [];
  const pool = UpstreamPool.start(configs, {
    onReceipt: (r) => {
      receipts.push(r);
    },
    ...options,
  });
  t.teardown(() => pool.close());
  return { pool, receipts };
}

export async function waitUp(pool: UpstreamPool, ids: string[], limitMs = 3000): Promise<void> {
  await waitFor(() => ids.every((id) => pool.get(id)!.bindsUp === pool.get(id)!.binds.length), limitMs, `binds of ${ids.join(',')} up`);
}

/** Submits like a dispatcher would: retries per outcome (capped delay), until accepted or failed, within a deadline. */
export async function submitUntilDone(
  pool: UpstreamPool,
  msg: OutboundMessage,
  candidates: () => readonly string[],
  limitMs = 10_000,
  maxDelayMs = 50,
): Promise<{ outcome: SubmitOutcome; attempts: SubmitOutcome[] }> {
  const deadline = Date.now() + limitMs;
  const attempts: SubmitOutcome[] = [];
  let partsDone: number[] = [];
  for (let attempt = 1; ; attempt++) {
    const outcome = await pool.submit({ ...msg, attempt, partsDone }, candidates());
    attempts.push(outcome);
    if (outcome.kind !== 'retry') return { outcome, attempts };
    if (outcome.parts) partsDone = [...partsDone, ...outcome.parts.map((p) => p.partIndex)];
    if (Date.now() > deadline) throw new Error(`message ${msg.id} still retrying after ${limitMs} ms: ${outcome.reason}`);
    await new Promise((r) => setTimeout(r, Math.min(outcome.delayMs, maxDelayMs)));
  }
}
