import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { OutboundPipeline, type OutboundProduct, type OutboundProvider } from '../outbound/outbound-pipeline.js';
import type { Backends } from '../store/types.js';

/** The longest an idle worker waits between looks for due jobs on the embedded database. */
const EMBEDDED_IDLE_POLL_MAX_MS = 1000;

/**
 * The one outbound pipeline, assembled from what the modules register while they are created: each product its
 * state machine and deadline, each provider its adapter and limits. The daemon builds it once every module exists
 * and starts it before the modules' workers; a module reaches it through `pipeline` from then on.
 */
export class OutboundRegistry {
  private readonly products: Record<string, OutboundProduct> = {};
  private readonly providers: OutboundProvider[] = [];
  private built: OutboundPipeline | null = null;

  /** A product whose messages go through the pipeline. */
  product(name: string, definition: OutboundProduct): void {
    if (this.built) throw new Error(`outbound product ${name} registered after the pipeline was built`);
    if (this.products[name]) throw new Error(`outbound product ${name} is registered twice`);
    this.products[name] = definition;
  }

  /** A provider adapter with its concurrency, hold cap, timeouts and breaker settings. */
  provider(definition: OutboundProvider): void {
    if (this.built) throw new Error(`outbound provider ${definition.adapter.name} registered after the pipeline was built`);
    if (this.providers.some((p) => p.adapter.name === definition.adapter.name)) throw new Error(`outbound provider ${definition.adapter.name} is registered twice`);
    this.providers.push(definition);
  }

  /** The pipeline; there once every module is created (use it from routes, workers and stop, not from create). */
  get pipeline(): OutboundPipeline {
    if (!this.built) throw new Error('the outbound pipeline exists once every module is created');
    return this.built;
  }

  /** Builds the pipeline when anything was registered; null when no product uses it (no workers, no polling). */
  build(o: { backends: Pick<Backends, 'db'>; log: Logger; registry: Registry }): OutboundPipeline | null {
    if (!Object.keys(this.products).length && !this.providers.length) return null;
    this.built = new OutboundPipeline({
      backends: o.backends,
      log: o.log,
      registry: o.registry,
      products: this.products,
      providers: this.providers,
      // The embedded database has one instance: every job is enqueued, retried or deferred here, and wakes a worker
      // when due, so an idle worker need not look every 100 ms (each look is a query run on this process's CPU).
      ...(o.backends.db.kind === 'pglite' ? { idlePollMaxMs: EMBEDDED_IDLE_POLL_MAX_MS } : {}),
    });
    return this.built;
  }
}
