/** The types exchanged between the dispatcher, the upstream pool and the receipt handling. */
import type { DeliverSm, Tlvs } from '../pdu.js';
import type { ReceiptInfo } from './receipt-pdu.js';

/** One message on its way to an upstream SMSC. Built by the dispatcher from the ledger row. */
export interface OutboundMessage {
  /** Ferry message id: correlates receipts and seeds the concatenation reference (stable across retries). */
  id: string;
  accountId: string;
  source: string;
  sourceTon?: number;
  sourceNpi?: number;
  destination: string;
  destTon?: number;
  destNpi?: number;
  /** Text to encode (GSM-7 when it fits, else UCS-2, or `dataCoding` when it can carry it) and split as needed. */
  text?: string;
  /** Already-encoded user data (binary, or text encoded by the customer); sent as is under `dataCoding`. */
  bytes?: Buffer;
  /** data_coding for `bytes`, or the preferred coding for `text`. */
  dataCoding?: number;
  /** A customer-supplied UDH sent in front of `bytes` (the message is then one part, UDHI set). */
  udh?: Buffer;
  /** SMPP registered_delivery (1: final receipt, 2: on failure). */
  registeredDelivery: number;
  /** SMPP priority_flag 0–3; also a routing criterion. */
  priority: number;
  validityPeriod?: string;
  scheduleDeliveryTime?: string;
  /** esm_class bits to set (messaging mode, reply path); UDHI is added by Ferry when it splits. */
  esmClass?: number;
  serviceType?: string;
  protocolId?: number;
  tlvs?: Tlvs;
  /** Attempts so far including this one (the queue's count); scales retry delays. Default 1. */
  attempt?: number;
  /**
   * Part indexes an earlier attempt already got accepted (from a `retry` outcome's `parts`); they are not sent again,
   * so a partly-sent long message resumes instead of duplicating parts on the handset.
   */
  partsDone?: readonly number[];
}

export interface AcceptedPart {
  upstreamMessageId: string;
  /** 0-based part index. */
  partIndex: number;
}

/** Why a submit should be tried again later. */
export type RetryReason =
  /** The SMSC answered ESME_RTHROTTLED, or is in the pause that follows one. */
  | 'throttled'
  /** The SMSC answered ESME_RMSGQFUL (its queue for the destination is full). */
  | 'queue_full'
  /** Another status Ferry treats as temporary (e.g. ESME_RINVBNDSTS after a bind flap). */
  | 'transient_status'
  /** No submit_sm_resp within responseTimeoutMs: the SMSC may have taken it (at-least-once). */
  | 'timeout'
  /** The bind closed with the submit in flight: it is requeued, not lost. */
  | 'bind_closed'
  /** Every window of the chosen upstream is full: back-pressure. */
  | 'window_full'
  /** Ferry's own per-upstream maxTps (shared through the throttle) is used up for longer than the wait allowed. */
  | 'tps_limit'
  /** No candidate upstream has a bound bind. */
  | 'no_upstream';

export type SubmitOutcome =
  | {
      kind: 'accepted';
      upstreamId: string;
      /** The parts sent in this attempt with their upstream ids (receipts are correlated per part). */
      parts: AcceptedPart[];
      /** Parts the message was split into on this upstream (what the customer is charged for). */
      totalParts: number;
    }
  | {
      kind: 'retry';
      reason: RetryReason;
      status?: number;
      delayMs: number;
      upstreamId?: string;
      /** Parts accepted in this attempt (a long message can be partly sent): pass them back as `partsDone`. */
      parts?: AcceptedPart[];
    }
  | {
      kind: 'failed';
      status: number;
      statusName: string;
      upstreamId?: string;
      /** Parts accepted before one was refused for good. */
      parts?: AcceptedPart[];
    };

/** A delivery receipt correlated back to Ferry's message: what the receipt said (minus its id) and whose it is. */
export interface UpstreamReceipt extends Omit<ReceiptInfo, 'id'> {
  /** Ferry message id. */
  messageId: string;
  partIndex: number;
  parts: number;
  upstreamId: string;
  /** The id as the receipt wrote it. */
  upstreamMessageId: string;
  receivedAt: number;
  /** Set when no receipt came and the state is a query_sm answer instead (the history says so). */
  source?: 'query_sm';
}

/** A receipt whose id matched no submit (after the early-receipt hold): logged and counted, kept for inspection. */
export interface UnmatchedReceipt {
  upstreamId: string;
  upstreamMessageId: string;
  state: number;
  stat: string;
  receivedAt: number;
}

/** A mobile-originated message (deliver_sm that is not a receipt). */
export interface UpstreamMo {
  upstreamId: string;
  bindIndex: number;
  source: string;
  destination: string;
  dataCoding: number;
  esmClass: number;
  /** Decoded text of this part (UDH removed). */
  text: string;
  /** Concatenation info when this is one part of a long MO. */
  concat?: { reference: number; total: number; seq: number; via: 'udh' | 'sar' };
  /** The PDU as received, for anything not lifted out above. */
  pdu: DeliverSm;
  receivedAt: number;
}
