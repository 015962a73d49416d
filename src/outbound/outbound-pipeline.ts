import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { isEventType, type EventType } from '../events/catalogue.js';
import { EventOutbox, type NewEvent } from '../events/event-outbox.js';
import { GroupCommit } from '../ledger/group-commit.js';
import type { Backends, Queryable, Transaction } from '../store/types.js';
import { newId } from '../util/ids.js';
import { RetryPolicy, type BackoffPolicy } from '../delivery/retry-policy.js';
import type { BreakerState, CircuitBreakerOptions } from './circuit-breaker.js';
import { OutboundMetrics } from './outbound-metrics.js';
import { OutboundStore, type HistoryRow, type JobCounts, type JobRow } from './outbound-store.js';
import { ProviderWorker, type WorkerOutcome } from './provider-worker.js';
import type { StateMachine } from './state-machine.js';
import type { EnqueuedJob, NewOutboundJob, OutboundJob, ProviderAdapter, SendResult, StateChange, StatusOutcome } from './types.js';

/** A product's part in the pipeline. */
export interface OutboundProduct<P = any> {
  machine: StateMachine;
  /** How long a job may take from enqueue until it is sent; past it the job fails with DEADLINE_EXCEEDED. */
  deadlineMs: number;
  backoff?: Partial<BackoffPolicy>;
  /** The state a result moves the job to, when not the machine's `sent` / `failed` (e.g. email `accepted`). */
  resultState?(job: OutboundJob<P>, result: Extract<SendResult, { kind: 'sent' | 'fail' }>): string | undefined;
  /** Fields added to every event's data (e.g. the recipient); called inside the transaction. */
  eventData?(job: OutboundJob<P>, state: string, detail: Record<string, unknown>): Record<string, unknown>;
  /** Every applied state change, in the transaction that records it: the product updates its own row here. */
  onChange?(q: Transaction, changes: readonly StateChange<P>[]): Promise<void>;
}

/** A provider's adapter and its limits. */
export interface OutboundProvider<P = any> {
  adapter: ProviderAdapter<P>;
  /** Requests at once from this instance (default 16). */
  maxConcurrency?: number;
  /** Requests at once for one account from this instance (default: maxConcurrency). */
  maxPerAccount?: number;
  /** Jobs held in memory at most (default 4 × maxConcurrency). */
  holdCap?: number;
  /** A request without an answer after this long is a retryable PROVIDER_TIMEOUT (default 30 s). */
  sendTimeoutMs?: number;
  /** A job's claim while one worker sends it (default sendTimeoutMs + 60 s): a crashed instance's jobs are claimable again after it. */
  leaseMs?: number;
  /** How long a throttled endpoint pauses when the provider gave no Retry-After (default 1 s). */
  throttleMs?: number;
  breaker?: Omit<CircuitBreakerOptions, 'clock' | 'onChange'>;
}

export interface OutboundPipelineOptions {
  backends: Pick<Backends, 'db'>;
  log: Logger;
  products: Readonly<Record<string, OutboundProduct>>;
  providers: readonly OutboundProvider[];
  clock?: () => number;
  /** Metrics are registered here when given. */
  registry?: Registry;
  outbox?: EventOutbox;
  /**
   * How often an idle or paused provider's worker looks for due jobs (default 100 ms): the longest a job enqueued by
   * another instance, or a retry coming due, waits before this instance may claim it.
   */
  pollMs?: number;
  /**
   * Only where no other instance can enqueue (the embedded database): idle polls space out up to this (default:
   * `pollMs`, none do). This instance's enqueues, settles, retries and deferrals wake its workers when due.
   */
  idlePollMaxMs?: number;
}

/** A status from a provider callback (Meta status webhook, DSN), by job id or by the provider's id. */
export interface StatusUpdate {
  jobId?: string;
  provider?: string;
  providerId?: string;
  state: string;
  detail?: Record<string, unknown>;
  /** For a failure status: Ferry's code and the provider's, kept like a send's. */
  error?: { code: string; providerCode?: string; message?: string };
}

