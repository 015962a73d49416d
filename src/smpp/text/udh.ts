import { EsmClass } from '../constants.js';
import type { Tlvs } from '../tlv.js';

/** Information element ids Ferry reads and writes. */
export const UdhIe = {
  CONCAT_8BIT_REF: 0x00,
  CONCAT_16BIT_REF: 0x08,
} as const;

export interface UdhElement {
  id: number;
  data: Buffer;
}

export interface ParsedUdh {
  /** Octets the header occupies including the UDHL octet itself. */
  length: number;
  elements: UdhElement[];
}

export interface ConcatInfo {
  reference: number;
  total: number;
  seq: number;
}

/** 8-bit reference concatenation header: UDHL 5, IE 00, IEDL 3, ref, total, seq. */
export function concatUdh8(reference: number, total: number, seq: number): Buffer {
  return Buffer.from([0x05, UdhIe.CONCAT_8BIT_REF, 0x03, reference & 0xff, total, seq]);
}

/** 16-bit reference concatenation header: UDHL 6, IE 08, IEDL 4, ref hi, ref lo, total, seq. */
export function concatUdh16(reference: number, total: number, seq: number): Buffer {
  return Buffer.from([0x06, UdhIe.CONCAT_16BIT_REF, 0x04, (reference >> 8) & 0xff, reference & 0xff, total, seq]);
}

/** Parses the UDH at the start of `bytes`; undefined when it is malformed (lengths overrun). */
export function parseUdh(bytes: Uint8Array): ParsedUdh | undefined {
  if (bytes.length < 1) return undefined;
  const udhl = bytes[0];
  if (udhl + 1 > bytes.length) return undefined;
  const elements: UdhElement[] = [];
  let i = 1;
  const end = 1 + udhl;
  while (i < end) {
    if (i + 2 > end) return undefined;
    const id = bytes[i];
    const len = bytes[i + 1];
    if (i + 2 + len > end) return undefined;
    elements.push({ id, data: Buffer.from(bytes.subarray(i + 2, i + 2 + len)) });
    i += 2 + len;
  }
  return { length: end, elements };
}

/** Concatenation info carried in a parsed UDH, if any. */
export function concatFromUdh(udh: ParsedUdh): ConcatInfo | undefined {
  for (const e of udh.elements) {
    if (e.id === UdhIe.CONCAT_8BIT_REF && e.data.length === 3) {
      return { reference: e.data[0], total: e.data[1], seq: e.data[2] };
    }
    if (e.id === UdhIe.CONCAT_16BIT_REF && e.data.length === 4) {
      return { reference: (e.data[0] << 8) | e.data[1], total: e.data[2], seq: e.data[3] };
    }
  }
  return undefined;
}

export interface MessageParts {
  /** User data without any UDH (from short_message, or message_payload when present). */
  payload: Buffer;
  udh?: ParsedUdh;
  concat?: ConcatInfo & { via: 'udh' | 'sar' };
}

/**
 * Splits an incoming submit_sm/deliver_sm/data_sm body into payload, UDH and concatenation info, reading
 * UDH when esm_class has UDHI and SAR TLVs otherwise.
 */
export function messageParts(pdu: { esm_class?: number; short_message?: Buffer; tlvs?: Tlvs }): MessageParts {
  const raw = pdu.tlvs?.message_payload ?? pdu.short_message ?? Buffer.alloc(0);
  let payload = raw;
  let udh: ParsedUdh | undefined;
  let concat: MessageParts['concat'];
  if ((pdu.esm_class ?? 0) & EsmClass.UDHI) {
    udh = parseUdh(raw);
    if (udh) {
      payload = raw.subarray(udh.length);
      const c = concatFromUdh(udh);
      if (c) concat = { ...c, via: 'udh' };
    }
  }
  const t = pdu.tlvs;
  if (!concat && t?.sar_msg_ref_num !== undefined && t.sar_total_segments !== undefined && t.sar_segment_seqnum !== undefined) {
    concat = { reference: t.sar_msg_ref_num, total: t.sar_total_segments, seq: t.sar_segment_seqnum, via: 'sar' };
  }
  return { payload, udh, concat };
}
