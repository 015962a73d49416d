import { EsmClass, MessageState, ReceiptStat, messageStateFromStat } from '../constants.js';
import type { DeliverSm } from '../pdu.js';
import { parseReceipt } from '../receipt.js';
import { decodeText } from '../text/encoding.js';

/** What Ferry reads out of a receipt deliver_sm. */
export interface ReceiptInfo {
  id: string;
  state: number;
  stat: string;
  final: boolean;
  errorCode?: string;
  networkErrorCode?: Buffer;
  submitDate?: Date;
  doneDate?: Date;
}

/** A deliver_sm is a receipt when esm_class says so, or (for SMSCs that forget the flag) it names a receipted id. */
export function isReceiptPdu(pdu: DeliverSm): boolean {
  const type = pdu.esm_class & EsmClass.TYPE_MASK;
  return type === EsmClass.MC_DELIVERY_RECEIPT || type === EsmClass.INTERMEDIATE_NOTIFICATION || pdu.tlvs?.receipted_message_id !== undefined;
}

const NON_FINAL = new Set<number>([MessageState.ENROUTE, MessageState.SCHEDULED]);

/**
 * Reads a receipt. The TLVs (receipted_message_id, message_state) win over the text, which SMSCs format loosely;
 * the text still supplies err:, the dates, and the id/state when the TLVs are absent. Undefined without any id.
 */
export function readReceipt(pdu: DeliverSm): ReceiptInfo | undefined {
  const raw = pdu.tlvs?.message_payload ?? pdu.short_message;
  const fields = raw && raw.length > 0 ? parseReceipt(decodeText(raw, pdu.data_coding)) : undefined;
  const id = pdu.tlvs?.receipted_message_id || fields?.id;
  if (!id) return undefined;
  const state = pdu.tlvs?.message_state ?? fields?.messageState ?? (fields?.stat ? messageStateFromStat(fields.stat) : undefined) ?? MessageState.UNKNOWN;
  const intermediate = (pdu.esm_class & EsmClass.TYPE_MASK) === EsmClass.INTERMEDIATE_NOTIFICATION;
  const info: ReceiptInfo = {
    id,
    state,
    stat: fields?.stat?.toUpperCase() ?? ReceiptStat[state] ?? 'UNKNOWN',
    final: !intermediate && !NON_FINAL.has(state),
  };
  if (fields?.err !== undefined) info.errorCode = fields.err;
  if (pdu.tlvs?.network_error_code) info.networkErrorCode = pdu.tlvs.network_error_code;
  if (fields?.submitDate) info.submitDate = fields.submitDate;
  if (fields?.doneDate) info.doneDate = fields.doneDate;
  return info;
}