export interface PipelineStats {
  /** Jobs held in memory now, over every provider. */
  held: number;
  /** The most held at once since start, per provider summed. */
  maxHeld: number;
  /** The sum of the providers' hold caps. */
  holdCap: number;
  providers: Record<string, ReturnType<ProviderWorker['stats']>>;
}

interface ProductRuntime {
  def: OutboundProduct;
  /** Backoff by attempts (Retry-After honoured); never final by count: the deadline ends a job's retries. */
  retry: RetryPolicy;
}

const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,40}$/;

type Finished = { product: string; outcome: 'sent' | 'failed' | 'deadline' };

type Mutation = { kind: 'outcome'; o: WorkerOutcome } | { kind: 'status'; u: StatusUpdate } | { kind: 'expire'; id: string };

/**
 * THE outbound pipeline of every non-SMPP product. A product enqueues jobs inside its own transaction (its row, the job
 * and the first history row and event commit together), wakes the pipeline after the commit, and the pipeline does the
 * rest: claim due jobs per provider straight from outbound_jobs with bounded concurrency per provider and per account,
 * send through the adapter, classify the result, retry with exponential backoff and jitter (honouring Retry-After) up
 * to the product's deadline, stop calling a dead endpoint (circuit breaker), and record every state change as a history
 * row and a `<product>.<event>` webhook event in one transaction. Provider callbacks come in through applyStatus, under
 * the same forward-only state machine. The row is the only record of a job: there is no queue to lose it from.
 */
export class OutboundPipeline {
  readonly store: OutboundStore;
  readonly metrics: OutboundMetrics | null;
  private readonly clock: () => number;
  private readonly log: Logger;
  private readonly outbox: EventOutbox;
  private readonly products = new Map<string, ProductRuntime>();
  private readonly workers = new Map<string, ProviderWorker>();
  private readonly recorder: GroupCommit<WorkerOutcome, void>;
  /** Idle polls space out (the embedded database): workers are woken at the due time of the retries recorded here. */
  private readonly wakesWhenDue: boolean;
  /** Sent results being recorded, by provider and provider id: a callback for one of them waits for its record. */
  private readonly recording = new Map<string, Promise<void>>();
  private abandoned = false;

  constructor(private readonly o: OutboundPipelineOptions) {
    this.clock = o.clock ?? Date.now;
    this.log = o.log;
    this.outbox = o.outbox ?? new EventOutbox();
    this.store = new OutboundStore(o.backends.db);
    for (const [name, def] of Object.entries(o.products)) {
      if (name !== def.machine.product) throw new Error(`product ${name}: its state machine is for ${def.machine.product}`);
      for (const t of def.machine.eventTypes()) {
        if (!isEventType(t)) throw new Error(`product ${name}: event type ${t} is not registered (registerEventTypes)`);
      }
      if (!(def.deadlineMs > 0)) throw new Error(`product ${name}: deadlineMs must be positive`);
      this.products.set(name, { def, retry: RetryPolicy.backoff(def.backoff) });
    }
    this.metrics = o.registry
      ? new OutboundMetrics(o.registry, {
          providers: () => [...this.workers.keys()],
          jobCounts: () => this.store.counts(this.clock()),
          oldestPending: (p) => this.store.oldestPending(p),
          breakers: (p) => this.workers.get(p)?.breakerCounts() ?? { closed: 0, open: 0, 'half-open': 0 },
          held: (p) => this.workers.get(p)?.stats().held ?? 0,
          now: this.clock,
        })
      : null;
    const pollMs = o.pollMs ?? 100;
    const idlePollMaxMs = Math.max(pollMs, o.idlePollMaxMs ?? pollMs);
    this.wakesWhenDue = idlePollMaxMs > pollMs;
    for (const p of o.providers) {
      const name = p.adapter.name;
      if (!PROVIDER_NAME.test(name)) throw new Error(`provider name ${JSON.stringify(name)}: lower case letters, digits, _ and -`);
      if (this.workers.has(name)) throw new Error(`provider ${name} is configured twice`);
      const maxConcurrency = Math.max(1, p.maxConcurrency ?? 16);
      const sendTimeoutMs = Math.max(1, p.sendTimeoutMs ?? 30_000);
      const worker: ProviderWorker = new ProviderWorker(
        p.adapter,
        {
          maxConcurrency,
          maxPerAccount: Math.max(1, Math.min(maxConcurrency, p.maxPerAccount ?? maxConcurrency)),
          holdCap: Math.max(maxConcurrency, p.holdCap ?? 4 * maxConcurrency),
          sendTimeoutMs,
          leaseMs: Math.max(sendTimeoutMs + 1000, p.leaseMs ?? sendTimeoutMs + 60_000),
          pollMs,
          idlePollMaxMs,
          throttleMs: p.throttleMs ?? 1000,
          breaker: p.breaker ?? {},
        },
        { clock: this.clock, log: this.log, store: this.store, metrics: this.metrics, record: (outcome): Promise<void> => this.record(outcome) },
      );
      this.workers.set(name, worker);
    }
    this.recorder = new GroupCommit(this.writeOutcomes, { lingerMs: 1, maxInFlight: 2, maxBatch: 500, maxPending: Number.MAX_SAFE_INTEGER });
  }

