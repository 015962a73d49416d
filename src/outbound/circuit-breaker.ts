export type BreakerState = 'closed' | 'open' | 'half-open';

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the breaker (default 5). */
  failureThreshold?: number;
  /** First open period (default 5 s); each failed probe doubles it, up to maxOpenMs. */
  openMs?: number;
  /** Longest open period (default 2 min). */
  maxOpenMs?: number;
  /** Requests let through at once while half-open (default 1). */
  halfOpenProbes?: number;
  /** Epoch-ms clock (tests move it by hand). */
  clock?: () => number;
  onChange?: (from: BreakerState, to: BreakerState, why: string) => void;
}

/** Leave to send one request; its outcome goes back to the breaker with it. */
export interface Permit {
  readonly probe: boolean;
  readonly generation: number;
}

/**
 * A circuit breaker for one provider endpoint. Closed: every request goes; `failureThreshold` consecutive failures
 * open it. Open: nothing goes until the open period ends (the jobs wait in the table, not in memory). Half-open:
 * `halfOpenProbes` requests go; a success closes the breaker, a failure opens it again for twice as long.
 * A throttled answer (the provider is alive but asks Ferry to slow down) holds the breaker open for the time asked,
 * without counting as a failure. Time comes from the injected clock, so every window is tested without sleeping.
 */
export class CircuitBreaker {
  private readonly threshold: number;
  private readonly openMs: number;
  private readonly maxOpenMs: number;
  private readonly probes: number;
  private readonly clock: () => number;
  private current: BreakerState = 'closed';
  private failures = 0;
  /** Failed probes since the breaker last closed: the next open period is openMs × 2^reopens. */
  private reopens = 0;
  private openUntil = 0;
  private probesInFlight = 0;
  /** Bumped on every state change, so a permit from an earlier period does not move this one. */
  private generation = 0;
  /** Last time a request was let through (idle breakers can be dropped). */
  lastUsedAt = 0;

  constructor(private readonly opts: CircuitBreakerOptions = {}) {
    this.threshold = Math.max(1, opts.failureThreshold ?? 5);
    this.openMs = Math.max(1, opts.openMs ?? 5000);
    this.maxOpenMs = Math.max(this.openMs, opts.maxOpenMs ?? 120_000);
    this.probes = Math.max(1, opts.halfOpenProbes ?? 1);
    this.clock = opts.clock ?? Date.now;
  }

  /** The state now (an open breaker whose period has ended is half-open). */
  get state(): BreakerState {
    if (this.current === 'open' && this.clock() >= this.openUntil) this.move('half-open', 'open period over');
    return this.current;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  /** Probes that may start now (0 unless half-open). */
  get freeProbes(): number {
    return this.state === 'half-open' ? Math.max(0, this.probes - this.probesInFlight) : 0;
  }

  /** Ms until a request may go: 0 when closed or a probe is free; while a probe runs, unknown (null). */
  retryInMs(): number | null {
    const s = this.state;
    if (s === 'closed') return 0;
    if (s === 'open') return Math.max(0, this.openUntil - this.clock());
    return this.probesInFlight < this.probes ? 0 : null;
  }

  /** Leave to send, or null while open (or half-open with every probe taken). */
  tryAcquire(): Permit | null {
    const s = this.state;
    if (s === 'open') return null;
    if (s === 'half-open') {
      if (this.probesInFlight >= this.probes) return null;
      this.probesInFlight++;
      this.lastUsedAt = this.clock();
      return { probe: true, generation: this.generation };
    }
    this.lastUsedAt = this.clock();
    return { probe: false, generation: this.generation };
  }

  /** The provider answered (sent, or a permanent error about the message): it is alive. */
  success(p: Permit): void {
    if (!this.current_(p)) return;
    if (p.probe) {
      this.probesInFlight--;
      this.reopens = 0;
      this.failures = 0;
      this.move('closed', 'probe succeeded');
      return;
    }
    if (this.current === 'closed') this.failures = 0;
  }

  /** The provider failed (5xx, timeout, connection error). */
  failure(p: Permit): void {
    if (!this.current_(p)) return;
    if (p.probe) {
      this.probesInFlight--;
      this.reopens++;
      this.open(this.period(), 'probe failed');
      return;
    }
    if (this.current !== 'closed') return;
    this.failures++;
    if (this.failures >= this.threshold) this.open(this.period(), `${this.failures} consecutive failures`);
  }

  /** The provider throttles: nothing goes for `ms` (at least), then a probe. Not a failure. */
  throttled(p: Permit | null, ms: number): void {
    if (p?.probe && this.current_(p)) this.probesInFlight--;
    const until = this.clock() + Math.max(1, ms);
    if (this.current === 'open' && this.openUntil >= until) return;
    this.open(until - this.clock(), 'provider throttling');
  }

  /** The request did not go after all (handed back): frees its probe. */
  release(p: Permit): void {
    if (p.probe && this.current_(p)) this.probesInFlight--;
  }

  private current_(p: Permit): boolean {
    return p.generation === this.generation;
  }

  private period(): number {
    return Math.min(this.maxOpenMs, this.openMs * Math.pow(2, this.reopens));
  }

  private open(ms: number, why: string): void {
    this.openUntil = this.clock() + ms;
    this.probesInFlight = 0;
    this.move('open', why, true);
  }

  private move(to: BreakerState, why: string, force = false): void {
    const from = this.current;
    if (from === to && !force) return;
    this.current = to;
    this.generation++;
    if (to !== 'half-open') this.probesInFlight = 0;
    if (to === 'closed') this.failures = 0;
    if (from !== to) this.opts.onChange?.(from, to, why);
  }
}
