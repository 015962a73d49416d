/**
 * submit_sm / data_sm / one destination of submit_multi → SmsSubmission, and SmsError → command_status.
 *
 * Refusals found here, by field (command_status):
 * - source_addr_ton not 0–6 → ESME_RINVSRCTON; source_addr_npi not 0,1,3,4,6,8,9,10,14,18 → ESME_RINVSRCNPI
 * - source_addr not a sender ID under the one sender rule (messaging/sender.ts: alphanumeric, 1–11 GSM characters
 *   with a letter, or 1–15 digits with an optional leading +), or not the shape its TON says (TON 5: alphanumeric, or
 *   at most 11 digits; TON 0: either; any other TON: numeric) → ESME_RINVSRCADR
 * - dest_addr_ton / dest_addr_npi out of range → ESME_RINVDSTTON / ESME_RINVDSTNPI
 * - destination_addr not 3–15 digits with an optional leading + → ESME_RINVDSTADR (here the form only: whether the
 *   number is possible or valid for its country is the SMS service's numberValidation policy, `possible` by default
 *   on SMPP, refused with INVALID_DESTINATION → ESME_RINVDSTADR too)
 * - esm_class with message type bits (ESME delivery / manual ack), or UDHI with a malformed UDH → ESME_RINVESMCLASS
 * - priority_flag > 3 → ESME_RINVPRTFLG
 * - data_coding other than 0 (GSM-7), 1 (IA5), 3 (Latin-1), 8 (UCS-2), 2 / 4 (8-bit data), 0xF0–0xF7 → ESME_RINVDCS
 * - both short_message and message_payload → ESME_RINVMSGLEN; no user data → ESME_RINVMSGLEN; UCS-2 of odd
 *   length → ESME_RINVMSGLEN; text over 10 segments, binary over 10 × 134 octets, or a part with a UDH that does not
 *   fit one segment → ESME_RINVMSGLEN
 * - concatenation with total 0, seq 0 or seq > total: in the UDH → ESME_RINVESMCLASS, in the SAR TLVs →
 *   ESME_RINVOPTPARAMVAL (v5.0's ESME_RINVTLVVAL); only some of the three SAR TLVs → ESME_RMISSINGOPTPARAM
 * - schedule_delivery_time malformed or more than 7 days ahead → ESME_RINVSCHED
 * - validity_period malformed, already past, or not after the scheduled time → ESME_RINVEXPIRY
 */
import { validSmppSource } from '../sender.js';
import { SmsError, type SmsErrorCode, type SmsSubmission } from '../types.js';
import { alphabetOf, decodeText } from '../../smpp/text/encoding.js';
import { countSegments } from '../../smpp/text/segments.js';
import { messageParts } from '../../smpp/text/udh.js';
import { CommandStatus, EsmClass } from '../../smpp/constants.js';
import type { Tlvs } from '../../smpp/tlv.js';
import { parseSmppTime } from '../../smpp/time.js';

/** Longest message accepted, in segments of the coding Ferry would choose. */
export const MAX_SEGMENTS = 10;
/** Longest unsplit binary message: the user data of MAX_SEGMENTS concatenated parts. */
export const MAX_BINARY_OCTETS = MAX_SEGMENTS * 134;
/** How far ahead schedule_delivery_time may point. */
export const MAX_SCHEDULE_AHEAD_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * command_status for each reason the SMS service refuses a submission. Anything else thrown becomes ESME_RSYSERR.
 *
 * | SmsError code       | command_status    |
 * |---------------------|-------------------|
 * | INVALID_SOURCE      | ESME_RINVSRCADR   |
 * | INVALID_DESTINATION | ESME_RINVDSTADR (the numberValidation policy refuses the number) |
 * | INVALID_DATA_CODING | ESME_RINVDCS      |
 * | EMPTY_MESSAGE       | ESME_RINVMSGLEN   |
 * | MESSAGE_TOO_LONG    | ESME_RINVMSGLEN   |
 * | INVALID_SCHEDULE    | ESME_RINVSCHED    |
 * | INVALID_VALIDITY    | ESME_RINVEXPIRY   |
 * | NO_ROUTE            | ESME_RINVDSTADR (no upstream serves the destination) |
 * | ACCOUNT_SUSPENDED   | ESME_RSUBMITFAIL  |
 * | THROTTLED           | ESME_RTHROTTLED   |
 * | BUSY                | ESME_RTHROTTLED   |
 * | STORAGE_UNAVAILABLE | ESME_RSYSERR      |
 * | INSUFFICIENT_CREDIT | ESME_RSUBMITFAIL  |
 * | RECIPIENT_NOT_ALLOWED | ESME_RINVDSTADR |
 */
