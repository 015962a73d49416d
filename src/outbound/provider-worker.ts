import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { GroupCommit } from '../ledger/group-commit.js';
import { TargetSlots } from '../delivery/target-slots.js';
import { jitter } from '../delivery/retry-policy.js';
import { CircuitBreaker, type BreakerState, type CircuitBreakerOptions, type Permit } from './circuit-breaker.js';
import type { OutboundMetrics, ResultClass } from './outbound-metrics.js';
import type { ClaimedRow, ClaimEnd, JobRow, OutboundStore } from './outbound-store.js';
import type { ProviderAdapter, SendResult } from './types.js';

export interface WorkerSettings {
  /** Requests to the provider at once, from this instance. */
  maxConcurrency: number;
  /** Requests at once for one account, from this instance. */
  maxPerAccount: number;
  /** Jobs held in memory at most (claimed and not yet recorded). */
  holdCap: number;
  sendTimeoutMs: number;
  /** A claim's length: a crashed instance's jobs are claimable again after it. */
  leaseMs: number;
  /** How often an idle worker looks for due jobs (jobs enqueued by other instances, retries coming due). */
  pollMs: number;
  /**
   * Where no other instance can enqueue (the embedded database): polls that find nothing space out, doubling from
   * `pollMs` up to this; a wake, and the due time of a job this instance deferred or scheduled, end the wait. Equal to
   * `pollMs`: no spacing out.
   */
  idlePollMaxMs: number;
  /** Hold of a throttled endpoint when the provider gave no Retry-After. */
  throttleMs: number;
  breaker: Omit<CircuitBreakerOptions, 'clock' | 'onChange'>;
}

/** A send's outcome, handed to the pipeline to record (history, events, state; the claim ends in the same write). */
export type WorkerOutcome =
  | { kind: 'result'; job: JobRow; result: SendResult; claimedUntil: number; possibleDuplicate: boolean }
  | { kind: 'deadline'; job: JobRow; claimedUntil: number };

/** What the worker needs of its pipeline. */
export interface WorkerHost {
  readonly clock: () => number;
  readonly log: Logger;
  readonly store: OutboundStore;
  readonly metrics: OutboundMetrics | null;
  /** Records the outcome (the job's row, which ends the claim); resolves once it has committed. */
  record(outcome: WorkerOutcome): Promise<void>;
}

interface Held {
  id: string;
  job: JobRow;
  endpoint: string;
  /** The claim as this worker made it (its end). */
  claimedUntil: number;
  prevClaim: number | null;
  /** Counted in accountHeld (waiting or sending). */
  admitted: boolean;
  /**
   * Its outcome (or hand-back) went to be written, with the claim as it was then: a later claim of the job is not this
   * hold's to carry on, even while the entry stays in `held` (until the write has answered).
   */
  settling: boolean;
  /** A claim of the job made while this hold was settling: taken up once it is settled (see takeUp). */
  reclaim: Reclaim | null;
}

/** A claim as the loop made it. */
interface Reclaim {
  row: ClaimedRow;
  now: number;
  until: number;
}

const CLAIM_BATCH = 100;
/** Jobs of one account held (waiting or sending) at most, as a multiple of its concurrency; the rest are handed back. */
const ACCOUNT_HOLD_FACTOR = 2;
/** Closed breakers idle this long are forgotten (endpoints come and go). */
const BREAKER_IDLE_MS = 10 * 60_000;
const MAX_BREAKERS = 10_000;
/** A job that waited in memory is handed back rather than sent when less than the send timeout and this margin of its claim is left. */
const LEASE_MARGIN_MS = 5000;

/**
 * The workers of one provider: claims its due jobs straight from outbound_jobs (OutboundStore.claimDue) only as far as
 * it has room (at most holdCap jobs in memory, at most maxConcurrency requests), and sends each through the adapter
 * within the per-account cap and its endpoint's circuit breaker. While every endpoint it knows is open it claims
 * nothing: a dead provider costs no requests and its backlog stays in the table. Outcomes go to the pipeline to be
 * recorded, which ends the claim in the same write; a crash anywhere before leaves the claim to run out (leaseMs),
 * and the job is claimed and sent again (at least once).
 */
