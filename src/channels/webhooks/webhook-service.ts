import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { WebhooksConfig } from './config.js';
import { EventOutbox, type NewEvent } from '../../events/event-outbox.js';
import { GroupCommit } from '../../ledger/group-commit.js';
import { SecretCipher } from '../../security/cipher.js';
import type { EventSink } from '../../platform/event-sink.js';
import type { Db, Queue } from '../../store/types.js';
import type { TargetGuard } from '../../security/target-guard.js';
import { QUEUE_MAX_ATTEMPTS, WebhookFanOut, type DeliveryJob } from './webhook-fan-out.js';
import { WebhookMetrics } from './webhook-metrics.js';
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
  queue: Queue<DeliveryJob>;
  /** The key endpoint signing secrets are sealed with (ctx.deriveKey('webhook-secret')). */
  secretKey: Buffer;
  /** The daemon's guarded HTTP policy (ctx.http): endpoint URLs are checked and posted to through it. */
  guard: TargetGuard;
  config: Omit<WebhooksConfig, 'allowPrivateTargets'>;
  log: Logger;
  registry: Registry;
}

/** Webhooks assembled: endpoint store, SSRF guard, fan-out and sender. Started after the API's dependencies exist. */
export class WebhookService {
  readonly store: WebhookStore;
  readonly guard: TargetGuard;
  readonly events = new EventOutbox();
  readonly fanOut: WebhookFanOut;
  readonly sender: WebhookSender;
  /** Events written outside a caller's transaction (OTP's) share one INSERT across concurrent requests. */
  private readonly nowEvents: GroupCommit<NewEvent, void>;

  constructor(private readonly d: WebhookServiceDeps) {
    const key = d.secretKey;
    this.store = new WebhookStore(d.db, new SecretCipher({ current: { id: SecretCipher.keyIdOf(key), key } }));
    this.guard = d.guard;
    const metrics = new WebhookMetrics(d.registry, () => this.store.backlog());
    this.sender = new WebhookSender({
      db: d.db,
      store: this.store,
      queue: d.queue,
      guard: this.guard,
      metrics,
      log: d.log,
      timeoutMs: d.config.timeoutMs,
      maxConcurrency: d.config.maxConcurrency,
      maxConcurrencyPerEndpoint: d.config.maxConcurrencyPerEndpoint,
      retryScheduleMs: parseSchedule(d.config.retrySchedule),
      disableAfterMs: d.config.disableAfterHours * 3_600_000,
    });
    this.fanOut = new WebhookFanOut({
      store: this.store,
      queue: d.queue,
      log: d.log,
      onPushed: () => this.sender.wake(),
      // On a server a poll is cheap, and polling again soon while events flow takes their delivery from about 200 ms
      // to 15 ms. Embedded, every statement runs on the daemon's own thread: no faster polling there.
      busyPollMs: d.db.kind === 'postgres' ? 10 : undefined,
    });
    this.nowEvents = new GroupCommit<NewEvent, void>(
      async (items) => {
        if ((await this.events.insertMany(d.db, items)) > 0) this.fanOut.wake();
      },
      { lingerMs: 2, maxInFlight: 2 },
    );
  }

  async start(): Promise<void> {
    await this.fanOut.start();
    this.sender.start();
  }

  async stop(): Promise<void> {
    // Events of OTP changes already made are written before the fan-out stops.
    await this.nowEvents.close().catch(() => undefined);
    await this.fanOut.stop();
    await this.sender.stop();
  }

  /** Queues one delivery now (replay, test event); the row is already open. */
  async enqueue(deliveryId: string): Promise<void> {
    // A delivery waiting for a far retry is taken out first, so the push schedules it now (a leased one is being sent).
    await this.d.queue.cancel(deliveryId);
    await this.d.queue.push([{ id: deliveryId, lane: 'bulk', payload: { deliveryId }, maxAttempts: QUEUE_MAX_ATTEMPTS }]);
    this.sender.wake();
  }

  /**
   * The event sink every module emits through (`ctx.events`, registered by the module's create): events go into the
   * outbox table (webhook_events) the fan-out reads; a wake makes it look now.
   */
  readonly sink: EventSink = {
    insert: (q, events) => this.events.insertMany(q, events),
    insertNow: async (events) => {
      await Promise.all(events.map((e) => this.nowEvents.submit(e)));
    },
    wake: () => this.fanOut.wake(),
    subscribed: async (q, accountIds, type) => {
      const r = await q.query<{ account_id: string }>(
        `SELECT DISTINCT account_id FROM webhook_endpoints WHERE enabled AND account_id = ANY($1::text[]) AND events && ARRAY['*', $2]::text[]`,
        [accountIds, type],
      );
      return new Set(r.rows.map((x) => x.account_id));
    },
  };
}