export const SMS_ERROR_STATUS: Readonly<Record<SmsErrorCode, number>> = {
  INVALID_SOURCE: CommandStatus.ESME_RINVSRCADR,
  INVALID_DESTINATION: CommandStatus.ESME_RINVDSTADR,
  INVALID_DATA_CODING: CommandStatus.ESME_RINVDCS,
  EMPTY_MESSAGE: CommandStatus.ESME_RINVMSGLEN,
  MESSAGE_TOO_LONG: CommandStatus.ESME_RINVMSGLEN,
  INVALID_SCHEDULE: CommandStatus.ESME_RINVSCHED,
  INVALID_VALIDITY: CommandStatus.ESME_RINVEXPIRY,
  NO_ROUTE: CommandStatus.ESME_RINVDSTADR,
  ACCOUNT_SUSPENDED: CommandStatus.ESME_RSUBMITFAIL,
  THROTTLED: CommandStatus.ESME_RTHROTTLED,
  BUSY: CommandStatus.ESME_RTHROTTLED,
  STORAGE_UNAVAILABLE: CommandStatus.ESME_RSYSERR,
  INSUFFICIENT_CREDIT: CommandStatus.ESME_RSUBMITFAIL,
  RECIPIENT_NOT_ALLOWED: CommandStatus.ESME_RINVDSTADR,
  // REST-only outcomes (resend); never thrown by submit.
  MESSAGE_NOT_FOUND: CommandStatus.ESME_RSYSERR,
  NOT_RESENDABLE: CommandStatus.ESME_RSYSERR,
};

/** command_status for an error thrown by the SMS service; undefined for errors that are not SmsError. */
export function statusOfSmsError(err: unknown): number | undefined {
  return err instanceof SmsError ? SMS_ERROR_STATUS[err.code] : undefined;
}

/** The fields of submit_sm, data_sm or one submit_multi destination that a submission is built from. */
export interface SubmitFields {
  source_addr_ton: number;
  source_addr_npi: number;
  source_addr: string;
  dest_addr_ton: number;
  dest_addr_npi: number;
  destination_addr: string;
  esm_class: number;
  registered_delivery: number;
  data_coding: number;
  /** Absent on data_sm. */
  priority_flag?: number;
  schedule_delivery_time?: string;
  validity_period?: string;
  short_message?: Buffer;
  tlvs?: Tlvs;
}

export interface SubmitContext {
  accountId: string;
  /** system_id of the bind that submitted. */
  systemId: string;
  /** Epoch ms that relative times count from. */
  now: number;
}

/** Why a PDU was refused before reaching the SMS service. `reason` is for logs and never holds message content. */
export interface SubmitRefusal {
  status: number;
  reason: string;
}

export function isSubmitRefusal(r: SmsSubmission | SubmitRefusal): r is SubmitRefusal {
  return 'status' in r;
}

const VALID_NPI = new Set([0, 1, 3, 4, 6, 8, 9, 10, 14, 18]);
const DESTINATION = /^\+?\d{3,15}$/;
const MAX_PRIORITY = 3;
// Single-segment capacity: septets for 7-bit codings (sent one septet per octet), octets otherwise.
const SEGMENT_SEPTETS = 160;
const SEGMENT_OCTETS = 140;

const refuse = (status: number, reason: string): SubmitRefusal => ({ status, reason });

