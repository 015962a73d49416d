/**
 * The codec side of a browser's offer, read and trimmed as text: which G.711 codec and telephone-event the one audio
 * section carries, and the offer narrowed to exactly those, so the answer names one codec and nothing Ferry would
 * have to transcode.
 */
import type { G711Codec } from '../rtp/g711.js';

export class WebRtcNegotiationError extends Error {
  override readonly name = 'WebRtcNegotiationError';
}

export interface OfferedCodec {
  payloadType: number;
  /** Encoding name as written (e.g. PCMU, opus, telephone-event). */
  name: string;
  clockRate: number;
}

/** What Ferry takes from an offer: one G.711 codec, and telephone-event at 8 kHz when the offer has it. */
export interface ChosenCodecs {
  codec: G711Codec;
  payloadType: number;
  dtmfPayloadType: number | undefined;
}

/** RFC 3551's static audio types that may come without an rtpmap line. */
const STATIC_TYPES: Readonly<Record<number, OfferedCodec>> = {
  0: { payloadType: 0, name: 'PCMU', clockRate: 8000 },
  8: { payloadType: 8, name: 'PCMA', clockRate: 8000 },
};

const TELEPHONE_EVENT = 'telephone-event';

function splitLines(sdp: string): string[] {
  return sdp.split(/\r?\n/).filter((line) => line.length > 0);
}

/** Index ranges [start, end) of the m-sections; the session part is before the first. */
function mediaSections(lines: readonly string[]): Array<{ start: number; end: number; kind: string }> {
  const sections: Array<{ start: number; end: number; kind: string }> = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith('m=')) continue;
    if (sections.length > 0) sections[sections.length - 1].end = i;
    sections.push({ start: i, end: lines.length, kind: lines[i].slice(2).split(' ')[0] });
  }
  return sections;
}

/** The one audio section of an offer: throws when the offer has another section or none. */
function onlyAudioSection(lines: readonly string[]): { start: number; end: number } {
  const sections = mediaSections(lines);
  if (sections.length !== 1 || sections[0].kind !== 'audio') {
    const kinds = sections.map((s) => s.kind).join(', ') || 'none';
    throw new WebRtcNegotiationError(`the offer must carry exactly one audio section (it has: ${kinds})`);
  }
  return sections[0];
}

/** The payload-type attribute lines (rtpmap, fmtp, rtcp-fb) name their type first: `a=rtpmap:0 PCMU/8000`. */
const PAYLOAD_ATTRIBUTE = /^a=(rtpmap|fmtp|rtcp-fb):(\d+|\*)[ \t]/;

/** The codecs of the offer's audio section in its order of preference. */
export function offeredAudioCodecs(sdp: string): OfferedCodec[] {
  const lines = splitLines(sdp);
  const { start, end } = onlyAudioSection(lines);
  const formats = lines[start].split(' ').slice(3).map(Number);
  const mapped = new Map<number, OfferedCodec>();
  for (let i = start + 1; i < end; i++) {
    const match = /^a=rtpmap:(\d+)\s+([^/\s]+)\/(\d+)/.exec(lines[i]);
    if (match) mapped.set(Number(match[1]), { payloadType: Number(match[1]), name: match[2], clockRate: Number(match[3]) });
  }
  return formats.map((pt) => mapped.get(pt) ?? STATIC_TYPES[pt]).filter((c): c is OfferedCodec => c !== undefined);
}

/** The first of `preference` the offer carries (at 8 kHz), and its 8 kHz telephone-event when `dtmf`. */
export function chooseCodecs(offered: readonly OfferedCodec[], preference: readonly G711Codec[], dtmf: boolean): ChosenCodecs {
  for (const codec of preference) {
    const match = offered.find((c) => c.name.toUpperCase() === codec && c.clockRate === 8000);
    if (!match) continue;
    const events = dtmf ? offered.find((c) => c.name.toLowerCase() === TELEPHONE_EVENT && c.clockRate === 8000) : undefined;
    return { codec, payloadType: match.payloadType, dtmfPayloadType: events?.payloadType };
  }
  const names = offered.map((c) => `${c.name}/${c.clockRate}`).join(' ') || 'none';
  throw new WebRtcNegotiationError(`the offer has none of ${preference.join(', ')} at 8000 Hz (it offers: ${names})`);
}

/**
 * The offer with its audio section narrowed to `keep` (in that order): the m-line's formats and the rtpmap, fmtp
 * and rtcp-fb lines of the others dropped. Everything else (ICE, DTLS, direction, ssrc) is left as written.
 */
export function restrictAudioCodecs(sdp: string, keep: readonly number[]): string {
  const lines = splitLines(sdp);
  const { start, end } = onlyAudioSection(lines);
  const kept = new Set(keep.map(String));
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (i === start) {
      out.push([...line.split(' ').slice(0, 3), ...keep].join(' '));
      continue;
    }
    if (i > start && i < end) {
      const match = PAYLOAD_ATTRIBUTE.exec(line);
      if (match && match[2] !== '*' && !kept.has(match[2])) continue;
    }
    out.push(line);
  }
  return out.join('\r\n') + '\r\n';
}
