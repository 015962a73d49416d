import type { MessageStatus } from '../ledger/types.js';
import { MessageState } from '../smpp/constants.js';

/**
 * The ledger status an upstream receipt's message_state means, or null for states that are not final
 * (ENROUTE, SCHEDULED, and ACCEPTD, which SMSCs use for "held / buffered" as often as for "read by an operator").
 * DELETED (deleted at the SMSC), UNKNOWN and SKIPPED are undelivered: the customer's message did not arrive.
 */
export function statusOfReceiptState(state: number): MessageStatus | null {
  switch (state) {
    case MessageState.DELIVERED: return 'delivered';
    case MessageState.EXPIRED: return 'expired';
    case MessageState.REJECTED: return 'rejected';
    case MessageState.UNDELIVERABLE:
    case MessageState.DELETED:
    case MessageState.UNKNOWN:
    case MessageState.SKIPPED:
      return 'undelivered';
    default:
      return null;
  }
}

/** The receipt's err: value worth keeping as the message's error code (none for 000). */
export function receiptErrorCode(err: string | undefined): string | null {
  if (err === undefined || err === '' || /^0+$/.test(err)) return null;
  return err;
}
