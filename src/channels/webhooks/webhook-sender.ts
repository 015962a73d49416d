import type { Logger } from 'pino';
import type { Db, Queue, QueueItem } from '../../store/types.js';
import { VERSION } from '../../version.js';
import { signatureHeader } from './signature.js';
import type { TargetGuard } from './target-guard.js';
import type { DeliveryJob } from './webhook-fan-out.js';
import type { WebhookMetrics } from './webhook-metrics.js';
import type { WebhookStore } from './webhook-store.js';

export interface WebhookSenderOptions {
  db: Db;
  store: WebhookStore;
  queue: Queue<DeliveryJob>;
  guard: TargetGuard;
  metrics: WebhookMetrics;
  log: Logger;
  timeoutMs: number;
  maxConcurrency: number;
  maxConcurrencyPerEndpoint: number;
  /** Delay before retry n (n = 1 … length); a failure after the last one is final. */
  retryScheduleMs: readonly number[];
  disableAfterMs: number;
  pollMs?: number;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_seq: string;
  message_key: string | null;
  status: string;
  attempts: number;
  url: string;
  enabled: boolean;
  secret_cipher: string;
  previous_secret_cipher: string | null;
  previous_valid_until: unknown;
  type: string;
  payload: unknown;
  account_id: string;
  ev_created_at: unknown;
}

const LOAD_SQL = `SELECT d.id, d.endpoint_id, d.event_id, d.event_seq, d.message_key, d.status, d.attempts,
    e.url, e.enabled, e.secret_cipher, e.previous_secret_cipher, e.previous_valid_until,
    ev.type, ev.payload, ev.account_id, ev.created_at AS ev_created_at
  FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN webhook_events ev ON ev.id = d.event_id
  WHERE d.id = $1`;

// The earliest open delivery of the same message to the same endpoint that comes before this one.
const BLOCKER_SQL = `SELECT next_attempt_at FROM webhook_deliveries
  WHERE endpoint_id = $1 AND message_key = $2 AND event_seq < $3 AND status IN ('pending', 'failed') ORDER BY event_seq LIMIT 1`;

// Busy endpoint / ordering waits are not failures: the attempt is refunded and comes back shortly.
const BUSY_DELAY_MS = 200;
/** A delivery waits in memory for a slot of its busy endpoint only while the expected wait is under this. */
const MAX_SLOT_WAIT_MS = 20_000;
/** Longest a deferred delivery stays away before it asks for a slot again. */
const MAX_DEFER_MS = 60_000;
/** Per-endpoint attempt-time estimates kept; past this the map starts over (endpoints are few in practice). */
const MAX_ESTIMATES = 10_000;
const MAX_ERROR_CHARS = 500;

function ms(v: unknown): number {
  return v instanceof Date ? v.getTime() : new Date(v as string).getTime();
}

/** ±20% so that retries of many deliveries that failed together do not arrive together. */
function jitter(delay: number): number {
  return Math.max(1, Math.round(delay * (0.8 + Math.random() * 0.4)));
}

/**
 * Sends deliveries leased from the webhook queue. Sends run concurrently, capped per endpoint, so a slow or hung
 * receiver only ever holds its own slots (and each attempt ends at the timeout).
 *
 * A delivery leased while its endpoint is at the cap waits here, in order, and takes the endpoint's next free slot, as
 * long as the expected wait (deliveries ahead ÷ cap × the endpoint's recent attempt time) stays under
 * MAX_SLOT_WAIT_MS; past that it is deferred: handed back to the queue until about when a slot should be free. Either
 * way a backlog for a slow endpoint costs queue work in proportion to what the endpoint accepts, not to its length
 * (handing every such delivery back every 200 ms, as before, turned a hung endpoint's backlog into thousands of
 * statements a second, which slowed every other endpoint).
 *
 * Ordering: a delivery waits while an earlier event of the same message (message_key) to the same endpoint is still
 * open; a dead one no longer blocks. The check is at send time, so it holds for one sender at a time per endpoint
 * slot — two instances may race on adjacent events of one message, which at-least-once receivers must tolerate
 * anyway (compare event createdAt).
 */
