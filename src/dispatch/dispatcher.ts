import type { Logger } from 'pino';
import type { DispatchPayload } from '../messaging/types.js';
import type { Ledger } from '../ledger/ledger.js';
import { isFinal } from '../ledger/transitions.js';
import type { MessageRecord } from '../ledger/types.js';
import type { Router } from '../routing/router.js';
import type { RetryReason, SubmitOutcome } from '../smpp/upstream/outbound.js';
import type { UpstreamPool } from '../smpp/upstream/upstream-pool.js';
import type { Lane, Queue, QueueItem } from '../store/types.js';
import type { DispatchMetrics } from './dispatch-metrics.js';
import { outboundOf } from './outbound-message.js';

export interface DispatcherOptions {
  queue: Queue<DispatchPayload>;
  ledger: Ledger;
  router: Router;
  pool: UpstreamPool;
  log: Logger;
  metrics?: DispatchMetrics;
  /** Decrypts sealed texts (OTP codes) just before they are sent. */
  open?: (sealed: string) => string;
  /** Items leased per call (default 256). */
  batch?: number;
  /** Lease length: longer than the slowest submit of a long message (default 120 s). */
  leaseMs?: number;
  /** Poll interval when the queue is empty and nobody called wake() (default 100 ms). */
  idleMs?: number;
  /** A message without a validity period is expired after this long in the queue (default 48 h). */
  maxQueueMs?: number;
  clock?: () => number;
}

const LANES: readonly Lane[] = ['priority', 'bulk'];
const CAPACITY_WAIT_MS = 2000;
const IN_FLIGHT_PER_WINDOW_SLOT = 4;

// Waiting caused by back-pressure or an outage is not the message's fault: those retries do not use an attempt.
const REFUNDED = new Set<RetryReason>(['window_full', 'tps_limit', 'no_upstream', 'throttled']);

/**
 * Takes due messages from the queue (priority lane before bulk), routes them and submits them through the upstream
 * pool, then records the outcome in the ledger before acknowledging the queue item: a crash in between sends the
 * message again (at-least-once), never loses it. Leases only as many messages as the bound upstream windows can
 * hold, so a backlog waits in the durable queue, not in memory.
 */
export class Dispatcher {
  private readonly o: DispatcherOptions;
  private readonly batch: number;
  private readonly leaseMs: number;
  private readonly idleMs: number;
  private readonly maxQueueMs: number;
  private readonly clock: () => number;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private active = 0;
  private wakeUp: (() => void) | null = null;
  private roomWaiter: (() => void) | null = null;
  private idleWaiters: Array<() => void> = [];
  private acks: string[] = [];
  /** Messages being sent and recorded now: a receipt for one of them waits for its submit record. */
  private readonly recording = new Map<string, Promise<void>>();
  private ackScheduled = false;

  constructor(options: DispatcherOptions) {
    this.o = options;
    this.batch = options.batch ?? 256;
    this.leaseMs = options.leaseMs ?? 120_000;
    this.idleMs = options.idleMs ?? 100;
    this.maxQueueMs = options.maxQueueMs ?? 48 * 3_600_000;
    this.clock = options.clock ?? Date.now;
  }

  get inFlight(): number {
    return this.active;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** New work was queued: lease now instead of at the next poll. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Stops leasing and waits for the messages in flight to be recorded (they are requeued by the pool on close). */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    this.roomWaiter?.();
    await this.loopDone;
    if (this.active > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.flushAcks();
  }

  /**
   * Messages this instance may hold: a few times the bound windows. A message spends most of its time here being
   * recorded (correlation, ledger), not in a window, and waitForRoom keeps the windows themselves from overfilling.
   */
  private limit(): number {
    let room = 0;
    for (const u of this.o.pool.status()) if (u.up) room += u.windowSize;
    return room * IN_FLIGHT_PER_WINDOW_SLOT;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      // Let sockets and timers run between leases: with an in-process database (PGlite) every query resolves on
      // the microtask queue, and a loop of them would starve the very I/O that frees the windows.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const room = this.limit() - this.active;
      if (room <= 0) {
        await this.sleep(this.active > 0 ? 1000 : this.idleMs * 5, 'room');
        continue;
      }
      let items: QueueItem<DispatchPayload>[];
      try {
        items = await this.o.queue.lease(Math.min(room, this.batch), this.leaseMs, LANES);
      } catch (err) {
        this.o.log.error({ err: (err as Error).message }, 'queue lease failed; retrying in 1 s');
        await this.sleep(1000, 'wake');
        continue;
      }
      if (items.length === 0) {
        await this.sleep(this.idleMs, 'wake');
        continue;
      }
      this.active += items.length;
      this.o.metrics?.inFlight.set(this.active);
      void this.handleBatch(items);
    }
  }

