import { LedgerBusyError } from './ledger-busy-error.js';
import { LedgerClosedError } from './ledger-closed-error.js';

export interface GroupCommitOptions {
  /** Items per batch at most. */
  maxBatch?: number;
  /** How long the first item of a batch waits for company. */
  lingerMs?: number;
  /** Batches being written at once. */
  maxInFlight?: number;
  /** Items waiting (not yet being written) above which submit rejects with LedgerBusyError. */
  maxPending?: number;
}

export interface GroupCommitStats {
  /** Batches written (committed or failed). */
  batches: number;
  committedBatches: number;
  failedBatches: number;
  /** Items in committed batches. */
  items: number;
  /** Largest batch so far. */
  maxBatchSeen: number;
}

interface Batch<T, R> {
  items: T[];
  resolves: ((r: R) => void)[];
  rejects: ((e: unknown) => void)[];
}

/**
 * Group commit (ARCHITECTURE principle 2): callers' items are gathered into batches written by one `write` call each;
 * every caller of a batch is answered only once `write` settled (after COMMIT), all resolved or all rejected.
 * A batch is sealed when it reaches maxBatch, or after lingerMs once a write slot is free — while every slot is busy
 * the open batch keeps filling, so batches grow with load instead of queueing many small ones.
 */
export class GroupCommit<T, R> {
  private readonly maxBatch: number;
  private readonly lingerMs: number;
  private readonly maxInFlight: number;
  private readonly maxPending: number;
  private open: Batch<T, R> = GroupCommit.emptyBatch();
  private readonly sealed: Batch<T, R>[] = [];
  private waiting = 0;
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;
  private lingered = false;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  readonly stats: GroupCommitStats = { batches: 0, committedBatches: 0, failedBatches: 0, items: 0, maxBatchSeen: 0 };

  constructor(
    private readonly write: (items: T[]) => Promise<R[] | void>,
    opts: GroupCommitOptions = {},
  ) {
    this.maxBatch = Math.max(1, opts.maxBatch ?? 500);
    this.lingerMs = Math.max(0, opts.lingerMs ?? 1);
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? 2);
    this.maxPending = Math.max(1, opts.maxPending ?? 20_000);
  }

  private static emptyBatch<T, R>(): Batch<T, R> {
    return { items: [], resolves: [], rejects: [] };
  }

  /** Items accepted but not yet being written. */
  get pending(): number {
    return this.waiting;
  }

  submit(item: T): Promise<R> {
    if (this.closed) return Promise.reject(new LedgerClosedError());
    if (this.waiting >= this.maxPending) return Promise.reject(new LedgerBusyError(this.waiting));
    const b = this.open;
    const p = new Promise<R>((resolve, reject) => {
      b.resolves.push(resolve);
      b.rejects.push(reject);
    });
    b.items.push(item);
    this.waiting++;
    this.afterAdd();
    return p;
  }

  /** Many items; they travel in as few batches as maxBatch allows. All-or-nothing admission against maxPending. */
  submitMany(items: readonly T[]): Promise<R[]> {
    if (this.closed) return Promise.reject(new LedgerClosedError());
    if (items.length === 0) return Promise.resolve([]);
    if (this.waiting + items.length > this.maxPending) return Promise.reject(new LedgerBusyError(this.waiting));
    const out: Promise<R>[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) out[i] = this.submit(items[i]);
    return Promise.all(out);
  }

  /** Seals what is open now and resolves when nothing is waiting or being written. Never rejects. */
  flush(): Promise<void> {
    if (this.open.items.length) this.seal();
    if (this.waiting === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Writes what is pending, then refuses new items. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private afterAdd(): void {
    if (this.open.items.length >= this.maxBatch) {
      this.seal();
    } else if (this.open.items.length === 1) {
      this.lingered = false;
      this.timer = setTimeout(this.onLinger, this.lingerMs);
    }
  }

  private readonly onLinger = (): void => {
    this.timer = null;
    this.lingered = true;
    if (this.inFlight < this.maxInFlight && this.sealed.length === 0) this.seal();
  };

  private seal(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.lingered = false;
    this.sealed.push(this.open);
    this.open = GroupCommit.emptyBatch();
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.sealed.length) {
      const b = this.sealed.shift()!;
      this.waiting -= b.items.length;
      this.inFlight++;
      void this.run(b);
    }
  }

  private async run(b: Batch<T, R>): Promise<void> {
    const n = b.items.length;
    this.stats.batches++;
    if (n > this.stats.maxBatchSeen) this.stats.maxBatchSeen = n;
    try {
      const results = await this.write(b.items);
      this.stats.committedBatches++;
      this.stats.items += n;
      for (let i = 0; i < n; i++) b.resolves[i](results ? results[i] : (undefined as R));
    } catch (err) {
      this.stats.failedBatches++;
      for (let i = 0; i < n; i++) b.rejects[i](err);
    } finally {
      this.inFlight--;
      // A batch that lingered out while every slot was busy goes now.
      if (this.sealed.length === 0 && this.lingered && this.open.items.length) this.seal();
      else this.pump();
      if (this.waiting === 0 && this.inFlight === 0 && this.idleWaiters.length) {
        const w = this.idleWaiters;
        this.idleWaiters = [];
        for (const f of w) f();
      }
    }
  }
}