export class ProviderWorker {
  private readonly held = new Map<string, Held>();
  /** Claimed jobs waiting for a slot (provider or account), oldest first. */
  private ready: Held[] = [];
  private active = 0;
  /** Requests in flight per account (maxPerAccount each). */
  private readonly accountSlots: TargetSlots;
  private readonly accountHeld = new Map<string, number>();
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly tasks = new Set<Promise<void>>();
  private readonly deferrals: GroupCommit<ClaimEnd, void>;
  /** Moving average of a request's time (ms), for the hand-back delay of an account at its cap. */
  private attemptMs = 0;
  private running = false;
  private abandoned = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  /** A wake that came while the loop was not asleep (mid-claim): its next sleep is skipped. */
  private wokenAwake = false;
  /** Polls in a row that found nothing (since the last wake): the next idle sleep is longer (up to idlePollMaxMs). */
  private emptyPolls = 0;
  /** The earliest due time a timer wakes the loop at (jobs deferred or scheduled here), while idle polls space out. */
  private dueTimer: { at: number; timer: NodeJS.Timeout } | null = null;
  maxHeld = 0;

  constructor(
    readonly adapter: ProviderAdapter,
    private readonly s: WorkerSettings,
    private readonly host: WorkerHost,
  ) {
    this.accountSlots = new TargetSlots(s.maxPerAccount);
    this.deferrals = new GroupCommit<ClaimEnd, void>(this.writeDeferrals, { lingerMs: 1, maxInFlight: 1, maxBatch: 500, maxPending: Number.MAX_SAFE_INTEGER });
  }

  get name(): string {
    return this.adapter.name;
  }

  get holdCap(): number {
    return this.s.holdCap;
  }

  stats(): { held: number; maxHeld: number; holdCap: number; active: number; waiting: number; breakers: Record<BreakerState, number> } {
    return { held: this.held.size, maxHeld: this.maxHeld, holdCap: this.s.holdCap, active: this.active, waiting: this.ready.length, breakers: this.breakerCounts() };
  }

  breakerCounts(): Record<BreakerState, number> {
    const out: Record<BreakerState, number> = { closed: 0, open: 0, 'half-open': 0 };
    for (const b of this.breakers.values()) out[b.state]++;
    return out;
  }

  /** The breaker of an endpoint, if this worker has used it. */
  breaker(endpoint: string): CircuitBreaker | undefined {
    return this.breakers.get(endpoint);
  }

