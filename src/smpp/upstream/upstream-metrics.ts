import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ReceiptStat, statusName } from '../constants.js';
import type { RetryReason } from './outbound.js';

/** What the gauges read at scrape time (the pool provides it). */
export interface UpstreamGaugeSource {
  gaugeSnapshot(): Array<{ upstreamId: string; bindsUp: number; binds: Array<{ index: number; bound: boolean; windowInUse: number }> }>;
}

/** Label children of one upstream, looked up once so the submit path does no label hashing. */
export class UpstreamMetricHandles {
  private readonly byStatus = new Map<number, Counter.Internal>();

  constructor(
    private readonly metrics: UpstreamMetrics,
    readonly upstreamId: string,
    readonly latency = metrics.submitLatency.labels(upstreamId),
    private readonly receiptAnswer = metrics.receiptAnswer.labels(upstreamId),
  ) {}

  /** One submit_sm answered (or timed out: status -1), after `seconds`. */
  response(status: number, seconds: number): void {
    let c = this.byStatus.get(status);
    if (!c) {
      c = this.metrics.submits.labels(this.upstreamId, status < 0 ? 'TIMEOUT' : statusName(status));
      this.byStatus.set(status, c);
    }
    c.inc();
    if (status >= 0) this.latency.observe(seconds);
  }

  retry(reason: RetryReason): void {
    this.metrics.retries.labels(this.upstreamId, reason).inc();
  }

  throttled(by: 'upstream' | 'ferry'): void {
    this.metrics.throttled.labels(this.upstreamId, by).inc();
  }

  receipt(state: number): void {
    this.metrics.receipts.labels(this.upstreamId, ReceiptStat[state] ?? 'UNKNOWN').inc();
  }

  /** A receipt's deliver_sm answered `seconds` after it arrived. */
  receiptAnswered(seconds: number): void {
    this.receiptAnswer.observe(seconds);
  }

  unmatchedReceipt(): void {
    this.metrics.receiptsUnmatched.labels(this.upstreamId).inc();
  }

  receiptIdFallback(): void {
    this.metrics.receiptIdFallbacks.labels(this.upstreamId).inc();
  }

  mo(): void {
    this.metrics.mo.labels(this.upstreamId).inc();
  }

  reconnect(): void {
    this.metrics.reconnects.labels(this.upstreamId).inc();
  }
}

/** Latency buckets (seconds) of the upstream histograms: 1 ms to 10 s. */
const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Upstream and routing metrics, registered into the registry passed in (one per daemon). Submits per second is
 * rate(ferry_upstream_submits_total); queue depth per lane belongs to the queue's own metrics.
 */
