import type { Logger } from 'pino';
import type { Tick } from '../../events/event-log-ticker.js';
import { prepared } from '../../store/sql/prepared.js';
import { WakeableSleep } from '../../util/wakeable-sleep.js';
import type { Db } from '../../store/types.js';
import type { RetryPolicy } from '../../delivery/retry-policy.js';
import type { TargetSlots } from '../../delivery/target-slots.js';
import type { WebhookMetrics } from './webhook-metrics.js';
import { eventBody, type AttemptResult, type EndpointTarget, type WebhookPoster } from './webhook-poster.js';
import type { StreamRow, WebhookStore } from './webhook-store.js';

export interface EventStreamOptions {
  db: Db;
  store: WebhookStore;
  poster: WebhookPoster;
  slots: TargetSlots;
  metrics: WebhookMetrics;
  log: Logger;
  /** The newest tick (the ticker's, or read from the database). */
  latestTick: () => Promise<Tick | null>;
  maxConcurrency: number;
  /** The retry schedule: a failed first attempt is retried after its first delay (final when it is empty). */
  retry: RetryPolicy;
  disableAfterMs: number;
  /** How long an instance holds an endpoint's stream past each renewal. */
  leaseMs?: number;
  /** How often endpoints are claimed and their settings read again. */
  claimEveryMs?: number;
  /** The wait between looks at the newest tick while nothing arrives (a tick or a wake cuts it short). */
  pollMs?: number;
  /** Events read per batch at most (a batch spans whole ticks; one tick may hold more). */
  batchEvents?: number;
  /** A successful first attempt is kept in the delivery log at most this often per endpoint. */
  sampleEveryMs?: number;
}

interface Endpoint extends EndpointTarget {
  id: string;
  accountId: string;
  events: string[];
  enabled: boolean;
  failing: boolean;
  /** The tick consumed up to here (may be ahead of the stored one: empty batches are not written). */
  tickId: number;
  storedTickId: number;
  storedAt: number;
  running: boolean;
  /** Attempts in a row this stream made that failed: past FAIL_FAST the rest of a batch is not sent; the next batch starts with one probe. */
  failures: number;
  lastSampleAt: number;
  /** Lost: no longer claimed by this instance (deleted, disabled, or taken over). */
  gone: boolean;
  /** Batched delivery (null: one event per POST). */
  batchMax: number | null;
  batchWaitMs: number;
  /** A batch endpoint waits for more events until then (epoch ms). */
  holdUntil: number;
}

interface EventRow {
  hi_id: string;
  id: string | null;
  seq: string;
  type: string;
  message_key: string | null;
  payload: unknown;
  account_id: string;
  created_at: unknown;
  blocked: boolean;
}

// Endpoints this instance streams: claimed when nobody holds them (or their holder's lease ran out), renewed before
// the lease half runs out, so a stream is written about twice per lease, not on every claim pass.
const CLAIM_SQL = `UPDATE webhook_cursors c SET owner = $1, lease_until = now() + make_interval(secs => $2::float8 / 1000.0)
  FROM webhook_endpoints e
  WHERE e.id = c.endpoint_id AND e.enabled
    AND (c.owner IS NULL OR c.lease_until < now() OR (c.owner = $1 AND c.lease_until < now() + make_interval(secs => $2::float8 / 2000.0)))
  RETURNING c.endpoint_id`;

const OWNED_SQL = `SELECT c.endpoint_id, c.tick_id, e.account_id, e.events, e.enabled, e.url, e.failing_since IS NOT NULL AS failing,
    e.batch_max_events, e.batch_max_wait_ms,
    e.secret_cipher, e.previous_secret_cipher, e.previous_valid_until
  FROM webhook_cursors c JOIN webhook_endpoints e ON e.id = c.endpoint_id WHERE c.owner = $1 AND c.lease_until > now()`;

