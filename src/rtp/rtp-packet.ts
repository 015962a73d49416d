/** RTP fixed header (RFC 3550 §5.1): encode into a caller's buffer, decode as a view over the received bytes. */

export const RTP_VERSION = 2;
export const RTP_HEADER_LENGTH = 12;

export interface RtpHeader {
  marker: boolean;
  payloadType: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  /** Contributing sources (a mixer's); at most 15. */
  csrc?: readonly number[];
}

/** A decoded packet: the header fields and where the payload sits in `buffer` (no copy). */
export interface RtpPacket extends RtpHeader {
  padding: boolean;
  /** The extension's profile word when the X bit is set (its body is skipped). */
  extensionProfile: number | undefined;
  buffer: Buffer;
  payloadOffset: number;
  payloadLength: number;
}

/**
 * Writes the 12-octet fixed header (no CSRC, no extension) at `offset`: the per-packet hot path.
 * Returns the header length.
 */
export function writeRtpHeader(out: Buffer, offset: number, marker: boolean, payloadType: number, sequence: number, timestamp: number, ssrc: number): number {
  out[offset] = RTP_VERSION << 6;
  out[offset + 1] = (marker ? 0x80 : 0) | (payloadType & 0x7f);
  out.writeUInt16BE(sequence & 0xffff, offset + 2);
  out.writeUInt32BE(timestamp >>> 0, offset + 4);
  out.writeUInt32BE(ssrc >>> 0, offset + 8);
  return RTP_HEADER_LENGTH;
}

/** Encodes header + payload into `out` at `offset`; returns the packet length. Throws only on a caller's error. */
export function encodeRtp(header: RtpHeader, payload: Uint8Array, out: Buffer, offset = 0): number {
  const csrc = header.csrc ?? [];
  if (csrc.length > 15) throw new RangeError('RTP carries at most 15 CSRCs');
  if (header.payloadType < 0 || header.payloadType > 127) throw new RangeError(`payload type ${header.payloadType} is not 0..127`);
  const length = RTP_HEADER_LENGTH + 4 * csrc.length + payload.length;
  if (out.length - offset < length) throw new RangeError(`buffer too small for a ${length}-octet RTP packet`);
  writeRtpHeader(out, offset, header.marker, header.payloadType, header.sequence, header.timestamp, header.ssrc);
  out[offset] |= csrc.length;
  let pos = offset + RTP_HEADER_LENGTH;
  for (const id of csrc) {
    out.writeUInt32BE(id >>> 0, pos);
    pos += 4;
  }
  out.set(payload, pos);
  return length;
}

/** A packet object to decode into again and again (the receive path's, so it allocates nothing per packet). */
export function emptyRtpPacket(): RtpPacket {
  return { marker: false, payloadType: 0, sequence: 0, timestamp: 0, ssrc: 0, csrc: undefined, padding: false, extensionProfile: undefined, buffer: Buffer.alloc(0), payloadOffset: 0, payloadLength: 0 };
}

/**
 * Decodes a received datagram, into `into` when given (else a new object); null when it is not a valid RTP packet
 * (wrong version, lengths that do not add up). Never throws: the receive path counts nulls as malformed.
 */
export function decodeRtp(buffer: Buffer, into?: RtpPacket): RtpPacket | null {
  const size = buffer.length;
  if (size < RTP_HEADER_LENGTH) return null;
  const b0 = buffer[0];
  if (b0 >> 6 !== RTP_VERSION) return null;
  const padding = (b0 & 0x20) !== 0;
  const hasExtension = (b0 & 0x10) !== 0;
  const csrcCount = b0 & 0x0f;
  const b1 = buffer[1];
  let pos = RTP_HEADER_LENGTH + 4 * csrcCount;
  if (pos > size) return null;
  let extensionProfile: number | undefined;
  if (hasExtension) {
    if (pos + 4 > size) return null;
    extensionProfile = buffer.readUInt16BE(pos);
    const words = buffer.readUInt16BE(pos + 2);
    pos += 4 + 4 * words;
    if (pos > size) return null;
  }
  let end = size;
  if (padding) {
    // The last octet counts the padding octets, itself included.
    const pad = buffer[size - 1];
    if (pad === 0 || end - pad < pos) return null;
    end -= pad;
  }
  let csrc: number[] | undefined;
  if (csrcCount > 0) {
    csrc = new Array<number>(csrcCount);
    for (let i = 0; i < csrcCount; i++) csrc[i] = buffer.readUInt32BE(RTP_HEADER_LENGTH + 4 * i);
  }
  const packet = into ?? emptyRtpPacket();
  packet.marker = (b1 & 0x80) !== 0;
  packet.payloadType = b1 & 0x7f;
  packet.sequence = buffer.readUInt16BE(2);
  packet.timestamp = buffer.readUInt32BE(4);
  packet.ssrc = buffer.readUInt32BE(8);
  packet.csrc = csrc;
  packet.padding = padding;
  packet.extensionProfile = extensionProfile;
  packet.buffer = buffer;
  packet.payloadOffset = pos;
  packet.payloadLength = end - pos;
  return packet;
}

/** The payload as a view (no copy). */
export function rtpPayload(packet: RtpPacket): Buffer {
  return packet.buffer.subarray(packet.payloadOffset, packet.payloadOffset + packet.payloadLength);
}

/** Signed distance a → b in 16-bit sequence space (positive when b is after a, across the wrap). */
export function sequenceDelta(a: number, b: number): number {
  return (((b - a) & 0xffff) << 16) >> 16;
}

/** Signed distance a → b in 32-bit timestamp space (positive when b is after a, across the wrap). */
export function timestampDelta(a: number, b: number): number {
  return (b - a) | 0;
}

/** The sequence number after `sequence` (wraps 65535 → 0). */
export function nextSequence(sequence: number, step = 1): number {
  return (sequence + step) & 0xffff;
}

/** A timestamp advanced by `ticks` clock units (wraps modulo 2^32). */
export function addTimestamp(timestamp: number, ticks: number): number {
  return (timestamp + ticks) >>> 0;
}
