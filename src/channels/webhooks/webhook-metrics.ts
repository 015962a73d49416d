import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DeliveryOutcome = 'delivered' | 'failed' | 'dead';

/** Webhook delivery metrics. No endpoint or account labels: the backlog is a total per status (cardinality). */
export class WebhookMetrics {
  readonly deliveries: Counter<'outcome'>;
  readonly latency: Histogram;
  readonly backlog: Gauge<'status'>;
  readonly endpointBusy: Counter<'action'>;
  readonly streamLag: Gauge;

  constructor(registry: Registry, backlog: () => Promise<{ pending: number; failed: number }>, streamLag: () => Promise<number>) {
    this.deliveries = new Counter({
      name: 'ferry_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (will be retried), dead (retries exhausted or endpoint disabled)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    this.latency = new Histogram({
      name: 'ferry_webhook_delivery_seconds',
      help: 'Time from sending a webhook to the receiver answering (or the attempt failing)',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.endpointBusy = new Counter({
      name: 'ferry_webhook_endpoint_busy_total',
      help: 'Deliveries that found their endpoint at its concurrency cap: waited (for its next free slot) or deferred (due again about when a slot frees)',
      labelNames: ['action'] as const,
      registers: [registry],
    });
    this.streamLag = new Gauge({
      name: 'ferry_webhook_stream_lag_events',
      help: 'Events written to the log since the cursor of the enabled endpoint furthest behind (all accounts\' events: an upper bound on what it has still to read)',
      registers: [registry],
      async collect() {
        try {
          this.set(await streamLag());
        } catch {
          // A scrape while the database is down keeps the last value.
        }
      },
    });
    this.backlog = new Gauge({
      name: 'ferry_webhook_backlog',
      help: 'Webhook deliveries not yet delivered: pending (never tried) and failed (waiting for a retry)',
      labelNames: ['status'] as const,
      registers: [registry],
      async collect() {
        try {
          const b = await backlog();
          this.set({ status: 'pending' }, b.pending);
          this.set({ status: 'failed' }, b.failed);
        } catch {
          // A scrape while the database is down keeps the last values.
        }
      },
    });
  }
}
