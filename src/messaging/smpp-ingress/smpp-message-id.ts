/**
 * Ferry's message id as SMPP customers see it: the REST id without its `msg_` prefix (26 lower-case Crockford base32
 * characters, letters and digits only). Why: the receipt text is 7-bit, and clients that read it as GSM 03.38 (the
 * `smpp` npm client reads data_coding 0 and 1 that way) turn the `_` of `msg_` (0x5F in IA5) into `§`, so the id in
 * the text stopped matching `submit_sm_resp`. Letters and digits read the same in IA5 and GSM 03.38.
 *
 * One form everywhere on SMPP: submit_sm_resp, submit_multi_resp, data_sm_resp, the receipt's `id:` and its
 * receipted_message_id TLV, query_sm_resp. `msg_` + the SMPP id is the REST id of the same message.
 */

const REST_PREFIX = 'msg_';
/** What an SMPP id may be: letters and digits, at most 64 characters (the SMPP message_id field's size, less its NUL). */
const SMPP_ID = /^[0-9A-Za-z]{1,64}$/;

/** The SMPP form of a ledger (REST) message id. */
export function smppMessageId(messageId: string): string {
  return messageId.startsWith(REST_PREFIX) ? messageId.slice(REST_PREFIX.length) : messageId;
}

/**
 * The ledger id a customer's message_id names (query_sm, cancel_sm): the SMPP form in either case (Crockford base32
 * is case-insensitive), or the REST form as it is. null when it can be neither, so no lookup is made.
 */
export function ledgerMessageId(smppId: string): string | null {
  if (smppId.startsWith(REST_PREFIX)) return smppId;
  return SMPP_ID.test(smppId) ? REST_PREFIX + smppId.toLowerCase() : null;
}
