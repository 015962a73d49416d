import type { PushItem, Queue } from '../store/types.js';

export interface QueueFeederOptions {
  /** Items per push call (default 1000). */
  maxBatch?: number;
  /** A push failed: the items stay in the ledger as queued and the reconciler pushes them again. */
  onError?: (err: unknown, count: number) => void;
  /** Items reached the queue (wakes the dispatcher). */
  onPushed?: (count: number) => void;
}

/**
 * Pushes accepted messages to the queue in batches: everything accepted in one turn of the event loop goes in one
 * call. Fire and forget by design: the message is already committed in the ledger, which is the truth, so a lost
 * push delays it until the reconciler's next pass instead of losing it.
 */
export class QueueFeeder<P> {
  private buffer: PushItem<P>[] = [];
  private scheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly maxBatch: number;

  constructor(
    private readonly queue: Queue<P>,
    private readonly options: QueueFeederOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 1000;
  }

  push(item: PushItem<P>): void {
    this.buffer.push(item);
    if (this.buffer.length >= this.maxBatch) this.drain();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.drain);
    }
  }

  /** Pushes what is buffered and waits for every push under way. */
  async flush(): Promise<void> {
    this.drain();
    await Promise.all([...this.inFlight]);
  }

  private readonly drain = (): void => {
    this.scheduled = false;
    while (this.buffer.length) {
      const batch = this.buffer.length <= this.maxBatch ? this.buffer : this.buffer.slice(0, this.maxBatch);
      this.buffer = batch === this.buffer ? [] : this.buffer.slice(this.maxBatch);
      const p = this.queue.push(batch).then(
        () => this.options.onPushed?.(batch.length),
        (err) => this.options.onError?.(err, batch.length),
      );
      this.inFlight.add(p);
      void p.finally(() => this.inFlight.delete(p));
    }
  };
}