export class UpstreamMetrics {
  readonly bindsUp: Gauge<'upstream'>;
  readonly windowInUse: Gauge<'upstream' | 'bind'>;
  readonly submits: Counter<'upstream' | 'status'>;
  readonly submitLatency: Histogram<'upstream'>;
  readonly receipts: Counter<'upstream' | 'state'>;
  readonly receiptAnswer: Histogram<'upstream'>;
  readonly receiptsUnmatched: Counter<'upstream'>;
  readonly receiptIdFallbacks: Counter<'upstream'>;
  readonly receiptQueries: Counter<'upstream'>;
  readonly receiptQueryAnswers: Counter<'upstream' | 'answer'>;
  readonly retries: Counter<'upstream' | 'reason'>;
  readonly throttled: Counter<'upstream' | 'by'>;
  readonly reconnects: Counter<'upstream'>;
  readonly mo: Counter<'upstream'>;
  readonly routeSwitches: Counter<'rule'>;
  private source: UpstreamGaugeSource | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const read = (): ReturnType<UpstreamGaugeSource['gaugeSnapshot']> => this.source?.gaugeSnapshot() ?? [];
    const secondsPerUpstream = (name: string, help: string): Histogram<'upstream'> =>
      new Histogram({ name, help, labelNames: ['upstream'] as const, buckets: SECONDS_BUCKETS, registers });
    this.bindsUp = new Gauge({
      name: 'ferry_upstream_binds_up',
      help: 'Bound binds per upstream',
      labelNames: ['upstream'] as const,
      registers,
      collect() {
        this.reset();
        for (const u of read()) this.set({ upstream: u.upstreamId }, u.bindsUp);
      },
    });
    this.windowInUse = new Gauge({
      name: 'ferry_upstream_window_in_use',
      help: 'Outstanding submits per bind',
      labelNames: ['upstream', 'bind'] as const,
      registers,
      collect() {
        this.reset();
        for (const u of read()) for (const b of u.binds) this.set({ upstream: u.upstreamId, bind: String(b.index) }, b.windowInUse);
      },
    });
    this.submits = new Counter({
      name: 'ferry_upstream_submits_total',
      help: 'submit_sm responses by upstream and command_status (TIMEOUT when none came)',
      labelNames: ['upstream', 'status'] as const,
      registers,
    });
    this.submitLatency = secondsPerUpstream('ferry_upstream_submit_latency_seconds', 'submit_sm to submit_sm_resp latency');
    this.receipts = new Counter({
      name: 'ferry_upstream_receipts_total',
      help: 'Correlated delivery receipts by upstream and state',
      labelNames: ['upstream', 'state'] as const,
      registers,
    });
    // The SMSC keeps a window of unanswered receipts per bind, so this time bounds how many receipts per second it can
    // hand over: window × binds ÷ answer time.
    this.receiptAnswer = secondsPerUpstream(
      'ferry_upstream_receipt_answer_seconds',
      "Time from a receipt's deliver_sm to Ferry's deliver_sm_resp (correlated and in the ledger, or refused)",
    );
    this.receiptsUnmatched = new Counter({
      name: 'ferry_upstream_receipts_unmatched_total',
      help: 'Receipts whose id matched no submit',
      labelNames: ['upstream'] as const,
      registers,
    });
    this.receiptIdFallbacks = new Counter({
      name: 'ferry_upstream_receipt_id_fallbacks_total',
      help: 'Receipts matched only through a hex/decimal conversion the receiptIdFormat did not predict (check the setting)',
      labelNames: ['upstream'] as const,
      registers,
    });
    this.receiptQueries = new Counter({
      name: 'ferry_upstream_receipt_queries_total',
      help: 'query_sm sent for messages whose receipt is overdue',
      labelNames: ['upstream'] as const,
      registers,
    });
    this.receiptQueryAnswers = new Counter({
      name: 'ferry_upstream_receipt_query_answers_total',
      help: 'query_sm answers by message state (DELIVRD, ENROUTE, …), error status (ESME_RQUERYFAIL, …) or TIMEOUT',
      labelNames: ['upstream', 'answer'] as const,
      registers,
    });
    this.retries = new Counter({
      name: 'ferry_upstream_retries_total',
      help: 'Submits handed back for a retry, by reason',
      labelNames: ['upstream', 'reason'] as const,
      registers,
    });
    this.throttled = new Counter({
      name: 'ferry_upstream_throttled_total',
      help: 'Submits held back by throttling: by the SMSC (ESME_RTHROTTLED) or by Ferry (maxTps)',
      labelNames: ['upstream', 'by'] as const,
      registers,
    });
    this.reconnects = new Counter({
      name: 'ferry_upstream_reconnects_total',
      help: 'Bind attempts after a refusal, a failed connect or a dropped session',
      labelNames: ['upstream'] as const,
      registers,
    });
    this.mo = new Counter({
      name: 'ferry_upstream_mo_total',
      help: 'Mobile-originated messages received',
      labelNames: ['upstream'] as const,
      registers,
    });
    this.routeSwitches = new Counter({
      name: 'ferry_route_switches_total',
      help: 'Route switches (and clearings) by rule',
      labelNames: ['rule'] as const,
      registers,
    });
  }

  /** The pool whose binds the gauges report. */
  setSource(source: UpstreamGaugeSource): void {
    this.source = source;
  }

  forUpstream(upstreamId: string): UpstreamMetricHandles {
    return new UpstreamMetricHandles(this, upstreamId);
  }

  /** Counts the router's switches (src/routing's Router); returns the unsubscribe function. */
  observeRouter(router: { onSwitch(listener: (event: { ruleId: string }) => void): () => void }): () => void {
    return router.onSwitch((e) => this.routeSwitches.labels(e.ruleId).inc());
  }
}
