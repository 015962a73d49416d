import { DataCoding, EsmClass } from '../constants.js';
import { SmppEncodeError } from '../errors.js';
import { chooseDataCoding, encodeWith } from './encoding.js';
import { gsm7CharCost } from './gsm7.js';
import { concatUdh16, concatUdh8 } from './udh.js';

export interface SplitOptions {
  /** Preferred data_coding; falls back to GSM-7 or UCS-2 when it cannot carry the text. */
  dataCoding?: number;
  /** How parts are tied together: an 8-bit UDH in short_message (default) or SAR TLVs. */
  concat?: 'udh' | 'sar';
  /** Concatenation reference; defaults to a rotating counter (8 bits for UDH, 16 for SAR). */
  reference?: number;
  /** Use the 16-bit-reference UDH (7 octets) instead of the 8-bit one. */
  udh16?: boolean;
  /** Refuse texts needing more parts than this (255 is the protocol's limit). */
  maxParts?: number;
}

export interface SarFields {
  sar_msg_ref_num: number;
  sar_total_segments: number;
  sar_segment_seqnum: number;
}

export interface SplitMessage {
  dataCoding: number;
  parts: number;
  /** Concatenation reference used (undefined for a single part). */
  reference?: number;
  /** esm_class bits to OR into each part (UDHI when UDH concatenation was used). */
  esmClass: number;
  /** short_message octets per part, UDH included when `concat` is 'udh'. */
  segments: Buffer[];
  /** SAR TLVs per part when `concat` is 'sar' and there is more than one part. */
  sar?: SarFields[];
}

interface Limits {
  single: number;
  multi: number;
}

// Per-part capacity in the coding's own units: septets, octets or UTF-16 units.
const GSM_LIMITS: Limits = { single: 160, multi: 153 };
const UCS2_LIMITS: Limits = { single: 70, multi: 67 };
const OCTET_LIMITS: Limits = { single: 140, multi: 134 };

function limitsFor(dataCoding: number): Limits {
  if (dataCoding === DataCoding.UCS2) return UCS2_LIMITS;
  if (dataCoding === DataCoding.LATIN1) return OCTET_LIMITS;
  return GSM_LIMITS; // GSM-7 and IA5 are both 7-bit alphabets
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

// UTF-16 units spanned by the character last measured by costAt (kept out of the return value to stay allocation-free).
let span = 1;

/** Cost of the character starting at index i; sets `span`. */
function costAt(text: string, i: number, dataCoding: number): number {
  const code = text.charCodeAt(i);
  if (dataCoding === DataCoding.UCS2) {
    span = isHighSurrogate(code) && i + 1 < text.length ? 2 : 1;
    return span;
  }
  span = 1;
  if (dataCoding === DataCoding.SMSC_DEFAULT) {
    const c = gsm7CharCost(code);
    return c < 0 ? 1 : c; // unrepresentable characters become one '?'
  }
  return 1;
}

/**
 * Walks the text and reports each part's [start, end) in UTF-16 units. A character never straddles two parts:
 * an escape pair (GSM-7) or a surrogate pair (UCS-2) moves whole to the next part.
 */
function walkParts(text: string, dataCoding: number, onPart?: (start: number, end: number) => void): { parts: number; units: number } {
  const limits = limitsFor(dataCoding);
  let total = 0;
  for (let i = 0; i < text.length; ) {
    total += costAt(text, i, dataCoding);
    i += span;
  }
  if (total <= limits.single) {
    onPart?.(0, text.length);
    return { parts: 1, units: total };
  }
  let parts = 0;
  let start = 0;
  let used = 0;
  for (let i = 0; i < text.length; ) {
    const cost = costAt(text, i, dataCoding);
    if (used + cost > limits.multi) {
      onPart?.(start, i);
      parts++;
      start = i;
      used = 0;
    }
    used += cost;
    i += span;
  }
  onPart?.(start, text.length);
  return { parts: parts + 1, units: total };
}

let nextReference = Math.floor(Math.random() * 0x10000);

/** Splits text into short_message segments with UDH or SAR concatenation. */
export function splitMessage(text: string, options: SplitOptions = {}): SplitMessage {
  const dataCoding = chooseDataCoding(text, options.dataCoding);
  const ranges: Array<[number, number]> = [];
  const { parts } = walkParts(text, dataCoding, (s, e) => ranges.push([s, e]));
  const maxParts = Math.min(options.maxParts ?? 255, 255);
  if (parts > maxParts) throw new SmppEncodeError(`text needs ${parts} parts; the limit is ${maxParts}`);
  if (parts === 1) return { dataCoding, parts, esmClass: 0, segments: [encodeWith(text, dataCoding)] };

  const concat = options.concat ?? 'udh';
  const reference = (options.reference ?? nextReference++) & (concat === 'sar' || options.udh16 ? 0xffff : 0xff);
  const segments: Buffer[] = [];
  const sar: SarFields[] = [];
  ranges.forEach(([s, e], idx) => {
    const body = encodeWith(text.slice(s, e), dataCoding);
    if (concat === 'sar') {
      segments.push(body);
      sar.push({ sar_msg_ref_num: reference, sar_total_segments: parts, sar_segment_seqnum: idx + 1 });
    } else {
      const udh = options.udh16 ? concatUdh16(reference, parts, idx + 1) : concatUdh8(reference, parts, idx + 1);
      segments.push(Buffer.concat([udh, body], udh.length + body.length));
    }
  });
  return concat === 'sar'
    ? { dataCoding, parts, reference, esmClass: 0, segments, sar }
    : { dataCoding, parts, reference, esmClass: EsmClass.UDHI, segments };
}

export interface SegmentCount {
  encoding: 'GSM-7' | 'UCS-2';
  segments: number;
  /** User-visible characters (a surrogate pair counts once). */
  characters: number;
  /** Septets for GSM-7 (extension characters count twice) or UTF-16 units for UCS-2. */
  units: number;
}

/** Cheap part count for quoting and validation; agrees with `splitMessage` for the default options. */
export function countSegments(text: string): SegmentCount {
  const dataCoding = chooseDataCoding(text);
  const { parts, units } = walkParts(text, dataCoding);
  let characters = 0;
  for (let i = 0; i < text.length; i++) {
    characters++;
    if (isHighSurrogate(text.charCodeAt(i)) && i + 1 < text.length) i++;
  }
  return { encoding: dataCoding === DataCoding.UCS2 ? 'UCS-2' : 'GSM-7', segments: parts, characters, units };
}
