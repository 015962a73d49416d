import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { BreakerState } from './circuit-breaker.js';
import type { JobCounts } from './outbound-store.js';

/** Result classes of one request to a provider. */
export type ResultClass = 'sent' | 'retry' | 'throttled' | 'fail' | 'timeout' | 'error';

/** What the scrape reads from the pipeline, per provider. */
export interface OutboundMetricSources {
  providers(): string[];
  /** Pending jobs per provider in outbound_jobs (one read for every provider). */
  jobCounts(): Promise<Map<string, JobCounts>>;
  /** Creation time of the oldest pending job (epoch ms), or null. */
  oldestPending(provider: string): Promise<number | null>;
  breakers(provider: string): Record<BreakerState, number>;
  held(provider: string): number;
  now(): number;
}

/**
 * Outbound pipeline metrics, per provider (labels are bounded: providers are configured, endpoints are counted per
 * breaker state, never labelled one by one).
 */
export class OutboundMetrics {
  readonly requests: Counter<'provider'>;
  readonly latency: Histogram<'provider'>;
  readonly results: Counter<'provider' | 'class'>;
  readonly breakerTransitions: Counter<'provider' | 'to'>;
  readonly deferred: Counter<'provider' | 'reason'>;
  readonly finished: Counter<'product' | 'outcome'>;
  readonly breakers: Gauge<'provider' | 'state'>;
  readonly queueDepth: Gauge<'provider' | 'state'>;
  readonly queueAge: Gauge<'provider'>;
  readonly held: Gauge<'provider'>;

  constructor(registry: Registry, sources: OutboundMetricSources) {
    this.requests = new Counter({
      name: 'ferry_outbound_requests_total',
      help: 'Requests sent to a provider by the outbound pipeline',
      labelNames: ['provider'] as const,
      registers: [registry],
    });
    this.latency = new Histogram({
      name: 'ferry_outbound_request_seconds',
      help: 'Time from sending a request to a provider until its answer (or the timeout)',
      labelNames: ['provider'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.results = new Counter({
      name: 'ferry_outbound_results_total',
      help: 'Provider answers by class: sent, retry (transient), throttled (back off), fail (permanent), timeout, error (adapter threw)',
      labelNames: ['provider', 'class'] as const,
      registers: [registry],
    });
    this.breakerTransitions = new Counter({
      name: 'ferry_outbound_breaker_transitions_total',
      help: 'Circuit breaker changes of the provider endpoints, by the state moved to',
      labelNames: ['provider', 'to'] as const,
      registers: [registry],
    });
    this.deferred = new Counter({
      name: 'ferry_outbound_deferred_total',
      help: 'Claimed jobs handed back unsent (claim ended, due again later): breaker (endpoint open), account_cap (account at its concurrency), stale (waited too long in memory), stopping',
      labelNames: ['provider', 'reason'] as const,
      registers: [registry],
    });
    this.finished = new Counter({
      name: 'ferry_outbound_jobs_finished_total',
      help: 'Jobs that left the pending state, by product and outcome (sent, failed, deadline)',
      labelNames: ['product', 'outcome'] as const,
      registers: [registry],
    });
    this.breakers = new Gauge({
      name: 'ferry_outbound_breakers',
      help: 'Provider endpoints by circuit breaker state (closed, open, half-open) in this instance; read on scrape',
      labelNames: ['provider', 'state'] as const,
      registers: [registry],
      collect() {
        for (const p of sources.providers()) {
          const b = sources.breakers(p);
          for (const s of ['closed', 'open', 'half-open'] as const) this.set({ provider: p, state: s }, b[s]);
        }
      },
    });
    this.held = new Gauge({
      name: 'ferry_outbound_held_jobs',
      help: 'Jobs this instance holds in memory (claimed and not yet recorded), bounded by the provider hold cap',
      labelNames: ['provider'] as const,
      registers: [registry],
      collect() {
        for (const p of sources.providers()) this.set({ provider: p }, sources.held(p));
      },
    });
    this.queueDepth = new Gauge({
      name: 'ferry_outbound_queue_depth',
      help: 'Pending outbound jobs per provider (every instance): due (waiting for a worker), scheduled (waiting for a retry or a later send), claimed (being sent); read on scrape',
      labelNames: ['provider', 'state'] as const,
      registers: [registry],
      async collect() {
        let counts: Map<string, JobCounts>;
        try {
          counts = await sources.jobCounts();
        } catch {
          // Database down: ferry_backend_up says so; keep the last values.
          return;
        }
        for (const p of sources.providers()) {
          const c = counts.get(p) ?? { due: 0, scheduled: 0, claimed: 0 };
          this.set({ provider: p, state: 'due' }, c.due);
          this.set({ provider: p, state: 'scheduled' }, c.scheduled);
          this.set({ provider: p, state: 'claimed' }, c.claimed);
        }
      },
    });
    this.queueAge = new Gauge({
      name: 'ferry_outbound_queue_oldest_seconds',
      help: 'Age of the oldest pending (not yet sent or failed) job per provider; 0 when none; read on scrape',
      labelNames: ['provider'] as const,
      registers: [registry],
      async collect() {
        for (const p of sources.providers()) {
          try {
            const oldest = await sources.oldestPending(p);
            this.set({ provider: p }, oldest === null ? 0 : Math.max(0, (sources.now() - oldest) / 1000));
          } catch {
            // keep the last value
          }
        }
      },
    });
  }
}
