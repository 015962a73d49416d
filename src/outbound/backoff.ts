/**
 * Retry delays: exponential backoff with jitter, and the provider's Retry-After header. The jitter is the webhook
 * sender's (±20% around the delay, so retries of many jobs that failed together do not come back together); it is
 * here as a function of its own so that one copy can serve every sender.
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
