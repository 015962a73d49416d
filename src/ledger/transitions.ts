import { FINAL_STATUSES, type MessageStatus, type TransitionOutcome } from './types.js';

/*
 * The lifecycle rule, in one place:
 *   scheduled → queued                       (its time came)
 *   queued | scheduled → submitted           (first part accepted upstream)
 *   submitted → queued                       (requeued for a retry after a bind loss / timeout)
 *   queued | scheduled → cancelled           (cancel_sm / DELETE before anything was sent)
 *   any non-final → delivered | undelivered | expired | rejected | failed
 *                                            (a receipt may overtake the recording of the submit)
 *   final → anything: the status stays final; the event is still recorded with detail.late = true, so a
 *                     `delivered` receipt arriving after Ferry expired the message shows in the history
 *                     without rewriting what the customer was already told.
 *   same status → unchanged (no event); anything else → invalid (no event).
 */
const FINAL = new Set<MessageStatus>(FINAL_STATUSES);

export function isFinal(s: MessageStatus): boolean {
  return FINAL.has(s);
}

export function decide(from: MessageStatus, to: MessageStatus): TransitionOutcome {
  if (FINAL.has(from)) return from === to ? 'unchanged' : 'late';
  if (from === to) return 'unchanged';
  if (to === 'cancelled') return from === 'queued' || from === 'scheduled' ? 'changed' : 'invalid';
  if (FINAL.has(to)) return 'changed';
  if (to === 'submitted') return 'changed';
  if (to === 'queued') return from === 'scheduled' || from === 'submitted' ? 'changed' : 'invalid';
  return 'invalid'; // → scheduled from anything else
}
