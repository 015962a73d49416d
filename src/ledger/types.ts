/** Ledger row shapes. Times are epoch milliseconds on the way in and out. */

export type MessageStatus =
  | 'queued'
  | 'scheduled'
  | 'submitted'
  | 'delivered'
  | 'undelivered'
  | 'expired'
  | 'rejected'
  | 'failed'
  | 'cancelled';

export const FINAL_STATUSES: readonly MessageStatus[] = ['delivered', 'undelivered', 'expired', 'rejected', 'failed', 'cancelled'];

export type Ingress = 'smpp' | 'rest';

/** What a channel service hands to the writer for one accepted message. */
export interface NewMessage {
  /** Ferry id (`newId('msg_')`). */
  id: string;
  accountId: string;
  ingress: Ingress;
  /** Default 'sms'. */
  channel?: 'sms';
  batchId?: string | null;
  reference?: string | null;
  source: string;
  sourceTon?: number;
  sourceNpi?: number;
  /** International digits. */
  destination: string;
  /** Decoded text; at least one of body / bodyBytes. */
  body?: string | null;
  /** Binary or customer-encoded user data, sent as is under dataCoding. */
  bodyBytes?: Buffer | null;
  /** The real text, encrypted (OTP codes): `body` then holds a masked copy for display. */
  bodySealed?: string | null;
  dataCoding?: number | null;
  esmClass?: number;
  /** When the customer sent one part of a message it split itself. */
  udhRef?: number | null;
  udhTotal?: number | null;
  udhSeq?: number | null;
  segments: number;
  encoding: string;
  /** 0 bulk … 3. */
  priority?: number;
  registeredDelivery?: number;
  /** Epoch ms; in the future → the row starts as `scheduled`. */
  scheduledAt?: number | null;
  /** Epoch ms (validity period). */
  expiresAt?: number | null;
  routeRule?: string | null;
  costMicros?: number;
  currency: string;
  /** system_id of the SMPP bind that submitted it, so receipts find their way back. */
  customerSystemId?: string | null;
  resendOf?: string | null;
}

/** A ledger row as read back. */
export interface MessageRecord {
  id: string;
  accountId: string;
  channel: 'sms';
  ingress: Ingress;
  batchId: string | null;
  reference: string | null;
  source: string;
  sourceTon: number;
  sourceNpi: number;
  destination: string;
  body: string | null;
  bodyBytes: Buffer | null;
  bodySealed: string | null;
  dataCoding: number | null;
  esmClass: number;
  udhRef: number | null;
  udhTotal: number | null;
  udhSeq: number | null;
  segments: number;
  encoding: string;
  priority: number;
  registeredDelivery: number;
  scheduledAt: number | null;
  expiresAt: number | null;
  status: MessageStatus;
  errorCode: string | null;
  attempts: number;
  routeRule: string | null;
  upstreamId: string | null;
  /** The upstream's id of a message sent in one part (split messages keep theirs per part). */
  upstreamMessageId: string | null;
  partsTotal: number;
  partsDone: number;
  costMicros: number;
  currency: string;
  customerSystemId: string | null;
  resendOf: string | null;
  createdAt: number;
  updatedAt: number;
  finalAt: number | null;
}

export interface MessageEvent {
  id: number;
  messageId: string;
  status: MessageStatus;
  at: number;
  detail: Record<string, unknown> | null;
}

export interface TransitionInput {
  id: string;
  to: MessageStatus;
  /** Stored on the row (error_code) when the change applies, and in the event detail. */
  errorCode?: string | null;
  /** Free-form event detail: upstream, part, receipt fields. */
  detail?: Record<string, unknown> | null;
}

/**
 * changed: status updated and event written. late: the row was already final; the event is recorded (detail.late)
 * but the status stays. unchanged: already in that status (no event). invalid: not an allowed move (no event).
 * not_found: no such message.
 */
export type TransitionOutcome = 'changed' | 'late' | 'unchanged' | 'invalid' | 'not_found';

export interface TransitionResult {
  id: string;
  outcome: TransitionOutcome;
  /** The status after the call (null when not found). */
  status: MessageStatus | null;
}

export interface PartUpdate {
  messageId: string;
  partIndex: number;
  status: string;
  upstreamId?: string | null;
  upstreamMessageId?: string | null;
  errorCode?: string | null;
}

export interface PartSummary {
  total: number;
  delivered: number;
  failed: number;
  pending: number;
}

export interface SubmittedPart {
  partIndex: number;
  upstreamMessageId: string;
}