  providerNames(): string[] {
    return [...this.workers.keys()];
  }

  /** The circuit breaker state of a provider's endpoint in this instance ('closed' when never used). */
  breakerState(provider: string, endpoint: string): BreakerState {
    return this.workers.get(provider)?.breaker(endpoint)?.state ?? 'closed';
  }

  stats(): PipelineStats {
    const providers: PipelineStats['providers'] = {};
    let held = 0;
    let maxHeld = 0;
    let holdCap = 0;
    for (const [name, w] of this.workers) {
      const s = w.stats();
      providers[name] = s;
      held += s.held;
      maxHeld += s.maxHeld;
      holdCap += s.holdCap;
    }
    return { held, maxHeld, holdCap, providers };
  }

  /** Pending jobs of each provider in outbound_jobs (all instances): due, scheduled, claimed. */
  async jobCounts(): Promise<Record<string, JobCounts>> {
    const counts = await this.store.counts(this.clock());
    const out: Record<string, JobCounts> = {};
    for (const name of this.workers.keys()) out[name] = counts.get(name) ?? { due: 0, scheduled: 0, claimed: 0 };
    return out;
  }

  /**
   * Writes jobs inside the caller's transaction: the job rows, their first history rows and the initial state's event
   * (when the product's machine has one). After the transaction commits, hand the result to `wake`.
   */
  async enqueue(q: Queryable, jobs: readonly NewOutboundJob[]): Promise<EnqueuedJob[]> {
    if (!jobs.length) return [];
    const now = this.clock();
    const rows: JobRow[] = new Array(jobs.length);
    for (let i = 0; i < jobs.length; i++) {
      const j = jobs[i];
      const p = this.products.get(j.product);
      if (!p) throw new Error(`unknown product ${j.product}`);
      if (!this.workers.has(j.provider)) throw new Error(`unknown provider ${j.provider}`);
      const nextAttemptAt = Math.floor(j.notBefore ?? now);
      rows[i] = {
        id: newId('job_', now),
        product: j.product,
        provider: j.provider,
        accountId: j.accountId,
        messageId: j.messageId,
        lane: j.priority ? 'priority' : 'bulk',
        payload: j.payload,
        state: p.def.machine.initial,
        pending: true,
        attempts: 0,
        nextAttemptAt,
        deadlineAt: Math.floor(j.deadlineAt ?? now + p.def.deadlineMs),
        claimedUntil: null,
        providerId: null,
        ferryError: null,
        providerError: null,
        errorMessage: null,
        createdAt: now,
        updatedAt: now,
      };
    }
    await this.store.insertJobs(q, rows, now);
    await this.store.insertHistory(
      q,
      rows.map((r) => ({ jobId: r.id, kind: 'state', state: r.state, at: now, detail: null })),
    );
    const events: NewEvent[] = [];
    for (const r of rows) {
      const e = this.eventFor(r, r.state, {}, now);
      if (e) events.push(e);
    }
    if (events.length) await this.outbox.insertMany(q, events);
    return rows.map((r) => ({ id: r.id, provider: r.provider, messageId: r.messageId, lane: r.lane, runAt: r.nextAttemptAt }));
  }

