import type { Logger } from 'pino';
import type { OutboundPipeline } from './outbound-pipeline.js';
import type { OutboundStore } from './outbound-store.js';

export interface OutboundReconcilerOptions {
  pipeline: OutboundPipeline;
  log: Logger;
  clock?: () => number;
}

const PAGE = 1000;

/**
 * Fails the pending jobs whose deadline passed while nobody held them — an endpoint whose breaker stayed open, a
 * provider no instance runs any more — with DEADLINE_EXCEEDED and their `<product>.failed` event. A worker fails an
 * overdue job itself when it claims one; this pass is for those no worker claims. Nothing else needs repairing: the
 * workers claim due jobs straight from outbound_jobs, so there is no queue that could lose one. The pass
 * (`periodic()`) is run by the platform's scheduler: the daemon's cluster job `outbound.reconcile`.
 */
export class OutboundReconciler {
  private running: Promise<number> | null = null;
  private readonly clock: () => number;
  private readonly store: OutboundStore;

  constructor(private readonly o: OutboundReconcilerOptions) {
    this.clock = o.clock ?? Date.now;
    this.store = o.pipeline.store;
  }

  /** One pass (a pass in progress is joined): fails the overdue jobs nobody holds; returns how many. Rejects when it failed. */
  periodic(): Promise<number> {
    this.running ??= this.expireOverdue().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async expireOverdue(): Promise<number> {
    const now = this.clock();
    let n = 0;
    for (let round = 0; round < 100; round++) {
      const ids = await this.store.overdue(now, PAGE);
      if (!ids.length) break;
      const done = await this.o.pipeline.expire(ids);
      n += done;
      if (ids.length < PAGE || done === 0) break;
    }
    if (n) this.o.log.info({ expired: n }, 'outbound jobs past their deadline failed');
    return n;
  }
}
