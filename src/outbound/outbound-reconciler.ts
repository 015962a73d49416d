import type { Logger } from 'pino';
import type { PushItem } from '../store/types.js';
import { QUEUE_MAX_ATTEMPTS, type OutboundPipeline } from './outbound-pipeline.js';
import type { OutboundStore } from './outbound-store.js';
import type { OutboundQueuePayload } from './types.js';

export interface OutboundReconcilerOptions {
  pipeline: OutboundPipeline;
  log: Logger;
  /** A pending job untouched for this long is pushed again by the periodic pass (default 60 s). */
  staleMs?: number;
  /** The start-up sweep of every pending job when the pipeline starts (default true; tests drive passes by hand). */
  sweepAtStart?: boolean;
  clock?: () => number;
}

const PAGE = 1000;

/**
 * Makes the outbound queues agree with outbound_jobs, as the SMS Reconciler does for the ledger: at start every
 * pending job is pushed to its provider's queue (due at its next attempt), then a periodic pass pushes pending jobs
 * untouched for staleMs (a push lost after its commit, a queue that lost its data) and fails the jobs whose deadline
 * passed while they waited in a queue nobody leased (an endpoint whose breaker stayed open). Pushing is idempotent:
 * an item already queued or leased is left alone, so the pass never sends anything twice by itself. The periodic
 * pass (`periodic()`) is run by the platform's scheduler: the daemon's cluster job `outbound.reconcile`.
 */
export class OutboundReconciler {
  private started = false;
  private running: Promise<number> | null = null;
  private readonly clock: () => number;
  private readonly store: OutboundStore;

  constructor(private readonly o: OutboundReconcilerOptions) {
    this.clock = o.clock ?? Date.now;
    this.store = o.pipeline.store;
    o.pipeline.attachReconciler(this);
  }

  /** The start-up sweep: every pending job. Returns how many were pushed. */
  sweep(): Promise<number> {
    return this.run(0);
  }

  /** Called by the pipeline's start: the start-up sweep, in the background. */
  start(): void {
    if (this.started) return;
    this.started = true;
    if (this.o.sweepAtStart !== false) {
      void this.sweep().catch((err: unknown) => this.o.log.warn({ err: (err as Error).message }, 'outbound start-up sweep failed; the periodic pass pushes stale jobs'));
    }
  }

  /** Waits for a pass in progress (called by the pipeline's stop). */
  async stop(): Promise<void> {
    await this.running?.catch(() => 0);
  }

  /** The periodic pass: overdue jobs failed, pending jobs untouched for staleMs pushed again. Rejects when it failed. */
  periodic(): Promise<number> {
    return this.run(this.o.staleMs ?? 60_000);
  }

  /** One pass now (staleMs 0: every pending job). */
  run(staleMs: number): Promise<number> {
    this.running ??= this.pass(staleMs).finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pass(staleMs: number): Promise<number> {
    const now = this.clock();
    const expired = await this.expireOverdue(now);
    let after = '';
    let pushed = 0;
    const known = new Set(this.o.pipeline.providerNames());
    for (;;) {
      const rows = await this.store.pendingPage(after, PAGE);
      if (!rows.length) break;
      after = rows[rows.length - 1].id;
      const byProvider = new Map<string, PushItem<OutboundQueuePayload>[]>();
      for (const r of rows) {
        if (!known.has(r.provider) || (staleMs > 0 && now - r.updatedAt < staleMs)) continue;
        const list = byProvider.get(r.provider) ?? [];
        list.push({ id: r.id, lane: r.lane, payload: { p: r.provider }, runAt: Math.max(now, r.nextAttemptAt), maxAttempts: QUEUE_MAX_ATTEMPTS });
        byProvider.set(r.provider, list);
      }
      for (const [provider, items] of byProvider) {
        await this.o.pipeline.queueOf(provider).push(items);
        pushed += items.length;
      }
      if (rows.length < PAGE) break;
    }
    if (pushed) this.o.pipeline.wake();
    if (pushed || expired) this.o.log.info({ pushed, expired, startup: staleMs === 0 }, 'outbound reconciler pushed pending jobs to their queues');
    return pushed;
  }

  private async expireOverdue(now: number): Promise<number> {
    let n = 0;
    for (let round = 0; round < 100; round++) {
      const ids = await this.store.overdue(now, PAGE);
      if (!ids.length) break;
      const done = await this.o.pipeline.expire(ids);
      n += done;
      if (ids.length < PAGE || done === 0) break;
    }
    return n;
  }
}
