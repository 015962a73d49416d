import type { CorrelationEntry, CorrelationMatch, CorrelationRef, CorrelationStore, KeptReceipt, KeptReceiptData } from './correlation-store.js';
import type { AcceptedPart } from './outbound.js';
import { correlationKey, receiptLookupKeys, type ReceiptIdFormat } from './receipt-id.js';

// Retries of a failed correlation write: about 5 minutes of backoff before the entries are given up.
const REWRITE_ATTEMPTS = 15;

export interface ReceiptCorrelatorOptions {
  /** How long a receipt that matches nothing waits for its submit_sm_resp (default 10 s). */
  holdMs?: number;
  /** Receipts held at once; beyond it an unmatched receipt is reported unmatched at once (default 10,000). */
  maxHeld?: number;
  /** With a shared store: how often held receipts are looked up again, for submits made by another instance (default 500 ms). */
  recheckMs?: number;
  /** Entries older than this are purged by `purge()` (default 7 days: receipts can trail validity periods of several days). */
  retentionMs?: number;
  /** How long a receipt that outlived its hold is kept for its correlation to land (default 1 h). */
  keepMs?: number;
  /** How often kept receipts are matched against the store, while there are any or the store is shared (default 1 s). */
  sweepMs?: number;
  clock?: () => number;
}

interface Held {
  upstreamId: string;
  keys: string[];
  resolve: (m: CorrelationMatch | undefined) => void;
  timer: NodeJS.Timeout | undefined;
  done: boolean;
}

/**
 * Maps (upstream, upstream message id) → (Ferry message id, part). A receipt that arrives before its
 * submit_sm_resp (several SMSCs send them on another bind, or simply faster) is held for a bounded time and
 * matched when the response is recorded; hex/decimal, case and leading-zero differences are absorbed by the keys.
 * One still unmatched after the hold is kept in the store (keep) and applied when its correlation lands, so a
 * receipt that beats a stalled Ferry's record by more than the hold is not lost.
 */
export class ReceiptCorrelator {
  private readonly held = new Map<string, Held[]>();
  /**
   * Entries recorded here whose store write has not committed yet. A receipt arriving in that gap (the SMSC is
   * faster than our batched write) is matched from memory instead of waiting for the store's recheck.
   */
  private readonly unwritten = new Map<string, CorrelationRef>();
  private readonly rewrites = new Set<NodeJS.Timeout>();
  private closed = false;
  private heldCount = 0;
  private readonly holdMs: number;
  private readonly maxHeld: number;
  private readonly recheckMs: number;
  private readonly retentionMs: number;
  private readonly clock: () => number;
  private recheckTimer: NodeJS.Timeout | undefined;
  private readonly keepMs: number;
  private readonly sweepMs: number;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private sweepAgain = false;
  /** Lookup keys of receipts this instance kept and has not seen matched (upstream + NUL + key → count). */
  private readonly keptKeys = new Map<string, number>();
  /** Receipts matched after being held (they beat their response). */
  matchedAfterHold = 0;
  heldOverflow = 0;
  /** Kept receipts matched once their correlation landed. */
  matchedAfterKeep = 0;
  /**
   * Applies a kept receipt whose correlation landed (the pool's receipt path). A throw leaves it kept, tried again at
   * the next sweep.
   */
  onKeptMatch: ((kept: KeptReceipt, match: CorrelationMatch) => Promise<void>) | undefined;
  /** Kept receipts dropped by purge() after the keep time: they end unmatched. */
  onKeptExpired: ((kept: KeptReceipt[]) => void) | undefined;

  constructor(readonly store: CorrelationStore, options: ReceiptCorrelatorOptions = {}) {
    this.holdMs = options.holdMs ?? 10_000;
    this.maxHeld = options.maxHeld ?? 10_000;
    this.recheckMs = options.recheckMs ?? 500;
    this.retentionMs = options.retentionMs ?? 7 * 86_400_000;
    this.clock = options.clock ?? Date.now;
    this.keepMs = options.keepMs ?? 3_600_000;
    this.sweepMs = options.sweepMs ?? 1000;
  }

  /**
   * Starts the sweep of kept receipts on a shared store (the gateway's start; a store of this process alone is swept
   * from its first kept receipt on): another instance may keep a receipt whose submit this one records, or an earlier
   * life kept some, so a shared store is swept all the time.
   */
  start(): void {
    if (this.store.shared) this.ensureSweep();
  }

  /** Receipts waiting for their submit_sm_resp now. */
  get heldReceipts(): number {
    return this.heldCount;
  }