  /**
   * After the enqueue's commit: this instance's workers of those jobs' providers (every provider without jobs) look for
   * due jobs now rather than at their next poll. Only a hint: a wake that never comes (a crash right after the commit,
   * a job enqueued by another instance) costs at most one poll interval.
   */
  wake(jobs?: readonly EnqueuedJob[]): void {
    if (!jobs) {
      for (const w of this.workers.values()) w.wake();
      return;
    }
    const now = this.clock();
    const providers = new Set<string>();
    for (const j of jobs) {
      if (j.runAt <= now) providers.add(j.provider);
      else this.workers.get(j.provider)?.wakeAt(j.runAt);
    }
    for (const p of providers) this.workers.get(p)?.wake();
  }

  /** Enqueue and wake in one call, with the product's own statements (`inTx`) in the same transaction. */
  async submit(jobs: readonly NewOutboundJob[], inTx?: (q: Transaction) => Promise<void>): Promise<EnqueuedJob[]> {
    const enqueued = await this.o.backends.db.tx(async (q) => {
      if (inTx) await inTx(q);
      return this.enqueue(q, jobs);
    });
    this.wake(enqueued);
    return enqueued;
  }

  /**
   * Enqueue one job (like submit) and make its first attempt at once, for a product whose answer wants the provider's
   * id. The job's row is claimed as a worker claims it, so no worker sends it while this attempt runs; the outcome is
   * recorded like a worker's (a retry schedules the next attempt in the same write). When it was not attempted here
   * (not claimable, the breaker open, at the concurrency cap) it stays due for the workers, and this instance's is
   * woken; a crash meanwhile leaves the claim to run out, as for a worker's crash. `attempt` resolves with the send's
   * result (null: not attempted here).
   */
  async submitAndAttempt(job: NewOutboundJob, inTx?: (q: Transaction) => Promise<void>): Promise<{ job: EnqueuedJob; attempt: Promise<SendResult | null> }> {
    const [enqueued] = await this.o.backends.db.tx(async (q) => {
      if (inTx) await inTx(q);
      return this.enqueue(q, [job]);
    });
    const worker = this.workers.get(enqueued.provider)!;
    const attempt = worker.sendNow(enqueued.id).then(
      (r) => {
        if (!r) worker.wake();
        return r;
      },
      (err: unknown) => {
        this.log.warn({ jobId: enqueued.id, err: (err as Error).message }, 'outbound inline attempt failed; the workers take the job');
        worker.wake();
        return null;
      },
    );
    return { job: enqueued, attempt };
  }

  /**
   * Starts the workers: each claims its provider's due jobs from outbound_jobs, those committed before this start
   * included (nothing to load or repair first).
   */
  start(): void {
    if (this.abandoned) throw new Error('an abandoned pipeline does not start again');
    for (const w of this.workers.values()) w.start();
  }

  /** Stops claiming, hands waiting jobs back (due at once, for another instance), and waits for requests in flight to be recorded. */
  async stop(): Promise<void> {
    await Promise.all([...this.workers.values()].map((w) => w.stop()));
    await this.recorder.flush();
  }

  /** Stops as a crash would (nothing more recorded, claims left to run out): for the fault tests. */
  async abandon(): Promise<void> {
    this.abandoned = true;
    await Promise.all([...this.workers.values()].map((w) => w.abandon()));
  }

