/**
 * When a failed delivery is tried again: from an explicit schedule (webhooks: `retrySchedule`, then final) or by
 * exponential backoff (outbound: until the job's deadline), with one jitter for both, and a receiver's Retry-After
 * honoured where it gives one. The jitter spreads retries of many deliveries that failed together (±20% by default)
 * so that they do not come back together; deferrals (a busy target, a full hold) use the same function.
 */

export interface BackoffPolicy {
  /** Delay before the second attempt (after the first failure). */
  baseMs: number;
  /** Growth per further failure. */
  factor: number;
  /** Cap of one delay. */
  maxMs: number;
  /** Relative spread around the delay (0.2: ±20%). */
  spread: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = { baseMs: 1000, factor: 2, maxMs: 10 * 60_000, spread: 0.2 };

/** Spread of a Retry-After, upward only: never earlier than the receiver asked, and not all at the same instant. */
const RETRY_AFTER_SPREAD = 0.1;

/** `delay` spread by ±`spread` (at least 1 ms). */
export function jitter(delay: number, spread = 0.2, random: () => number = Math.random): number {
  return Math.max(1, Math.round(delay * (1 - spread + random() * 2 * spread)));
}

/** The delay after failed attempt number `attempt` (1 = the first): base × factor^(attempt-1), capped, jittered. */
export function backoffDelay(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(attempt));
  const raw = Math.min(policy.maxMs, policy.baseMs * Math.pow(policy.factor, n - 1));
  return Math.min(policy.maxMs, jitter(raw, policy.spread, random));
}

/**
 * A Retry-After header (delta seconds, or an HTTP date) as milliseconds from `now`; undefined when absent or
 * unreadable. A date in the past gives 0. Capped at a day: a provider asking for more is treated as asking for a day.
 */
export function parseRetryAfter(value: string | string[] | undefined | null, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v === null) return undefined;
  const s = v.trim();
  if (s === '') return undefined;
  const DAY = 86_400_000;
  if (/^\d+(\.\d+)?$/.test(s)) return Math.min(DAY, Math.round(Number(s) * 1000));
  const at = Date.parse(s);
  if (Number.isNaN(at)) return undefined;
  return Math.min(DAY, Math.max(0, at - now));
}

/** After a failed attempt: no more attempts, or the next after `delayMs`. */
export type RetryDecision = { final: true } | { final: false; delayMs: number };

/** The retry plan of one kind of delivery. */
export class RetryPolicy {
  /** Delay before retry n is `delays[n-1]`, jittered by ±`spread`; a failure after the last one is final. */
  static schedule(delays: readonly number[], spread = 0.2, random: () => number = Math.random): RetryPolicy {
    return new RetryPolicy({ delays, spread }, random);
  }

  /** Exponential backoff (DEFAULT_BACKOFF where not given); never final by count (a deadline ends those deliveries). */
  static backoff(policy: Partial<BackoffPolicy> = {}, random: () => number = Math.random): RetryPolicy {
    return new RetryPolicy({ ...DEFAULT_BACKOFF, ...policy }, random);
  }

  private constructor(
    private readonly plan: { delays: readonly number[]; spread: number } | BackoffPolicy,
    private readonly random: () => number,
  ) {}

  /**
   * After failed attempt number `attempt` (1 = the first). A Retry-After the receiver gave (ms) replaces the computed
   * delay, spread upward only; a final failure stays final.
   */
  after(attempt: number, retryAfterMs?: number): RetryDecision {
    const p = this.plan;
    if ('delays' in p && attempt > p.delays.length) return { final: true };
    if (retryAfterMs !== undefined) return { final: false, delayMs: Math.ceil(retryAfterMs * (1 + this.random() * RETRY_AFTER_SPREAD)) };
    if ('delays' in p) return { final: false, delayMs: jitter(p.delays[Math.max(1, Math.floor(attempt)) - 1], p.spread, this.random) };
    return { final: false, delayMs: backoffDelay(attempt, p, this.random) };
  }
}
