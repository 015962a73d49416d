import type { ReceiptQueryConfig, UpstreamConfig } from '../../config/schema.js';
import type { Throttle } from '../../store/types.js';
import { CommandStatus, MessageState, ReceiptStat, statusName } from '../constants.js';
import { parseSmppTime } from '../time.js';
import type { UpstreamReceipt } from './outbound.js';
import type { QueryTarget, ReceiptQueryStore } from './receipt-query-store.js';
import type { QueryAnswer, QuerySource } from './upstream.js';
import type { UpstreamMetrics } from './upstream-metrics.js';

const DEFAULTS: ReceiptQueryConfig = { enabled: true, afterSeconds: 600, intervalSeconds: 300, maxPerSecond: 10, maxAttempts: 5 };

/** An upstream's receiptQuery settings, defaults filled in (configs built in code may leave them out). */
export function receiptQuerySettings(config: UpstreamConfig): ReceiptQueryConfig {
  return { ...DEFAULTS, ...config.receiptQuery };
}

// The back-off doubles from intervalSeconds; a day-long wait is useless next to receiptTimeoutHours, so it stops growing.
const MAX_INTERVAL_MS = 6 * 3_600_000;

/** When a message is asked again after its `attempts`-th query found it not final; null once maxAttempts are spent. */
export function nextQueryAt(settings: ReceiptQueryConfig, attempts: number, now: number): number | null {
  if (attempts >= settings.maxAttempts) return null;
  return now + Math.min(MAX_INTERVAL_MS, settings.intervalSeconds * 1000 * 2 ** Math.max(0, attempts - 1));
}

/** Answers that end a message's wait: what a receipt with this state would have said, final. */
const FINAL_STATES = new Set<number>([MessageState.DELIVERED, MessageState.EXPIRED, MessageState.DELETED, MessageState.UNDELIVERABLE, MessageState.REJECTED]);

/** An SMSC without query_sm: asking that message again is pointless. */
const UNSUPPORTED = new Set<number>([CommandStatus.ESME_RINVCMDID]);

/** What the sweep needs of an upstream (the pool's Upstream). */
export interface QueryableUpstream {
  readonly id: string;
  readonly config: UpstreamConfig;
  readonly isUp: boolean;
  query(upstreamMessageId: string, source: QuerySource): Promise<QueryAnswer>;
}

export interface QueryUpstreams {
  ids(): string[];
  get(id: string): QueryableUpstream | undefined;
}

export interface ReceiptQuerySweepOptions {
  store: ReceiptQueryStore;
  upstreams: QueryUpstreams;
  /** Records an answer as a receipt (ReceiptService.onReceipt): history, customer receipt and webhooks follow. */
  onReceipt: (receipt: UpstreamReceipt) => Promise<void>;
  /** Shared limiter for maxPerSecond (key `receipt-query:upstream:<id>`), so instances together keep to it. */
  throttle?: Throttle;
  metrics?: UpstreamMetrics;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  /** How often due queries are claimed (default 1 s; maxPerSecond is spent per tick): the interval its runner calls `run()` at. */
  tickMs?: number;
  /** Open messages read per discovery page (default 500). */
  pageSize?: number;
  /** A claimed query not finished within this comes back to be claimed again (default 60 s). */
  leaseMs?: number;
  /** Rows older than this are purged (default 7 days). */
  retentionMs?: number;
  clock?: () => number;
}

type PartOutcome = 'final' | 'pending' | 'unavailable' | 'unsupported';

interface Enabled {
  up: QueryableUpstream;
  settings: ReceiptQueryConfig;
}

/**
 * Asks upstreams with query_sm about messages still `submitted` well past their upstream's usual receipt delay:
 * receipts sent on a bind that closed (a crash, a kill) are not sent again by many SMSCs. A final answer is recorded
 * as if its receipt had come; a non-final one or an error is asked again later with back-off, at most maxAttempts
 * times, and what no one answers still expires at receiptTimeoutHours. Each tick walks a page of open messages
 * (discovery), then claims at most maxPerSecond due rows per live upstream and asks on that upstream's binds.
 */
