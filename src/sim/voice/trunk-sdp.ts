/** The trunk's side of the offer/answer (RFC 3264): read the caller's offer, answer it with one G.711 codec. */
import sdpTransform from 'sdp-transform';
import type { G711Codec } from '../../rtp/index.js';

const CODEC_PT: Readonly<Record<G711Codec, number>> = { PCMU: 0, PCMA: 8 };

export type OfferReading =
  | { ok: true; codec: G711Codec; remote: { host: string; port: number }; dtmfPayloadType: number | null }
  | { ok: false; reason: string };

/**
 * What the caller offered: its first G.711 codec (the caller's preference), where to send RTP (the audio line's c=,
 * else the session's) and its telephone-event payload type, if any. Anything unusable is a reason, not a throw.
 */
export function readOffer(sdp: string): OfferReading {
  let parsed: sdpTransform.SessionDescription;
  try {
    parsed = sdpTransform.parse(sdp);
  } catch {
    return { ok: false, reason: 'the offer could not be parsed' };
  }
  const audio = parsed.media?.find((m) => m.type === 'audio' && m.port > 0);
  if (!audio) return { ok: false, reason: 'the offer has no audio stream' };
  const host = audio.connection?.ip ?? parsed.connection?.ip;
  if (!host) return { ok: false, reason: 'the offer has no connection address' };
  const rtp = audio.rtp ?? [];
  // Only the static payload types (RFC 3551: 0 PCMU, 8 PCMA, rtpmap optional): Ferry's media plane sends and
  // decodes G.711 by those numbers alone.
  const nameOf = (pt: number): string => (pt === 0 ? 'PCMU' : pt === 8 ? 'PCMA' : '');
  const payloads = String(audio.payloads ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  const codecPt = payloads.find((pt) => nameOf(pt) !== '');
  if (codecPt === undefined) return { ok: false, reason: `no G.711 codec offered (payloads ${payloads.join(' ') || 'none'})` };
  const dtmf = rtp.find((r) => r.codec.toLowerCase() === 'telephone-event' && r.rate === 8000 && payloads.includes(r.payload));
  return { ok: true, codec: nameOf(codecPt) as G711Codec, remote: { host, port: audio.port }, dtmfPayloadType: dtmf ? dtmf.payload : null };
}

export interface AnswerInput {
  host: string;
  port: number;
  sessionId: number;
  codec: G711Codec;
  /** The offer's telephone-event payload type, to accept RFC 4733; null to refuse it. */
  dtmfPayloadType: number | null;
}

/** Our answer: the one codec we chose, telephone-event when taken, 20 ms packets, audio both ways. */
export function buildAnswer(a: AnswerInput): string {
  const ip = a.host.includes(':') ? 6 : 4;
  const codecPt = CODEC_PT[a.codec];
  const rtp: Array<{ payload: number; codec: string; rate: number }> = [{ payload: codecPt, codec: a.codec, rate: 8000 }];
  const fmtp: Array<{ payload: number; config: string }> = [];
  if (a.dtmfPayloadType !== null) {
    rtp.push({ payload: a.dtmfPayloadType, codec: 'telephone-event', rate: 8000 });
    fmtp.push({ payload: a.dtmfPayloadType, config: '0-16' });
  }
  return sdpTransform.write({
    version: 0,
    origin: { username: 'ferry-trunk-sim', sessionId: a.sessionId, sessionVersion: 1, netType: 'IN', ipVer: ip, address: a.host },
    name: 'ferry trunk simulator',
    connection: { version: ip, ip: a.host },
    timing: { start: 0, stop: 0 },
    media: [{ type: 'audio', port: a.port, protocol: 'RTP/AVP', payloads: rtp.map((r) => r.payload).join(' '), rtp, fmtp, ptime: 20, direction: 'sendrecv' }],
  });
}
