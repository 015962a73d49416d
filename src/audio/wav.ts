import { AudioFormatError } from './errors.js';
import { ALAW_TO_LINEAR, MULAW_TO_LINEAR } from './g711.js';

/**
 * WAV (RIFF/WAVE) decoding to mono 16-bit PCM, parsed here rather than with a library: the format is small, and
 * owning the parser lets every size the header declares be checked against the bytes really present before anything
 * is allocated, with one error type whose message can be shown to the uploader.
 */

export interface WavLimits {
  /** Larger inputs are refused before any parsing. */
  maxBytes: number;
  /** Longer audio is refused before any sample is decoded. */
  maxDurationSeconds: number;
  /**
   * Accept a last data chunk that declares more bytes than follow, as written by programs that stream a WAV to a
   * pipe before knowing its length (espeak-ng --stdout declares 0x7ffff000). Off for uploads: there it means a
   * truncated file.
   */
  streamedLength?: boolean;
}

export interface DecodedWav {
  /** The file's rate, 8,000–48,000 Hz. */
  sampleRate: number;
  /** The file's channel count (1 or 2); `pcm` is always mono. */
  channels: number;
  /** What the file held, e.g. "16-bit PCM", "μ-law", "32-bit float". */
  encoding: string;
  /** Mono samples at `sampleRate` (stereo is averaged). */
  pcm: Int16Array;
}

export const MIN_WAV_RATE = 8_000;
export const MAX_WAV_RATE = 48_000;

const FORMAT_PCM = 0x0001;
const FORMAT_FLOAT = 0x0003;
const FORMAT_ALAW = 0x0006;
const FORMAT_MULAW = 0x0007;
const FORMAT_EXTENSIBLE = 0xfffe;

/** Names for formats people do upload, so the refusal says what the file is. */
const KNOWN_UNSUPPORTED: Record<number, string> = {
  0x0002: 'Microsoft ADPCM',
  0x0011: 'IMA ADPCM',
  0x0031: 'GSM 6.10',
  0x0050: 'MPEG',
  0x0055: 'MP3',
  0x0161: 'Windows Media Audio',
};

/** The 14 bytes after the format tag in every standard KSDATAFORMAT_SUBTYPE GUID. */
const SUBTYPE_GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];

interface FormatChunk {
  tag: number;
  channels: number;
  sampleRate: number;
  blockAlign: number;
  bitsPerSample: number;
}

