/**
 * G.711 expansion (ITU-T G.711): μ-law and A-law bytes to 16-bit linear PCM. Tables, because every sample of a
 * telephony WAV goes through one of these.
 */

function expandMulaw(byte: number): number {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = (((u & 0x0f) << 3) + 0x84) << exponent;
  return u & 0x80 ? 0x84 - magnitude : magnitude - 0x84;
}

function expandAlaw(byte: number): number {
  const a = byte ^ 0x55;
  const exponent = (a >> 4) & 0x07;
  let magnitude = (a & 0x0f) << 4;
  magnitude = exponent === 0 ? magnitude + 8 : (magnitude + 0x108) << (exponent - 1);
  return a & 0x80 ? magnitude : -magnitude;
}

function table(expand: (byte: number) => number): Int16Array {
  const out = new Int16Array(256);
  for (let i = 0; i < 256; i++) out[i] = expand(i);
  return out;
}

/** μ-law byte → linear sample, indexed by the byte. */
export const MULAW_TO_LINEAR: Int16Array = table(expandMulaw);
/** A-law byte → linear sample, indexed by the byte. */
export const ALAW_TO_LINEAR: Int16Array = table(expandAlaw);
