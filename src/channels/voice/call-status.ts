/**
 * A call's statuses, as users of Twilio's Calls API know them, and what moves a call between them. The owner of the
 * call (the instance whose SIP dialog and RTP socket carry it) is the only writer after `queued`; every change is a
 * history row and an event.
 */
export const CALL_STATUSES = ['queued', 'initiated', 'ringing', 'in-progress', 'completed', 'busy', 'no-answer', 'failed', 'canceled'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

export const FINAL_STATUSES: ReadonlySet<CallStatus> = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);
/** Statuses in which a call holds a SIP dialog (or is about to): counted against trunk and account concurrency. */
export const LIVE_STATUSES: readonly CallStatus[] = ['initiated', 'ringing', 'in-progress'];

export function isFinal(status: CallStatus): boolean {
  return FINAL_STATUSES.has(status);
}

const NEXT: Readonly<Record<CallStatus, readonly CallStatus[]>> = {
  queued: ['initiated', 'canceled', 'failed'],
  initiated: ['ringing', 'in-progress', 'busy', 'no-answer', 'failed', 'canceled'],
  ringing: ['in-progress', 'busy', 'no-answer', 'failed', 'canceled'],
  'in-progress': ['completed', 'failed'],
  completed: [],
  busy: [],
  'no-answer': [],
  failed: [],
  canceled: [],
};

/** Whether a call may move from `from` to `to` (a repeated status, e.g. 180 then 183, is no move). */
export function canMove(from: CallStatus, to: CallStatus): boolean {
  return NEXT[from].includes(to);
}

/** What a final SIP response to our INVITE makes of the call (RFC 3261 codes as trunks send them). */
export function statusOfFinalResponse(code: number): Extract<CallStatus, 'in-progress' | 'busy' | 'no-answer' | 'failed' | 'canceled'> {
  if (code >= 200 && code < 300) return 'in-progress';
  if (code === 486 || code === 600) return 'busy';
  // 408 Request Timeout (also our own Timer B), 480 Temporarily Unavailable: nobody picked up.
  if (code === 408 || code === 480) return 'no-answer';
  // 487 Request Terminated answers our CANCEL: the caller of the API canceled (a ring timeout is told apart by the owner).
  if (code === 487) return 'canceled';
  return 'failed';
}

/** A provisional response that means the far end is ringing (100 Trying is not). */
export function isRinging(code: number): boolean {
  return code === 180 || code === 181 || code === 182 || code === 183;
}

/** The event a status change is announced with, if any (queued is the answer to POST; the others are final or progress). */
export function eventOf(status: CallStatus): 'voice.call.initiated' | 'voice.call.ringing' | 'voice.call.answered' | 'voice.call.completed' | 'voice.call.failed' | null {
  switch (status) {
    case 'initiated':
      return 'voice.call.initiated';
    case 'ringing':
      return 'voice.call.ringing';
    case 'in-progress':
      return 'voice.call.answered';
    case 'completed':
      return 'voice.call.completed';
    case 'busy':
    case 'no-answer':
    case 'failed':
    case 'canceled':
      return 'voice.call.failed';
    default:
      return null;
  }
}

/** The statusCallbackEvents name (Twilio's) a status is sent to a statusCallback under. */
export function callbackEventOf(status: CallStatus): 'initiated' | 'ringing' | 'answered' | 'completed' | null {
  if (status === 'initiated') return 'initiated';
  if (status === 'ringing') return 'ringing';
  if (status === 'in-progress') return 'answered';
  if (isFinal(status)) return 'completed';
  return null;
}
