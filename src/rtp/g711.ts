/**
 * G.711 (PCMU, μ-law, PT 0; PCMA, A-law, PT 8) for 16-bit PCM at 8 kHz. The segment arithmetic of ITU-T G.711
 * computed once into tables (decode: 256 entries; encode: one octet per 16-bit sample value), so a 160-sample
 * frame is 160 table look-ups each way.
 */

export type G711Codec = 'PCMU' | 'PCMA';

export const PAYLOAD_TYPE: Readonly<Record<G711Codec, number>> = { PCMU: 0, PCMA: 8 };
export const SAMPLE_RATE = 8000;
/** 20 ms at 8 kHz: samples per frame, and octets per G.711 frame. */
export const FRAME_SAMPLES = 160;

const MULAW_BIAS = 0x84;
const MULAW_CLIP = 32635;

function mulawEncodeSample(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  let magnitude = sign ? -sample : sample;
  if (magnitude > MULAW_CLIP) magnitude = MULAW_CLIP;
  magnitude += MULAW_BIAS;
  // Segment = position of the highest set bit above bit 7 (magnitude is 0x84..0x7fff).
  const exponent = 31 - Math.clz32(magnitude) - 7;
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

function mulawDecodeSample(octet: number): number {
  const u = ~octet & 0xff;
  const t = (((u & 0x0f) << 3) + MULAW_BIAS) << ((u & 0x70) >> 4);
  return u & 0x80 ? MULAW_BIAS - t : t - MULAW_BIAS;
}

function alawEncodeSample(sample: number): number {
  let value = sample >> 3; // A-law works on 13 bits
  let mask: number;
  if (value >= 0) mask = 0xd5;
  else {
    mask = 0x55;
    value = -value - 1;
  }
  // Segment ends 0x1f, 0x3f, 0x7f, …, 0xfff: segment = bits above bit 4.
  const segment = value <= 0x1f ? 0 : 31 - Math.clz32(value) - 4;
  if (segment >= 8) return 0x7f ^ mask;
  const mantissa = segment < 2 ? (value >> 1) & 0x0f : (value >> segment) & 0x0f;
  return ((segment << 4) | mantissa) ^ mask;
}

function alawDecodeSample(octet: number): number {
  const a = octet ^ 0x55;
  let t = (a & 0x0f) << 4;
  const segment = (a & 0x70) >> 4;
  if (segment === 0) t += 8;
  else t = (t + 0x108) << (segment - 1);
  return a & 0x80 ? t : -t;
}

function decodeTable(decode: (octet: number) => number): Int16Array {
  const table = new Int16Array(256);
  for (let i = 0; i < 256; i++) table[i] = decode(i);
  return table;
}

/** Indexed by the sample's 16-bit two's-complement pattern (sample & 0xffff). */
function encodeTable(encode: (sample: number) => number): Uint8Array {
  const table = new Uint8Array(65536);
  for (let i = 0; i < 65536; i++) table[i] = encode((i << 16) >> 16);
  return table;
}

const DECODE: Record<G711Codec, Int16Array> = { PCMU: decodeTable(mulawDecodeSample), PCMA: decodeTable(alawDecodeSample) };
const ENCODE: Record<G711Codec, Uint8Array> = { PCMU: encodeTable(mulawEncodeSample), PCMA: encodeTable(alawEncodeSample) };

/** Encodes `pcm` into `out` at `offset` (one octet per sample); returns the octets written. */
export function encodeG711(codec: G711Codec, pcm: Int16Array, out: Uint8Array, offset = 0, count = pcm.length): number {
  const table = ENCODE[codec];
  for (let i = 0; i < count; i++) out[offset + i] = table[pcm[i] & 0xffff];
  return count;
}

/** Decodes `count` octets of `bytes` from `offset` into `out` (from 0); returns the samples written. */
export function decodeG711(codec: G711Codec, bytes: Uint8Array, out: Int16Array, offset = 0, count = bytes.length - offset): number {
  const table = DECODE[codec];
  const n = Math.min(count, out.length);
  for (let i = 0; i < n; i++) out[i] = table[bytes[offset + i]];
  return n;
}

/** The codec of a static payload type, or undefined. */
export function codecOfPayloadType(payloadType: number): G711Codec | undefined {
  return payloadType === 0 ? 'PCMU' : payloadType === 8 ? 'PCMA' : undefined;
}

/** The octet each codec sends for digital silence (0xff μ-law, 0xd5 A-law). */
export function silenceOctet(codec: G711Codec): number {
  return ENCODE[codec][0];
}

/** Octet → octet between the two laws, through linear (decode, then encode): a 256-entry look-up per direction. */
const TRANSCODE: Record<G711Codec, Record<G711Codec, Uint8Array | null>> = {
  PCMU: { PCMU: null, PCMA: transcodeTable('PCMU', 'PCMA') },
  PCMA: { PCMU: transcodeTable('PCMA', 'PCMU'), PCMA: null },
};

function transcodeTable(from: G711Codec, to: G711Codec): Uint8Array {
  const table = new Uint8Array(256);
  for (let i = 0; i < 256; i++) table[i] = ENCODE[to][DECODE[from][i] & 0xffff];
  return table;
}

/** The table that maps `from` octets to `to` octets; null when the codecs are the same (copy as is). */
export function transcodingTable(from: G711Codec, to: G711Codec): Uint8Array | null {
  return TRANSCODE[from][to];
}
