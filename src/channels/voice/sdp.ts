import sdpTransform from 'sdp-transform';
import type { G711Codec } from '../../rtp/index.js';

const DTMF_PT = 101;
const CODEC_PT: Readonly<Record<G711Codec, number>> = { PCMU: 0, PCMA: 8 };

/**
 * Our offer: G.711 μ-law then A-law, RFC 4733 events 0-16, 20 ms packets, audio both ways. As an answer: the codec
 * chosen from the offer, and its telephone-event type (`dtmfPayloadType`; null when the offer had none).
 */
export function buildOffer(o: { host: string; port: number; sessionId: number; codecs?: readonly G711Codec[]; dtmfPayloadType?: number | null }): string {
  const codecs = o.codecs?.length ? o.codecs : (['PCMU', 'PCMA'] as const);
  const dtmf = o.dtmfPayloadType === undefined ? DTMF_PT : o.dtmfPayloadType;
  const events = dtmf === null ? [] : [dtmf];
  const ip = o.host.includes(':') ? 6 : 4;
  return sdpTransform.write({
    version: 0,
    origin: { username: 'ferry', sessionId: o.sessionId, sessionVersion: 1, netType: 'IN', ipVer: ip, address: o.host },
    name: 'ferry',
    connection: { version: ip, ip: o.host },
    timing: { start: 0, stop: 0 },
    media: [
      {
        type: 'audio',
        port: o.port,
        protocol: 'RTP/AVP',
        payloads: [...codecs.map((c) => CODEC_PT[c]), ...events].join(' '),
        rtp: [...codecs.map((c) => ({ payload: CODEC_PT[c], codec: c, rate: 8000 })), ...events.map((pt) => ({ payload: pt, codec: 'telephone-event', rate: 8000 }))],
        fmtp: events.map((pt) => ({ payload: pt, config: '0-16' })),
        ptime: 20,
        direction: 'sendrecv',
      },
    ],
  });
}

export type AnswerReading = { ok: true; codec: G711Codec; remote: { host: string; port: number }; dtmfPayloadType: number | null; onHold: boolean } | { ok: false; reason: string };

/**
 * What the far end's answer agreed to: the first G.711 codec it kept, where to send RTP, and the telephone-event
 * payload type if it takes RFC 4733 (else digits are listened for in-band). Anything unusable is a reason, not a throw.
 */
export function readAnswer(sdp: string): AnswerReading {
  let parsed: sdpTransform.SessionDescription;
  try {
    parsed = sdpTransform.parse(sdp);
  } catch {
    return { ok: false, reason: 'the SDP answer could not be parsed' };
  }
  const audio = parsed.media?.find((m) => m.type === 'audio' && m.port > 0);
  if (!audio) return { ok: false, reason: 'the SDP answer has no audio stream' };
  const host = audio.connection?.ip ?? parsed.connection?.ip;
  if (!host) return { ok: false, reason: 'the SDP answer has no connection address' };
  const payloads = String(audio.payloads ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  const nameOf = (pt: number) => audio.rtp.find((r) => r.payload === pt)?.codec.toUpperCase() ?? (pt === 0 ? 'PCMU' : pt === 8 ? 'PCMA' : '');
  const codecPt = payloads.find((pt) => nameOf(pt) === 'PCMU' || nameOf(pt) === 'PCMA');
  if (codecPt === undefined) return { ok: false, reason: `the far end offered no G.711 codec (payloads ${payloads.join(' ') || 'none'})` };
  const dtmf = audio.rtp.find((r) => r.codec.toLowerCase() === 'telephone-event' && r.rate === 8000);
  const direction = audio.direction ?? parsed.direction;
  return {
    ok: true,
    codec: nameOf(codecPt) as G711Codec,
    remote: { host, port: audio.port },
    dtmfPayloadType: dtmf ? dtmf.payload : null,
    onHold: direction === 'sendonly' || direction === 'inactive' || host === '0.0.0.0',
  };
}
