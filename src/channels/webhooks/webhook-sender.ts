import type { Logger } from 'pino';
import type { DueSet } from '../../delivery/due-set.js';
import { jitter, type RetryPolicy } from '../../delivery/retry-policy.js';
import { GroupCommit } from '../../ledger/group-commit.js';
import { prepared } from '../../store/sql/prepared.js';
import { WakeableSleep } from '../../util/wakeable-sleep.js';
import type { Db } from '../../store/types.js';
import type { TargetSlots } from '../../delivery/target-slots.js';
import type { WebhookMetrics } from './webhook-metrics.js';
import { eventBody, type WebhookPoster } from './webhook-poster.js';
import type { WebhookStore } from './webhook-store.js';

export interface WebhookSenderOptions {
  db: Db;
  store: WebhookStore;
  /** The retry set (RETRY_SET). */
  retrySet: DueSet;
  poster: WebhookPoster;
  slots: TargetSlots;
  metrics: WebhookMetrics;
  log: Logger;
  timeoutMs: number;
  maxConcurrency: number;
  maxConcurrencyPerEndpoint: number;
  /** The retry schedule (webhooks.retrySchedule); a failure after its last delay is final. */
  retry: RetryPolicy;
  disableAfterMs: number;
  pollMs?: number;
}

/** What an attempt needs of its endpoint; cached per endpoint, refreshed by every load that touches it. */
interface EndpointRow {
  url: string;
  enabled: boolean;
  /** failing_since is set: a success must clear it. */
  failing: boolean;
  secret_cipher: string;
  previous_secret_cipher: string | null;
  previous_valid_until: unknown;
  /** A batch endpoint takes arrays: a retry is an array of one. */
  batch_max_events: number | null;
}

interface DeliveryRow extends EndpointRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  status: string;
  attempts: number;
  type: string;
  payload: unknown;
  account_id: string;
  ev_created_at: unknown;
  /** The latest earlier event of the same message to the same endpoint that is still open, if any (ordering). */
  blocker_id: string | null;
  blocker_due: unknown;
}

// A leased batch in one statement, in event order, each with its ordering blocker.
const LOAD_SQL = prepared(`SELECT d.id, d.endpoint_id, d.event_id, d.status, d.attempts,
    e.url, e.enabled, e.failing_since IS NOT NULL AS failing, e.secret_cipher, e.previous_secret_cipher, e.previous_valid_until, e.batch_max_events,
    ev.type, ev.payload, ev.account_id, ev.created_at AS ev_created_at, b.id AS blocker_id, b.next_attempt_at AS blocker_due
  FROM webhook_deliveries d
  JOIN webhook_endpoints e ON e.id = d.endpoint_id
  JOIN webhook_events ev ON ev.seq = d.event_seq AND ev.id = d.event_id
  LEFT JOIN LATERAL (
    SELECT p.id, p.next_attempt_at FROM webhook_deliveries p
    WHERE p.endpoint_id = d.endpoint_id AND p.message_key = d.message_key AND p.event_seq < d.event_seq AND p.status IN ('pending', 'failed')
    ORDER BY p.event_seq DESC LIMIT 1
  ) b ON true
  WHERE d.id = ANY($1::text[])
  ORDER BY d.event_seq`);

const ENDPOINT_SQL = `SELECT url, enabled, failing_since IS NOT NULL AS failing, secret_cipher, previous_secret_cipher, previous_valid_until, batch_max_events
  FROM webhook_endpoints WHERE id = $1`;

// Successful attempts of many deliveries in one statement.
const DELIVERED_SQL = prepared(`UPDATE webhook_deliveries d SET status = 'delivered', attempts = d.attempts + 1, last_status_code = u.code,
    last_latency_ms = u.ms, last_error = NULL, delivered_at = now(), next_attempt_at = NULL
  FROM unnest($1::text[], $2::int[], $3::int[]) AS u(id, code, ms) WHERE d.id = u.id`);

