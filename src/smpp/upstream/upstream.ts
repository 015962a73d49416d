import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { UpstreamConfig } from '../../config/schema.js';
import type { Throttle } from '../../store/types.js';
import { CommandStatus, statusName } from '../constants.js';
import { SmppEncodeError, SmppQueueFullError, SmppTimeoutError } from '../errors.js';
import type { DeliverSm } from '../pdu.js';
import type { BindType } from '../session.js';
import type { AcceptedPart, OutboundMessage, RetryReason, SubmitOutcome } from './outbound.js';
import { DEFAULT_TRANSIENT_STATUSES, retryDelay, retryReasonOfStatus } from './retry-policy.js';
import { submitPdus, submitProfile, type SubmitPdu, type SubmitProfile } from './submit-pdus.js';
import { TpsGate } from './tps-gate.js';
import { UpstreamBind, type BindState, type BindStatus } from './upstream-bind.js';
import type { UpstreamMetricHandles } from './upstream-metrics.js';

export type UpstreamDeliverHandler = (pdu: DeliverSm, upstream: Upstream, bind: UpstreamBind) => number | Promise<number>;

export interface UpstreamOptions {
  onDeliver: UpstreamDeliverHandler;
  /** Shared rate limiter for maxTps (key `tps:upstream:<id>`). Without one, maxTps is not enforced. */
  throttle?: Throttle;
  metrics?: UpstreamMetricHandles;
  /** Longest a submit waits for a maxTps slot before it is handed back as a `tps_limit` retry (default 1000 ms). */
  maxTpsWaitMs?: number;
  /** After an ESME_RTHROTTLED the upstream takes no submits for this long (default 1000 ms, like Kannel). */
  throttledPauseMs?: number;
  transientStatuses?: ReadonlySet<number>;
  /** Passed to each bind: how long a bind must stay up to reset its backoff. */
  stableAfterMs?: number;
  random?: () => number;
}

export interface UpstreamEvents {
  bindState: [bind: UpstreamBind, state: BindState, upstream: Upstream];
}

export interface UpstreamStatus {
  id: string;
  host: string;
  port: number;
  bindMode: UpstreamConfig['bindMode'];
  up: boolean;
  closing: boolean;
  bindsUp: number;
  windowInUse: number;
  windowSize: number;
  maxTps: number;
  /** Epoch ms until which the upstream is paused after ESME_RTHROTTLED, or null. */
  pausedUntil: number | null;
  binds: BindStatus[];
}

/** The address a query_sm names: the submit's source, as it was sent. */
export interface QuerySource {
  addr: string;
  ton: number;
  npi: number;
}

/** What a query_sm brought back. */
export type QueryAnswer =
  | { kind: 'state'; state: number; finalDate: string; errorCode: number }
  /** The SMSC answered with an error status (ESME_RQUERYFAIL, ESME_RINVMSGID, ESME_RINVCMDID, …). */
  | { kind: 'error'; status: number }
  /** No answer: timed out, or the bind closed meanwhile. */
  | { kind: 'no_answer' }
  /** Not sent: no bound bind with room. */
  | { kind: 'unavailable' };

interface PartResult {
  partIndex: number;
  upstreamMessageId?: string;
  status: number;
  retry?: RetryReason;
}

/**
 * One upstream SMSC: N binds (transceivers, or transmitters plus receivers), its maxTps, its pause after
 * ESME_RTHROTTLED. `submit` sends every part of a message on the bind with the most free window and turns the
 * responses into one outcome; it never queues beyond the windows (no free slot = `window_full` retry).
 */
export class Upstream extends EventEmitter<UpstreamEvents> {
  readonly id: string;
  readonly config: UpstreamConfig;
  readonly profile: SubmitProfile;
  readonly binds: readonly UpstreamBind[];
  private readonly txBinds: UpstreamBind[];
  private readonly gate: TpsGate | undefined;
  private readonly metrics: UpstreamMetricHandles | undefined;
  private readonly throttledPauseMs: number;
  private readonly transient: ReadonlySet<number>;
  private readonly random: () => number;
  private readonly onDeliver: UpstreamDeliverHandler;
  private pausedUntil = 0;
  private cursor = 0;
  private closing = false;
  /** Submits between their call and their outcome. */
  inFlight = 0;

