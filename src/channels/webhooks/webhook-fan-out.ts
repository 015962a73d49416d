import type { Logger } from 'pino';
import type { Queue } from '../../store/types.js';
import type { WebhookStore } from './webhook-store.js';

export interface DeliveryJob {
  deliveryId: string;
}

/** The queue never kills a delivery: the sender decides when one is dead (retry schedule). */
export const QUEUE_MAX_ATTEMPTS = 1_000_000;

export interface WebhookFanOutOptions {
  store: WebhookStore;
  queue: Queue<DeliveryJob>;
  log: Logger;
  onPushed: () => void;
  pollMs?: number;
  /** The next poll after one that found events, as events keep coming while messages flow (default pollMs). */
  busyPollMs?: number;
  batch?: number;
  /** How overdue an open delivery must be before the sweep pushes it again. */
  sweepGraceMs?: number;
  sweepEveryMs?: number;
}

/**
 * Turns outbox events into deliveries and queue items. The fan-out is one atomic statement (deliveries created,
 * events marked); the queue push follows the commit, and a crash between the two is repaired by the sweep, which
 * pushes open deliveries that are overdue (pushing a queued id again is a no-op). Nothing committed is lost.
 */
export class WebhookFanOut {
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** The last drain found events: poll again soon. */
  private busy = false;

  constructor(private readonly o: WebhookFanOutOptions) {}

  async start(): Promise<void> {
    // After a restart: everything open goes back to the queue at once (idempotent).
    await this.sweep(0);
    this.schedule();
    this.sweepTimer = setInterval(() => void this.sweep(this.o.sweepGraceMs ?? 60_000), this.o.sweepEveryMs ?? 30_000);
    this.sweepTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.sweepTimer);
    await this.running;
  }

  /** Fans out now (e.g. right after a test event was written). */
  wake(): void {
    if (this.stopped || this.running) return;
    clearTimeout(this.timer);
    this.running = this.drain().then((found) => {
      this.busy = found;
    }).finally(() => {
      this.running = null;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), (this.busy ? this.o.busyPollMs : undefined) ?? this.o.pollMs ?? 200);
    this.timer.unref();
  }

  /** Fans out until a batch comes back short; true when it found any event. */
  private async drain(): Promise<boolean> {
    const batch = this.o.batch ?? 500;
    let found = false;
    try {
      for (;;) {
        const ids = await this.o.store.fanOut(batch);
        if (ids.length) {
          found = true;
          await this.push(ids.map((id) => ({ id, runAt: Date.now() })));
        }
        if (ids.length < batch || this.stopped) return found;
      }
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'webhook fan-out failed; retrying');
      return false;
    }
  }

  private async sweep(graceMs: number): Promise<void> {
    try {
      // Bounded per pass; a larger backlog is caught up by the following sweeps.
      const open = await this.o.store.overdue(graceMs, 1000);
      if (open.length) await this.push(open.map((d) => ({ id: d.id, runAt: d.nextAttemptAt })));
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'webhook sweep failed');
    }
  }

  private async push(items: { id: string; runAt: number }[]): Promise<void> {
    await this.o.queue.push(items.map((i) => ({ id: i.id, lane: 'bulk' as const, payload: { deliveryId: i.id }, runAt: i.runAt, maxAttempts: QUEUE_MAX_ATTEMPTS })));
    this.o.onPushed();
  }
}
