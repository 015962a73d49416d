import type { UpstreamConfig } from '../../config/schema.js';
import { messageIdVariants, normalizeMessageId } from '../receipt.js';

export type ReceiptIdFormat = UpstreamConfig['receiptIdFormat'];

const HEX = /^[0-9a-f]+$/;
const DEC = /^[0-9]+$/;

/**
 * The key a submit_sm_resp id is stored under, in the form the upstream's receipts will write it:
 * - 'as-is': receipts repeat the response id (only case and leading zeros may differ);
 * - 'dec':   responses are hexadecimal and receipts write the same number in decimal;
 * - 'hex':   responses are decimal and receipts write the same number in hexadecimal.
 * A receipt is then found with one lookup of its own normalised id. When the setting is wrong, the fallback
 * conversions in receiptLookupKeys still find it (and the fallback is counted, so the operator can fix it).
 */
export function correlationKey(responseId: string, format: ReceiptIdFormat): string {
  const id = normalizeMessageId(responseId);
  if (format === 'dec' && id.length <= 16 && HEX.test(id)) return BigInt('0x' + id).toString(10);
  if (format === 'hex' && id.length <= 20 && DEC.test(id)) return BigInt(id).toString(16);
  return id;
}

/** Keys to try for a receipt's id: its normalised form first, then its hex↔decimal conversions. */
export function receiptLookupKeys(receiptId: string): string[] {
  return messageIdVariants(receiptId);
}