  constructor(config: UpstreamConfig, options: UpstreamOptions) {
    super();
    this.id = config.id;
    this.config = config;
    this.profile = submitProfile(config);
    this.metrics = options.metrics;
    this.throttledPauseMs = options.throttledPauseMs ?? 1000;
    this.transient = options.transientStatuses ?? DEFAULT_TRANSIENT_STATUSES;
    this.random = options.random ?? Math.random;
    this.onDeliver = options.onDeliver;
    if (config.maxTps > 0 && options.throttle) {
      this.gate = new TpsGate(options.throttle, `tps:upstream:${config.id}`, config.maxTps, options.maxTpsWaitMs ?? 1000);
    }
    const types: BindType[] = [];
    for (let i = 0; i < config.binds; i++) {
      if (config.bindMode === 'transceiver') types.push('transceiver');
      else types.push('transmitter', 'receiver');
    }
    const binds = types.map(
      (bindType, index) =>
        new UpstreamBind({
          config,
          index,
          bindType,
          stableAfterMs: options.stableAfterMs,
          random: options.random,
          onDeliver: (pdu, bind) => this.onDeliver(pdu, this, bind),
        }),
    );
    for (const b of binds) {
      b.on('state', (state, bind) => {
        if (state === 'connecting' && bind.connectAttempts > 1) this.metrics?.reconnect();
        this.emit('bindState', bind, state, this);
      });
    }
    this.binds = binds;
    this.txBinds = binds.filter((b) => b.transmits);
  }

  start(): void {
    for (const b of this.binds) b.start();
  }

  /** At least one bind that can submit is bound. */
  get isUp(): boolean {
    if (this.closing) return false;
    for (const b of this.txBinds) if (b.bound) return true;
    return false;
  }

  /** A submit now would be sent at once: a bind has window room, no throttling pause, maxTps not saturated. */
  get hasCapacity(): boolean {
    if (this.closing) return false;
    if (this.pausedUntil !== 0 && Date.now() < this.pausedUntil) return false;
    if (this.gate && this.gate.saturated) return false;
    for (const b of this.txBinds) if (b.hasCapacity) return true;
    return false;
  }

  get bindsUp(): number {
    let n = 0;
    for (const b of this.binds) if (b.bound) n++;
    return n;
  }

  get windowInUse(): number {
    let n = 0;
    for (const b of this.txBinds) n += b.windowInUse;
    return n;
  }

  /** Total window of the binds that are bound. */
  get windowSize(): number {
    let n = 0;
    for (const b of this.txBinds) if (b.bound) n += b.windowSize;
    return n;
  }

  /** Sends the message's parts (those not in `partsDone`) and reports one outcome. Never throws. */
  async submit(msg: OutboundMessage): Promise<SubmitOutcome> {
    let pdus: SubmitPdu[];
    try {
      pdus = submitPdus(msg, this.profile);
    } catch (err) {
      const status = err instanceof SmppEncodeError ? CommandStatus.ESME_RINVMSGLEN : CommandStatus.ESME_RSYSERR;
      return { kind: 'failed', status, statusName: statusName(status), upstreamId: this.id };
    }
    const todo = pendingParts(pdus.length, msg.partsDone);
    if (todo.length === 0) return { kind: 'accepted', upstreamId: this.id, parts: [], totalParts: pdus.length };
    const attempt = msg.attempt ?? 1;
    if (this.closing) return this.retry('bind_closed', attempt);
    if (this.pausedUntil !== 0) {
      const left = this.pausedUntil - Date.now();
      if (left > 0) return this.retry('throttled', attempt, left);
      this.pausedUntil = 0;
    }
    this.inFlight++;
    try {
      if (this.gate) {
        const waitMs = await this.gate.acquire(todo.length);
        if (waitMs > 0) {
          this.metrics?.throttled('ferry');
          return this.retry('tps_limit', attempt, waitMs);
        }
      }
      const bind = this.pickBind();
      if (!bind) return this.retry(this.isUp ? 'window_full' : 'bind_closed', attempt);
      if (todo.length === 1) return this.outcome([await this.sendPart(bind, pdus[todo[0]], todo[0])], attempt, pdus.length);
      const results = await Promise.all(todo.map((i) => this.sendPart(bind, pdus[i], i)));
      return this.outcome(results, attempt, pdus.length);
    } finally {
      this.inFlight--;
    }
  }

  /**
   * Asks the SMSC for the state of a message it accepted (query_sm), on a bound bind that can send. Never throws.
   * Used for receipts that never came (see receipt-query-sweep.ts); it does not count against maxTps.
   */
  async query(upstreamMessageId: string, source: QuerySource): Promise<QueryAnswer> {
    if (this.closing) return { kind: 'unavailable' };
    const bind = this.pickBind();
    if (!bind) return { kind: 'unavailable' };
    try {
      const resp = await bind.request({
        command: 'query_sm',
        message_id: upstreamMessageId,
        source_addr_ton: source.ton,
        source_addr_npi: source.npi,
        source_addr: source.addr,
      });
      if (resp.command === 'query_sm_resp' && resp.command_status === CommandStatus.ESME_ROK) {
        return { kind: 'state', state: resp.message_state, finalDate: resp.final_date, errorCode: resp.error_code };
      }
      // generic_nack (an SMSC without query_sm) says so in its status, usually ESME_RINVCMDID.
      return { kind: 'error', status: resp.command_status === CommandStatus.ESME_ROK ? CommandStatus.ESME_RSYSERR : resp.command_status };
    } catch (err) {
      if (err instanceof SmppQueueFullError) return { kind: 'unavailable' };
      return { kind: 'no_answer' };
    }
  }