/**
 * A batch: the endpoint's account's events committed after its cursor's tick and by a later tick (PgQ's rule: visible
 * in the later snapshot and not in the earlier one), of the types it takes, in order. The later tick is the furthest
 * one within `batchEvents` of the cursor (by the sequence), or the next one. Each event says whether an earlier event
 * of its message still waits in the endpoint's retry set. One row with a null id when the batch is empty.
 */
export const BATCH_SQL = prepared(`WITH lo AS (SELECT id, snap, last_seq FROM webhook_ticks WHERE id = $2),
  hi AS (
    SELECT t.id, t.snap FROM webhook_ticks t WHERE t.id = COALESCE(
      (SELECT max(x.id) FROM webhook_ticks x, lo WHERE x.id > lo.id AND x.id <= $3 AND x.last_seq <= lo.last_seq + $4),
      (SELECT min(x.id) FROM webhook_ticks x WHERE x.id > $2 AND x.id <= $3))
  )
  SELECT hi.id AS hi_id, ev.id, ev.seq, ev.type, ev.message_key, ev.payload, ev.account_id, ev.created_at, b.x IS NOT NULL AS blocked
  FROM lo CROSS JOIN hi LEFT JOIN LATERAL (
    SELECT w.id, w.seq, w.type, w.message_key, w.payload, w.account_id, w.created_at FROM webhook_events w
    WHERE w.account_id = $1 AND w.txid >= pg_snapshot_xmin(lo.snap) AND w.txid < pg_snapshot_xmax(hi.snap)
      AND pg_visible_in_snapshot(w.txid, hi.snap) AND NOT pg_visible_in_snapshot(w.txid, lo.snap)
      AND w.type <> 'webhook.test' AND (w.type = ANY($6::text[]) OR '*' = ANY($6::text[]))
  ) ev ON true
  -- One index probe per event for an open row of its message. (As an EXISTS, Postgres may hash every open row of the
  -- endpoint instead, once per batch: a dead endpoint's million-row backlog then cost ~300 ms per batch of its own.)
  LEFT JOIN LATERAL (
    SELECT 1 AS x FROM webhook_deliveries p WHERE p.endpoint_id = $5 AND p.message_key = ev.message_key AND p.status IN ('pending', 'failed') LIMIT 1
  ) b ON true
  ORDER BY ev.seq`);

const CURSOR_SQL = `UPDATE webhook_cursors SET tick_id = $2, lease_until = now() + make_interval(secs => $4::float8 / 1000.0),
    delivered = delivered + $5, last_delivered_at = CASE WHEN $5 > 0 THEN now() ELSE last_delivered_at END
  WHERE endpoint_id = $1 AND owner = $3`;

const FRESH_CURSOR_SQL = `UPDATE webhook_cursors SET tick_id = (SELECT max(id) FROM webhook_ticks) WHERE endpoint_id = $1 AND owner = $2`;

/** An empty batch moves the cursor in memory; it is written once this many ticks or this long behind. */
const IDLE_WRITE_TICKS = 500;
const IDLE_WRITE_MS = 10_000;
/** Failed attempts in a row after which the rest of a batch goes to the retry set unsent (the receiver looks down). */
const FAIL_FAST = 3;

function ms(v: unknown): number {
  return v instanceof Date ? v.getTime() : new Date(v as string).getTime();
}

function bodyOf(ev: EventRow): string {
  return eventBody({ id: ev.id!, type: ev.type, createdAt: ms(ev.created_at), accountId: ev.account_id, payload: ev.payload });
}

/** The row a batch writes for one of its events (a failed attempt, one that waits, or a sample). */
function streamRow(endpointId: string, ev: EventRow, status: StreamRow['status'], dueInMs: number, r: AttemptResult | undefined, attempts: number): StreamRow {
  return {
    endpointId,
    eventId: ev.id!,
    eventSeq: Number(ev.seq),
    messageKey: ev.message_key,
    status,
    attempts,
    dueInMs,
    statusCode: r?.statusCode ?? null,
    error: r?.error ?? null,
    latencyMs: r?.latencyMs ?? null,
  };
}

