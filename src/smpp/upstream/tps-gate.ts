import { setTimeout as sleep } from 'node:timers/promises';
import type { Throttle } from '../../store/types.js';

interface Waiter {
  cost: number;
  deadline: number;
  resolve: (waitMs: number) => void;
}

/**
 * Paces one upstream to its maxTps through the shared Throttle (a token bucket keyed `tps:upstream:<id>`, so
 * every Ferry instance draws from the same budget). Submits wait in a local FIFO and only its head asks the
 * throttle, so a thousand waiting submits cost one store call per refill, not a thousand.
 */
export class TpsGate {
  private readonly waiting: Waiter[] = [];
  private queuedCost = 0;
  private pumping = false;
  private closed = false;
  /** Bucket capacity: ~50 ms of traffic, so any one-second window sees at most rate + rate/20 submits. */
  private readonly baseBurst: number;

  constructor(
    private readonly throttle: Throttle,
    readonly key: string,
    readonly ratePerSec: number,
    /** Longest a submit waits for its turn before it is handed back as a `tps_limit` retry. */
    private readonly maxWaitMs: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.baseBurst = Math.max(1, Math.ceil(ratePerSec / 20));
  }

  /** True when a new submit would wait longer than allowed: reported as no capacity, i.e. back-pressure. */
  get saturated(): boolean {
    return (this.queuedCost * 1000) / this.ratePerSec >= this.maxWaitMs;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves 0 when `cost` submits may go now, or with a positive wait (ms) when refused. */
  acquire(cost: number): Promise<number> {
    if (this.closed) return Promise.resolve(this.maxWaitMs);
    const estimateMs = ((this.queuedCost + cost) * 1000) / this.ratePerSec;
    if (this.waiting.length > 0 && estimateMs > this.maxWaitMs) return Promise.resolve(Math.ceil(estimateMs));
    return new Promise<number>((resolve) => {
      this.waiting.push({ cost, deadline: this.clock() + this.maxWaitMs, resolve });
      this.queuedCost += cost;
      if (!this.pumping) void this.pump();
    });
  }

  /** Refuses everything waiting (upstream closing). */
  close(): void {
    this.closed = true;
    this.refuseAll(this.maxWaitMs);
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.waiting.length > 0 && !this.closed) {
        const head = this.waiting[0];
        let allowed: boolean;
        let retryAfterMs: number;
        try {
          const r = await this.throttle.take(this.key, this.ratePerSec, Math.max(this.baseBurst, head.cost), head.cost);
          allowed = r.allowed;
          retryAfterMs = r.retryAfterMs;
        } catch {
          // The shared store is unreachable: refusing keeps the upstream's limit honest; the queue retries later.
          this.refuseAll(1000);
          return;
        }
        if (allowed) {
          this.waiting.shift();
          this.queuedCost -= head.cost;
          head.resolve(0);
          continue;
        }
        // Hand back whoever would outlive their wait; other instances may be drawing from the same bucket.
        const resumeAt = this.clock() + retryAfterMs;
        while (this.waiting.length > 0 && this.waiting[0].deadline < resumeAt) {
          const w = this.waiting.shift()!;
          this.queuedCost -= w.cost;
          w.resolve(Math.max(1, retryAfterMs));
        }
        if (this.waiting.length > 0) await sleep(retryAfterMs);
      }
    } finally {
      this.pumping = false;
    }
  }

  private refuseAll(waitMs: number): void {
    for (const w of this.waiting.splice(0)) w.resolve(waitMs);
    this.queuedCost = 0;
  }
}