  /**
   * Stops taking submits and closes the binds. Submits in flight get `drainMs` to be answered; the rest come back
   * as `bind_closed` retries (requeued, not lost).
   */
  async close(drainMs = 0): Promise<void> {
    this.closing = true;
    this.gate?.close();
    await Promise.all(this.binds.map((b) => b.close(drainMs)));
  }

  status(): UpstreamStatus {
    return {
      id: this.id,
      host: this.config.host,
      port: this.config.port,
      bindMode: this.config.bindMode,
      up: this.isUp,
      closing: this.closing,
      bindsUp: this.bindsUp,
      windowInUse: this.windowInUse,
      windowSize: this.windowSize,
      maxTps: this.config.maxTps,
      pausedUntil: this.pausedUntil > Date.now() ? this.pausedUntil : null,
      binds: this.binds.map((b) => b.status()),
    };
  }

  /** The bound transmitting bind with the most free window; ties rotate so binds share the load. */
  private pickBind(): UpstreamBind | undefined {
    const binds = this.txBinds;
    const n = binds.length;
    let best: UpstreamBind | undefined;
    let bestFree = 0;
    const start = this.cursor++ % n;
    for (let k = 0; k < n; k++) {
      const b = binds[(start + k) % n];
      if (!b.hasCapacity) continue;
      const free = b.freeSlots;
      if (free > bestFree) {
        best = b;
        bestFree = free;
      }
    }
    return best;
  }

  private async sendPart(bind: UpstreamBind, pdu: SubmitPdu, partIndex: number): Promise<PartResult> {
    const started = performance.now();
    try {
      const resp = await bind.request(pdu);
      const status = resp.command_status;
      this.metrics?.response(status, (performance.now() - started) / 1000);
      if (status === CommandStatus.ESME_ROK && resp.command === 'submit_sm_resp') {
        return { partIndex, status, upstreamMessageId: resp.message_id };
      }
      // A generic_nack with status 0 would be nonsense; treat it as a system error from the SMSC.
      const effective = status === CommandStatus.ESME_ROK ? CommandStatus.ESME_RSYSERR : status;
      if (this.transient.has(effective)) {
        if (effective === CommandStatus.ESME_RTHROTTLED) {
          this.pausedUntil = Date.now() + this.throttledPauseMs;
          this.metrics?.throttled('upstream');
        }
        return { partIndex, status: effective, retry: retryReasonOfStatus(effective) };
      }
      return { partIndex, status: effective };
    } catch (err) {
      if (err instanceof SmppTimeoutError) {
        this.metrics?.response(-1, 0);
        return { partIndex, status: -1, retry: 'timeout' };
      }
      if (err instanceof SmppQueueFullError) return { partIndex, status: -1, retry: 'window_full' };
      if (err instanceof SmppEncodeError) return { partIndex, status: CommandStatus.ESME_RINVMSGLEN };
      // SessionClosedError, or a state error from a bind that just went down: the submit is requeued.
      return { partIndex, status: -1, retry: 'bind_closed' };
    }
  }

  private outcome(results: PartResult[], attempt: number, totalParts: number): SubmitOutcome {
    const accepted: AcceptedPart[] = [];
    let failed: PartResult | undefined;
    let retry: PartResult | undefined;
    for (const r of results) {
      if (r.upstreamMessageId !== undefined) accepted.push({ upstreamMessageId: r.upstreamMessageId, partIndex: r.partIndex });
      else if (r.retry) retry ??= r;
      else failed ??= r;
    }
    if (failed) {
      return { kind: 'failed', status: failed.status, statusName: statusName(failed.status), upstreamId: this.id, parts: accepted };
    }
    if (retry) {
      const out = this.retry(retry.retry!, attempt, 0, retry.status >= 0 ? retry.status : undefined);
      if (accepted.length) out.parts = accepted;
      return out;
    }
    return { kind: 'accepted', upstreamId: this.id, parts: accepted, totalParts };
  }

  private retry(reason: RetryReason, attempt: number, atLeastMs = 0, status?: number): Extract<SubmitOutcome, { kind: 'retry' }> {
    this.metrics?.retry(reason);
    const delayMs = Math.max(atLeastMs, retryDelay(reason, attempt, this.random));
    return status === undefined ? { kind: 'retry', reason, delayMs, upstreamId: this.id } : { kind: 'retry', reason, status, delayMs, upstreamId: this.id };
  }
}

/** Part indexes still to send. */
function pendingParts(total: number, done: readonly number[] | undefined): number[] {
  const out: number[] = [];
  for (let i = 0; i < total; i++) if (!done || !done.includes(i)) out.push(i);
  return out;
}