/**
 * Delivers the event log to endpoints through per-endpoint cursors. An instance claims endpoints (a lease on the
 * cursor row, so one instance streams an endpoint at a time) and, for each, reads the next batch of its account's
 * events, sends them (events of one message one after another, up to the endpoint's cap in flight), and then writes,
 * in one transaction, the rows the batch needs (a failed attempt goes to the retry set with the events of its
 * message behind it; a successful one is sampled into the delivery log) and the cursor. A successful event costs no
 * write of its own. A crash or a lost lease sends the unfinished batch again (at least once).
 *
 * An endpoint whose last attempt here failed is probed with one event per batch; while the probe fails, the rest of
 * the batch goes to the retry set unsent, so a dead receiver costs one row per event and no time, and the stream keeps
 * up with the log.
 */
export class EventStream {
  readonly holder: string;
  private readonly owned = new Map<string, Endpoint>();
  private readonly work = new Set<Promise<void>>();
  private stopped = false;
  private loop: Promise<void> | null = null;
  private readonly pause = new WakeableSleep();
  private lastClaim = 0;
  private total = 0;
  private readonly globalWaiters: (() => void)[] = [];

  constructor(
    private readonly o: EventStreamOptions,
    holder: string,
  ) {
    this.holder = holder;
  }

  private get leaseMs(): number {
    return this.o.leaseMs ?? 30_000;
  }

  start(): void {
    this.loop ??= this.run();
  }

  wake(): void {
    this.pause.wake();
  }

