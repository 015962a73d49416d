import type { RateWindowResult } from '../store/types.js';
import { rateLimited, type ApiError } from './errors.js';

type Refusal = Extract<RateWindowResult, { allowed: false }>;

/**
 * A refused rate-window take as the API answers it: 429 RATE_LIMIT_EXCEEDED, `Retry-After` in whole seconds (rounded
 * up, at least 1) and `data: { retryAfter, window, limit }` — which window ('second', 'minute', 'day') refused and
 * its limit. The key is not shown (it names accounts, keys and recipients); log it if needed.
 */
export function rateWindowError(refusal: Refusal, extra: Record<string, unknown> = {}): ApiError {
  return rateLimited('RATE_LIMIT_EXCEEDED', refusal.retryAfterMs, { ...extra, window: refusal.window, limit: refusal.limit });
}

/** Throws rateWindowError for a refusal; returns the allowed result (its `remaining`) otherwise. */
export function assertRateAllowed(result: RateWindowResult): Extract<RateWindowResult, { allowed: true }> {
  if (!result.allowed) throw rateWindowError(result);
  return result;
}
