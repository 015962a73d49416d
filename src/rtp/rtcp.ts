/** RTCP (RFC 3550 §6.4, §6.5): sender and receiver reports with an SDES CNAME, as a compound packet, built and parsed. */

export const RTCP_SR = 200;
export const RTCP_RR = 201;
export const RTCP_SDES = 202;
export const RTCP_BYE = 203;
const SDES_CNAME = 1;
/** Seconds from 1900 (NTP's epoch) to 1970. */
const NTP_EPOCH_OFFSET = 2208988800;

/** What one receiver says about one source. */
export interface ReportBlock {
  ssrc: number;
  /** Lost share since the previous report, in 1/256ths. */
  fractionLost: number;
  /** Signed, 24 bits. */
  cumulativeLost: number;
  /** Cycles (high 16 bits) and highest sequence number received (low 16). */
  highestSequence: number;
  /** Interarrival jitter, in timestamp units. */
  jitter: number;
  /** The middle 32 bits of the last SR's NTP timestamp (0 when none). */
  lastSr: number;
  /** Since that SR, in 1/65536 s (0 when none). */
  delaySinceLastSr: number;
}

export interface SenderInfo {
  ntpSeconds: number;
  ntpFraction: number;
  rtpTimestamp: number;
  packetCount: number;
  octetCount: number;
}

export interface RtcpReport {
  kind: 'sr' | 'rr';
  ssrc: number;
  sender?: SenderInfo;
  blocks: ReportBlock[];
}

export interface RtcpCompound {
  reports: RtcpReport[];
  /** SSRC → CNAME from the SDES chunks. */
  cnames: Map<number, string>;
  /** SSRCs that said BYE. */
  bye: number[];
}

export interface RtcpReportInput {
  ssrc: number;
  /** Present for a sender report; a receiver report otherwise. */
  sender?: SenderInfo;
  blocks?: readonly ReportBlock[];
  cname: string;
}

/** The NTP timestamp of a wall-clock time (ms since 1970). */
export function ntpTime(unixMs: number): { ntpSeconds: number; ntpFraction: number } {
  const seconds = Math.floor(unixMs / 1000);
  const fraction = Math.floor(((unixMs - seconds * 1000) / 1000) * 0x100000000);
  return { ntpSeconds: (seconds + NTP_EPOCH_OFFSET) >>> 0, ntpFraction: fraction >>> 0 };
}

/** The middle 32 bits of an NTP timestamp: the LSR field of a report block. */
export function ntpMiddle(ntpSeconds: number, ntpFraction: number): number {
  return (((ntpSeconds & 0xffff) << 16) | (ntpFraction >>> 16)) >>> 0;
}

/** Builds an SR or RR (up to 31 report blocks) followed by an SDES with the CNAME: one compound packet. */
export function buildRtcpReport(input: RtcpReportInput): Buffer {
  const blocks = input.blocks ?? [];
  if (blocks.length > 31) throw new RangeError('an RTCP report carries at most 31 report blocks');
  const cname = Buffer.from(input.cname, 'utf8');
  if (cname.length > 255) throw new RangeError('CNAME longer than 255 octets');
  const reportLength = 8 + (input.sender ? 20 : 0) + 24 * blocks.length;
  // SDES chunk: SSRC, CNAME item (type, length, text), then 1–4 zero octets ending the list, to a 32-bit boundary.
  const chunkLength = 4 + Math.ceil((2 + cname.length + 1) / 4) * 4;
  const sdesLength = 4 + chunkLength;
  const out = Buffer.alloc(reportLength + sdesLength);

  out[0] = 0x80 | blocks.length;
  out[1] = input.sender ? RTCP_SR : RTCP_RR;
  out.writeUInt16BE(reportLength / 4 - 1, 2);
  out.writeUInt32BE(input.ssrc >>> 0, 4);
  let pos = 8;
  if (input.sender) {
    const s = input.sender;
    out.writeUInt32BE(s.ntpSeconds >>> 0, pos);
    out.writeUInt32BE(s.ntpFraction >>> 0, pos + 4);
    out.writeUInt32BE(s.rtpTimestamp >>> 0, pos + 8);
    out.writeUInt32BE(s.packetCount >>> 0, pos + 12);
    out.writeUInt32BE(s.octetCount >>> 0, pos + 16);
    pos += 20;
  }
  for (const b of blocks) {
    out.writeUInt32BE(b.ssrc >>> 0, pos);
    out[pos + 4] = b.fractionLost & 0xff;
    out.writeIntBE(Math.max(-0x800000, Math.min(0x7fffff, b.cumulativeLost)), pos + 5, 3);
    out.writeUInt32BE(b.highestSequence >>> 0, pos + 8);
    out.writeUInt32BE(Math.min(0xffffffff, Math.round(b.jitter)) >>> 0, pos + 12);
    out.writeUInt32BE(b.lastSr >>> 0, pos + 16);
    out.writeUInt32BE(b.delaySinceLastSr >>> 0, pos + 20);
    pos += 24;
  }

  out[pos] = 0x80 | 1;
  out[pos + 1] = RTCP_SDES;
  out.writeUInt16BE(sdesLength / 4 - 1, pos + 2);
  out.writeUInt32BE(input.ssrc >>> 0, pos + 4);
  out[pos + 8] = SDES_CNAME;
  out[pos + 9] = cname.length;
  cname.copy(out, pos + 10);
  return out;
}

