import type { UpstreamConfig } from '../../config/schema.js';
import { DataCoding, EsmClass, Npi, Ton } from '../constants.js';
import type { PduInputOf, Tlvs } from '../pdu.js';
import { encodeText } from '../text/encoding.js';
import { splitMessage } from '../text/segments.js';
import { concatUdh8 } from '../text/udh.js';
import type { OutboundMessage } from './outbound.js';

/** What of an upstream's configuration shapes its submit_sm PDUs. One object per Upstream (the cache key). */
export interface SubmitProfile {
  readonly defaultDataCoding: number;
  readonly usePayloadTlv: boolean;
  readonly sourceTon?: number;
  readonly sourceNpi?: number;
  readonly destTon: number;
  readonly destNpi: number;
}

export type SubmitPdu = PduInputOf<'submit_sm'>;

export function submitProfile(c: UpstreamConfig): SubmitProfile {
  return Object.freeze({
    defaultDataCoding: c.defaultDataCoding,
    usePayloadTlv: c.usePayloadTlv,
    sourceTon: c.sourceTon,
    sourceNpi: c.sourceNpi,
    destTon: c.destTon,
    destNpi: c.destNpi,
  });
}

/**
 * The concatenation reference of a message: a hash of its Ferry id, so every attempt (and every instance) uses the
 * same one and a handset can join parts sent by a resumed attempt.
 */
export function concatReference(messageId: string): number {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < messageId.length; i++) {
    h ^= messageId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h ^ (h >>> 16)) & 0xffff;
}

// Encoded PDUs of a message for the profile they were built for: failover to an upstream with the same profile
// object, or a resumed attempt on the same message object, reuses them instead of encoding again.
const cache = new WeakMap<OutboundMessage, { profile: SubmitProfile; pdus: SubmitPdu[] }>();

/** The submit_sm PDUs (one per part) for a message on an upstream. Throws SmppEncodeError when it cannot be sent. */
export function submitPdus(msg: OutboundMessage, profile: SubmitProfile): SubmitPdu[] {
  const hit = cache.get(msg);
  if (hit && hit.profile === profile) return hit.pdus;
  const pdus = build(msg, profile);
  cache.set(msg, { profile, pdus });
  return pdus;
}

function build(msg: OutboundMessage, p: SubmitProfile): SubmitPdu[] {
  const source = stripPlus(msg.source);
  const base: SubmitPdu = {
    command: 'submit_sm',
    service_type: msg.serviceType ?? '',
    source_addr_ton: msg.sourceTon ?? p.sourceTon ?? autoSourceTon(source),
    source_addr_npi: msg.sourceNpi ?? p.sourceNpi ?? autoSourceNpi(source),
    source_addr: source,
    dest_addr_ton: msg.destTon ?? p.destTon,
    dest_addr_npi: msg.destNpi ?? p.destNpi,
    destination_addr: stripPlus(msg.destination),
    esm_class: msg.esmClass ?? 0,
    protocol_id: msg.protocolId ?? 0,
    priority_flag: msg.priority,
    schedule_delivery_time: msg.scheduleDeliveryTime ?? '',
    validity_period: msg.validityPeriod ?? '',
    registered_delivery: msg.registeredDelivery,
    data_coding: 0,
    short_message: EMPTY,
  };
  if (msg.text !== undefined) return fromText(msg, msg.text, base, p);
  return fromBytes(msg, msg.bytes ?? EMPTY, base, p);
}

const EMPTY = Buffer.alloc(0);

function fromText(msg: OutboundMessage, text: string, base: SubmitPdu, p: SubmitProfile): SubmitPdu[] {
  const preferred = msg.dataCoding ?? p.defaultDataCoding;
  if (p.usePayloadTlv) {
    const { dataCoding, bytes } = encodeText(text, preferred);
    if (bytes.length > singleLimit(dataCoding)) return [withTlvs(base, msg.tlvs, { data_coding: dataCoding, tlvs: { message_payload: bytes } })];
  }
  const split = splitMessage(text, { dataCoding: preferred, reference: concatReference(msg.id) });
  return split.segments.map((segment) => withTlvs(base, msg.tlvs, { data_coding: split.dataCoding, esm_class: (base.esm_class ?? 0) | split.esmClass, short_message: segment }));
}

function fromBytes(msg: OutboundMessage, bytes: Buffer, base: SubmitPdu, p: SubmitProfile): SubmitPdu[] {
  const dataCoding = msg.dataCoding ?? p.defaultDataCoding;
  if (msg.udh) {
    const sm = Buffer.concat([msg.udh, bytes]);
    return [withTlvs(base, msg.tlvs, { data_coding: dataCoding, esm_class: (base.esm_class ?? 0) | EsmClass.UDHI, short_message: sm })];
  }
  if (bytes.length <= singleLimit(dataCoding)) return [withTlvs(base, msg.tlvs, { data_coding: dataCoding, short_message: bytes })];
  if (p.usePayloadTlv) return [withTlvs(base, msg.tlvs, { data_coding: dataCoding, tlvs: { message_payload: bytes } })];
  // Split raw octets: 153 septets (GSM-7 unpacked) or 134 octets behind a 6-octet UDH.
  const chunk = dataCoding === DataCoding.SMSC_DEFAULT || dataCoding === DataCoding.IA5 ? 153 : 134;
  const ranges: Array<[number, number]> = [];
  for (let s = 0; s < bytes.length; ) {
    let e = Math.min(bytes.length, s + chunk);
    // Never cut a GSM-7 escape pair, nor a UTF-16 unit, in two.
    if (dataCoding === DataCoding.SMSC_DEFAULT && e < bytes.length && bytes[e - 1] === 0x1b) e--;
    ranges.push([s, e]);
    s = e;
  }
  const ref = concatReference(msg.id) & 0xff;
  return ranges.map(([s, e], i) =>
    withTlvs(base, msg.tlvs, {
      data_coding: dataCoding,
      esm_class: (base.esm_class ?? 0) | EsmClass.UDHI,
      short_message: Buffer.concat([concatUdh8(ref, ranges.length, i + 1), bytes.subarray(s, e)]),
    }),
  );
}

function singleLimit(dataCoding: number): number {
  return dataCoding === DataCoding.SMSC_DEFAULT || dataCoding === DataCoding.IA5 ? 160 : 140;
}

function withTlvs(base: SubmitPdu, extra: Tlvs | undefined, fields: Partial<SubmitPdu>): SubmitPdu {
  const pdu = { ...base, ...fields };
  if (extra) pdu.tlvs = { ...extra, ...(fields.tlvs ?? {}) };
  return pdu;
}

function stripPlus(addr: string): string {
  return addr.charCodeAt(0) === 0x2b ? addr.slice(1) : addr;
}

function isDigits(s: string): boolean {
  return s.length > 0 && /^[0-9]+$/.test(s);
}

// A long all-digit sender is an international number, a short one a network short code, anything else alphanumeric.
function autoSourceTon(source: string): number {
  if (!isDigits(source)) return Ton.ALPHANUMERIC;
  return source.length > 6 ? Ton.INTERNATIONAL : Ton.NETWORK_SPECIFIC;
}

function autoSourceNpi(source: string): number {
  return isDigits(source) && source.length > 6 ? Npi.ISDN : Npi.UNKNOWN;
}
