import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per daemon (tests run several daemons in one process). */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'ferry_http_request_duration_seconds',
    help: 'HTTP API request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly httpErrors = new Counter({
    name: 'ferry_http_errors_total',
    help: 'HTTP API error answers by error code (the body\'s `code`) and route',
    labelNames: ['code', 'route'] as const,
    registers: [this.registry],
  });

  readonly authFailures = new Counter({
    name: 'ferry_auth_failures_total',
    help: 'Failed API authentications by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'ferry_rate_limited_total',
    help: 'Requests refused by a rate limit, by limit',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly backendUp = new Gauge({
    name: 'ferry_backend_up',
    help: 'Storage backend health (1 up, 0 down), checked on scrape',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });

  readonly vacuums = new Counter({
    name: 'ferry_db_vacuums_total',
    help: 'Table maintenance run by Ferry, by table and kind (vacuum, or analyze of a table that only grew)',
    labelNames: ['table', 'kind'] as const,
    registers: [this.registry],
  });

  readonly vacuumSeconds = new Counter({
    name: 'ferry_db_vacuum_seconds_total',
    help: 'Time spent in that maintenance, by table and kind',
    labelNames: ['table', 'kind'] as const,
    registers: [this.registry],
  });

  readonly retentionPurged = new Counter({
    name: 'ferry_retention_purged_rows_total',
    help: 'Rows deleted by retention (final and older than retention.days or their family\'s setting), by table',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });

  readonly upstreamSimulated = new Gauge({
    name: 'ferry_upstream_simulated',
    help: 'Each upstream: 1 for the embedded SMSC simulator (nothing it takes leaves the machine), 0 for a real one',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
  });

  readonly info = new Gauge({
    name: 'ferry_info',
    help: 'Build and backend information',
    labelNames: ['version', 'database', 'queue'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'ferry_' });
  }
}