  private sleep(ms: number, on: 'wake' | 'room'): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        if (this.wakeUp === done) this.wakeUp = null;
        if (this.roomWaiter === done) this.roomWaiter = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      if (on === 'wake') this.wakeUp = done;
      else this.roomWaiter = done;
    });
  }

  private finished(n: number): void {
    this.active -= n;
    this.o.metrics?.inFlight.set(this.active);
    this.roomWaiter?.();
    if (this.active === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  private async handleBatch(items: QueueItem<DispatchPayload>[]): Promise<void> {
    let rows: Map<string, MessageRecord>;
    try {
      rows = await this.o.ledger.getMany(items.map((i) => i.id));
    } catch (err) {
      this.o.log.error({ err: (err as Error).message, count: items.length }, 'ledger read failed; messages go back to the queue');
      await Promise.all(items.map((i) => this.o.queue.retry(i.id, 2000, 'ledger unavailable', { refund: true }).catch(() => undefined)));
      this.finished(items.length);
      return;
    }
    await Promise.all(
      items.map((item) =>
        this.handle(item, rows.get(item.id))
          .catch((err: unknown) => {
            this.o.log.error({ messageId: item.id, err: (err as Error).message }, 'dispatch failed; message goes back to the queue');
            return this.o.queue.retry(item.id, 5000, (err as Error).message).catch(() => undefined);
          })
          .finally(() => this.finished(1)),
      ),
    );
  }

  private async handle(item: QueueItem<DispatchPayload>, rec: MessageRecord | undefined): Promise<void> {
    const now = this.clock();
    if (!rec) {
      this.o.log.warn({ messageId: item.id }, 'queued message has no ledger row; dropped from the queue');
      return this.done(item.id, 'skipped');
    }
    if (isFinal(rec.status)) return this.done(item.id, 'skipped');
    let partsDone: number[] | undefined;
    if (rec.status === 'submitted') {
      // Either a duplicate queue item of a message already sent, or a long message that was partly sent.
      if (rec.partsTotal > 0 && rec.partsDone >= rec.partsTotal) return this.done(item.id, 'skipped');
      const parts = await this.o.ledger.parts(rec.id);
      partsDone = parts.map((p) => p.partIndex);
      if (rec.partsTotal > 0 && partsDone.length >= rec.partsTotal) return this.done(item.id, 'skipped');
    }
    if ((rec.expiresAt !== null && rec.expiresAt <= now) || (rec.expiresAt === null && now - rec.createdAt > this.maxQueueMs)) {
      await this.o.ledger.transition(rec.id, 'expired', { reason: 'validity period passed before it could be sent' }, 'VALIDITY_EXPIRED');
      return this.done(item.id, 'expired');
    }
    const choice = this.o.router.candidates(rec);
    if (!choice) {
      await this.o.ledger.transition(rec.id, 'failed', { reason: 'no routing rule matches' }, 'NO_ROUTE');
      return this.done(item.id, 'no_route');
    }
    await this.waitForRoom(choice.upstreamIds);
    let settle!: () => void;
    this.recording.set(rec.id, new Promise<void>((resolve) => (settle = resolve)));
    try {
      const outcome = await this.o.pool.submit(outboundOf(rec, item.attempts, partsDone, this.o.open), choice.upstreamIds);
      await this.record(item, rec, choice.ruleId, outcome);
    } finally {
      this.recording.delete(rec.id);
      settle();
    }
  }

  /**
   * Resolves once the message's submit is recorded, when it is being sent by this instance now (else at once), so a
   * receipt that overtakes the record is applied after it and the history reads submitted → delivered.
   */
  submitRecorded(messageId: string): Promise<void> | undefined {
    return this.recording.get(messageId);
  }

  /**
   * Holds a leased message (bounded by the lease count) until its route has a free window, instead of bouncing it
   * through the queue; gives up after CAPACITY_WAIT_MS, and at once when no candidate is up (the pool then answers
   * no_upstream and the message waits in the queue).
   */
  private async waitForRoom(candidates: readonly string[]): Promise<void> {
    const pool = this.o.pool;
    if (pool.capacity(candidates)) return;
    const until = this.clock() + CAPACITY_WAIT_MS;
    while (this.running && !pool.capacity(candidates) && candidates.some((id) => pool.isUp(id)) && this.clock() < until) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private async record(item: QueueItem<DispatchPayload>, rec: MessageRecord, ruleId: string, outcome: SubmitOutcome): Promise<void> {
    const parts = outcome.parts ?? [];
    if (outcome.kind === 'accepted') {
      if (parts.length) await this.o.ledger.markSubmitted(rec.id, outcome.upstreamId, ruleId, parts, outcome.totalParts);
      return this.done(item.id, 'accepted');
    }
    if (parts.length && outcome.upstreamId) {
      const total = Math.max(rec.segments, ...parts.map((p) => p.partIndex + 1));
      await this.o.ledger.markSubmitted(rec.id, outcome.upstreamId, ruleId, parts, total);
    }
    if (outcome.kind === 'failed') {
      // The SMSC refused the message for good (e.g. ESME_RINVDSTADR): rejected, with its status as the error.
      await this.o.ledger.transition(rec.id, 'rejected', { upstream: outcome.upstreamId ?? null, status: outcome.statusName }, outcome.statusName);
      return this.done(item.id, 'rejected');
    }
    this.o.metrics?.retries.inc({ reason: outcome.reason });
    const refund = REFUNDED.has(outcome.reason);
    const result = await this.o.queue.retry(item.id, outcome.delayMs, outcome.reason, { refund });
    if (result === 'dead') {
      await this.o.ledger.transition(rec.id, 'failed', { reason: `no attempt succeeded; last: ${outcome.reason}`, attempts: item.attempts }, 'MAX_ATTEMPTS');
      this.o.metrics?.outcomes.inc({ outcome: 'failed' });
      return;
    }
    this.o.metrics?.outcomes.inc({ outcome: 'retry' });
  }

  private done(id: string, outcome: string): void {
    this.o.metrics?.outcomes.inc({ outcome });
    this.acks.push(id);
    if (!this.ackScheduled) {
      this.ackScheduled = true;
      setImmediate(() => void this.flushAcks());
    }
  }

  // Acks go in batches; a lost ack only means the item comes back after its lease and is skipped as already sent.
  private async flushAcks(): Promise<void> {
    this.ackScheduled = false;
    if (!this.acks.length) return;
    const ids = this.acks;
    this.acks = [];
    await this.o.queue.ack(ids).catch((err: unknown) => this.o.log.warn({ err: (err as Error).message, count: ids.length }, 'queue ack failed; items will be skipped when they come back'));
  }
}