/** Parses a compound RTCP packet; null when any part is malformed. Unknown packet types are skipped. Never throws. */
export function parseRtcp(buffer: Buffer): RtcpCompound | null {
  const result: RtcpCompound = { reports: [], cnames: new Map(), bye: [] };
  let pos = 0;
  if (buffer.length < 4) return null;
  while (pos < buffer.length) {
    if (buffer.length - pos < 4) return null;
    const b0 = buffer[pos];
    if (b0 >> 6 !== 2) return null;
    const count = b0 & 0x1f;
    const type = buffer[pos + 1];
    const length = (buffer.readUInt16BE(pos + 2) + 1) * 4;
    if (pos + length > buffer.length) return null;
    let end = pos + length;
    if (b0 & 0x20) {
      const pad = buffer[end - 1];
      if (pad === 0 || pad > length - 4) return null;
      end -= pad;
    }
    const body = pos + 4;
    if (type === RTCP_SR || type === RTCP_RR) {
      const report = parseReport(buffer, body, end, count, type);
      if (!report) return null;
      result.reports.push(report);
    } else if (type === RTCP_SDES) {
      if (!parseSdes(buffer, body, end, count, result.cnames)) return null;
    } else if (type === RTCP_BYE) {
      if (body + 4 * count > end) return null;
      for (let i = 0; i < count; i++) result.bye.push(buffer.readUInt32BE(body + 4 * i));
    }
    pos += length;
  }
  return result;
}

function parseReport(buffer: Buffer, body: number, end: number, count: number, type: number): RtcpReport | null {
  const senderLength = type === RTCP_SR ? 20 : 0;
  if (body + 4 + senderLength + 24 * count > end) return null;
  const report: RtcpReport = { kind: type === RTCP_SR ? 'sr' : 'rr', ssrc: buffer.readUInt32BE(body), blocks: [] };
  let pos = body + 4;
  if (senderLength) {
    report.sender = {
      ntpSeconds: buffer.readUInt32BE(pos),
      ntpFraction: buffer.readUInt32BE(pos + 4),
      rtpTimestamp: buffer.readUInt32BE(pos + 8),
      packetCount: buffer.readUInt32BE(pos + 12),
      octetCount: buffer.readUInt32BE(pos + 16),
    };
    pos += 20;
  }
  for (let i = 0; i < count; i++, pos += 24) {
    report.blocks.push({
      ssrc: buffer.readUInt32BE(pos),
      fractionLost: buffer[pos + 4],
      cumulativeLost: buffer.readIntBE(pos + 5, 3),
      highestSequence: buffer.readUInt32BE(pos + 8),
      jitter: buffer.readUInt32BE(pos + 12),
      lastSr: buffer.readUInt32BE(pos + 16),
      delaySinceLastSr: buffer.readUInt32BE(pos + 20),
    });
  }
  return report;
}

function parseSdes(buffer: Buffer, body: number, end: number, count: number, cnames: Map<number, string>): boolean {
  let pos = body;
  for (let c = 0; c < count; c++) {
    if (pos + 4 > end) return false;
    const ssrc = buffer.readUInt32BE(pos);
    pos += 4;
    while (true) {
      if (pos >= end) return false;
      const item = buffer[pos];
      if (item === 0) break;
      if (pos + 2 > end) return false;
      const length = buffer[pos + 1];
      if (pos + 2 + length > end) return false;
      if (item === SDES_CNAME) cnames.set(ssrc, buffer.toString('utf8', pos + 2, pos + 2 + length));
      pos += 2 + length;
    }
    // The END item, then zero octets to the next 32-bit boundary (counted from the packet's start).
    pos = body + Math.ceil((pos + 1 - body) / 4) * 4;
  }
  return true;
}