  /**
   * Records the accepted parts of a message. Receipts already held for these ids are released at once;
   * the promise settles when the store has the entries.
   */
  async record(upstreamId: string, format: ReceiptIdFormat, messageId: string, totalParts: number, parts: readonly AcceptedPart[]): Promise<void> {
    const now = this.clock();
    const entries = parts.map((p) => ({
      upstreamId,
      key: correlationKey(p.upstreamMessageId, format),
      messageId,
      partIndex: p.partIndex,
      parts: totalParts,
      createdAt: now,
    }));
    if (this.heldCount > 0) {
      for (const e of entries) {
        const waiters = this.held.get(upstreamId + '\u0000' + e.key);
        if (!waiters) continue;
        const ref: CorrelationRef = { messageId: e.messageId, partIndex: e.partIndex, parts: e.parts };
        for (const w of [...waiters]) {
          this.matchedAfterHold++;
          this.settle(w, { ref, keyIndex: w.keys.indexOf(e.key) });
        }
      }
    }
    const local: string[] = [];
    for (const e of entries) {
      const k = upstreamId + '\u0000' + e.key;
      this.unwritten.set(k, { messageId: e.messageId, partIndex: e.partIndex, parts: e.parts });
      local.push(k);
    }
    try {
      await this.store.put(entries);
    } catch (err) {
      // The store is down: keep the entries matchable from memory and write them when it is back, so receipts
      // for messages sent during an outage still find their message.
      this.rewriteLater(entries, local, 1);
      throw err;
    }
    for (const k of local) this.unwritten.delete(k);
    if (this.keptKeys.size > 0 && local.some((k) => this.keptKeys.has(k))) this.sweepSoon();
  }

  /**
   * Keeps a receipt that matched nothing within the hold (its correlation is not recorded yet: the SMSC was faster
   * than Ferry, or Ferry is stalled by load). Resolves once stored, so the SMSC may then be acknowledged; it is applied
   * through onKeptMatch when the correlation lands, or dropped unmatched by purge() after keepMs.
   */
  async keep(upstreamId: string, receipt: KeptReceiptData): Promise<void> {
    const keys = receiptLookupKeys(receipt.id);
    await this.store.keep({ upstreamId, keys, receipt, keptAt: this.clock() });
    for (const k of keys) {
      const hk = upstreamId + '\u0000' + k;
      this.keptKeys.set(hk, (this.keptKeys.get(hk) ?? 0) + 1);
    }
    this.ensureSweep();
    // Its correlation may have landed while it was being stored.
    this.sweepSoon();
  }

  /** Kept receipts matched and applied now (also run by the sweep timer). Never throws. */
  sweepKept(): Promise<void> {
    if (this.sweeping) {
      this.sweepAgain = true;
      return this.sweeping;
    }
    this.sweeping = this.sweepOnce()
      .catch(() => undefined) // the store is down: the next sweep tries again
      .finally(() => {
        this.sweeping = undefined;
        if (this.sweepAgain && !this.closed) {
          this.sweepAgain = false;
          void this.sweepKept();
        }
      });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    if (!this.onKeptMatch) return;
    for (let round = 0; round < 100 && !this.closed; round++) {
      const found = await this.store.matchKept(500);
      if (found.length === 0) return;
      const applied: string[] = [];
      const apply = this.onKeptMatch;
      // Together, as receipts arriving at once are: each waits for its ledger commit, which batches them.
      await Promise.all(
        found.map(async (f) => {
          try {
            await apply(f.kept, f.match);
          } catch {
            return; // kept: the next sweep tries again
          }
          applied.push(f.id);
          this.matchedAfterKeep++;
          this.forgetKeys(f.kept);
        }),
      );
      await this.store.dropKept(applied);
      if (applied.length < found.length || found.length < 500) return;
    }
  }

  private forgetKeys(k: KeptReceipt): void {
    for (const key of k.keys) {
      const hk = k.upstreamId + '\u0000' + key;
      const n = (this.keptKeys.get(hk) ?? 0) - 1;
      if (n > 0) this.keptKeys.set(hk, n);
      else this.keptKeys.delete(hk);
    }
  }

  private sweepSoon(): void {
    if (this.closed) return;
    setImmediate(() => void this.sweepKept());
  }

  private ensureSweep(): void {
    if (this.sweepTimer || this.closed) return;
    this.sweepTimer = setInterval(() => {
      if (!this.store.shared && this.keptKeys.size === 0) {
        clearInterval(this.sweepTimer);
        this.sweepTimer = undefined;
        return;
      }
      void this.sweepKept();
    }, this.sweepMs);
    this.sweepTimer.unref();
  }