// Busy endpoint / ordering waits are not failures: the attempt is refunded and comes back shortly.
const BUSY_DELAY_MS = 200;
/** A delivery waits in memory for a slot of its busy endpoint only while the expected wait is under this. */
const MAX_SLOT_WAIT_MS = 20_000;
/** Longest a deferred delivery stays away before it asks for a slot again. */
const MAX_DEFER_MS = 60_000;
/** Per-endpoint attempt-time estimates kept; past this the map starts over (endpoints are few in practice). */
const MAX_ESTIMATES = 10_000;
/** Deliveries deferred before their endpoint's first attempt ended, remembered per endpoint at most. */
const MAX_DEFERRED_UNTRIED = 10_000;
/** Deliveries leased per call at most. */
const LEASE_BATCH = 50;
/** A delivery that waited uses its endpoint's row as read within this long; older, the row is read again. */
const ENDPOINT_FRESH_MS = 1000;

function ms(v: unknown): number {
  return v instanceof Date ? v.getTime() : new Date(v as string).getTime();
}

/**
 * How a held delivery ended here: closed (delivered, dead or gone), or open, due again at `due` (epoch ms);
 * `untried`: deferred while that endpoint had no attempt time yet (so it may be brought forward).
 */
type Outcome = { closed: true } | { closed: false; due: number; untried?: string };
const CLOSED: Outcome = { closed: true };

/** A delivery this sender holds, from its claim until its outcome is written. */
interface Held {
  outcome: Outcome | null;
  /** Later events of the same message to the same endpoint, loaded while this one was open: they go after it. */
  successors: DeliveryRow[];
}

interface Delivered {
  id: string;
  endpointId: string;
  statusCode: number;
  latencyMs: number;
  recovered: boolean;
}

/**
 * Sends the retry set: deliveries claimed from webhook_deliveries by due time (failed attempts, what waits behind
 * them, test events, replays). Sends run concurrently, capped per endpoint, so a slow or hung
 * receiver only ever holds its own slots (and each attempt ends at the timeout).
 *
 * The sender holds at most 4 × maxConcurrency deliveries (claimed and not yet settled) and claims only when it has
 * room, so a large backlog stays in the table instead of going round between table and sender. A claimed batch is
 * read in one statement, and successful attempts are written in batches (one UPDATE) off the endpoint's slot, which
 * is freed as soon as the receiver has answered. The slots (TargetSlots, per endpoint) are shared with the event stream.
 *
 * A delivery claimed while its endpoint is at the cap waits here, in order, and takes the endpoint's next free slot,
 * as long as the expected wait (deliveries ahead ÷ cap × the endpoint's recent attempt time) stays under
 * MAX_SLOT_WAIT_MS; past that it is deferred: due again at about when a slot should be free. Either way a backlog
 * for a slow endpoint costs work in proportion to what the endpoint accepts, not to its length.
 *
 * Ordering: a delivery waits while an earlier event of the same message (message_key) to the same endpoint is still
 * open; a dead one no longer blocks. When this sender holds that earlier delivery, the later one goes right after it
 * (or is due again with it, if it fails); otherwise it is due again shortly after the earlier one. The check holds for one sender at a time per message — two instances may race on adjacent events of one
 * message, and a crash between an attempt and its write sends that event again after later ones, which at-least-once
 * receivers must tolerate anyway (compare event createdAt).
 */
export class WebhookSender {
  private total = 0;
  /** Deliveries waiting for a slot of their endpoint (granted by the shared slots, in order). */
  private readonly waiting = new Map<string, DeliveryRow>();
  /** Every delivery this sender holds, so that a lease that ran out while it was held is not taken twice. */
  private readonly held = new Map<string, Held>();
  private readonly endpoints = new Map<string, { row: EndpointRow; at: number }>();
  /** Recent attempt time per endpoint (ms, moving average); an endpoint not yet tried is assumed to take the timeout. */
  private readonly attemptMs = new Map<string, number>();
  /**
   * Deliveries deferred while their endpoint had no attempt time yet (it is assumed to take the timeout, so most of a
   * burst is deferred): brought forward when its first attempt shows the wait would be short after all.
   */
  private readonly deferredUntried = new Map<string, string[]>();
  private readonly sends = new Set<Promise<void>>();
  private readonly delivered: GroupCommit<Delivered, void>;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private readonly pause = new WakeableSleep();