/** Decodes a WAV file to mono PCM at its own rate. Throws only AudioFormatError. */
export function decodeWav(bytes: Uint8Array, limits: WavLimits): DecodedWav {
  if (bytes.length > limits.maxBytes) {
    throw new AudioFormatError(`WAV: the file is ${bytes.length} bytes, over the limit of ${limits.maxBytes}`);
  }
  if (bytes.length < 12) throw new AudioFormatError('not a WAV file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const riff = fourCc(view, 0);
  if (riff === 'RF64' || riff === 'BW64') throw new AudioFormatError('WAV: RF64 (over 4 GB) files are not supported');
  if (riff !== 'RIFF' || fourCc(view, 8) !== 'WAVE') throw new AudioFormatError('not a WAV file');

  let format: FormatChunk | undefined;
  let dataStart = -1;
  let dataLength = 0;
  // Each pass moves at least 8 bytes forward, so the walk ends within bytes.length / 8 steps.
  for (let offset = 12; offset + 8 <= bytes.length; ) {
    const id = fourCc(view, offset);
    const declared = view.getUint32(offset + 4, true);
    const bodyStart = offset + 8;
    const present = bytes.length - bodyStart;
    if (declared > present) {
      if (id === 'data' && limits.streamedLength) {
        dataStart = bodyStart;
        dataLength = present;
        break;
      }
      throw new AudioFormatError(
        `WAV: the file is truncated (its "${printable(id)}" chunk declares ${declared} bytes, ${present} follow)`,
      );
    }
    if (id === 'fmt ') {
      if (format) throw new AudioFormatError('WAV: the file has two format chunks');
      format = readFormat(view, bodyStart, declared);
    } else if (id === 'data' && dataStart < 0) {
      dataStart = bodyStart;
      dataLength = declared;
    }
    offset = bodyStart + declared + (declared & 1);
  }
  if (!format) throw new AudioFormatError('WAV: the format chunk is missing');
  if (dataStart < 0) throw new AudioFormatError('WAV: the data chunk is missing');

  const frames = Math.floor(dataLength / format.blockAlign);
  if (frames === 0) throw new AudioFormatError('WAV: the file holds no audio');
  const seconds = frames / format.sampleRate;
  if (seconds > limits.maxDurationSeconds) {
    throw new AudioFormatError(
      `WAV: the audio lasts ${seconds.toFixed(1)} s, over the limit of ${limits.maxDurationSeconds} s`,
    );
  }
  return {
    sampleRate: format.sampleRate,
    channels: format.channels,
    encoding: encodingName(format.tag, format.bitsPerSample),
    pcm: decodeSamples(view, dataStart, frames, format),
  };
}

function readFormat(view: DataView, start: number, size: number): FormatChunk {
  if (size < 16) throw new AudioFormatError(`WAV: the format chunk is too short (${size} bytes)`);
  let tag = view.getUint16(start, true);
  const channels = view.getUint16(start + 2, true);
  const sampleRate = view.getUint32(start + 4, true);
  const blockAlign = view.getUint16(start + 12, true);
  const bitsPerSample = view.getUint16(start + 14, true);
  if (tag === FORMAT_EXTENSIBLE) {
    if (size < 40) throw new AudioFormatError('WAV: the extensible format chunk is too short');
    tag = view.getUint16(start + 24, true);
    for (let i = 0; i < SUBTYPE_GUID_TAIL.length; i++) {
      if (view.getUint8(start + 26 + i) !== SUBTYPE_GUID_TAIL[i]) {
        throw new AudioFormatError('WAV: the extensible format names an unknown sub-format');
      }
    }
  }
  if (channels === 0) throw new AudioFormatError('WAV: the header declares no channels');
  if (channels > 2) throw new AudioFormatError(`WAV: ${channels} channels are not supported (mono or stereo only)`);
  if (sampleRate < MIN_WAV_RATE || sampleRate > MAX_WAV_RATE) {
    throw new AudioFormatError(`WAV: a sample rate of ${sampleRate} Hz is not supported (8,000 to 48,000 Hz)`);
  }
  const format = { tag, channels, sampleRate, blockAlign, bitsPerSample };
  checkEncoding(format);
  // Samples are read at blockAlign / channels apart; a header where that is not the sample width is lying.
  if (blockAlign !== channels * (bitsPerSample / 8)) {
    throw new AudioFormatError(
      `WAV: the block size ${blockAlign} does not match ${channels} channel(s) of ${bitsPerSample} bits`,
    );
  }
  return format;
}

function checkEncoding({ tag, bitsPerSample: bits }: FormatChunk): void {
  const ok =
    (tag === FORMAT_PCM && (bits === 8 || bits === 16 || bits === 24 || bits === 32)) ||
    (tag === FORMAT_FLOAT && (bits === 32 || bits === 64)) ||
    ((tag === FORMAT_MULAW || tag === FORMAT_ALAW) && bits === 8);
  if (ok) return;
  if (tag === FORMAT_PCM || tag === FORMAT_FLOAT || tag === FORMAT_MULAW || tag === FORMAT_ALAW) {
    const what = tag === FORMAT_PCM || tag === FORMAT_FLOAT ? encodingName(tag, bits) : `${bits}-bit ${encodingName(tag, bits)}`;
    throw new AudioFormatError(`WAV: ${what} is not supported`);
  }
  const hex = `0x${tag.toString(16).padStart(4, '0')}`;
  const name = KNOWN_UNSUPPORTED[tag];
  throw new AudioFormatError(
    `WAV: the ${name ? `${name} (format ${hex})` : `format ${hex}`} encoding is not supported; ` +
      'use PCM, float, μ-law or A-law',
  );
}

function encodingName(tag: number, bits: number): string {
  switch (tag) {
    case FORMAT_PCM:
      return `${bits}-bit PCM`;
    case FORMAT_FLOAT:
      return `${bits}-bit float`;
    case FORMAT_MULAW:
      return 'μ-law';
    default:
      return 'A-law';
  }
}

/** One sample to 16 bits, by encoding; `at` is its byte offset. */
function sampleReader(view: DataView, format: FormatChunk): (at: number) => number {
  switch (format.tag) {
    case FORMAT_MULAW:
      return (at) => MULAW_TO_LINEAR[view.getUint8(at)];
    case FORMAT_ALAW:
      return (at) => ALAW_TO_LINEAR[view.getUint8(at)];
    case FORMAT_FLOAT:
      return format.bitsPerSample === 32
        ? (at) => floatToInt16(view.getFloat32(at, true))
        : (at) => floatToInt16(view.getFloat64(at, true));
    default:
      switch (format.bitsPerSample) {
        case 8:
          return (at) => (view.getUint8(at) - 128) << 8;
        case 16:
          return (at) => view.getInt16(at, true);
        case 24:
          return (at) => Math.min(32767, (view.getUint8(at) + (view.getInt16(at + 1, true) << 8) + 128) >> 8);
        default:
          return (at) => Math.min(32767, Math.round(view.getInt32(at, true) / 65536));
      }
  }
}

function decodeSamples(view: DataView, start: number, frames: number, format: FormatChunk): Int16Array {
  const read = sampleReader(view, format);
  const out = new Int16Array(frames);
  const step = format.blockAlign;
  if (format.channels === 1) {
    for (let i = 0, at = start; i < frames; i++, at += step) out[i] = read(at);
  } else {
    const width = step / 2;
    for (let i = 0, at = start; i < frames; i++, at += step) out[i] = (read(at) + read(at + width)) >> 1;
  }
  return out;
}

function floatToInt16(x: number): number {
  // NaN compares false both ways and lands on 0.
  if (x >= 1) return 32767;
  if (x <= -1) return -32768;
  return x === x ? Math.round(x * 32767) : 0;
}

function fourCc(view: DataView, at: number): string {
  return String.fromCharCode(view.getUint8(at), view.getUint8(at + 1), view.getUint8(at + 2), view.getUint8(at + 3));
}

function printable(id: string): string {
  return id.replace(/[^\x20-\x7e]/g, '?');
}

/** A 16-bit PCM mono WAV of `pcm` at `sampleRate` (for recordings and tests). */
export function encodeWav(pcm: Int16Array, sampleRate: number): Buffer {
  const dataBytes = pcm.length * 2;
  const out = Buffer.alloc(44 + dataBytes);
  out.write('RIFF', 0, 'latin1');
  out.writeUInt32LE(36 + dataBytes, 4);
  out.write('WAVE', 8, 'latin1');
  out.write('fmt ', 12, 'latin1');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(FORMAT_PCM, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'latin1');
  out.writeUInt32LE(dataBytes, 40);
  for (let i = 0; i < pcm.length; i++) out.writeInt16LE(pcm[i], 44 + i * 2);
  return out;
}