  /**
   * Statuses from provider callbacks, in order, each under the product's state machine: applied when it moves the job
   * forward, recorded as late when it does not; history rows, events and the product's onChange in one transaction.
   * A status for a sent result this instance is still recording waits for that record.
   */
  async applyStatus(updates: readonly StatusUpdate[]): Promise<StatusOutcome[]> {
    if (!updates.length) return [];
    const waits: Promise<void>[] = [];
    for (const u of updates) {
      if (u.providerId && u.provider) {
        const p = this.recording.get(`${u.provider}\n${u.providerId}`);
        if (p) waits.push(p.catch(() => undefined));
      }
    }
    if (waits.length) await Promise.all(waits);
    const outcomes: StatusOutcome[] = new Array(updates.length).fill('not_found');
    const finished = await this.o.backends.db.tx(async (q) => {
      const ids = updates.filter((u) => u.jobId).map((u) => u.jobId!);
      const rows = new Map<string, JobRow>();
      for (const r of await this.store.lock(q, ids)) rows.set(r.id, r);
      const byProvider = new Map<string, string[]>();
      for (const u of updates) {
        if (u.jobId || !u.provider || !u.providerId) continue;
        const list = byProvider.get(u.provider) ?? [];
        list.push(u.providerId);
        byProvider.set(u.provider, list);
      }
      const byProviderId = new Map<string, JobRow>();
      for (const [provider, pids] of byProvider) {
        for (const r of await this.store.lockByProviderIds(q, provider, pids)) {
          rows.set(r.id, r);
          byProviderId.set(`${provider}\n${r.providerId}`, r);
        }
      }
      const muts: Mutation[] = updates.map((u) => ({ kind: 'status', u }));
      return this.apply(q, muts, (m) => (m.kind === 'status' ? (m.u.jobId ? rows.get(m.u.jobId) : byProviderId.get(`${m.u.provider}\n${m.u.providerId}`)) : undefined), outcomes);
    });
    this.countFinished(finished);
    return outcomes;
  }

  /** Fails pending jobs whose deadline passed (the reconciler's sweep), with their events; returns how many. */
  async expire(ids: readonly string[]): Promise<number> {
    if (!ids.length) return 0;
    let n = 0;
    const finished = await this.o.backends.db.tx(async (q) => {
      const rows = new Map<string, JobRow>();
      for (const r of await this.store.lock(q, ids)) rows.set(r.id, r);
      const muts: Mutation[] = ids.map((id) => ({ kind: 'expire', id }));
      const outcomes: StatusOutcome[] = new Array(ids.length).fill('not_found');
      const fin = await this.apply(q, muts, (m) => (m.kind === 'expire' ? rows.get(m.id) : undefined), outcomes);
      n = outcomes.filter((o) => o === 'changed').length;
      return fin;
    });
    this.countFinished(finished);
    return n;
  }

  private record(outcome: WorkerOutcome): Promise<void> {
    if (this.abandoned) return Promise.resolve();
    const p = this.recorder.submit(outcome);
    if (outcome.kind === 'result' && outcome.result.kind === 'sent') {
      const key = `${outcome.job.provider}\n${outcome.result.providerId}`;
      this.recording.set(key, p);
      void p.finally(() => {
        if (this.recording.get(key) === p) this.recording.delete(key);
      }).catch(() => undefined);
    }
    return p;
  }

  /**
   * A batch of send outcomes in one transaction. Each job's row is the whole settlement: its claim ends, and a retry's
   * next_attempt_at is where the workers find it again.
   */
  private readonly writeOutcomes = async (items: WorkerOutcome[]): Promise<void> => {
    if (this.abandoned) return;
    const finished = await this.o.backends.db.tx(async (q) => {
      const rows = new Map<string, JobRow>();
      for (const r of await this.store.lock(q, items.map((o) => o.job.id))) rows.set(r.id, r);
      const muts: Mutation[] = items.map((o) => ({ kind: 'outcome', o }));
      const outcomes: StatusOutcome[] = new Array(items.length).fill('not_found');
      const done = await this.apply(q, muts, (m) => (m.kind === 'outcome' ? rows.get(m.o.job.id) : undefined), outcomes);
      return { done, rows };
    });
    this.countFinished(finished.done);
    // Retries: their worker claims them when due, not only at its next poll (where idle polls space out).
    if (this.wakesWhenDue) for (const r of finished.rows.values()) if (r.pending) this.workers.get(r.provider)?.wakeAt(r.nextAttemptAt);
  };