  constructor(private readonly o: WebhookSenderOptions) {
    this.delivered = new GroupCommit<Delivered, void>(this.writeDelivered, { lingerMs: 1, maxInFlight: 2, maxBatch: 500, maxPending: Number.MAX_SAFE_INTEGER });
  }

  /** Deliveries held at most: a slot each for maxConcurrency, the rest waiting for a slot or for an earlier event. */
  private get holdCap(): number {
    return 4 * this.o.maxConcurrency;
  }

  start(): void {
    this.loop ??= this.run();
  }

  wake(): void {
    this.pause.wake();
  }

  /** Stops leasing and waits for sends in flight (each ends within the timeout) and their writes. */
  async stop(): Promise<void> {
    this.stopped = true;
    // Deliveries waiting for a slot are due again now rather than when their claim ends (a slot granted later is freed).
    for (const d of this.waiting.values()) this.track(this.handBack(d.id, 0));
    this.waiting.clear();
    this.wake();
    await this.loop;
    while (this.sends.size) await Promise.allSettled([...this.sends]);
    await this.delivered.close();
  }

  private async run(): Promise<void> {
    const pollMs = this.o.pollMs ?? 100;
    const lowWater = Math.min(LEASE_BATCH, Math.ceil(this.holdCap / 4));
    while (!this.stopped) {
      const room = Math.min(this.holdCap - this.held.size, this.o.maxConcurrency - this.total);
      // Full: wait for deliveries to settle (each wakes the loop) rather than lease a few at a time.
      if (room < Math.min(lowWater, this.o.maxConcurrency)) {
        await this.pause.sleep(pollMs);
        continue;
      }
      let items: string[] = [];
      try {
        // The claim covers a wait for a slot and the attempt itself.
        const now = Date.now();
        items = (await this.o.retrySet.claimDue(Math.min(room, LEASE_BATCH), now, now + this.o.timeoutMs + MAX_SLOT_WAIT_MS + 30_000)).map((r) => r.id);
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message }, 'webhook retry set claim failed');
      }
      const fresh: string[] = [];
      for (const id of items) {
        // Already ours: its claim ran out while it was held; the held copy goes on.
        if (this.held.has(id)) continue;
        this.held.set(id, { outcome: null, successors: [] });
        fresh.push(id);
      }
      if (fresh.length) this.track(this.load(fresh));
      if (!items.length) await this.pause.sleep(pollMs);
    }
  }

  private track(p: Promise<void>): void {
    const q = p.catch((err: Error) => this.o.log.warn({ err: err.message }, 'webhook delivery step failed; its claim running out brings it back'));
    this.sends.add(q);
    void q.finally(() => this.sends.delete(q));
  }

  /** Reads a leased batch and routes each delivery, in event order. */
  private async load(items: string[]): Promise<void> {
    let rows: DeliveryRow[];
    try {
      rows = (await this.o.db.query<DeliveryRow>(LOAD_SQL, [items])).rows;
    } catch (err) {
      // Their claims bring them back; anything waiting behind them is due again then too.
      const due = Date.now() + this.o.timeoutMs + MAX_SLOT_WAIT_MS + 30_000;
      for (const id of items) {
        this.release(id, { closed: false, due });
        this.drop(id);
      }
      throw err;
    }
    const now = Date.now();
    const found = new Set<string>();
    for (const d of rows) {
      found.add(d.id);
      if (this.endpoints.size >= MAX_ESTIMATES && !this.endpoints.has(d.endpoint_id)) this.endpoints.clear();
      this.endpoints.set(d.endpoint_id, { row: d, at: now });
    }
    const gone = items.filter((id) => !found.has(id));
    if (gone.length) this.track(this.closeAll(gone));
    for (const d of rows) this.route(d);
  }

  private route(d: DeliveryRow): void {
    if (d.status === 'delivered' || d.status === 'dead') return this.track(this.closeAll([d.id]));
    if (!d.enabled) return this.track(this.endpointDisabled(d.id));
    if (d.blocker_id) {
      const blocker = this.held.get(d.blocker_id);
      if (!blocker) {
        const due = d.blocker_due ? ms(d.blocker_due) - Date.now() : 0;
        return this.track(this.handBack(d.id, Math.max(BUSY_DELAY_MS, due + BUSY_DELAY_MS), 'waiting for an earlier event of the message'));
      }
      if (blocker.outcome === null) {
        blocker.successors.push(d);
        return;
      }
      return this.follow(d, blocker.outcome);
    }
    this.dispatch(d);
  }

  /** A delivery whose earlier event has settled: after it if that one is closed, else due again with it. */
  private follow(d: DeliveryRow, outcome: Outcome): void {
    if (outcome.closed) return this.dispatch(d);
    this.track(this.handBack(d.id, Math.max(BUSY_DELAY_MS, outcome.due - Date.now() + BUSY_DELAY_MS), 'waiting for an earlier event of the message', outcome.untried));
  }

  /** The outcome of a held delivery is known: what waited behind it follows. Its hold ends with drop(). */
  private release(id: string, outcome: Outcome): void {
    const h = this.held.get(id);
    if (!h || h.outcome) return;
    h.outcome = outcome;
    const next = h.successors;
    h.successors = [];
    for (const d of next) this.follow(d, outcome);
  }

  private drop(id: string): void {
    this.held.delete(id);
    this.wake();
  }

  private dispatch(d: DeliveryRow): void {
    if (this.stopped) return this.track(this.handBack(d.id, 0));
    if (this.o.slots.waiting(d.endpoint_id) > 0 || !this.o.slots.tryTake(d.endpoint_id)) {
      if (this.waitForSlot(d)) return;
      return this.track(this.handBack(d.id, this.expectedWaitMs(d.endpoint_id), undefined, d.endpoint_id));
    }
    this.total++;
    this.track(this.attempt(d));
  }

  /** Frees a slot: the shared slots hand it straight to the endpoint's oldest waiter, if any. */
  private releaseSlot(endpointId: string): void {
    this.total--;
    this.o.slots.release(endpointId);
  }

  /** How long until a delivery joining the endpoint's waiters now would get a slot, as far as recent attempts tell. */
  private expectedWaitMs(endpointId: string): number {
    const ahead = this.o.slots.waiting(endpointId);
    return ((ahead + 1) / this.o.maxConcurrencyPerEndpoint) * (this.attemptMs.get(endpointId) ?? this.o.timeoutMs);
  }

  /** Waits for a slot of the endpoint if the wait is expected to be short; false if not. */
  private waitForSlot(d: DeliveryRow): boolean {
    if (this.stopped || this.expectedWaitMs(d.endpoint_id) > MAX_SLOT_WAIT_MS) return false;
    this.waiting.set(d.id, d);
    this.o.metrics.endpointBusy.inc({ action: 'waited' });
    this.o.slots.wait(d.endpoint_id, () => {
      // Handed back at stop meanwhile: the slot is not needed.
      if (!this.waiting.delete(d.id)) return this.o.slots.release(d.endpoint_id);
      this.total++;
      this.track(this.attemptAfterWait(d));
    });
    return true;
  }

  /**
   * A delivery that waited for its slot (which it holds): its endpoint may have been disabled, deleted or its secret
   * rotated meanwhile, so it uses the endpoint's row as read in the last second, or reads it again.
   */
  private async attemptAfterWait(d: DeliveryRow): Promise<void> {
    const cached = this.endpoints.get(d.endpoint_id);
    let row: EndpointRow | undefined = cached && Date.now() - cached.at <= ENDPOINT_FRESH_MS ? cached.row : undefined;
    if (row?.enabled) return this.attempt(d);
    try {
      row ??= (await this.o.db.query<EndpointRow>(ENDPOINT_SQL, [d.endpoint_id])).rows[0];
    } catch (err) {
      // Its claim brings it back; what waits behind it is due again then too.
      this.releaseSlot(d.endpoint_id);
      this.release(d.id, { closed: false, due: Date.now() + this.o.timeoutMs + MAX_SLOT_WAIT_MS + 30_000 });
      this.drop(d.id);
      throw err;
    }
    if (!row || !row.enabled) {
      this.releaseSlot(d.endpoint_id);
      // Deleted: its deliveries went with it.
      return row ? this.endpointDisabled(d.id) : this.closeAll([d.id]);
    }
    this.endpoints.set(d.endpoint_id, { row, at: Date.now() });
    return this.attempt(d);
  }

  /**
   * Due again after about `delayMs` (deferred; 0 when the sender stops), or after exactly `delayMs` when
   * it waits for an earlier event (`reason`). Not a failed attempt, so the attempt is refunded. `deferredFrom`: the
   * endpoint it was deferred from (or its earlier event was), remembered if it is untried so it can come back early.
   */
  private async handBack(id: string, delayMs: number, reason?: string, deferredFrom?: string): Promise<void> {
    let delay = delayMs;
    if (!reason) {
      if (delayMs > 0) this.o.metrics.endpointBusy.inc({ action: 'deferred' });
      delay = delayMs <= 0 ? 0 : jitter(Math.min(MAX_DEFER_MS, Math.max(BUSY_DELAY_MS, delayMs)));
    }
    const untried = deferredFrom !== undefined && !this.attemptMs.has(deferredFrom);
    const now = Date.now();
    this.release(id, { closed: false, due: now + delay, untried: untried ? deferredFrom : undefined });
    try {
      await this.o.retrySet.endClaims([{ id, dueAt: now + delay }], now);
    } finally {
      this.drop(id);
    }
    if (!untried) return;
    // Its first attempt may have ended meanwhile.
    if (this.attemptMs.has(deferredFrom)) return this.bringForward(deferredFrom, [id]);
    const list = this.deferredUntried.get(deferredFrom);
    if (!list) {
      if (this.deferredUntried.size >= MAX_ESTIMATES) this.deferredUntried.clear();
      this.deferredUntried.set(deferredFrom, [id]);
    } else if (list.length < MAX_DEFERRED_UNTRIED) list.push(id);
  }

  /**
   * Deliveries deferred on a guess (their endpoint untried) come back now, when the endpoint's attempt time shows
   * they would not wait long: due now (one that is held or closed meanwhile is left alone).
   */
  private async bringForward(endpointId: string, ids: string[]): Promise<void> {
    if (this.stopped || this.expectedWaitMs(endpointId) > MAX_SLOT_WAIT_MS) return;
    const now = Date.now();
    await this.o.retrySet.endClaims(ids.filter((id) => !this.held.has(id)).map((id) => ({ id, dueAt: now })), now);
    this.wake();
  }

  /** Delivered, dead or gone already: nothing to send. */
  private async closeAll(ids: string[]): Promise<void> {
    for (const id of ids) this.release(id, CLOSED);
    for (const id of ids) this.drop(id);
  }

  private async endpointDisabled(id: string): Promise<void> {
    this.release(id, CLOSED);
    try {
      await this.o.db.query(`UPDATE webhook_deliveries SET status = 'dead', last_error = 'endpoint disabled', next_attempt_at = NULL WHERE id = $1`, [id]);
      this.o.metrics.deliveries.inc({ outcome: 'dead' });
    } finally {
      this.drop(id);
    }
  }

  private noteAttempt(endpointId: string, latencyMs: number): void {
    const prev = this.attemptMs.get(endpointId);
    if (prev === undefined && this.attemptMs.size >= MAX_ESTIMATES) this.attemptMs.clear();
    this.attemptMs.set(endpointId, prev === undefined ? latencyMs : 0.7 * prev + 0.3 * latencyMs);
    const deferred = prev === undefined ? this.deferredUntried.get(endpointId) : undefined;
    if (deferred) {
      this.deferredUntried.delete(endpointId);
      this.track(this.bringForward(endpointId, deferred));
    }
  }

  /** One attempt, on a slot of the endpoint taken for it; the slot is freed as soon as the receiver has answered. */
  private async attempt(d: DeliveryRow): Promise<void> {
    const e = this.endpoints.get(d.endpoint_id)?.row ?? d;
    let r;
    try {
      const body = eventBody({ id: d.event_id, type: d.type, createdAt: ms(d.ev_created_at), accountId: d.account_id, payload: d.payload });
      r = await this.o.poster.post(e, d.event_id, e.batch_max_events ? `[${body}]` : body);
    } finally {
      this.releaseSlot(d.endpoint_id);
    }
    this.noteAttempt(d.endpoint_id, r.latencyMs);
    if (r.error === null) return this.succeeded(d, r.statusCode!, r.latencyMs, e.failing);
    return this.failed(d, r.statusCode, r.error, r.latencyMs);
  }

  private async succeeded(d: DeliveryRow, statusCode: number, latencyMs: number, recovered: boolean): Promise<void> {
    this.o.metrics.deliveries.inc({ outcome: 'delivered' });
    const cached = this.endpoints.get(d.endpoint_id);
    if (cached) cached.row.failing = false;
    // The next event of the message may go now: it need not wait for this one's write.
    this.release(d.id, CLOSED);
    try {
      await this.delivered.submit({ id: d.id, endpointId: d.endpoint_id, statusCode, latencyMs, recovered });
    } finally {
      this.drop(d.id);
    }
  }

  /** Successful attempts: their rows, then endpoints that had been failing. */
  private readonly writeDelivered = async (items: Delivered[]): Promise<void> => {
    const ids = items.map((i) => i.id);
    await this.o.db.query(DELIVERED_SQL, [ids, items.map((i) => i.statusCode), items.map((i) => i.latencyMs)]);
    const recovered = [...new Set(items.filter((i) => i.recovered).map((i) => i.endpointId))];
    if (recovered.length) await this.o.store.recovered(recovered);
  };

  private async failed(d: DeliveryRow, statusCode: number | null, error: string, latencyMs: number): Promise<void> {
    const attempts = d.attempts + 1;
    const next = this.o.retry.after(attempts);
    const dead = next.final;
    const delay = next.final ? 0 : next.delayMs;
    const cached = this.endpoints.get(d.endpoint_id);
    if (cached) cached.row.failing = true;
    this.release(d.id, dead ? CLOSED : { closed: false, due: Date.now() + delay });
    try {
      await this.o.db.query(
        `UPDATE webhook_deliveries SET status = $2, attempts = $3, last_status_code = $4, last_latency_ms = $5, last_error = $6,
           next_attempt_at = CASE WHEN $2 = 'dead' THEN NULL ELSE now() + make_interval(secs => $7::float8 / 1000.0) END WHERE id = $1`,
        [d.id, dead ? 'dead' : 'failed', attempts, statusCode, latencyMs, error, delay],
      );
      if (await this.o.store.recordFailure(d.endpoint_id, this.o.disableAfterMs, error)) {
        if (cached) cached.row.enabled = false;
        this.o.log.warn({ endpoint: d.endpoint_id }, 'webhook endpoint disabled after failing continuously');
      }
      this.o.metrics.deliveries.inc({ outcome: dead ? 'dead' : 'failed' });
    } finally {
      this.drop(d.id);
    }
  }
}