export class ReceiptQuerySweep {
  private running: Promise<void> | null = null;
  private readonly clock: () => number;
  /** How often `run()` is meant to be called (the gateway's job `sms.receipt-queries` runs it at this interval). */
  readonly tickMs: number;
  private readonly pageSize: number;
  private readonly leaseMs: number;
  private readonly retentionMs: number;
  /** Where the discovery walk goes on ('' = a new walk, started when nextWalkAt comes). */
  private cursor = '';
  private nextWalkAt = 0;
  private nextPurgeAt = 0;
  private readonly warnedUnsupported = new Set<string>();

  constructor(private readonly o: ReceiptQuerySweepOptions) {
    this.clock = o.clock ?? Date.now;
    this.tickMs = o.tickMs ?? 1000;
    this.pageSize = o.pageSize ?? 500;
    this.leaseMs = o.leaseMs ?? 60_000;
    this.retentionMs = o.retentionMs ?? 7 * 86_400_000;
  }

  /** Waits for a pass in progress. */
  async stop(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** One pass (passes never overlap: a call during one gets that one). Rejects when it failed. */
  run(): Promise<void> {
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** One pass that never throws (a failure is logged). */
  tick(): Promise<void> {
    return this.run().catch((err: unknown) => this.o.log.warn({ err: (err as Error).message }, 'receipt query pass failed'));
  }

  private async pass(): Promise<void> {
    const now = this.clock();
    const enabled = new Map<string, Enabled>();
    for (const id of this.o.upstreams.ids()) {
      const up = this.o.upstreams.get(id);
      if (!up) continue;
      const settings = receiptQuerySettings(up.config);
      if (settings.enabled) enabled.set(id, { up, settings });
    }
    if (!enabled.size) return;
    await this.discover(now, enabled);
    await Promise.all([...enabled.values()].filter((e) => e.up.isUp).map((e) => this.askUpstream(e, enabled, now)));
    if (now >= this.nextPurgeAt) {
      this.nextPurgeAt = now + 600_000;
      await this.o.store.purge(now - this.retentionMs);
    }
  }

  /**
   * One page of the walk over open messages. A walk starts at most every tenth of the shortest afterSeconds (between
   * one tick and 30 s) and goes on a page per tick until it has read every open message.
   */
  private async discover(now: number, enabled: ReadonlyMap<string, Enabled>): Promise<void> {
    if (this.cursor === '' && now < this.nextWalkAt) return;
    let shortest = Infinity;
    const before = new Map<string, number>();
    for (const [id, e] of enabled) {
      before.set(id, now - e.settings.afterSeconds * 1000);
      shortest = Math.min(shortest, e.settings.afterSeconds * 1000);
    }
    const page = await this.o.store.discover(this.cursor, this.pageSize, before, now);
    if (page.scanned < this.pageSize) {
      this.cursor = '';
      this.nextWalkAt = now + Math.min(30_000, Math.max(this.tickMs, shortest / 10));
    } else {
      this.cursor = page.lastId;
    }
  }

  private async askUpstream(e: Enabled, enabled: ReadonlyMap<string, Enabled>, now: number): Promise<void> {
    const budget = Math.max(1, Math.round((e.settings.maxPerSecond * this.tickMs) / 1000));
    const claimed = await this.o.store.claim(e.up.id, now, now + this.leaseMs, budget);
    if (!claimed.length) return;
    const targets = await this.o.store.targets(claimed.map((c) => c.messageId));
    const next = new Map<string, number | null>();
    const unasked: string[] = [];
    const counts = { final: 0, pending: 0, gaveUp: 0, unasked: 0 };
    await Promise.all(
      claimed.map(async (c) => {
        const target = targets.get(c.messageId);
        if (!target || target.closed || target.parts.length === 0) {
          next.set(c.messageId, null); // its receipt came meanwhile, or there is nothing to ask about
          return;
        }
        const outcome = await this.ask(target, enabled);
        if (outcome === 'unavailable') {
          unasked.push(c.messageId);
          counts.unasked++;
        } else if (outcome === 'final' || outcome === 'unsupported') {
          next.set(c.messageId, null);
          if (outcome === 'final') counts.final++;
          else counts.gaveUp++;
        } else {
          const at = nextQueryAt(e.settings, c.attempts, this.clock());
          next.set(c.messageId, at);
          if (at === null) counts.gaveUp++;
          else counts.pending++;
        }
      }),
    );
    await this.o.store.schedule(next);
    // Not asked (no bind with room, or over the rate): due again next tick, the claim not counted as an attempt.
    await this.o.store.release(unasked, this.clock() + this.tickMs);
    if (counts.final || counts.pending || counts.gaveUp) this.o.log.info({ upstream: e.up.id, ...counts }, 'overdue receipts asked for with query_sm');
  }

  /** Asks about every waiting part of a message; the message's outcome is its parts' worst. */
  private async ask(t: QueryTarget, enabled: ReadonlyMap<string, Enabled>): Promise<PartOutcome> {
    let asked = false;
    let allFinal = true;
    for (const part of t.parts) {
      const e = enabled.get(part.upstreamId);
      const outcome = e && e.up.isUp ? await this.askPart(t, part, e) : 'unavailable';
      if (outcome === 'unsupported') return outcome;
      if (outcome !== 'unavailable') asked = true;
      if (outcome !== 'final') allFinal = false;
    }
    if (!asked) return 'unavailable';
    return allFinal ? 'final' : 'pending';
  }

  private async askPart(t: QueryTarget, part: QueryTarget['parts'][number], e: Enabled): Promise<PartOutcome> {
    if (!(await this.allowed(e))) return 'unavailable';
    const source: QuerySource = { addr: t.source.charCodeAt(0) === 0x2b ? t.source.slice(1) : t.source, ton: t.sourceTon, npi: t.sourceNpi };
    this.o.metrics?.receiptQueries.labels(e.up.id).inc();
    const answer = await e.up.query(part.upstreamMessageId, source);
    if (answer.kind === 'unavailable') return 'unavailable';
    this.o.metrics?.receiptQueryAnswers.labels(e.up.id, answerLabel(answer)).inc();
    if (answer.kind === 'no_answer') return 'pending';
    if (answer.kind === 'error') {
      if (!UNSUPPORTED.has(answer.status)) return 'pending';
      if (!this.warnedUnsupported.has(e.up.id)) {
        this.warnedUnsupported.add(e.up.id);
        this.o.log.warn({ upstream: e.up.id, status: statusName(answer.status) }, 'upstream does not answer query_sm; set its receiptQuery.enabled to false');
      }
      return 'unsupported';
    }
    if (!FINAL_STATES.has(answer.state)) return 'pending';
    const receipt: UpstreamReceipt = {
      messageId: t.messageId,
      partIndex: part.partIndex,
      parts: Math.max(1, t.partsTotal),
      upstreamId: part.upstreamId,
      upstreamMessageId: part.upstreamMessageId,
      state: answer.state,
      stat: ReceiptStat[answer.state] ?? 'UNKNOWN',
      final: true,
      receivedAt: this.clock(),
      source: 'query_sm',
    };
    // error_code is the network's own code, as a receipt's err: field carries it.
    if (answer.errorCode) receipt.errorCode = String(answer.errorCode).padStart(3, '0');
    const done = parseSmppTime(answer.finalDate);
    if (done?.kind === 'absolute') receipt.doneDate = done.date;
    try {
      await this.o.onReceipt(receipt);
    } catch (err) {
      this.o.log.warn({ messageId: t.messageId, err: (err as Error).message }, 'query_sm answer not recorded; asked again later');
      return 'pending';
    }
    return 'final';
  }

  /** One query's share of the upstream's maxPerSecond, drawn from the shared bucket. */
  private async allowed(e: Enabled): Promise<boolean> {
    if (!this.o.throttle) return true;
    const rate = e.settings.maxPerSecond;
    try {
      return (await this.o.throttle.take(`receipt-query:upstream:${e.up.id}`, rate, rate, 1)).allowed;
    } catch {
      return false; // the shared store is down: asking now could exceed the rate other instances keep to
    }
  }
}

function answerLabel(a: Exclude<QueryAnswer, { kind: 'unavailable' }>): string {
  if (a.kind === 'no_answer') return 'TIMEOUT';
  if (a.kind === 'error') return statusName(a.status);
  return ReceiptStat[a.state] ?? 'UNKNOWN';
}