  /** Stops reading; batches in flight finish (each attempt ends within the timeout) and are written. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
    while (this.work.size) await Promise.allSettled([...this.work]);
    // Another instance may take these over at once.
    await this.o.db.query(`UPDATE webhook_cursors SET owner = NULL, lease_until = NULL WHERE owner = $1`, [this.holder]).catch(() => undefined);
  }

  /**
   * Gives back the cursors `holder` still holds: an earlier life of this daemon that died without stop() (a SIGKILL).
   * They are claimed at the next pass rather than once their lease (30 s) runs out; the batch the crash left unwritten
   * is sent again, as it would be then.
   */
  async giveBack(holder: string): Promise<void> {
    if (holder === this.holder) return;
    await this.o.db.query(`UPDATE webhook_cursors SET owner = NULL, lease_until = NULL WHERE owner = $1`, [holder]);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (Date.now() - this.lastClaim >= (this.o.claimEveryMs ?? 2000)) await this.claim();
        const latest = await this.o.latestTick();
        if (latest) {
          for (const e of this.owned.values()) {
            if (e.running || e.gone || !e.enabled || e.tickId >= latest.id || e.holdUntil > Date.now()) continue;
            e.running = true;
            const p = this.drain(e, latest.id)
              .catch((err: Error) => this.o.log.warn({ err: err.message, endpoint: e.id }, 'webhook stream batch failed; sent again'))
              .finally(() => {
                e.running = false;
                this.work.delete(p);
                this.wake();
              });
            this.work.add(p);
          }
        }
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message }, 'webhook stream poll failed');
      }
      if (!this.stopped) await this.pause.sleep(this.o.pollMs ?? 200);
    }
  }

  /** Claims free endpoints, renews leases, and reads every owned endpoint's settings again. */
  private async claim(): Promise<void> {
    this.lastClaim = Date.now();
    await this.o.db.query(CLAIM_SQL, [this.holder, this.leaseMs]);
    const { rows } = await this.o.db.query<Record<string, unknown>>(OWNED_SQL, [this.holder]);
    const seen = new Set<string>();
    for (const r of rows) {
      const id = r.endpoint_id as string;
      seen.add(id);
      const tick = Number(r.tick_id);
      const e = this.owned.get(id);
      // Let go earlier and still finishing a batch: taken afresh at a later pass.
      if (e?.gone && e.running) continue;
      if (e && !e.gone) {
        e.url = r.url as string;
        e.events = r.events as string[];
        e.enabled = r.enabled as boolean;
        e.failing = r.failing as boolean;
        e.secret_cipher = r.secret_cipher as string;
        e.previous_secret_cipher = r.previous_secret_cipher as string | null;
        e.previous_valid_until = r.previous_valid_until;
        e.batchMax = (r.batch_max_events as number | null) ?? null;
        e.batchWaitMs = (r.batch_max_wait_ms as number | null) ?? 0;
        // The cursor is this instance's while it holds the lease (a disabled endpoint is let go, and starts afresh
        // when enabled), so the stored tick is not read back here: it may predate a batch written meanwhile.
        continue;
      }
      this.owned.set(id, {
        id,
        accountId: r.account_id as string,
        events: r.events as string[],
        enabled: r.enabled as boolean,
        failing: r.failing as boolean,
        url: r.url as string,
        secret_cipher: r.secret_cipher as string,
        previous_secret_cipher: r.previous_secret_cipher as string | null,
        previous_valid_until: r.previous_valid_until,
        tickId: tick,
        storedTickId: tick,
        storedAt: Date.now(),
        running: false,
        failures: 0,
        lastSampleAt: 0,
        gone: false,
        batchMax: (r.batch_max_events as number | null) ?? null,
        batchWaitMs: (r.batch_max_wait_ms as number | null) ?? 0,
        holdUntil: 0,
      });
    }
    for (const [id, e] of this.owned) {
      if (seen.has(id) && e.enabled) continue;
      // Deleted, taken over, or disabled (let go now: enabled again, it is claimed afresh from its new cursor).
      e.gone = true;
      if (!e.running) this.owned.delete(id);
      if (seen.has(id)) await this.o.db.query(`UPDATE webhook_cursors SET owner = NULL, lease_until = NULL WHERE endpoint_id = $1 AND owner = $2`, [id, this.holder]);
    }
  }

  /** Batches until the endpoint has caught up with `latest`. */
  private async drain(e: Endpoint, latest: number): Promise<void> {
    while (!this.stopped && !e.gone && e.enabled && e.tickId < latest) {
      const { rows } = await this.o.db.query<EventRow>(BATCH_SQL, [e.accountId, e.tickId, latest, this.o.batchEvents ?? 2000, e.id, e.events]);
      if (!rows.length) {
        // Its tick is gone (pruned while it was disabled, say): it starts from now.
        this.o.log.warn({ endpoint: e.id, tick: e.tickId }, 'webhook stream cursor lost its tick; starting from the newest');
        await this.o.db.query(FRESH_CURSOR_SQL, [e.id, this.holder]);
        e.gone = true;
        return;
      }
      const hi = Number(rows[0].hi_id);
      const events = rows.filter((r) => r.id !== null);
      if (e.batchMax !== null && events.length > 0 && events.length < e.batchMax && hi === latest) {
        // A batch endpoint waits for more, up to maxWaitMs from its oldest event; nothing is consumed meanwhile.
        const until = ms(events[0].created_at) + e.batchWaitMs;
        if (until > Date.now()) {
          e.holdUntil = until;
          setTimeout(() => this.wake(), until - Date.now() + 1).unref();
          return;
        }
      }
      const { written, delivered } = e.batchMax === null ? await this.send(e, events) : await this.sendBatched(e, events, e.batchMax);
      const now = Date.now();
      if (written.length || delivered > 0 || hi - e.storedTickId >= IDLE_WRITE_TICKS || now - e.storedAt >= IDLE_WRITE_MS) {
        const ok = await this.o.db.tx(async (q) => {
          await this.o.store.streamRows(q, written);
          return (await q.query(CURSOR_SQL, [e.id, hi, this.holder, this.leaseMs, delivered])).rowCount > 0;
        });
        if (!ok) {
          // Taken over (our lease ran out): the new holder sends this batch again.
          e.gone = true;
          return;
        }
        e.storedTickId = hi;
        e.storedAt = now;
      }
      e.tickId = hi;
    }
  }

  /** Sends a batch; returns the rows it needs written and how many events were delivered. */
  private async send(e: Endpoint, events: EventRow[]): Promise<{ written: StreamRow[]; delivered: number }> {
    const written: StreamRow[] = [];
    let delivered = 0;
    if (!events.length) return { written, delivered };
    // Events of one message go one after another, in order; a message whose earlier event waits in the retry set
    // waits there too.
    const groups = new Map<string, EventRow[]>();
    let n = 0;
    for (const ev of events) {
      const key = ev.message_key ?? `\u0000${n++}`;
      const g = groups.get(key);
      if (g) g.push(ev);
      else groups.set(key, [ev]);
    }
    const park = (ev: EventRow, status: StreamRow['status'], dueInMs: number, r?: AttemptResult, attempts = 0) =>
      written.push(streamRow(e.id, ev, status, dueInMs, r, attempts));
    const first = this.o.retry.after(1);
    // No retries at all: what waits behind a failure is due at once.
    const firstDelay = first.final ? 0 : first.delayMs;
    let lastError: string | null = null;
    let recovered = false;
    // Whether the batch's last attempt to end failed: that decides the endpoint's state when both happened.
    let endedFailing = false;
    // The receiver looks down: its probe failed, or several attempts in a row did. The rest waits in the retry set.
    let down = false;

    const runGroup = async (g: EventRow[], probe = false): Promise<void> => {
      for (let i = 0; i < g.length; i++) {
        const ev = g[i];
        // Waiting behind an earlier event (the rest of its message waits too), or the receiver is down.
        if (ev.blocked || down) {
          for (const rest of g.slice(i)) park(rest, 'pending', ev.blocked ? 0 : firstDelay);
          return;
        }
        const r = await this.attempt(e, ev.id!, bodyOf(ev));
        if (r.error !== null && (probe || e.failures + 1 >= FAIL_FAST)) down = true;
        endedFailing = r.error !== null;
        if (r.error === null) {
          delivered++;
          const ok = this.succeeded(e, 1);
          if (ok.recovered) recovered = true;
          if (ok.sample) park(ev, 'delivered', 0, r, 1);
          continue;
        }
        lastError = r.error;
        e.failures++;
        const dead = first.final;
        this.o.metrics.deliveries.inc({ outcome: dead ? 'dead' : 'failed' });
        park(ev, dead ? 'dead' : 'failed', firstDelay, r, 1);
        for (const rest of g.slice(i + 1)) park(rest, 'pending', firstDelay);
        return;
      }
    };

    const list = [...groups.values()];
    // A failing endpoint: one probe first; the rest is sent only if it succeeds.
    let start = 0;
    if (e.failures > 0) {
      await runGroup(list[0], true);
      start = 1;
    }
    const running = new Set<Promise<void>>();
    for (let i = start; i < list.length; i++) {
      const p = runGroup(list[i]).finally(() => running.delete(p));
      running.add(p);
      // A group holds one of the endpoint's slots while it sends; more groups than that wait here.
      if (running.size >= this.o.slots.capOf()) await Promise.race(running);
    }
    await Promise.all(running);
    // Failing continuously means no success since: any success clears it, and a batch whose last attempt failed starts
    // it again from now.
    if (recovered) await this.o.store.recovered([e.id]);
    if (lastError !== null && endedFailing) {
      if (await this.o.store.recordFailure(e.id, this.o.disableAfterMs, lastError)) {
        e.enabled = false;
        this.o.log.warn({ endpoint: e.id }, 'webhook endpoint disabled after failing continuously');
      }
    }
    return { written, delivered };
  }

  /**
   * Sends a batch as arrays of up to `max` events, one POST after another (in order), each under a webhook-id of its
   * own. A failed POST puts its events in the retry set; past FAIL_FAST failures the rest waits there unsent.
   */
  private async sendBatched(e: Endpoint, events: EventRow[], max: number): Promise<{ written: StreamRow[]; delivered: number }> {
    const written: StreamRow[] = [];
    let delivered = 0;
    const first = this.o.retry.after(1);
    // No retries at all: what waits behind a failure is due at once.
    const firstDelay = first.final ? 0 : first.delayMs;
    const park = (ev: EventRow, status: StreamRow['status'], r?: AttemptResult, attempts = 0) =>
      written.push(streamRow(e.id, ev, status, status === 'delivered' || ev.blocked ? 0 : firstDelay, r, attempts));
    // Events of a message with an earlier event in the retry set wait there, and so do that message's later ones.
    const waiting = new Set<string>();
    const ready: EventRow[] = [];
    for (const ev of events) {
      if (ev.message_key !== null && (ev.blocked || waiting.has(ev.message_key))) {
        waiting.add(ev.message_key);
        park(ev, 'pending');
      } else ready.push(ev);
    }
    let lastError: string | null = null;
    let recovered = false;
    let endedFailing = false;
    for (let i = 0; i < ready.length; i += max) {
      const chunk = ready.slice(i, i + max);
      if (e.failures >= FAIL_FAST || (e.failures > 0 && i > 0)) {
        for (const ev of chunk) park(ev, 'pending');
        continue;
      }
      const body = `[${chunk.map(bodyOf).join(',')}]`;
      // Derived from its events, so the same array sent again after a crash has the same id.
      const webhookId = `whb_${chunk[0].id!.slice(4)}_${chunk.length}`;
      const r = await this.attempt(e, webhookId, body);
      endedFailing = r.error !== null;
      if (r.error === null) {
        delivered += chunk.length;
        const ok = this.succeeded(e, chunk.length);
        if (ok.recovered) recovered = true;
        if (ok.sample) park(chunk[0], 'delivered', r, 1);
        continue;
      }
      lastError = r.error;
      e.failures++;
      this.o.metrics.deliveries.inc({ outcome: 'failed' }, chunk.length);
      for (const ev of chunk) park(ev, 'failed', r, 1);
    }
    if (recovered) await this.o.store.recovered([e.id]);
    if (lastError !== null && endedFailing && (await this.o.store.recordFailure(e.id, this.o.disableAfterMs, lastError))) {
      e.enabled = false;
      this.o.log.warn({ endpoint: e.id }, 'webhook endpoint disabled after failing continuously');
    }
    return { written, delivered };
  }

  /** A successful POST of `events` events: the endpoint is healthy again; `sample`: log this one (at most one a period). */
  private succeeded(e: Endpoint, events: number): { recovered: boolean; sample: boolean } {
    this.o.metrics.deliveries.inc({ outcome: 'delivered' }, events);
    const recovered = e.failing || e.failures > 0;
    e.failures = 0;
    e.failing = false;
    const now = Date.now();
    const sample = now - e.lastSampleAt >= (this.o.sampleEveryMs ?? 1000);
    if (sample) e.lastSampleAt = now;
    return { recovered, sample };
  }

  /** One attempt on a slot of the endpoint (shared with the retry set) and of this instance's stream total. */
  private async attempt(e: Endpoint, webhookId: string, body: string): Promise<AttemptResult> {
    await this.globalSlot();
    await this.o.slots.take(e.id);
    try {
      return await this.o.poster.post(e, webhookId, body);
    } finally {
      this.o.slots.release(e.id);
      this.total--;
      this.globalWaiters.shift()?.();
    }
  }

  private globalSlot(): Promise<void> {
    if (this.total < this.o.maxConcurrency) {
      this.total++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) =>
      this.globalWaiters.push(() => {
        this.total++;
        resolve();
      }),
    );
  }
}