  /**
   * The one place a job's row changes: each mutation against the locked row, in order, under the product's state
   * machine; then the rows, history, events and the products' onChange hooks, all in the caller's transaction.
   */
  private async apply(
    q: Transaction,
    muts: readonly Mutation[],
    rowOf: (m: Mutation) => JobRow | undefined,
    outcomes: StatusOutcome[],
  ): Promise<Finished[]> {
    const now = this.clock();
    const finished: Finished[] = [];
    const touched = new Set<JobRow>();
    const history: HistoryRow[] = [];
    const events: NewEvent[] = [];
    const changes = new Map<string, StateChange[]>();

    const move = (row: JobRow, to: string, detail: Record<string, unknown>): StatusOutcome => {
      const p = this.products.get(row.product);
      if (!p) return 'invalid';
      const m = p.def.machine;
      const d = m.decide(row.state, to);
      if (d === 'changed') {
        const from = row.state;
        row.state = to;
        row.pending = to === m.initial;
        row.updatedAt = now;
        touched.add(row);
        history.push({ jobId: row.id, kind: 'state', state: to, at: now, detail: Object.keys(detail).length ? detail : null });
        const e = this.eventFor(row, to, detail, now);
        if (e) events.push(e);
        const list = changes.get(row.product) ?? [];
        list.push({ job: publicJob(row), from, to, detail });
        changes.set(row.product, list);
        if (!row.pending) finished.push({ product: row.product, outcome: to === m.failed ? (row.ferryError === 'DEADLINE_EXCEEDED' ? 'deadline' : 'failed') : 'sent' });
      } else if (d === 'late') {
        history.push({ jobId: row.id, kind: 'late', state: to, at: now, detail: { ...detail, current: row.state } });
      } else if (d === 'invalid') {
        this.log.warn({ jobId: row.id, product: row.product, from: row.state, to }, 'outbound status not in the state machine; ignored');
      }
      return d;
    };

    for (let i = 0; i < muts.length; i++) {
      const mut = muts[i];
      const row = rowOf(mut);
      if (mut.kind === 'outcome') {
        // A job gone meanwhile (purged) has nothing left to record.
        if (row) outcomes[i] = this.applyOutcome(row, mut.o, now, move, touched, history);
        continue;
      }
      if (!row) continue;
      if (mut.kind === 'expire') {
        const p = this.products.get(row.product);
        if (!p || !row.pending || row.deadlineAt > now || (row.claimedUntil !== null && row.claimedUntil > now)) {
          outcomes[i] = 'unchanged';
          continue;
        }
        row.ferryError = 'DEADLINE_EXCEEDED';
        row.errorMessage = `not sent before the deadline${row.errorMessage ? `; last error: ${row.errorMessage}` : ''}`;
        row.claimedUntil = null;
        touched.add(row);
        outcomes[i] = move(row, p.def.machine.failed, { reason: 'deadline', attempts: row.attempts, error: 'DEADLINE_EXCEEDED' });
        continue;
      }
      const u = mut.u;
      if (u.error && this.products.get(row.product)?.def.machine.decide(row.state, u.state) === 'changed') {
        row.ferryError = u.error.code;
        row.providerError = u.error.providerCode ?? null;
        row.errorMessage = u.error.message ?? null;
        touched.add(row);
      }
      const detail: Record<string, unknown> = { source: 'callback', ...(u.detail ?? {}) };
      if (u.error) detail.error = { code: u.error.code, providerCode: u.error.providerCode ?? null, message: u.error.message ?? null };
      outcomes[i] = move(row, u.state, detail);
    }

    await this.store.write(q, [...touched]);
    await this.store.insertHistory(q, history);
    if (events.length) await this.outbox.insertMany(q, events);
    for (const [product, list] of changes) {
      const hook = this.products.get(product)?.def.onChange;
      if (hook) await hook(q, list);
    }
    return finished;
  }

  /** Counted once the transaction that finished them has committed. */
  private countFinished(finished: readonly Finished[]): void {
    for (const f of finished) this.metrics?.finished.inc(f);
  }

