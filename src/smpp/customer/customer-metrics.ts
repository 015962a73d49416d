import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { statusName } from '../constants.js';
import type { BindType } from '../session.js';

/** Why a customer bind was refused (a bounded label set). */
export type BindFailureReason = 'unknown_system_id' | 'wrong_password' | 'suspended' | 'ip_not_allowed' | 'max_binds' | 'cooling_down' | 'over_budget' | 'error';

/** What the binds gauge reads at scrape time (the server's bind registry). */
export interface CustomerBindSource {
  countByBindType(): Record<BindType, number>;
}

/**
 * Metrics of the customer-facing SMPP server. Labels stay bounded: bind type, failure reason, command_status name;
 * never account, system_id or message content.
 */
export class CustomerMetrics {
  readonly binds: Gauge<'bind_type'>;
  readonly bindFailures: Counter<'reason'>;
  readonly bindCooldowns: Counter;
  readonly connectionsClosed: Counter<'reason'>;
  readonly submits: Counter<'status'>;
  readonly submitDuration: Histogram;
  private sources: CustomerBindSource[] = [];
  private readonly submitsByStatus = new Map<number, Counter.Internal>();

  constructor(registry: Registry) {
    const registers = [registry];
    const read = (): CustomerBindSource[] => this.sources;
    this.binds = new Gauge({
      name: 'ferry_smpp_customer_binds',
      help: 'Bound customer SMPP sessions by bind type',
      labelNames: ['bind_type'] as const,
      registers,
      collect() {
        const total: Record<BindType, number> = { transmitter: 0, receiver: 0, transceiver: 0 };
        for (const s of read()) {
          const c = s.countByBindType();
          for (const k of Object.keys(total) as BindType[]) total[k] += c[k];
        }
        for (const k of Object.keys(total) as BindType[]) this.set({ bind_type: k }, total[k]);
      },
    });
    this.bindFailures = new Counter({
      name: 'ferry_smpp_customer_bind_failures_total',
      help: 'Refused customer binds by reason',
      labelNames: ['reason'] as const,
      registers,
    });
    this.bindCooldowns = new Counter({
      name: 'ferry_smpp_bind_cooldowns_total',
      help: 'Cool-downs started by failed binds of one system_id from one address, or of one address across system_ids (the log line names them)',
      registers,
    });
    this.connectionsClosed = new Counter({
      name: 'ferry_smpp_customer_connections_closed_total',
      help: 'Customer connections closed before a bind: address_cap (over smpp.maxSessionsPerAddress at accept), bind_timeout (no bind within smpp.bindTimeoutSeconds)',
      labelNames: ['reason'] as const,
      registers,
    });
    this.submits = new Counter({
      name: 'ferry_smpp_customer_submits_total',
      help: 'Customer submissions (submit_sm, data_sm, each submit_multi destination) by answered command_status',
      labelNames: ['status'] as const,
      registers,
    });
    this.submitDuration = new Histogram({
      name: 'ferry_smpp_customer_submit_duration_seconds',
      help: 'Customer submit_sm received to submit_sm_resp written (includes the durable commit)',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
  }

  /** A bind registry whose bound sessions the gauge counts; returns the function that detaches it. */
  addSource(source: CustomerBindSource): () => void {
    this.sources.push(source);
    return () => {
      this.sources = this.sources.filter((s) => s !== source);
    };
  }

  bindFailed(reason: BindFailureReason): void {
    this.bindFailures.labels(reason).inc();
  }

  /** Failed binds started a cool-down for one (address, system_id). */
  cooldownStarted(): void {
    this.bindCooldowns.inc();
  }

  /** A connection closed before binding (refused at accept, or never bound in time). */
  connectionClosed(reason: 'address_cap' | 'bind_timeout'): void {
    this.connectionsClosed.labels(reason).inc();
  }

  /** One submission answered with `status`. */
  submitted(status: number): void {
    let c = this.submitsByStatus.get(status);
    if (!c) {
      c = this.submits.labels(statusName(status));
      this.submitsByStatus.set(status, c);
    }
    c.inc();
  }

  /** One submit request answered after `seconds`. */
  answered(seconds: number): void {
    this.submitDuration.observe(seconds);
  }
}
