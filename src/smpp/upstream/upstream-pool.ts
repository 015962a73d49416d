import { EventEmitter } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import type { UpstreamConfig } from '../../config/schema.js';
import type { Throttle } from '../../store/types.js';
import type { DeliverSm } from '../pdu.js';
import { decodeText } from '../text/encoding.js';
import { messageParts } from '../text/udh.js';
import { MemoryCorrelationStore } from './memory-correlation-store.js';
import type { OutboundMessage, SubmitOutcome, UnmatchedReceipt, UpstreamMo, UpstreamReceipt } from './outbound.js';
import { ReceiptCorrelator } from './receipt-correlator.js';
import { isReceiptPdu, readReceipt, type ReceiptInfo } from './receipt-pdu.js';
import type { CorrelationMatch, KeptReceiptData } from './correlation-store.js';
import { retryDelay } from './retry-policy.js';
import { Upstream, type UpstreamOptions, type UpstreamStatus } from './upstream.js';
import type { BindState, UpstreamBind } from './upstream-bind.js';
import type { UpstreamMetricHandles, UpstreamMetrics } from './upstream-metrics.js';

export interface UpstreamPoolOptions {
  /** Shared limiter for each upstream's maxTps. */
  throttle?: Throttle;
  metrics?: UpstreamMetrics;
  /** Receipt correlation; default in-memory (lost on restart). */
  correlator?: ReceiptCorrelator;
  /**
   * A correlated receipt. The deliver_sm is acknowledged once this settles, so persist before resolving: a throw
   * answers ESME_RX_T_APPN and the SMSC sends the receipt again.
   */
  onReceipt?: (receipt: UpstreamReceipt) => void | Promise<void>;
  /** A receipt that matched no submit within the hold time. Acknowledged after this settles. */
  onUnmatchedReceipt?: (receipt: UnmatchedReceipt) => void | Promise<void>;
  /** A mobile-originated message; may return a command_status for the deliver_sm_resp (default ESME_ROK). */
  onMo?: (mo: UpstreamMo) => void | number | Promise<void | number>;
  /**
   * When the first live candidate has no room (window full, throttled, maxTps), send to the next one instead of
   * pushing back (default false: failover only when an upstream is down, so load does not move traffic to a
   * costlier route).
   */
  spillover?: boolean;
  /** How long a replaced or removed upstream's in-flight submits may take before they come back as retries (default 5 s). */
  drainMs?: number;
  /** Per-upstream tuning passed to each Upstream. */
  upstream?: Pick<UpstreamOptions, 'maxTpsWaitMs' | 'throttledPauseMs' | 'transientStatuses' | 'stableAfterMs' | 'random'>;
}

export interface UpstreamPoolEvents {
  bindState: [upstreamId: string, bindIndex: number, state: BindState];
  /** Recording a correlation failed: receipts for these parts will come back unmatched. */
  correlationError: [error: unknown, messageId: string];
  /** A receipt deliver_sm without any id. */
  unreadableReceipt: [upstreamId: string, pdu: DeliverSm];
  /** An upstream was added, replaced or removed at runtime (routes built from the pool's list follow it). */
  changed: [upstreamId: string, change: 'added' | 'replaced' | 'removed'];
}

/**
 * Every upstream by id. `submit` walks a route's candidates in order, skipping upstreams with no bound bind
 * (failover), and records accepted parts for receipt correlation; `capacity` tells ingress whether to push back.
 * Upstreams are added, replaced and removed at runtime; a replaced upstream drains while its successor binds.
 */
export class UpstreamPool extends EventEmitter<UpstreamPoolEvents> {
  readonly correlator: ReceiptCorrelator;
  private readonly upstreams = new Map<string, Upstream>();
  /** Replaced or removed upstreams still draining: their receipts and in-flight submits are still handled. */
  private readonly draining = new Set<Upstream>();
  private readonly handles = new Map<string, UpstreamMetricHandles>();
  private readonly options: UpstreamPoolOptions;
  private readonly spillover: boolean;
  private readonly drainMs: number;
  private closed = false;

  constructor(options: UpstreamPoolOptions = {}) {
    super();
    this.options = options;
    this.spillover = options.spillover ?? false;
    this.drainMs = options.drainMs ?? 5000;
    this.correlator = options.correlator ?? new ReceiptCorrelator(new MemoryCorrelationStore());
    this.correlator.onKeptMatch = (kept, match) => this.applyMatched(kept.upstreamId, infoOfKept(kept.receipt), match, kept.receipt.receivedAt);
    this.correlator.onKeptExpired = (expired) => {
      for (const k of expired) {
        this.handles.get(k.upstreamId)?.unmatchedReceipt();
        const r = k.receipt;
        void Promise.resolve(
          this.options.onUnmatchedReceipt?.({ upstreamId: k.upstreamId, upstreamMessageId: r.id, state: r.state, stat: r.stat, receivedAt: r.receivedAt }),
        ).catch(() => undefined);
      }
    };
    options.metrics?.setSource(this);
  }

