import { CommandStatus } from '../constants.js';
import type { RetryReason } from './outbound.js';

/**
 * Exponential backoff with "equal jitter": half of the step is fixed and half random. The fixed half keeps a
 * minimum spacing (no reconnect storm even when the random half rolls 0); the random half spreads binds and
 * instances that failed together so they do not come back in lockstep.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const step = Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(0, attempt), 30));
  return Math.round(step / 2 + (random() * step) / 2);
}

/** Base and cap of the retry delay per reason, in ms; the delay doubles with each attempt of the message. */
export const RETRY_DELAYS: Readonly<Record<RetryReason, { baseMs: number; maxMs: number }>> = {
  // Kannel and Jasmin both wait about a second after a throttling response.
  throttled: { baseMs: 1000, maxMs: 30_000 },
  // The SMSC's queue for this destination is full: the handset is likely unreachable; give it time.
  queue_full: { baseMs: 5000, maxMs: 60_000 },
  transient_status: { baseMs: 2000, maxMs: 60_000 },
  // The SMSC may have accepted it; waiting a little longer makes the duplicate less likely to overlap.
  timeout: { baseMs: 5000, maxMs: 60_000 },
  // Nothing wrong with the message: requeue quickly so another bind (or the failover upstream) takes it.
  bind_closed: { baseMs: 250, maxMs: 10_000 },
  // Back-pressure: the dispatcher should look at capacity() first; this is only the fallback pacing.
  window_full: { baseMs: 20, maxMs: 1000 },
  tps_limit: { baseMs: 100, maxMs: 5000 },
  no_upstream: { baseMs: 2000, maxMs: 30_000 },
};

/** Delay before attempt `attempt + 1` after a failure of the given reason (attempt counts from 1). */
export function retryDelay(reason: RetryReason, attempt = 1, random: () => number = Math.random): number {
  const d = RETRY_DELAYS[reason];
  return backoffDelay(attempt - 1, d.baseMs, d.maxMs, random);
}

/**
 * submit_sm_resp statuses that mean "try again later" rather than "this message is refused". Everything else
 * non-zero fails the message with that status. ESME_RINVBNDSTS comes from a bind the SMSC no longer counts as
 * bound (a flap), ESME_RX_T_APPN is a temporary error by definition.
 */
export const DEFAULT_TRANSIENT_STATUSES: ReadonlySet<number> = new Set([
  CommandStatus.ESME_RTHROTTLED,
  CommandStatus.ESME_RMSGQFUL,
  CommandStatus.ESME_RINVBNDSTS,
  CommandStatus.ESME_RX_T_APPN,
]);

export function retryReasonOfStatus(status: number): RetryReason {
  if (status === CommandStatus.ESME_RTHROTTLED) return 'throttled';
  if (status === CommandStatus.ESME_RMSGQFUL) return 'queue_full';
  return 'transient_status';
}
