import { Counter, Gauge, type Registry } from 'prom-client';
import type { Queue, QueueStats } from '../store/types.js';

/** Dispatcher and queue metrics. Labels are bounded: outcomes, reasons and lanes, never ids. */
export class DispatchMetrics {
  readonly outcomes: Counter<'outcome'>;
  readonly retries: Counter<'reason'>;
  readonly inFlight: Gauge;
  readonly queueDepth: Gauge<'lane' | 'state'>;
  readonly queueOldest: Gauge<'lane'>;
  readonly reconciled: Counter;

  constructor(registry: Registry, queue: Queue) {
    this.outcomes = new Counter({
      name: 'ferry_dispatch_outcomes_total',
      help: 'Dispatch attempts by outcome: accepted, retry, failed (max attempts), rejected (upstream refused), expired, no_route, skipped (already sent or final)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    this.retries = new Counter({
      name: 'ferry_dispatch_retries_total',
      help: 'Messages put back on the queue by reason (throttled, timeout, bind_closed, window_full, no_upstream, ...)',
      labelNames: ['reason'] as const,
      registers: [registry],
    });
    this.inFlight = new Gauge({ name: 'ferry_dispatch_in_flight', help: 'Messages leased and being sent upstream by this instance', registers: [registry] });
    this.reconciled = new Counter({
      name: 'ferry_reconciled_total',
      help: 'Ledger rows pushed to the queue again by the reconciler (start-up sweep and periodic repair)',
      registers: [registry],
    });
    // One read of the queue's stats serves both gauges of a scrape (prom-client collects them concurrently).
    let read: { at: number; stats: Promise<QueueStats> } | undefined;
    const stats = (): Promise<QueueStats> => {
      const now = Date.now();
      if (!read || now - read.at > 1000) read = { at: now, stats: queue.stats() };
      return read.stats;
    };
    this.queueDepth = new Gauge({
      name: 'ferry_queue_depth',
      help: 'Message queue items by lane and state (due, scheduled), plus leased and dead (lane "all"); read on scrape',
      labelNames: ['lane', 'state'] as const,
      registers: [registry],
      async collect() {
        try {
          const st = await stats();
          for (const l of st.lanes) {
            this.set({ lane: l.lane, state: 'due' }, l.due);
            this.set({ lane: l.lane, state: 'scheduled' }, l.scheduled);
          }
          this.set({ lane: 'all', state: 'leased' }, st.leased);
          this.set({ lane: 'all', state: 'dead' }, st.dead);
        } catch {
          // The backend is down: ferry_backend_up says so; keep the last values.
        }
      },
    });
    this.queueOldest = new Gauge({
      name: 'ferry_queue_oldest_due_seconds',
      help: 'How long the message queue item due the longest has waited since it became due, by lane (0: none due); read on scrape',
      labelNames: ['lane'] as const,
      registers: [registry],
      async collect() {
        try {
          const st = await stats();
          const now = Date.now();
          for (const l of st.lanes) this.set({ lane: l.lane }, l.oldestDueAt === null ? 0 : Math.max(0, now - l.oldestDueAt) / 1000);
        } catch {
          // As for the depth: keep the last values.
        }
      },
    });
  }
}