  private rewriteLater(entries: CorrelationEntry[], local: string[], attempt: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.rewrites.delete(timer);
      this.store.put(entries).then(
        () => {
          for (const k of local) this.unwritten.delete(k);
        },
        () => {
          if (attempt < REWRITE_ATTEMPTS) this.rewriteLater(entries, local, attempt + 1);
          else for (const k of local) this.unwritten.delete(k);
        },
      );
    }, Math.min(30_000, 500 * 2 ** (attempt - 1)));
    timer.unref();
    this.rewrites.add(timer);
  }

  /**
   * The Ferry message and part a receipt's id belongs to. Resolves at once when known; otherwise waits up to holdMs
   * for the submit_sm_resp to be recorded, and resolves undefined if it never is.
   */
  match(upstreamId: string, receiptId: string): Promise<CorrelationMatch | undefined> {
    const keys = receiptLookupKeys(receiptId);
    if (this.unwritten.size > 0) {
      for (let i = 0; i < keys.length; i++) {
        const ref = this.unwritten.get(upstreamId + '\u0000' + keys[i]);
        if (ref) return Promise.resolve({ ref, keyIndex: i });
      }
    }
    if (this.heldCount >= this.maxHeld) {
      this.heldOverflow++;
      return this.store.find(upstreamId, keys);
    }
    return new Promise<CorrelationMatch | undefined>((resolve, reject) => {
      // Registered before the store lookup, so a record() landing while the lookup runs is not missed.
      const w: Held = { upstreamId, keys, resolve, timer: undefined, done: false };
      for (const k of keys) {
        const hk = upstreamId + '\u0000' + k;
        const list = this.held.get(hk);
        if (list) list.push(w);
        else this.held.set(hk, [w]);
      }
      this.heldCount++;
      this.store.find(upstreamId, keys).then(
        (found) => {
          if (w.done) return;
          if (found) return this.settle(w, found);
          // Kept referenced: someone awaits this answer, and it comes within holdMs.
          w.timer = setTimeout(() => this.settle(w, undefined), this.holdMs);
          if (this.store.shared) this.ensureRecheck();
        },
        (err: unknown) => {
          // The store could not answer: the receipt must be refused (the SMSC offers it again), not taken as
          // unmatched and acknowledged, which would lose it.
          this.settle(w, undefined, () => reject(err));
        },
      );
    });
  }

  /**
   * Drops correlations older than the retention, and kept receipts older than keepMs (reported to onKeptExpired): the
   * gateway's cluster job `sms.correlation-purge`, every 10 min.
   */
  async purge(): Promise<number> {
    const n = await this.store.purge(this.clock() - this.retentionMs);
    const expired = await this.store.purgeKept(this.clock() - this.keepMs);
    if (expired.length) {
      for (const k of expired) this.forgetKeys(k);
      this.onKeptExpired?.(expired);
    }
    return n;
  }

  /** Releases held receipts as unmatched and stops the timers (the store is closed by its owner). */
  close(): void {
    this.closed = true;
    for (const t of this.rewrites) clearTimeout(t);
    this.rewrites.clear();
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    clearInterval(this.recheckTimer);
    this.recheckTimer = undefined;
    for (const list of [...this.held.values()]) for (const w of [...list]) this.settle(w, undefined);
  }

  private settle(w: Held, result: CorrelationMatch | undefined, fail?: () => void): void {
    if (w.done) return;
    w.done = true;
    clearTimeout(w.timer);
    for (const k of w.keys) {
      const hk = w.upstreamId + '\u0000' + k;
      const list = this.held.get(hk);
      if (!list) continue;
      const i = list.indexOf(w);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.held.delete(hk);
    }
    this.heldCount--;
    if (fail) fail();
    else w.resolve(result);
  }

  private ensureRecheck(): void {
    if (this.recheckTimer) return;
    this.recheckTimer = setInterval(() => {
      if (this.heldCount === 0) {
        clearInterval(this.recheckTimer);
        this.recheckTimer = undefined;
        return;
      }
      const seen = new Set<Held>();
      for (const list of this.held.values()) {
        for (const w of list) {
          if (seen.has(w) || w.timer === undefined) continue; // no timer yet: its first lookup is still running
          seen.add(w);
          this.store.find(w.upstreamId, w.keys).then(
            (found) => found && this.settle(w, found),
            () => undefined,
          );
        }
      }
    }, this.recheckMs);
    this.recheckTimer.unref();
  }
}