  /** Adds the upstreams of a config and starts binding. */
  static start(configs: readonly UpstreamConfig[], options: UpstreamPoolOptions = {}): UpstreamPool {
    const pool = new UpstreamPool(options);
    for (const c of configs) pool.upsert(c);
    return pool;
  }

  /**
   * Adds an upstream, or replaces one whose config changed: the new one starts binding at once and takes the
   * next submits; the old one drains (in-flight submits finish or come back as retries) and unbinds.
   * Other upstreams are not touched. Returns what happened.
   */
  upsert(config: UpstreamConfig): 'added' | 'replaced' | 'unchanged' {
    if (this.closed) throw new Error('upstream pool is closed');
    const old = this.upstreams.get(config.id);
    if (old && isDeepStrictEqual(old.config, config)) return 'unchanged';
    const up = new Upstream(config, {
      ...this.options.upstream,
      throttle: this.options.throttle,
      metrics: this.handlesFor(config.id),
      onDeliver: this.handleDeliver,
    });
    up.on('bindState', this.forwardBindState);
    this.upstreams.set(config.id, up);
    up.start();
    if (old) this.retire(old);
    const change = old ? 'replaced' : 'added';
    this.emit('changed', config.id, change);
    return change;
  }

  /** Removes an upstream (drained like a replacement). False when there was none. */
  remove(id: string): boolean {
    const up = this.upstreams.get(id);
    if (!up) return false;
    this.upstreams.delete(id);
    this.retire(up);
    this.emit('changed', id, 'removed');
    return true;
  }

  /** Makes the pool match a config: adds, replaces and removes as needed. */
  reconcile(configs: readonly UpstreamConfig[]): Record<string, 'added' | 'replaced' | 'unchanged' | 'removed'> {
    const out: Record<string, 'added' | 'replaced' | 'unchanged' | 'removed'> = {};
    const wanted = new Set(configs.map((c) => c.id));
    for (const id of [...this.upstreams.keys()]) if (!wanted.has(id) && this.remove(id)) out[id] = 'removed';
    for (const c of configs) out[c.id] = this.upsert(c);
    return out;
  }

  get(id: string): Upstream | undefined {
    return this.upstreams.get(id);
  }

  has(id: string): boolean {
    return this.upstreams.has(id);
  }

  ids(): string[] {
    return [...this.upstreams.keys()];
  }

  isUp(id: string): boolean {
    return this.upstreams.get(id)?.isUp ?? false;
  }

  /**
   * True when a submit to these candidates would be sent now: the upstream `submit` would pick (the first live one,
   * or with spillover any live one) has window room. Ingress answers ESME_RTHROTTLED / 429 when false.
   */
  capacity(candidates: readonly string[]): boolean {
    for (const id of candidates) {
      const up = this.upstreams.get(id);
      if (!up || !up.isUp) continue;
      if (up.hasCapacity) return true;
      if (!this.spillover) return false;
    }
    return false;
  }

  /**
   * Submits to the first candidate that is up (primary, then failover). Never throws; a message is never held
   * beyond the windows: no room means a `window_full` retry, no live candidate a `no_upstream` retry.
   */
  async submit(msg: OutboundMessage, candidates: readonly string[]): Promise<SubmitOutcome> {
    let firstLive: Upstream | undefined;
    let target: Upstream | undefined;
    for (const id of candidates) {
      const up = this.upstreams.get(id);
      if (!up || !up.isUp) continue;
      firstLive ??= up;
      if (!this.spillover || up.hasCapacity) {
        target = up;
        break;
      }
    }
    // With spillover and nobody free, the first live one answers (its retry says why: window, pause or maxTps).
    target ??= firstLive;
    if (!target) {
      if (candidates.length > 0) this.handles.get(candidates[0])?.retry('no_upstream');
      return { kind: 'retry', reason: 'no_upstream', delayMs: retryDelay('no_upstream', msg.attempt ?? 1) };
    }
    const outcome = await target.submit(msg);
    const parts = outcome.parts;
    if (parts && parts.length > 0) {
      const total = outcome.kind === 'accepted' ? outcome.totalParts : Math.max(parts.length, ...parts.map((p) => p.partIndex + 1));
      try {
        await this.correlator.record(target.id, target.config.receiptIdFormat, msg.id, total, parts);
      } catch (err) {
        this.emit('correlationError', err, msg.id);
      }
    }
    return outcome;
  }

  status(): UpstreamStatus[] {
    return [...this.upstreams.values()].map((u) => u.status());
  }

  /** For the metrics gauges. */
  gaugeSnapshot(): Array<{ upstreamId: string; bindsUp: number; binds: Array<{ index: number; bound: boolean; windowInUse: number }> }> {
    return [...this.upstreams.values()].map((u) => ({
      upstreamId: u.id,
      bindsUp: u.bindsUp,
      binds: u.binds.map((b) => ({ index: b.index, bound: b.bound, windowInUse: b.windowInUse })),
    }));
  }

  /** Closes every upstream: in-flight submits get `drainMs`, then come back as retries. */
  async close(drainMs = 0): Promise<void> {
    this.closed = true;
    const all = [...this.upstreams.values(), ...this.draining];
    this.upstreams.clear();
    await Promise.all(all.map((u) => u.close(drainMs)));
    this.draining.clear();
    this.correlator.close();
  }

