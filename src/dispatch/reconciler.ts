import type { Logger } from 'pino';
import { laneOf } from '../messaging/sms-service.js';
import type { DispatchPayload } from '../messaging/types.js';
import type { Ledger } from '../ledger/ledger.js';
import type { Queue } from '../store/types.js';
import type { DispatchMetrics } from './dispatch-metrics.js';

export interface ReconcilerOptions {
  ledger: Ledger;
  queue: Queue<DispatchPayload>;
  log: Logger;
  metrics?: DispatchMetrics;
  maxAttempts: number;
  /** A row untouched for this long is pushed again by the periodic pass (default 60 s). */
  staleMs?: number;
  onPushed?: () => void;
  /** Voids debits whose messages never reached the ledger (a crash between debit and commit). */
  billing?: { voidOrphans(graceMs?: number): Promise<number> };
  /** A message submitted upstream whose receipt has not come after this long is expired (NO_RECEIPT); 0 never. */
  receiptTimeoutMs?: number;
  clock?: () => number;
}

const PAGE = 1000;

/**
 * Makes the queue agree with the ledger (ARCHITECTURE principle 1). At start every accepted, unsent message
 * (queued, or scheduled and due) is pushed; then a periodic pass pushes rows that have sat untouched, which repairs
 * a push lost after its commit (Redis down, crash). Pushing is idempotent: an id already queued or leased is left
 * alone, so the pass never sends anything twice by itself. The periodic pass is run by the platform's scheduler (the
 * gateway's job `sms.reconcile`).
 */
export class Reconciler {
  private running: Promise<number> | null = null;
  private readonly clock: () => number;

  constructor(private readonly o: ReconcilerOptions) {
    this.clock = o.clock ?? Date.now;
  }

  /** The start-up sweep: every recoverable row. Returns how many were pushed. */
  sweep(): Promise<number> {
    return this.run(0);
  }

  /** The periodic pass: rows untouched for staleMs, then silent submits expired and orphan debits voided. Rejects when it failed. */
  periodic(): Promise<number> {
    return this.run(this.o.staleMs ?? 60_000);
  }

  /** Waits for a pass in progress. */
  async stop(): Promise<void> {
    await this.running?.catch(() => 0);
  }

  private run(staleMs: number): Promise<number> {
    this.running ??= this.pass(staleMs).finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pass(staleMs: number): Promise<number> {
    const now = this.clock();
    let after = '';
    let pushed = 0;
    for (;;) {
      const rows = await this.o.ledger.recoverable(PAGE, after, now);
      if (!rows.length) break;
      after = rows[rows.length - 1].id;
      const items = rows
        .filter((r) => staleMs === 0 || now - r.updatedAt >= staleMs)
        .map((r) => ({ id: r.id, lane: laneOf(r), payload: { id: r.id }, runAt: Math.min(now, r.scheduledAt ?? now), maxAttempts: this.o.maxAttempts }));
      if (items.length) {
        await this.o.queue.push(items);
        pushed += items.length;
      }
      if (rows.length < PAGE) break;
    }
    if (staleMs > 0 && this.o.receiptTimeoutMs) await this.expireSilent(now - this.o.receiptTimeoutMs);
    if (staleMs > 0 && this.o.billing) {
      const voided = await this.o.billing.voidOrphans();
      if (voided) this.o.log.warn({ count: voided }, 'debits without accepted messages were credited back');
    }
    if (pushed) {
      this.o.metrics?.reconciled.inc(pushed);
      this.o.log.info({ pushed, startup: staleMs === 0 }, 'reconciler pushed accepted messages to the queue');
      this.o.onPushed?.();
    }
    return pushed;
  }

  // Without this, a message whose receipt never comes would stay 'submitted' for ever: every accepted message ends final.
  private async expireSilent(before: number): Promise<void> {
    for (let round = 0; round < 100; round++) {
      const ids = await this.o.ledger.staleSubmitted(PAGE, before);
      if (!ids.length) return;
      await this.o.ledger.transitionMany(ids.map((id) => ({ id, to: 'expired' as const, errorCode: 'NO_RECEIPT', detail: { reason: 'no receipt from the upstream in time' } })));
      this.o.log.warn({ count: ids.length }, 'messages expired without a receipt');
      if (ids.length < PAGE) return;
    }
  }
}
