import type { MessageStatus } from '../../ledger/types.js';
import { MessageState } from '../../smpp/constants.js';

/** interface_version of SMPP v5.0 binds: only they know message_state SCHEDULED. */
const INTERFACE_VERSION_50 = 0x50;

/**
 * SMPP message_state for each ledger status (query_sm_resp, receipt message_state TLV). `scheduled` is reported
 * as ENROUTE here because SCHEDULED (0) exists only from SMPP v5.0: use `messageStateOf` to honour the bind's
 * interface_version.
 */
export const MESSAGE_STATE_OF_STATUS: Readonly<Record<MessageStatus, number>> = {
  queued: MessageState.ENROUTE,
  scheduled: MessageState.ENROUTE,
  submitted: MessageState.ENROUTE,
  delivered: MessageState.DELIVERED,
  expired: MessageState.EXPIRED,
  cancelled: MessageState.DELETED,
  undelivered: MessageState.UNDELIVERABLE,
  failed: MessageState.UNDELIVERABLE,
  rejected: MessageState.REJECTED,
};

/** Receipt `stat:` word for each ledger status (the 7-letter spellings SMSCs use). */
export const RECEIPT_STAT_OF_STATUS: Readonly<Record<MessageStatus, string>> = {
  queued: 'ENROUTE',
  scheduled: 'ENROUTE',
  submitted: 'ENROUTE',
  delivered: 'DELIVRD',
  expired: 'EXPIRED',
  cancelled: 'DELETED',
  undelivered: 'UNDELIV',
  failed: 'UNDELIV',
  rejected: 'REJECTD',
};

/** message_state of a ledger status for a bind of the given interface_version (default v3.4). */
export function messageStateOf(status: MessageStatus, interfaceVersion = 0x34): number {
  if (status === 'scheduled' && interfaceVersion >= INTERFACE_VERSION_50) return MessageState.SCHEDULED;
  return MESSAGE_STATE_OF_STATUS[status];
}