  private retire(up: Upstream): void {
    this.draining.add(up);
    void up.close(this.drainMs).finally(() => {
      this.draining.delete(up);
      up.off('bindState', this.forwardBindState);
    });
  }

  private handlesFor(id: string): UpstreamMetricHandles | undefined {
    const m = this.options.metrics;
    if (!m) return undefined;
    let h = this.handles.get(id);
    if (!h) this.handles.set(id, (h = m.forUpstream(id)));
    return h;
  }

  private readonly forwardBindState = (bind: UpstreamBind, state: BindState, up: Upstream): void => {
    this.emit('bindState', up.id, bind.index, state);
  };

  private readonly handleDeliver = (pdu: DeliverSm, up: Upstream, bind: UpstreamBind): number | Promise<number> => {
    if (isReceiptPdu(pdu)) return this.handleReceipt(pdu, up);
    return this.handleMo(pdu, up, bind);
  };

  private async handleReceipt(pdu: DeliverSm, up: Upstream): Promise<number> {
    const started = performance.now();
    const handles = this.handles.get(up.id);
    try {
      return await this.applyReceipt(pdu, up);
    } finally {
      handles?.receiptAnswered((performance.now() - started) / 1000);
    }
  }

  private async applyReceipt(pdu: DeliverSm, up: Upstream): Promise<number> {
    const receivedAt = Date.now();
    const info = readReceipt(pdu);
    if (!info) {
      this.emit('unreadableReceipt', up.id, pdu);
      return 0;
    }
    const match = await this.correlator.match(up.id, info.id);
    if (!match) {
      // Shutting down: not unmatched, just unanswered; the SMSC redelivers it to the next instance.
      if (this.closed) throw new Error('upstream pool closed');
      // Its submit is not recorded yet (or never will be): kept, and acknowledged only once stored (a throw here
      // answers ESME_RX_T_APPN and the SMSC offers it again). It is applied when the correlation lands.
      await this.correlator.keep(up.id, keptOfInfo(info, receivedAt));
      return 0;
    }
    await this.applyMatched(up.id, info, match, receivedAt);
    return 0;
  }

  private async applyMatched(upstreamId: string, info: ReceiptInfo, match: CorrelationMatch, receivedAt: number): Promise<void> {
    const handles = this.handles.get(upstreamId);
    if (match.keyIndex > 0) handles?.receiptIdFallback();
    handles?.receipt(info.state);
    const receipt: UpstreamReceipt = {
      messageId: match.ref.messageId,
      partIndex: match.ref.partIndex,
      parts: match.ref.parts,
      upstreamId,
      upstreamMessageId: info.id,
      state: info.state,
      stat: info.stat,
      final: info.final,
      receivedAt,
    };
    if (info.errorCode !== undefined) receipt.errorCode = info.errorCode;
    if (info.networkErrorCode) receipt.networkErrorCode = info.networkErrorCode;
    if (info.submitDate) receipt.submitDate = info.submitDate;
    if (info.doneDate) receipt.doneDate = info.doneDate;
    await this.options.onReceipt?.(receipt);
  }

  private async handleMo(pdu: DeliverSm, up: Upstream, bind: UpstreamBind): Promise<number> {
    this.handles.get(up.id)?.mo();
    if (!this.options.onMo) return 0;
    const parts = messageParts(pdu);
    const mo: UpstreamMo = {
      upstreamId: up.id,
      bindIndex: bind.index,
      source: pdu.source_addr,
      destination: pdu.destination_addr,
      dataCoding: pdu.data_coding,
      esmClass: pdu.esm_class,
      text: decodeText(parts.payload, pdu.data_coding),
      pdu,
      receivedAt: Date.now(),
    };
    if (parts.concat) mo.concat = parts.concat;
    const status = await this.options.onMo(mo);
    return typeof status === 'number' ? status : 0;
  }
}

/** A receipt's fields as kept in the store (JSON: dates as epoch ms, the network error code in hex). */
function keptOfInfo(info: ReceiptInfo, receivedAt: number): KeptReceiptData {
  const k: KeptReceiptData = { id: info.id, state: info.state, stat: info.stat, final: info.final, receivedAt };
  if (info.errorCode !== undefined) k.errorCode = info.errorCode;
  if (info.networkErrorCode) k.networkErrorCode = info.networkErrorCode.toString('hex');
  if (info.submitDate) k.submitDate = info.submitDate.getTime();
  if (info.doneDate) k.doneDate = info.doneDate.getTime();
  return k;
}

function infoOfKept(k: KeptReceiptData): ReceiptInfo {
  const info: ReceiptInfo = { id: k.id, state: k.state, stat: k.stat, final: k.final };
  if (k.errorCode !== undefined) info.errorCode = k.errorCode;
  if (k.networkErrorCode) info.networkErrorCode = Buffer.from(k.networkErrorCode, 'hex');
  if (k.submitDate !== undefined) info.submitDate = new Date(k.submitDate);
  if (k.doneDate !== undefined) info.doneDate = new Date(k.doneDate);
  return info;
}
