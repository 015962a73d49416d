import { Counter, Histogram, type Registry } from 'prom-client';
import type { EndStatus, UssdChannel } from './session-store.js';

/** USSD sessions and hops, by channel and outcome. */
export class UssdMetrics {
  private readonly sessionsStarted: Counter<'channel'>;
  private readonly sessionsEnded: Counter<'status'>;
  private readonly hopSeconds: Histogram<'channel' | 'outcome'>;

  constructor(registry: Registry) {
    this.sessionsStarted = new Counter({ name: 'ferry_ussd_sessions_started_total', help: 'USSD sessions started', labelNames: ['channel'], registers: [registry] });
    this.sessionsEnded = new Counter({ name: 'ferry_ussd_sessions_ended_total', help: 'USSD sessions ended, by status (Success, Incomplete, Failed)', labelNames: ['status'], registers: [registry] });
    this.hopSeconds = new Histogram({
      name: 'ferry_ussd_hop_seconds',
      help: 'time from a hop arriving to its screen being ready (app call included)',
      labelNames: ['channel', 'outcome'],
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5],
      registers: [registry],
    });
  }

  started(channel: UssdChannel): void {
    this.sessionsStarted.inc({ channel });
  }

  ended(status: EndStatus): void {
    this.sessionsEnded.inc({ status });
  }

  hop(channel: UssdChannel, outcome: 'ok' | 'failed' | 'unknown_code' | 'reserved', startedAt: number): void {
    this.hopSeconds.observe({ channel, outcome }, (performance.now() - startedAt) / 1000);
  }
}