function validTon(ton: number): boolean {
  return ton >= 0 && ton <= 6;
}

/** text: decoded and re-encoded by the service; binary: sent as is. undefined: not accepted. */
function codingKind(dataCoding: number): 'text' | 'binary' | undefined {
  if (dataCoding === 0x00 || dataCoding === 0x01 || dataCoding === 0x03 || dataCoding === 0x08) return 'text';
  if (dataCoding === 0x02 || dataCoding === 0x04 || (dataCoding >= 0xf0 && dataCoding <= 0xf7)) return 'binary';
  return undefined;
}

function sevenBit(dataCoding: number): boolean {
  const alphabet = alphabetOf(dataCoding);
  return alphabet === 'GSM-7' || alphabet === 'IA5';
}

/** Whether UDH + payload fit in one SMS. */
function fitsOneSegment(udhOctets: number, payloadOctets: number, dataCoding: number): boolean {
  if (sevenBit(dataCoding)) return payloadOctets + Math.ceil((udhOctets * 8) / 7) <= SEGMENT_SEPTETS;
  return udhOctets + payloadOctets <= SEGMENT_OCTETS;
}

/** Epoch ms of an SMPP time; null for ''; undefined when malformed. */
function smppTime(value: string | undefined, now: number): number | null | undefined {
  if (!value) return null;
  return parseSmppTime(value, new Date(now))?.date.getTime();
}