  /** A send's outcome against the job's current row; returns how the state machine took it ('unchanged' for a retry). */
  private applyOutcome(
    row: JobRow,
    o: WorkerOutcome,
    now: number,
    move: (row: JobRow, to: string, detail: Record<string, unknown>) => StatusOutcome,
    touched: Set<JobRow>,
    history: HistoryRow[],
  ): StatusOutcome {
    const p = this.products.get(row.product);
    touched.add(row);
    row.updatedAt = now;
    // Our claim ends with the outcome; a claim someone else made meanwhile (ours ran out) is theirs to end.
    if (row.claimedUntil === o.claimedUntil) row.claimedUntil = null;
    if (!p) return 'invalid';
    const m = p.def.machine;
    if (o.kind === 'deadline') {
      if (!row.pending) return 'unchanged';
      row.ferryError = 'DEADLINE_EXCEEDED';
      row.errorMessage = `not sent before the deadline${row.errorMessage ? `; last error: ${row.errorMessage}` : ''}`;
      return move(row, m.failed, { reason: 'deadline', attempts: row.attempts, error: 'DEADLINE_EXCEEDED' });
    }
    const r = o.result;
    row.attempts++;
    const dup = o.possibleDuplicate ? { possibleDuplicate: true } : {};
    if (r.kind === 'sent') {
      row.providerId = r.providerId;
      const to = p.def.resultState?.(publicJob(row), r) ?? m.sent;
      return move(row, to, { attempt: row.attempts, providerId: r.providerId, ...dup });
    }
    if (r.kind === 'fail') {
      row.ferryError = r.code;
      row.providerError = r.providerCode ?? null;
      row.errorMessage = r.message;
      const to = p.def.resultState?.(publicJob(row), r) ?? m.failed;
      return move(row, to, { attempt: row.attempts, error: r.code, providerError: r.providerCode ?? null, message: r.message, ...dup });
    }
    // retry
    row.ferryError = r.code;
    row.providerError = r.providerCode ?? null;
    row.errorMessage = r.message;
    const attemptDetail = { attempt: row.attempts, error: r.code, providerError: r.providerCode ?? null, message: r.message, ...dup };
    if (!row.pending) {
      // A callback moved the job on while this attempt ran: nothing to retry.
      history.push({ jobId: row.id, kind: 'attempt', state: row.state, at: now, detail: attemptDetail });
      return 'unchanged';
    }
    const next = p.retry.after(row.attempts, r.retryAfterMs);
    const delay = next.final ? 0 : next.delayMs;
    const nextAt = now + Math.max(1, delay);
    if (nextAt > row.deadlineAt) {
      const last = `${r.code}${r.providerCode ? ` (${r.providerCode})` : ''}: ${r.message}`;
      row.ferryError = 'DEADLINE_EXCEEDED';
      row.errorMessage = `not sent before the deadline; last error: ${last}`;
      return move(row, m.failed, { reason: 'deadline', ...attemptDetail });
    }
    row.nextAttemptAt = nextAt;
    history.push({
      jobId: row.id,
      kind: 'attempt',
      state: row.state,
      at: now,
      detail: {
        ...attemptDetail,
        ...(r.retryAfterMs !== undefined ? { retryAfterMs: r.retryAfterMs } : {}),
        ...(r.throttled ? { throttled: true } : {}),
        ...(r.providerHealthy ? { providerHealthy: true } : {}),
        nextAttemptAt: nextAt,
      },
    });
    return 'unchanged';
  }

  private eventFor(row: JobRow, state: string, detail: Record<string, unknown>, now: number): NewEvent | null {
    const p = this.products.get(row.product);
    const type = p?.def.machine.eventOf(state);
    if (!p || !type) return null;
    const failed = state === p.def.machine.failed;
    const data: Record<string, unknown> = {
      messageId: row.messageId,
      jobId: row.id,
      status: state,
      provider: row.provider,
      providerMessageId: row.providerId,
      error: failed ? row.ferryError : null,
      providerError: failed ? row.providerError : null,
      attempts: row.attempts,
      at: new Date(now).toISOString(),
      ...(p.def.eventData?.(publicJob(row), state, detail) ?? {}),
    };
    return { accountId: row.accountId, type: type as EventType, messageKey: row.messageId, data };
  }
}

function publicJob(row: JobRow): OutboundJob {
  return {
    id: row.id,
    product: row.product,
    provider: row.provider,
    accountId: row.accountId,
    messageId: row.messageId,
    payload: row.payload,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.nextAttemptAt,
    deadlineAt: row.deadlineAt,
    providerId: row.providerId,
    ferryError: row.ferryError,
    providerError: row.providerError,
    errorMessage: row.errorMessage,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
