/**
 * The simulated trunk's number plan: what a call gets is decided by the called number's last digits (the user part
 * of the Request-URI, `+` and digits), so a test or a developer picks an outcome by dialling it.
 *
 *   …486  486 Busy Here                          …404  404 Not Found
 *   …480  180 Ringing, then rings until CANCEL   …408  180, then 408 Request Timeout after 1 s (no answer)
 *   …503  503 Service Unavailable (trunk fault)  …500  500 Server Internal Error (trunk fault)
 *   …603  603 Decline                            …488  488 Not Acceptable Here (the offer is refused)
 *   …183  183 with SDP (early media: ringback), 200 OK after 1 s
 *   …555  answered, the trunk hangs up (BYE) after 2 s
 *   …77   answered, the trunk sends DTMF 1234# (RFC 4733, in-band if the offer has no telephone-event) after 500 ms
 *   …88   answered, the trunk plays 1 s of 440 Hz
 *   …66   answered without telephone-event in the SDP answer (the caller must fall back to in-band DTMF)
 *   …99   answered, the trunk plays 4 s of 300 Hz at once (a long greeting: an answering machine)
 *   …44   answered; a REFER is refused (501), as by a trunk without transfers: the caller must bridge instead
 *   other 180 Ringing after 100 ms, 200 OK 200 ms later; the call stays up until someone hangs up
 *
 * Three-digit endings are looked at first: …488 is a rejection, not …88.
 */

export type AfterAnswer =
  | { action: 'none' }
  | { action: 'hangup'; afterMs: number }
  | { action: 'digits'; digits: string; afterMs: number }
  | { action: 'tone'; frequencyHz: number; durationMs: number };

export type TrunkBehaviour =
  /**
   * Provisional `provisional` after `ringMs`, 200 OK `answerMs` later, then `then`. A REFER in the answered call is
   * carried out (the Refer-To number's own plan decides how the transfer goes) unless `refer` is false.
   */
  | { outcome: 'answer'; provisional: 180 | 183; ringMs: number; answerMs: number; telephoneEvent: boolean; then: AfterAnswer; refer?: false }
  /** A final error; with `ringMs`, after a 180 and that long. */
  | { outcome: 'reject'; status: number; ringMs?: number }
  /** 180 Ringing and nothing more: only a CANCEL (487) ends it. */
  | { outcome: 'ring' };

const RING_MS = 100;
const ANSWER_MS = 200;

const answer = (then: AfterAnswer = { action: 'none' }, telephoneEvent = true, refer?: false): TrunkBehaviour => ({
  outcome: 'answer', provisional: 180, ringMs: RING_MS, answerMs: ANSWER_MS, telephoneEvent, then, ...(refer === false ? { refer } : {}),
});

const BY_THREE_DIGITS: Readonly<Record<string, TrunkBehaviour>> = {
  '486': { outcome: 'reject', status: 486 },
  '404': { outcome: 'reject', status: 404 },
  '503': { outcome: 'reject', status: 503 },
  '500': { outcome: 'reject', status: 500 },
  '603': { outcome: 'reject', status: 603 },
  '488': { outcome: 'reject', status: 488 },
  '408': { outcome: 'reject', status: 408, ringMs: 1000 },
  '480': { outcome: 'ring' },
  '183': { outcome: 'answer', provisional: 183, ringMs: RING_MS, answerMs: 1000, telephoneEvent: true, then: { action: 'none' } },
  '555': answer({ action: 'hangup', afterMs: 2000 }),
};

const BY_TWO_DIGITS: Readonly<Record<string, TrunkBehaviour>> = {
  '77': answer({ action: 'digits', digits: '1234#', afterMs: 500 }),
  '88': answer({ action: 'tone', frequencyHz: 440, durationMs: 1000 }),
  '66': answer({ action: 'none' }, false),
  '99': answer({ action: 'tone', frequencyHz: 300, durationMs: 4000 }),
  '44': answer({ action: 'none' }, true, false),
};

/** The digits of a called number (`+` and anything else dropped); '' when it has none. */
export function digitsOf(number: string): string {
  return number.replace(/\D/g, '');
}

/** What the trunk does with a call to `number` (see the plan above). */
export function behaviourOf(number: string): TrunkBehaviour {
  const digits = digitsOf(number);
  return BY_THREE_DIGITS[digits.slice(-3)] ?? BY_TWO_DIGITS[digits.slice(-2)] ?? answer();
}

/** The plan as lines for people (the CLI prints it). */
export const NUMBER_PLAN_TEXT = [
  '…486 busy (486)          …404 not found (404)          …603 declined (603)',
  '…503 trunk failure (503) …500 server error (500)       …488 offer refused (488)',
  '…480 rings until CANCEL  …408 rings 1 s, then 408      …183 early media, answered after 1 s',
  '…555 answered, the trunk hangs up after 2 s            …77  answered, sends DTMF 1234# after 0.5 s',
  '…88  answered, plays 1 s of 440 Hz                     …66  answered without telephone-event',
  '…44  answered, refuses REFER (501)                      a REFER elsewhere: the Refer-To number\'s plan decides',
  'any other number: 180 after 0.1 s, answered 0.2 s later',
].join('\n');
