import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { JobLease } from './job-lease.js';
import type { Role } from './roles.js';

/**
 * A periodic job a module declares (`ModuleInstance.jobs`); the platform's one scheduler runs it. `cluster` jobs run
 * on one instance of a cluster at a time (a lease); `instance` jobs on every instance that runs one of its roles.
 */
export interface JobSpec {
  /** Unique in the daemon, `<module>.<what>` (the lease and the metric label). */
  readonly name: string;
  readonly everyMs: number;
  readonly scope: 'cluster' | 'instance';
  /** The process roles it runs in (default: workers). */
  readonly roles?: readonly Role[];
  /** Runs once as the scheduler starts instead of after the first interval. */
  readonly runAtStart?: boolean;
  /** The work; `signal` aborts when the daemon stops (finish or give up soon). */
  run(signal: AbortSignal): Promise<unknown>;
}

export interface SchedulerOptions {
  lease: JobLease;
  log: Logger;
  registry?: Registry;
  /** Each wait is everyMs stretched by up to this fraction at random, so instances do not fire in step (default 0.1). */
  jitter?: number;
  /** How long a cluster job's lease lasts past each renewal (default 3 × everyMs, at least 30 s). */
  leaseMs?: (job: JobSpec) => number;
}

interface Running {
  job: JobSpec;
  timer: NodeJS.Timeout | undefined;
  run: Promise<void> | null;
}

/**
 * The platform's one scheduler. A job never overlaps itself (the next wait starts when a run ends); a cluster job's
 * holder keeps the lease while it lives (renewed on each run and while a run lasts) and gives it back on stop, so
 * another instance takes over at its next tick. Errors are logged and counted, never thrown.
 */
export class Scheduler {
  readonly holder = randomUUID();
  private readonly jobs = new Map<string, Running>();
  private readonly abort = new AbortController();
  private started = false;
  private readonly runs: Counter<'job' | 'outcome'>;
  private readonly seconds: Histogram<'job'>;

  constructor(private readonly o: SchedulerOptions) {
    const registers = o.registry ? [o.registry] : [];
    this.runs = new Counter({
      name: 'ferry_job_runs_total',
      help: 'Periodic job runs by outcome: ok, error (logged), skipped (a cluster job whose lease another instance holds)',
      labelNames: ['job', 'outcome'] as const,
      registers,
    });
    this.seconds = new Histogram({
      name: 'ferry_job_duration_seconds',
      help: 'How long a periodic job run took (runs that did work, ok or error)',
      labelNames: ['job'] as const,
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers,
    });
  }

  /** Adds a job; jobs added after start() start at once. */
  add(job: JobSpec): void {
    if (this.jobs.has(job.name)) throw new Error(`job ${job.name} is declared twice`);
    if (!(job.everyMs > 0)) throw new Error(`job ${job.name}: everyMs must be positive`);
    const r: Running = { job, timer: undefined, run: null };
    this.jobs.set(job.name, r);
    if (this.started) this.begin(r);
  }

  names(): string[] {
    return [...this.jobs.keys()];
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const r of this.jobs.values()) this.begin(r);
  }

  /** No new runs; waits for the running ones (the caller bounds this by the shutdown budget) and gives leases back. */
  async stop(): Promise<void> {
    this.started = false;
    this.abort.abort();
    for (const r of this.jobs.values()) clearTimeout(r.timer);
    await Promise.all([...this.jobs.values()].map((r) => r.run));
    await Promise.all(
      [...this.jobs.values()].filter((r) => r.job.scope === 'cluster').map((r) => this.o.lease.release(r.job.name, this.holder).catch(() => undefined)),
    );
  }

  private begin(r: Running): void {
    if (r.job.runAtStart) this.fire(r);
    else this.schedule(r);
  }

  private schedule(r: Running): void {
    if (!this.started) return;
    const wait = r.job.everyMs * (1 + Math.random() * (this.o.jitter ?? 0.1));
    r.timer = setTimeout(() => this.fire(r), wait);
    r.timer.unref();
  }

  private fire(r: Running): void {
    if (!this.started || r.run) return;
    r.run = this.tick(r)
      .then(() => undefined)
      .finally(() => {
        r.run = null;
        this.schedule(r);
      });
  }

  /** One run; false when the lease is another instance's. */
  private async tick(r: Running): Promise<boolean> {
    const { job } = r;
    const ttl = this.o.leaseMs?.(job) ?? Math.max(job.everyMs * 3, 30_000);
    let renew: NodeJS.Timeout | undefined;
    if (job.scope === 'cluster') {
      let mine: boolean;
      try {
        mine = await this.o.lease.take(job.name, this.holder, ttl);
      } catch (err) {
        this.runs.inc({ job: job.name, outcome: 'error' });
        this.o.log.warn({ job: job.name, err: (err as Error).message }, 'job lease not taken');
        return false;
      }
      if (!mine) {
        this.runs.inc({ job: job.name, outcome: 'skipped' });
        return false;
      }
      // A run longer than the lease keeps it: renewed a few times per lease.
      renew = setInterval(() => void this.o.lease.take(job.name, this.holder, ttl).catch(() => undefined), Math.max(10, ttl / 3));
      renew.unref();
    }
    const end = this.seconds.startTimer({ job: job.name });
    try {
      await job.run(this.abort.signal);
      this.runs.inc({ job: job.name, outcome: 'ok' });
    } catch (err) {
      this.runs.inc({ job: job.name, outcome: 'error' });
      this.o.log.warn({ job: job.name, err: (err as Error).message }, 'job failed');
    } finally {
      end();
      clearInterval(renew);
    }
    return true;
  }
}
