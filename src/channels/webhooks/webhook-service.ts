import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { WebhooksConfig } from './config.js';
import { DueSet } from '../../delivery/due-set.js';
import { RetryPolicy } from '../../delivery/retry-policy.js';
import { TargetSlots } from '../../delivery/target-slots.js';
import { EventLogTicker } from '../../events/event-log-ticker.js';
import { EventOutbox, type NewEvent } from '../../events/event-outbox.js';
import { GroupCommit } from '../../ledger/group-commit.js';
import { SecretCipher } from '../../security/cipher.js';
import type { EventSink } from '../../platform/event-sink.js';
import { swapLeaseHolder } from '../../platform/job-lease.js';
import type { Db } from '../../store/types.js';
import type { TargetGuard } from '../../security/target-guard.js';
import { EventStream } from './event-stream.js';
import { RETRY_SET } from './retry-set.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhookPoster } from './webhook-poster.js';
import { WebhookSender } from './webhook-sender.js';
import { WebhookStore } from './webhook-store.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "5s,30s,2m" → [5000, 30000, 120000] (the config schema has checked the form). */
export function parseSchedule(s: string): number[] {
  return s.split(',').map((part) => {
    const m = /^\s*(\d+)(ms|s|m|h)\s*$/.exec(part);
    if (!m) throw new Error(`webhooks.retrySchedule: ${part} is not a duration`);
    return Number(m[1]) * UNIT_MS[m[2]];
  });
}

export interface WebhookServiceDeps {
  db: Db;
  /** The key endpoint signing secrets are sealed with (ctx.deriveKey('webhook-secret')). */
  secretKey: Buffer;
  /** The daemon's guarded HTTP policy (ctx.http): endpoint URLs are checked and posted to through it. */
  guard: TargetGuard;
  config: Omit<WebhooksConfig, 'allowPrivateTargets'>;
  log: Logger;
  registry: Registry;
  /** The daemon's data folder: the stream records its lease holder there, to give back an earlier life's leases. */
  dataDir?: string;
}

/**
 * Webhooks assembled: endpoint store, SSRF guard, and the one delivery engine: the event log's ticker, the stream that
 * reads it per endpoint, and the sender of the retry set. Started after the API's dependencies exist.
 */
export class WebhookService {
  readonly store: WebhookStore;
  readonly guard: TargetGuard;
  readonly events = new EventOutbox();
  readonly ticker: EventLogTicker;
  readonly stream: EventStream;
  readonly sender: WebhookSender;
  private readonly poster: WebhookPoster;
  /** Events written outside a caller's transaction (OTP's) share one INSERT across concurrent requests. */
  private readonly nowEvents: GroupCommit<NewEvent, void>;

  constructor(private readonly d: WebhookServiceDeps) {
    const key = d.secretKey;
    this.store = new WebhookStore(d.db, new SecretCipher({ current: { id: SecretCipher.keyIdOf(key), key } }));
    this.guard = d.guard;
    const metrics = new WebhookMetrics(d.registry, () => this.store.backlog(), () => this.store.streamLag());
    // Per endpoint, shared by the event stream and the retry set: maxConcurrencyPerEndpoint holds whichever path sends.
    const slots = new TargetSlots(d.config.maxConcurrencyPerEndpoint);
    const retry = RetryPolicy.schedule(parseSchedule(d.config.retrySchedule));
    const disableAfterMs = d.config.disableAfterHours * 3_600_000;
    this.poster = new WebhookPoster(this.guard, this.store, metrics, d.config.timeoutMs);
    this.sender = new WebhookSender({
      db: d.db,
      store: this.store,
      retrySet: new DueSet(d.db, RETRY_SET),
      poster: this.poster,
      slots,
      metrics,
      log: d.log,
      timeoutMs: d.config.timeoutMs,
      maxConcurrency: d.config.maxConcurrency,
      maxConcurrencyPerEndpoint: d.config.maxConcurrencyPerEndpoint,
      retry,
      disableAfterMs,
    });
    // On a server a tick is cheap, and ticking again soon while events flow takes their delivery from about 200 ms to
    // 15 ms. Embedded, every statement runs on the daemon's own thread: less often there.
    this.ticker = new EventLogTicker({
      db: d.db,
      log: d.log,
      busyMs: d.db.kind === 'postgres' ? 10 : 50,
      idleMs: 200,
      onTick: () => this.stream.wake(),
    });
    this.stream = new EventStream(
      {
        db: d.db,
        store: this.store,
        poster: this.poster,
        slots,
        metrics,
        log: d.log,
        latestTick: () => this.ticker.latest(),
        maxConcurrency: d.config.maxConcurrency,
        retry,
        disableAfterMs,
      },
      randomUUID(),
    );
    this.nowEvents = new GroupCommit<NewEvent, void>(
      async (items) => {
        if ((await this.events.insertMany(d.db, items)) > 0) this.ticker.wake();
      },
      { lingerMs: 2, maxInFlight: 2 },
    );
  }

  async start(): Promise<void> {
    // Restarted after a crash on the same data folder, the daemon takes back its endpoints at once rather than after
    // the cursor leases of its earlier life run out.
    if (this.d.dataDir) {
      const previous = swapLeaseHolder(this.d.dataDir, this.stream.holder, 'webhook-stream.holder');
      if (previous) await this.stream.giveBack(previous);
    }
    this.ticker.start();
    this.stream.start();
    this.sender.start();
  }

  async stop(): Promise<void> {
    // Events of OTP changes already made are written before delivery stops.
    await this.nowEvents.close().catch(() => undefined);
    await this.ticker.stop();
    await this.stream.stop();
    await this.sender.stop();
    this.poster.close();
  }

  /** A delivery row was just made due (replay, test event): the sender looks now. */
  async enqueue(_deliveryId: string): Promise<void> {
    this.sender.wake();
  }

  /**
   * The event sink every module emits through (`ctx.events`, registered by the module's create): events go into the
   * event log (webhook_events) the streams read; a wake makes the ticker look now.
   */
  readonly sink: EventSink = {
    insert: (q, events) => this.events.insertMany(q, events),
    insertNow: async (events) => {
      await Promise.all(events.map((e) => this.nowEvents.submit(e)));
    },
    wake: () => this.ticker.wake(),
    subscribed: async (q, accountIds, type) => {
      const r = await q.query<{ account_id: string }>(
        `SELECT DISTINCT account_id FROM webhook_endpoints WHERE enabled AND account_id = ANY($1::text[]) AND events && ARRAY['*', $2]::text[]`,
        [accountIds, type],
      );
      return new Set(r.rows.map((x) => x.account_id));
    },
  };
}