/** Validates a submit PDU's fields and converts them into a submission, or says which command_status refuses it. */
export function submissionFromPdu(pdu: SubmitFields, ctx: SubmitContext): SmsSubmission | SubmitRefusal {
  const { now } = ctx;
  if (!validTon(pdu.source_addr_ton)) return refuse(CommandStatus.ESME_RINVSRCTON, 'source_addr_ton out of range');
  if (!VALID_NPI.has(pdu.source_addr_npi)) return refuse(CommandStatus.ESME_RINVSRCNPI, 'source_addr_npi out of range');
  if (!validSmppSource(pdu.source_addr, pdu.source_addr_ton)) return refuse(CommandStatus.ESME_RINVSRCADR, 'source_addr empty or malformed');
  if (!validTon(pdu.dest_addr_ton)) return refuse(CommandStatus.ESME_RINVDSTTON, 'dest_addr_ton out of range');
  if (!VALID_NPI.has(pdu.dest_addr_npi)) return refuse(CommandStatus.ESME_RINVDSTNPI, 'dest_addr_npi out of range');
  if (!DESTINATION.test(pdu.destination_addr)) return refuse(CommandStatus.ESME_RINVDSTADR, 'destination_addr is not 3-15 digits');
  // Ferry cannot act on ESME delivery / manual acknowledgements; only normal messages are taken.
  if (pdu.esm_class & EsmClass.TYPE_MASK) return refuse(CommandStatus.ESME_RINVESMCLASS, 'esm_class message type not supported');
  const priority = pdu.priority_flag ?? 0;
  if (priority > MAX_PRIORITY) return refuse(CommandStatus.ESME_RINVPRTFLG, 'priority_flag above 3');

  const dataCoding = pdu.data_coding;
  const kind = codingKind(dataCoding);
  if (!kind) return refuse(CommandStatus.ESME_RINVDCS, 'data_coding not supported');

  const shortMessage = pdu.short_message ?? Buffer.alloc(0);
  const payloadTlv = pdu.tlvs?.message_payload;
  if (payloadTlv !== undefined && shortMessage.length > 0) return refuse(CommandStatus.ESME_RINVMSGLEN, 'both short_message and message_payload');
  const raw = payloadTlv ?? shortMessage;
  if (raw.length === 0) return refuse(CommandStatus.ESME_RINVMSGLEN, 'empty message');

  const udhi = (pdu.esm_class & EsmClass.UDHI) !== 0;
  const parts = messageParts({ esm_class: pdu.esm_class, short_message: shortMessage, tlvs: pdu.tlvs });
  if (udhi && !parts.udh) return refuse(CommandStatus.ESME_RINVESMCLASS, 'UDHI set but the UDH is malformed');
  if (parts.payload.length === 0) return refuse(CommandStatus.ESME_RINVMSGLEN, 'empty message');
  if (alphabetOf(dataCoding) === 'UCS-2' && parts.payload.length % 2 !== 0) return refuse(CommandStatus.ESME_RINVMSGLEN, 'UCS-2 user data of odd length');

  const t = pdu.tlvs;
  const sarCount = [t?.sar_msg_ref_num, t?.sar_total_segments, t?.sar_segment_seqnum].filter((v) => v !== undefined).length;
  if (parts.concat?.via !== 'udh' && sarCount > 0 && sarCount < 3) return refuse(CommandStatus.ESME_RMISSINGOPTPARAM, 'incomplete SAR TLVs');
  const concat = parts.concat;
  if (concat && (concat.total === 0 || concat.seq === 0 || concat.seq > concat.total)) {
    return concat.via === 'udh'
      ? refuse(CommandStatus.ESME_RINVESMCLASS, 'invalid concatenation in the UDH')
      : refuse(CommandStatus.ESME_RINVOPTPARAMVAL, 'invalid SAR TLV values');
  }

  const scheduledAt = smppTime(pdu.schedule_delivery_time, now);
  if (scheduledAt === undefined) return refuse(CommandStatus.ESME_RINVSCHED, 'schedule_delivery_time malformed');
  if (scheduledAt !== null && scheduledAt > now + MAX_SCHEDULE_AHEAD_MS) return refuse(CommandStatus.ESME_RINVSCHED, 'schedule_delivery_time too far ahead');
  let expiresAt = smppTime(pdu.validity_period, now);
  if (expiresAt === undefined) return refuse(CommandStatus.ESME_RINVEXPIRY, 'validity_period malformed');
  if (expiresAt === null && t?.qos_time_to_live) expiresAt = now + t.qos_time_to_live * 1000; // data_sm's validity
  if (expiresAt !== null && expiresAt <= Math.max(now, scheduledAt ?? 0)) return refuse(CommandStatus.ESME_RINVEXPIRY, 'validity_period already past');

  const submission: SmsSubmission = {
    accountId: ctx.accountId,
    ingress: 'smpp',
    source: pdu.source_addr,
    sourceTon: pdu.source_addr_ton,
    sourceNpi: pdu.source_addr_npi,
    destination: pdu.destination_addr,
    destTon: pdu.dest_addr_ton,
    priority,
    registeredDelivery: pdu.registered_delivery,
    scheduledAt: scheduledAt !== null && scheduledAt > now ? scheduledAt : null,
    expiresAt,
    customerSystemId: ctx.systemId,
  };

  if (kind === 'text' && !udhi && !concat) {
    const text = decodeText(parts.payload, dataCoding);
    if (countSegments(text).segments > MAX_SEGMENTS) return refuse(CommandStatus.ESME_RINVMSGLEN, `text over ${MAX_SEGMENTS} segments`);
    submission.text = text;
    return submission;
  }

  // Sent as is: binary data, a customer-split part, or user data behind a customer UDH.
  const udhOctets = raw.length - parts.payload.length;
  if (udhi || concat) {
    if (!fitsOneSegment(udhOctets, parts.payload.length, dataCoding)) return refuse(CommandStatus.ESME_RINVMSGLEN, 'part does not fit one segment');
  } else if (raw.length > MAX_BINARY_OCTETS) {
    return refuse(CommandStatus.ESME_RINVMSGLEN, `binary data over ${MAX_BINARY_OCTETS} octets`);
  }
  submission.bytes = Buffer.from(raw); // a copy: the decoder's buffer is not ours to keep
  submission.dataCoding = dataCoding;
  submission.esmClass = pdu.esm_class;
  if (concat) submission.concat = { reference: concat.reference, total: concat.total, seq: concat.seq, via: concat.via };
  if (alphabetOf(dataCoding) !== 'BINARY') submission.displayText = decodeText(parts.payload, dataCoding);
  return submission;
}