  start(): void {
    if (this.abandoned) throw new Error('an abandoned worker does not start again (as after a crash: make a new pipeline)');
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Claim now rather than at the next poll (a job of this provider was enqueued here, or room freed up). */
  wake(): void {
    this.emptyPolls = 0;
    if (this.wakeUp) this.wakeUp();
    else this.wokenAwake = true;
  }

  /** A job of this provider comes due at `at` (ms since the epoch): claim then, even while idle polls are spaced out. */
  wakeAt(at: number): void {
    if (this.s.idlePollMaxMs <= this.s.pollMs || !this.running) return;
    const inMs = at - this.host.clock();
    if (inMs <= 0) return this.wake();
    if (this.dueTimer && this.dueTimer.at <= at) return;
    if (this.dueTimer) clearTimeout(this.dueTimer.timer);
    const timer = setTimeout(() => {
      this.dueTimer = null;
      this.wake();
    }, inMs);
    timer.unref();
    this.dueTimer = { at, timer };
  }

  /** Stops claiming, hands waiting jobs back, and waits for the requests in flight (each ends by the timeout) to be recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.clearDueTimer();
    this.wake();
    await this.loopDone;
    const waiting = this.ready;
    this.ready = [];
    for (const h of waiting) this.defer(h, 0, 'stopping');
    while (this.tasks.size) await Promise.allSettled([...this.tasks]);
    await this.deferrals.flush();
  }

  /**
   * Stops as a crash would: nothing more is written, requests in flight are left to end unrecorded, and their claims
   * run out. For tests (and for giving up on a wedged instance).
   */
  async abandon(): Promise<void> {
    this.abandoned = true;
    this.running = false;
    this.clearDueTimer();
    this.wake();
    await this.loopDone;
    this.ready = [];
    this.held.clear();
    this.accountSlots.clear();
    this.accountHeld.clear();
    this.active = 0;
  }

  /**
   * One job claimed and sent now, outside the claim loop (a product's inline first attempt): the same claim, breaker,
   * concurrency and recording as a job the loop claims. Null when it was not sent here (not claimable, stopping, its
   * breaker open, at the concurrency cap or its account's): it stays due in the table for the loop, of this instance or another.
   */
  async sendNow(jobId: string): Promise<SendResult | null> {
    if (!this.running || this.active >= this.s.maxConcurrency) return null;
    const now = this.host.clock();
    const until = now + this.s.leaseMs;
    const row = (await this.host.store.claim([jobId], now, until))[0];
    if (!row) return null;
    let endpoint: string;
    try {
      endpoint = this.adapter.endpointOf(row);
    } catch {
      endpoint = this.name;
    }
    // Within its account's cap, as the loop's jobs are.
    const permit = this.running && now < row.deadlineAt && this.accountSlots.hasRoom(row.accountId) ? this.breakerOf(endpoint).tryAcquire() : null;
    if (!permit) {
      await this.host.store.endClaims([{ id: jobId, until, nextAttemptAt: row.nextAttemptAt }]);
      return null;
    }
    const h: Held = { id: jobId, job: row, endpoint, claimedUntil: until, prevClaim: row.prevClaim !== null && row.prevClaim <= now ? row.prevClaim : null, admitted: false, settling: false, reclaim: null };
    this.active++;
    this.accountSlots.tryTake(row.accountId);
    let result: SendResult | null = null;
    const p = this.send(h, permit, (r) => (result = r));
    this.tasks.add(p);
    try {
      await p;
    } finally {
      this.tasks.delete(p);
    }
    return result;
  }

  private clearDueTimer(): void {
    if (this.dueTimer) clearTimeout(this.dueTimer.timer);
    this.dueTimer = null;
  }

  /** The wait after a poll that found fewer jobs than asked: `pollMs`, doubling per empty poll up to idlePollMaxMs. */
  private idleWaitMs(found: number): number {
    if (found > 0 || this.s.idlePollMaxMs <= this.s.pollMs) {
      this.emptyPolls = 0;
      return this.s.pollMs;
    }
    const ms = Math.min(this.s.idlePollMaxMs, this.s.pollMs * 2 ** Math.min(this.emptyPolls, 20));
    this.emptyPolls++;
    return ms;
  }

  private sleep(ms: number): Promise<void> {
    if (this.wokenAwake) {
      this.wokenAwake = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }

  private track(p: Promise<void>): void {
    const q = p.catch((err: unknown) => this.host.log.warn({ provider: this.name, err: (err as Error).message }, 'outbound step failed; the job is claimable again when its claim runs out'));
    this.tasks.add(q);
    void q.finally(() => this.tasks.delete(q));
  }

  /**
   * How many to claim now: the room left (held and concurrency), and while no endpoint's breaker is closed only as many
   * as there are free probes, none while all are open.
   */
  private budget(): number {
    // Jobs about to be sent count against the concurrency: those waiting that could start.
    let startable = 0;
    for (const h of this.ready) if (this.accountSlots.hasRoom(h.job.accountId)) startable++;
    const room = Math.min(this.s.holdCap - this.held.size, this.s.maxConcurrency - this.active - startable);
    if (room <= 0) return 0;
    // Full but for a few: wait for settling jobs (each wakes the loop) rather than claim one at a time.
    if (this.active > 0 && room < Math.max(1, Math.floor(this.s.maxConcurrency / 4))) return 0;
    if (this.breakers.size === 0) return room;
    let probes = 0;
    const now = this.host.clock();
    for (const [endpoint, b] of this.breakers) {
      const st = b.state;
      if (st === 'closed') {
        if (now - b.lastUsedAt < BREAKER_IDLE_MS || this.breakers.size === 1) return room;
        this.breakers.delete(endpoint);
        continue;
      }
      if (st === 'half-open') probes += b.freeProbes;
    }
    if (this.breakers.size === 0) return room;
    // Probes already claimed and waiting in `ready` take their breaker's probe when they start.
    return Math.max(0, Math.min(room, probes - this.ready.length));
  }

  private async loop(): Promise<void> {
    while (this.running) {
      // With an in-process database every query resolves on the microtask queue: let sockets and timers run.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!this.running) break;
      const n = Math.min(this.budget(), CLAIM_BATCH);
      if (n <= 0) {
        await this.sleep(this.s.pollMs);
        continue;
      }
      const now = this.host.clock();
      const until = now + this.s.leaseMs;
      let rows: ClaimedRow[];
      try {
        rows = await this.host.store.claimDue(this.name, n, now, until);
      } catch (err) {
        this.host.log.warn({ provider: this.name, err: (err as Error).message }, 'outbound claim failed; retrying');
        await this.sleep(Math.max(this.s.pollMs, 1000));
        continue;
      }
      if (this.abandoned) return;
      for (const row of rows) this.admit(row, now, until);
      if (this.held.size > this.maxHeld) this.maxHeld = this.held.size;
      this.pump();
      // Fewer than asked: nothing more is due now. Until the next poll, only this instance's enqueues and settling
      // jobs wake the loop; jobs enqueued by other instances and retries coming due are found by the poll.
      if (rows.length < n) await this.sleep(this.idleWaitMs(rows.length));
    }
  }

  /** A claimed job: failed at once past its deadline, else waiting for a slot, or handed back when its account has enough waiting. */
  private admit(row: ClaimedRow, now: number, until: number): void {
    const known = this.held.get(row.id);
    if (known) {
      if (known.settling) {
        // The held copy's outcome (or hand-back) is being written, or has committed and its answer is not here yet
        // (the claim can see a commit before this process does, and a retry or a hand-back may be due at once). That
        // write carries the earlier claim, so this one would be left to nobody: it is taken up once the write is done.
        known.reclaim = { row, now, until };
        return;
      }
      // Our own claim ran out while this worker still held the job (a stalled process): the held copy goes on under
      // the new claim, which its outcome then ends.
      known.claimedUntil = until;
      return;
    }
    const h: Held = { id: row.id, job: row, endpoint: this.name, claimedUntil: until, prevClaim: row.prevClaim !== null && row.prevClaim <= now ? row.prevClaim : null, admitted: false, settling: false, reclaim: null };
    this.held.set(row.id, h);
    if (now >= row.deadlineAt) {
      this.track(this.finish(h, { kind: 'deadline', job: row, claimedUntil: until }));
      return;
    }
    try {
      h.endpoint = this.adapter.endpointOf(row);
    } catch {
      h.endpoint = this.name;
    }
    const n = this.accountHeld.get(row.accountId) ?? 0;
    if (n >= this.s.maxPerAccount * ACCOUNT_HOLD_FACTOR) {
      // The account has enough waiting here already: due again about when its slots free up.
      this.defer(h, ((n + 1) / this.s.maxPerAccount) * Math.max(50, this.attemptMs), 'account_cap');
      return;
    }
    this.accountHeld.set(row.accountId, n + 1);
    h.admitted = true;
    this.ready.push(h);
  }

  /** Starts waiting jobs while there are slots: oldest first, skipping accounts at their cap. */
  private pump(): void {
    if (this.abandoned || !this.ready.length) return;
    const now = this.host.clock();
    let i = 0;
    while (i < this.ready.length && this.active < this.s.maxConcurrency) {
      const h = this.ready[i];
      const job = h.job;
      if (!this.accountSlots.hasRoom(job.accountId)) {
        i++;
        continue;
      }
      this.ready.splice(i, 1);
      if (!this.running || now > h.claimedUntil - this.s.sendTimeoutMs - LEASE_MARGIN_MS) {
        this.defer(h, 0, this.running ? 'stale' : 'stopping');
        continue;
      }
      const b = this.breakerOf(h.endpoint);
      const permit = b.tryAcquire();
      if (!permit) {
        this.defer(h, b.retryInMs() ?? this.s.pollMs * 5, 'breaker');
        continue;
      }
      this.active++;
      this.accountSlots.tryTake(job.accountId);
      this.track(this.send(h, permit));
    }
  }

  private breakerOf(endpoint: string): CircuitBreaker {
    let b = this.breakers.get(endpoint);
    if (!b) {
      if (this.breakers.size >= MAX_BREAKERS) {
        for (const [k, v] of this.breakers) if (v.state === 'closed') this.breakers.delete(k);
      }
      b = new CircuitBreaker({
        ...this.s.breaker,
        clock: this.host.clock,
        onChange: (from, to, why) => {
          this.host.metrics?.breakerTransitions.inc({ provider: this.name, to });
          const log = to === 'open' ? this.host.log.warn.bind(this.host.log) : this.host.log.info.bind(this.host.log);
          log({ provider: this.name, endpoint, from, to, why }, `outbound endpoint breaker ${to}`);
          if (to !== 'open') this.wake();
        },
      });
      this.breakers.set(endpoint, b);
    }
    return b;
  }

  private async send(h: Held, permit: Permit, onResult?: (r: SendResult) => void): Promise<void> {
    const job = h.job;
    const m = this.host.metrics;
    m?.requests.inc({ provider: this.name });
    const started = performance.now();
    const ac = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let cls: ResultClass | null = null;
    const timeout = new Promise<SendResult>((resolve) => {
      timer = setTimeout(() => {
        cls = 'timeout';
        ac.abort(new Error('send timeout'));
        resolve({ kind: 'retry', code: 'PROVIDER_TIMEOUT', message: `no answer from ${this.name} within ${this.s.sendTimeoutMs} ms` });
      }, this.s.sendTimeoutMs);
    });
    let result: SendResult;
    try {
      result = await Promise.race([
        this.adapter.send(job, ac.signal).catch((err: unknown): SendResult => {
          cls ??= 'error';
          return { kind: 'retry', code: 'PROVIDER_ERROR', message: `${this.name}: ${(err as Error)?.message ?? String(err)}` };
        }),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
    const ms = performance.now() - started;
    this.attemptMs = this.attemptMs === 0 ? ms : 0.8 * this.attemptMs + 0.2 * ms;
    if (this.abandoned) return;
    this.active--;
    this.accountSlots.release(job.accountId);
    this.unadmit(h);

    const b = this.breakerOf(h.endpoint);
    if (result.kind === 'sent' || result.kind === 'fail' || result.providerHealthy) b.success(permit);
    else if (result.throttled) b.throttled(permit, result.retryAfterMs ?? this.s.throttleMs);
    else b.failure(permit);
    cls ??= result.kind === 'retry' && result.throttled ? 'throttled' : result.kind;
    m?.latency.observe({ provider: this.name }, ms / 1000);
    m?.results.inc({ provider: this.name, class: cls });
    this.pump();
    this.wake();
    await this.finish(h, { kind: 'result', job, result, claimedUntil: h.claimedUntil, possibleDuplicate: h.prevClaim !== null });
    onResult?.(result);
  }

  private unadmit(h: Held): void {
    if (!h.admitted) return;
    h.admitted = false;
    const n = (this.accountHeld.get(h.job.accountId) ?? 1) - 1;
    if (n <= 0) this.accountHeld.delete(h.job.accountId);
    else this.accountHeld.set(h.job.accountId, n);
  }

  private async finish(h: Held, outcome: WorkerOutcome): Promise<void> {
    h.settling = true;
    let written = false;
    try {
      if (!this.abandoned) await this.host.record(outcome);
      written = true;
    } finally {
      this.drop(h, written);
    }
  }

  /** Handed back unsent, due again after about `delayMs`: the claim ends (where still ours); the attempt does not count. */
  private defer(h: Held, delayMs: number, reason: string): void {
    h.settling = true;
    this.unadmit(h);
    this.host.metrics?.deferred.inc({ provider: this.name, reason });
    const delay = delayMs <= 0 ? 0 : jitter(delayMs, 0.2);
    const end: ClaimEnd = { id: h.id, until: h.claimedUntil, nextAttemptAt: this.host.clock() + Math.round(delay) };
    this.track(
      this.deferrals.submit(end).then(
        () => {
          this.drop(h, true);
          this.wakeAt(end.nextAttemptAt);
        },
        (err: unknown) => {
          this.drop(h, false);
          throw err;
        },
      ),
    );
  }

  private readonly writeDeferrals = async (ends: ClaimEnd[]): Promise<void> => {
    if (this.abandoned) return;
    await this.host.store.endClaims(ends);
  };

  /** The hold ends (its outcome or hand-back written, or not: `written`); a claim made meanwhile is taken up. */
  private drop(h: Held, written: boolean): void {
    // An inline attempt's hold (sendNow) is not in `held`.
    if (this.held.get(h.id) !== h) return;
    this.held.delete(h.id);
    if (h.reclaim && !this.abandoned) this.takeUp(h.reclaim, written);
    this.wake();
  }

  /**
   * A claim made while the job's earlier hold was settling. Made after that write committed (which ended our claim:
   * no previous claim), the row as claimed is current and the job is admitted like any other. Made before it, over our
   * own claim that had run out, the row as claimed predates the write, which left this newer claim in place: it is
   * handed back, the job due when its row now says. When the write failed, the claim runs out, as after any failed write.
   */
  private takeUp(r: Reclaim, written: boolean): void {
    if (r.row.prevClaim === null) {
      this.admit(r.row, r.now, r.until);
      if (this.held.size > this.maxHeld) this.maxHeld = this.held.size;
      this.pump();
    } else if (written) {
      this.track(this.handBack(r.row.id, r.until));
    }
  }

  /** Ends a claim of ours without moving the job's schedule (what the write before it set). */
  private async handBack(id: string, until: number): Promise<void> {
    const row = await this.host.store.get(id);
    if (row && row.claimedUntil === until) await this.host.store.endClaims([{ id, until, nextAttemptAt: row.nextAttemptAt }]);
  }
}
