import type { Lane } from '../store/types.js';
import type { MessageStatus } from '../ledger/types.js';

/**
 * One message as an ingress hands it to the SMS service, after the ingress has parsed its own protocol
 * (SMPP PDU fields, REST JSON). Addresses are as the customer wrote them: the service validates and normalises.
 */
export interface SmsSubmission {
  accountId: string;
  ingress: 'smpp' | 'rest';
  /** Sender: alphanumeric (≤ 11 characters) or a number. */
  source: string;
  /** SMPP source_addr_ton / npi (REST: derived from the sender's shape). */
  sourceTon?: number;
  sourceNpi?: number;
  /** Recipient, local or international; normalised to international digits. */
  destination: string;
  /** SMPP dest_addr_ton: 1 (international) means the digits already carry the country code. */
  destTon?: number;
  /** Text to send; Ferry chooses the coding and splits it per upstream. */
  text?: string;
  /**
   * Already-encoded user data sent as is under `dataCoding`: binary codings, and one part of a message the
   * customer split itself (then `concat` is set and, when `esmClass` has UDHI, `bytes` starts with the UDH).
   */
  bytes?: Buffer;
  dataCoding?: number;
  esmClass?: number;
  /** Concatenation of a customer-split message (from the UDH or the SAR TLVs). */
  concat?: { reference: number; total: number; seq: number; via: 'udh' | 'sar' };
  /** Decoded text of `bytes` where it is text (for the status API and the receipt's text: field). */
  displayText?: string;
  /**
   * The text is a secret (an OTP code): it is stored encrypted and only decrypted to send; `displayText` (a masked
   * copy) is what the ledger shows.
   */
  seal?: boolean;
  /** 0 bulk … 3; ≥ 1 rides the priority lane. */
  priority?: number;
  /** Forces the lane (OTP: priority). */
  lane?: Exclude<Lane, 'receipt'>;
  /** SMPP registered_delivery (REST: 1). */
  registeredDelivery?: number;
  /** Epoch ms; in the future → scheduled. */
  scheduledAt?: number | null;
  /** Epoch ms after which the message is not sent (validity period). */
  expiresAt?: number | null;
  reference?: string | null;
  batchId?: string | null;
  /** system_id of the submitting bind. */
  customerSystemId?: string | null;
  resendOf?: string | null;
  /** The API key's recipient allow-list (digits prefixes); the account's own list applies as well. */
  allowedRecipients?: readonly string[] | null;
}

/** The stable reasons a submission is refused; each ingress maps them (SMPP command_status, HTTP code). */
export type SmsErrorCode =
  | 'INVALID_SOURCE'
  | 'INVALID_DESTINATION'
  | 'INVALID_DATA_CODING'
  | 'EMPTY_MESSAGE'
  | 'MESSAGE_TOO_LONG'
  | 'INVALID_SCHEDULE'
  | 'INVALID_VALIDITY'
  | 'NO_ROUTE'
  | 'ACCOUNT_SUSPENDED'
  /** The balance does not cover the price (segments × unit price). */
  | 'INSUFFICIENT_CREDIT'
  /** The key's or the account's allow-list does not contain the recipient. */
  | 'RECIPIENT_NOT_ALLOWED'
  /** resend: no such message of the account. */
  | 'MESSAGE_NOT_FOUND'
  /** resend: the message is not failed, undelivered, rejected or expired. */
  | 'NOT_RESENDABLE'
  /** The account's submits per second are used up. */
  | 'THROTTLED'
  /** Ferry is saturated (upstream windows full and the queue deep, or the ledger writer backed up). */
  | 'BUSY'
  /** The ledger could not commit: nothing was accepted. */
  | 'STORAGE_UNAVAILABLE';

export class SmsError extends Error {
  override readonly name = 'SmsError';
  constructor(
    readonly code: SmsErrorCode,
    message: string,
    /** For THROTTLED / BUSY: when to try again. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** What the customer is told once the message is durably accepted. */
export interface AcceptedSms {
  messageId: string;
  status: Extract<MessageStatus, 'queued' | 'scheduled'>;
  /** International digits. */
  destination: string;
  source: string;
  segments: number;
  encoding: string;
  /** Price per segment and total debited, in micro-units of `currency` (0 when unpriced). */
  unitCostMicros: number;
  costMicros: number;
  currency: string;
  /** Epoch ms of the accept (the ledger commit). */
  acceptedAt: number;
  scheduledAt: number | null;
  reference: string | null;
}

/** One item of a bulk submission: accepted, or refused with the same codes as a single submit. */
export type BulkItemResult =
  | { index: number; ok: true; accepted: AcceptedSms }
  | { index: number; ok: false; code: SmsErrorCode; message: string };

export interface BulkResult {
  batchId: string;
  results: BulkItemResult[];
  accepted: number;
  rejected: number;
  costMicros: number;
  currency: string;
}

/** What a queued item carries: enough to send without reading the ledger (the ledger stays the truth). */
export interface DispatchPayload {
  /** Ferry message id (also the queue item id). */
  id: string;
}

/** What an ingress (the SMPP server, the REST routes) needs of the SMS service. */
export interface SmsIngress {
  /** Validates, prices and durably accepts one message; throws SmsError. Resolves once the ledger row is committed. */
  submit(sub: SmsSubmission): Promise<AcceptedSms>;
  /** Cancels a queued or scheduled message of the account that nothing was sent for yet (cancel_sm, DELETE). */
  cancel(messageId: string, accountId: string): Promise<boolean>;
  /** The message as the ledger has it, or null when unknown or another account's. */
  find(messageId: string, accountId: string): Promise<import('../ledger/types.js').MessageRecord | null>;
}

/** What the REST channel needs beyond a single submit. */
export interface SmsApi extends SmsIngress {
  /**
   * Bulk: every item validated on its own; the valid ones are debited together and committed in one pass, all or
   * nothing (a storage failure or a balance short of their total refuses the whole batch with SmsError).
   */
  submitMany(subs: readonly SmsSubmission[], opts?: { batchId?: string }): Promise<BulkResult>;
  /** A new message with the original's content, linked by resendOf; only for failed/undelivered/rejected/expired. */
  resend(messageId: string, accountId: string, opts?: { allowedRecipients?: readonly string[] | null; reference?: string | null }): Promise<AcceptedSms>;
}
