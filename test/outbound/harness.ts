// What the outbound tests share: a product ("demo") with its state machine and events, a pipeline over the test
// backends and the fail-on-demand provider, and polling helpers.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { isEventType, registerEventTypes } from '../../src/events/catalogue.js';
import { OutboundPipeline, type OutboundProvider } from '../../src/outbound/outbound-pipeline.js';
import { OutboundReconciler } from '../../src/outbound/outbound-reconciler.js';
import type { JobRow } from '../../src/outbound/outbound-store.js';
import { StateMachine } from '../../src/outbound/state-machine.js';
import type { NewOutboundJob } from '../../src/outbound/types.js';
import type { Backends } from '../../src/store/types.js';
import type { TestClock } from '../helpers/backends.js';
import { HttpTestAdapter, type TestPayload } from './http-test-adapter.js';

if (!isEventType('demo.sent')) {
  registerEventTypes({
    'demo.queued': 'a demo message was accepted',
    'demo.sent': 'the provider took the demo message',
    'demo.delivered': 'the provider reported delivery',
    'demo.read': 'the recipient read it',
    'demo.failed': 'the demo message failed (data.error, data.providerError)',
  });
}

export const DEMO = new StateMachine({
  product: 'demo',
  initial: 'queued',
  sent: 'sent',
  failed: 'failed',
  states: {
    queued: { rank: 0, event: 'queued' },
    sent: { rank: 1, event: 'sent' },
    delivered: { rank: 2, event: 'delivered' },
    read: { rank: 3, final: true, event: 'read' },
    failed: { rank: 9, final: true, event: 'failed' },
  },
});

export const silent = pino({ level: 'silent' });

export interface Harness {
  pipeline: OutboundPipeline;
  /** Its deadline pass, run by hand (the daemon's scheduler runs it every reconcileIntervalSeconds). */
  reconciler: OutboundReconciler;
  adapter: HttpTestAdapter;
  registry: Registry;
  stop(): Promise<void>;
}

let providers = 0;
/** A unique provider name (each test its own jobs: workers claim by provider). */
export function providerName(tag = 'p'): string {
  return `${tag}-${process.pid}-${++providers}`;
}

export function makePipeline(
  backends: Pick<Backends, 'db' | 'queue'>,
  clock: TestClock,
  url: string,
  opts: { name?: string; deadlineMs?: number; provider?: Omit<OutboundProvider, 'adapter'>; onChange?: boolean; start?: boolean; idlePollMaxMs?: number } = {},
): Harness {
  const adapter = new HttpTestAdapter(opts.name ?? providerName(), url, () => clock.now);
  const registry = new Registry();
  const pipeline = new OutboundPipeline({
    backends,
    log: silent,
    clock: () => clock.now,
    registry,
    pollMs: 10,
    ...(opts.idlePollMaxMs !== undefined ? { idlePollMaxMs: opts.idlePollMaxMs } : {}),
    products: {
      demo: {
        machine: DEMO,
        deadlineMs: opts.deadlineMs ?? 3_600_000,
        backoff: { baseMs: 1000, factor: 2, maxMs: 60_000 },
        eventData: (job) => ({ to: (job.payload as TestPayload).to }),
      },
    },
    providers: [{ adapter, sendTimeoutMs: 2000, leaseMs: 10_000, ...opts.provider }],
  });
  const reconciler = new OutboundReconciler({ pipeline, log: silent, clock: () => clock.now });
  if (opts.start !== false) pipeline.start();
  return {
    pipeline,
    reconciler,
    adapter,
    registry,
    async stop() {
      await pipeline.stop();
      adapter.close();
    },
  };
}

export function demoJob(provider: string, to: string, account = 'acc_1', extra: Partial<NewOutboundJob<TestPayload>> = {}): NewOutboundJob<TestPayload> {
  return { product: 'demo', provider, accountId: account, messageId: `dm_${to}`, payload: { to, body: `hello ${to}` }, ...extra };
}

/** Pending jobs of one provider in outbound_jobs (every instance's): due, scheduled, claimed. */
export async function countsOf(pipeline: OutboundPipeline, provider: string): Promise<{ due: number; scheduled: number; claimed: number }> {
  return (await pipeline.jobCounts())[provider];
}

/** Polls until `cond` holds (real time, bounded); returns its last value. */
export async function until<T>(what: string, fn: () => Promise<T>, cond: (v: T) => boolean, limitMs = 15_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (cond(v)) return v;
    if (Date.now() - start > limitMs) throw new Error(`${what}: not reached within ${limitMs} ms (last: ${JSON.stringify(v)?.slice(0, 300)})`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function jobState(pipeline: OutboundPipeline, id: string, cond: (j: JobRow) => boolean, what = `job ${id}`, limitMs?: number): Promise<JobRow> {
  return until(what, async () => (await pipeline.store.get(id))!, (j) => j !== null && cond(j), limitMs);
}

/** The webhook endpoint that makes the outbox keep events of an account (events nobody subscribes to are not stored). */
export async function subscribeAll(backends: Pick<Backends, 'db'>, accountId: string): Promise<void> {
  await backends.db.query(
    `INSERT INTO webhook_endpoints (id, account_id, url, events, secret_cipher) VALUES ($1, $2, 'https://example.invalid/hook', ARRAY['*'], 'x')`,
    [`we_${accountId}`, accountId],
  );
}

export async function eventsOf(backends: Pick<Backends, 'db'>, messageId: string): Promise<Array<{ type: string; payload: Record<string, unknown> }>> {
  const { rows } = await backends.db.query<{ type: string; payload: Record<string, unknown> }>(`SELECT type, payload FROM webhook_events WHERE message_key = $1 ORDER BY seq`, [messageId]);
  return rows;
}

/** A short real pause: gives a misbehaving pipeline the chance to act (never a timing assertion). */
export const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