export class WebhookSender {
  private readonly inflight = new Map<string, number>();
  private total = 0;
  /** Leased deliveries waiting for a slot of their endpoint, oldest first. */
  private readonly waiting = new Map<string, QueueItem<DeliveryJob>[]>();
  private waitingTotal = 0;
  /** Every delivery this sender holds (handled or waiting), so that a lease that ran out while it waited is not taken twice. */
  private readonly held = new Set<string>();
  /** Recent attempt time per endpoint (ms, moving average); an endpoint not yet tried is assumed to take the timeout. */
  private readonly attemptMs = new Map<string, number>();
  private readonly sends = new Set<Promise<void>>();
  private stopped = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;

  constructor(private readonly o: WebhookSenderOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  wake(): void {
    this.wakeUp?.();
  }

  /** Stops leasing and waits for sends in flight (each ends within the timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    // Deliveries waiting for a slot go back to the queue now rather than when their lease ends.
    for (const list of this.waiting.values()) for (const it of list) this.track(this.handBack(it, 0).finally(() => this.held.delete(it.id)));
    this.waiting.clear();
    this.waitingTotal = 0;
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.sends]);
  }

  private sleep(msDelay: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(done, msDelay);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wakeUp = done;
    }).finally(() => (this.wakeUp = null));
  }

  private async run(): Promise<void> {
    const pollMs = this.o.pollMs ?? 100;
    while (!this.stopped) {
      const free = this.o.maxConcurrency - this.total;
      if (free <= 0) {
        await this.sleep(pollMs);
        continue;
      }
      let items: QueueItem<DeliveryJob>[] = [];
      try {
        // The lease covers a wait for a slot and the attempt itself.
        items = await this.o.queue.lease(Math.min(free, 50), this.o.timeoutMs + MAX_SLOT_WAIT_MS + 30_000);
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message }, 'webhook queue lease failed');
      }
      for (const it of items) {
        // Already ours: its lease ran out while it waited longer than expected; the waiting copy goes on.
        if (this.held.has(it.id)) continue;
        this.held.add(it.id);
        this.track(this.handle(it));
      }
      if (!items.length) await this.sleep(pollMs);
    }
  }

  private track(p: Promise<void>): void {
    const q = p.catch((err: Error) => this.o.log.warn({ err: err.message }, 'webhook delivery step failed; the queue lease brings it back'));
    this.sends.add(q);
    void q.finally(() => this.sends.delete(q));
  }

  /**
   * One leased delivery. `slotOf` is set when it comes from the waiting list with a slot of that endpoint already
   * taken for it; a slot taken is released here whatever happens.
   */
  private async handle(item: QueueItem<DeliveryJob>, slotOf?: string): Promise<void> {
    let slot = slotOf;
    let waits = false;
    try {
      // Read again for a delivery that waited: its endpoint may have been disabled or its secret rotated meanwhile.
      const { rows } = await this.o.db.query<DeliveryRow>(LOAD_SQL, [item.id]);
      const d = rows[0];
      if (!d || d.status === 'delivered' || d.status === 'dead') return await this.o.queue.ack([item.id]);
      if (!d.enabled) {
        await this.o.db.query(`UPDATE webhook_deliveries SET status = 'dead', last_error = 'endpoint disabled', next_attempt_at = NULL WHERE id = $1`, [d.id]);
        this.o.metrics.deliveries.inc({ outcome: 'dead' });
        return await this.o.queue.ack([item.id]);
      }
      if (slot === undefined) {
        if ((this.inflight.get(d.endpoint_id) ?? 0) >= this.o.maxConcurrencyPerEndpoint) {
          waits = this.waitForSlot(d.endpoint_id, item);
          // While stopping, straight back to the queue (due at once after a restart).
          if (!waits) await this.handBack(item, this.stopped ? 0 : this.expectedWaitMs(d.endpoint_id));
          return;
        }
        this.takeSlot(d.endpoint_id);
        slot = d.endpoint_id;
      }
      if (d.message_key) {
        const b = await this.o.db.query<{ next_attempt_at: unknown }>(BLOCKER_SQL, [d.endpoint_id, d.message_key, d.event_seq]);
        if (b.rows.length) {
          const due = b.rows[0].next_attempt_at ? ms(b.rows[0].next_attempt_at) - Date.now() : 0;
          await this.o.queue.retry(item.id, Math.max(BUSY_DELAY_MS, due + BUSY_DELAY_MS), 'waiting for an earlier event of the message', { refund: true });
          return;
        }
      }
      await this.attempt(item, d);
    } finally {
      if (!waits) this.held.delete(item.id);
      if (slot !== undefined) this.releaseSlot(slot);
    }
  }

  private takeSlot(endpointId: string): void {
    this.inflight.set(endpointId, (this.inflight.get(endpointId) ?? 0) + 1);
    this.total++;
  }

  /** Frees a slot and hands it straight to the endpoint's oldest waiting delivery, if any. */
  private releaseSlot(endpointId: string): void {
    const n = (this.inflight.get(endpointId) ?? 1) - 1;
    if (n <= 0) this.inflight.delete(endpointId);
    else this.inflight.set(endpointId, n);
    this.total--;
    const list = this.waiting.get(endpointId);
    if (!list || this.stopped) return;
    const next = list.shift()!;
    if (!list.length) this.waiting.delete(endpointId);
    this.waitingTotal--;
    this.takeSlot(endpointId);
    this.track(this.handle(next, endpointId));
  }

  /** How long until a delivery joining the endpoint's waiting list now would get a slot, as far as recent attempts tell. */
  private expectedWaitMs(endpointId: string): number {
    const ahead = this.waiting.get(endpointId)?.length ?? 0;
    return ((ahead + 1) / this.o.maxConcurrencyPerEndpoint) * (this.attemptMs.get(endpointId) ?? this.o.timeoutMs);
  }

  /** Joins the endpoint's waiting list if the wait is expected to be short and there is room; false if not. */
  private waitForSlot(endpointId: string, item: QueueItem<DeliveryJob>): boolean {
    if (this.stopped || this.waitingTotal >= 4 * this.o.maxConcurrency || this.expectedWaitMs(endpointId) > MAX_SLOT_WAIT_MS) return false;
    const list = this.waiting.get(endpointId);
    if (list) list.push(item);
    else this.waiting.set(endpointId, [item]);
    this.waitingTotal++;
    this.o.metrics.endpointBusy.inc({ action: 'waited' });
    return true;
  }

  /**
   * Back to the queue, due after about `delayMs` (deferred; 0 when the sender stops). Not a failed attempt, so the
   * attempt is refunded.
   */
  private async handBack(item: QueueItem<DeliveryJob>, delayMs: number): Promise<void> {
    if (delayMs > 0) this.o.metrics.endpointBusy.inc({ action: 'deferred' });
    const delay = delayMs <= 0 ? 0 : jitter(Math.min(MAX_DEFER_MS, Math.max(BUSY_DELAY_MS, delayMs)));
    await this.o.queue.retry(item.id, delay, 'endpoint busy', { refund: true });
  }

  private noteAttempt(endpointId: string, latencyMs: number): void {
    const prev = this.attemptMs.get(endpointId);
    if (prev === undefined && this.attemptMs.size >= MAX_ESTIMATES) this.attemptMs.clear();
    this.attemptMs.set(endpointId, prev === undefined ? latencyMs : 0.7 * prev + 0.3 * latencyMs);
  }

  private async attempt(item: QueueItem<DeliveryJob>, d: DeliveryRow): Promise<void> {
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    const target = await this.o.guard.check(d.url);
    if (!target.ok) error = `target refused: ${target.reason}`;
    else {
      const body = JSON.stringify({ id: d.event_id, type: d.type, createdAt: new Date(ms(d.ev_created_at)).toISOString(), accountId: d.account_id, data: d.payload });
      const timestamp = Math.floor(Date.now() / 1000);
      try {
        const res = await fetch(target.url, {
          method: 'POST',
          // Redirects are not followed: a 3xx could point the request somewhere the guard did not check.
          redirect: 'manual',
          signal: AbortSignal.timeout(this.o.timeoutMs),
          headers: {
            'content-type': 'application/json',
            'user-agent': `Ferry-Webhooks/${VERSION}`,
            'webhook-id': d.event_id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signatureHeader(this.o.store.signingSecrets(d), d.event_id, timestamp, body),
          },
          body,
        });
        statusCode = res.status;
        // The answer's body is not used; cancel it so the connection is released.
        await res.body?.cancel().catch(() => undefined);
        if (res.status < 200 || res.status >= 300) error = `HTTP ${res.status}`;
      } catch (err) {
        const e = err as Error;
        error = e.name === 'TimeoutError' || e.name === 'AbortError' ? `timed out after ${this.o.timeoutMs} ms` : `request failed: ${(e.cause as Error | undefined)?.message ?? e.message}`;
      }
    }
    const latencyMs = Math.round(performance.now() - started);
    this.o.metrics.latency.observe(latencyMs / 1000);
    this.noteAttempt(d.endpoint_id, latencyMs);
    if (error === null) return this.succeeded(item, d, statusCode!, latencyMs);
    return this.failed(item, d, statusCode, error.slice(0, MAX_ERROR_CHARS), latencyMs);
  }

  private async succeeded(item: QueueItem<DeliveryJob>, d: DeliveryRow, statusCode: number, latencyMs: number): Promise<void> {
    await this.o.db.query(
      `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status_code = $2, last_latency_ms = $3, last_error = NULL,
         delivered_at = now(), next_attempt_at = NULL WHERE id = $1`,
      [d.id, statusCode, latencyMs],
    );
    await this.o.db.query(`UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, [d.endpoint_id]);
    this.o.metrics.deliveries.inc({ outcome: 'delivered' });
    await this.o.queue.ack([item.id]);
  }

  private async failed(item: QueueItem<DeliveryJob>, d: DeliveryRow, statusCode: number | null, error: string, latencyMs: number): Promise<void> {
    const attempts = d.attempts + 1;
    const schedule = this.o.retryScheduleMs;
    const dead = attempts > schedule.length;
    const delay = dead ? 0 : jitter(schedule[attempts - 1]);
    await this.o.db.query(
      `UPDATE webhook_deliveries SET status = $2, attempts = $3, last_status_code = $4, last_latency_ms = $5, last_error = $6,
         next_attempt_at = CASE WHEN $2 = 'dead' THEN NULL ELSE now() + make_interval(secs => $7::float8 / 1000.0) END WHERE id = $1`,
      [d.id, dead ? 'dead' : 'failed', attempts, statusCode, latencyMs, error, delay],
    );
    // Failing continuously since failing_since (any success resets it); past disableAfter the endpoint is disabled.
    const { rows } = await this.o.db.query<{ enabled: boolean }>(
      `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now()),
         enabled = CASE WHEN failing_since < now() - make_interval(secs => $2::float8 / 1000.0) THEN false ELSE enabled END,
         disabled_reason = CASE WHEN failing_since < now() - make_interval(secs => $2::float8 / 1000.0)
           THEN 'every delivery failed since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '; last error: ' || $3
           ELSE disabled_reason END,
         updated_at = CASE WHEN failing_since < now() - make_interval(secs => $2::float8 / 1000.0) THEN now() ELSE updated_at END
       WHERE id = $1 AND enabled RETURNING enabled`,
      [d.endpoint_id, this.o.disableAfterMs, error],
    );
    if (rows[0] && !rows[0].enabled) this.o.log.warn({ endpoint: d.endpoint_id }, 'webhook endpoint disabled after failing continuously');
    this.o.metrics.deliveries.inc({ outcome: dead ? 'dead' : 'failed' });
    if (dead) await this.o.queue.ack([item.id]);
    else await this.o.queue.retry(item.id, delay, error);
  }
}
