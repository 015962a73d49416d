import fc from 'fast-check';
import t from 'tap';
import { AudioFormatError } from '../../src/audio/errors.js';
import { ALAW_TO_LINEAR, MULAW_TO_LINEAR } from '../../src/audio/g711.js';
import { decodeWav, encodeWav, type WavLimits } from '../../src/audio/wav.js';
import { wavToTelephonyPcm } from '../../src/audio/telephony-audio.js';
import { dominantFrequency } from '../../src/audio/analysis.js';
import { buildWav, chunk, ENCODERS, encodeSamples, sine, toInt16 } from './fixtures/signals.js';

const LIMITS: WavLimits = { maxBytes: 10_000_000, maxDurationSeconds: 60 };

/** Largest difference, in 16-bit steps, between decoded samples and the signal they came from. */
function maxError(decoded: Int16Array, signal: Float64Array): number {
  let worst = 0;
  for (let i = 0; i < signal.length; i++) worst = Math.max(worst, Math.abs(decoded[i] - signal[i] * 32767));
  return worst;
}

function refusal(bytes: Uint8Array, limits: WavLimits = LIMITS): string {
  try {
    decodeWav(bytes, limits);
  } catch (err) {
    if (err instanceof AudioFormatError) return err.message;
    throw err;
  }
  throw new Error('decoded without complaint');
}

t.test('encodeWav output decodes to the same samples', async (t) => {
  const pcm = toInt16(sine(440, 16_000, 0.25));
  const wav = encodeWav(pcm, 16_000);
  t.equal(wav.length, 44 + pcm.length * 2);
  const decoded = decodeWav(wav, LIMITS);
  t.same({ rate: decoded.sampleRate, channels: decoded.channels, encoding: decoded.encoding }, { rate: 16_000, channels: 1, encoding: '16-bit PCM' });
  t.same(Array.from(decoded.pcm), Array.from(pcm));
});

t.test('G.711 tables hold the standard values', async (t) => {
  t.same([MULAW_TO_LINEAR[0xff], MULAW_TO_LINEAR[0x7f], MULAW_TO_LINEAR[0x80], MULAW_TO_LINEAR[0x00]], [0, 0, 32124, -32124]);
  t.same([ALAW_TO_LINEAR[0xd5], ALAW_TO_LINEAR[0x55], ALAW_TO_LINEAR[0xaa], ALAW_TO_LINEAR[0x2a]], [8, -8, 32256, -32256]);
});

t.test('every supported sample format decodes to the signal', async (t) => {
  const signal = sine(1000, 8_000, 0.1, 0.6);
  const cases: Array<{ name: string; format: number; bits: number; encode: (x: number) => Buffer; tolerance: number; encoding: string; extensible?: boolean }> = [
    { name: '8-bit PCM', format: 1, bits: 8, encode: ENCODERS.pcm8, tolerance: 260, encoding: '8-bit PCM' },
    { name: '16-bit PCM', format: 1, bits: 16, encode: ENCODERS.pcm16, tolerance: 0.5, encoding: '16-bit PCM' },
    { name: '24-bit PCM', format: 1, bits: 24, encode: ENCODERS.pcm24, tolerance: 1, encoding: '24-bit PCM' },
    { name: '32-bit PCM', format: 1, bits: 32, encode: ENCODERS.pcm32, tolerance: 1, encoding: '32-bit PCM' },
    { name: '32-bit float', format: 3, bits: 32, encode: ENCODERS.float32, tolerance: 0.5, encoding: '32-bit float' },
    { name: '64-bit float', format: 3, bits: 64, encode: ENCODERS.float64, tolerance: 0.5, encoding: '64-bit float' },
    // G.711 keeps about 3 % of the amplitude near full scale: 0.6 × 32767 × 3 % ≈ 600.
    { name: 'μ-law', format: 7, bits: 8, encode: ENCODERS.mulaw, tolerance: 700, encoding: 'μ-law' },
    { name: 'A-law', format: 6, bits: 8, encode: ENCODERS.alaw, tolerance: 700, encoding: 'A-law' },
    { name: 'extensible 24-bit PCM', format: 1, bits: 24, encode: ENCODERS.pcm24, tolerance: 1, encoding: '24-bit PCM', extensible: true },
    { name: 'extensible 32-bit float', format: 3, bits: 32, encode: ENCODERS.float32, tolerance: 0.5, encoding: '32-bit float', extensible: true },
    { name: 'extensible μ-law', format: 7, bits: 8, encode: ENCODERS.mulaw, tolerance: 700, encoding: 'μ-law', extensible: true },
  ];
  for (const c of cases) {
    const wav = buildWav({ format: c.format, channels: 1, sampleRate: 8_000, bits: c.bits, data: encodeSamples([signal], c.encode), extensible: c.extensible });
    const decoded = decodeWav(wav, LIMITS);
    t.equal(decoded.encoding, c.encoding, `${c.name}: encoding named`);
    t.equal(decoded.pcm.length, signal.length, `${c.name}: every frame`);
    const error = maxError(decoded.pcm, signal);
    t.ok(error <= c.tolerance, `${c.name}: within ${c.tolerance} steps (worst ${error.toFixed(1)})`);
  }
});

t.test('stereo is averaged to mono', async (t) => {
  const left = sine(500, 8_000, 0.05, 0.5);
  const right = sine(500, 8_000, 0.05, 0.25);
  const wav = buildWav({ format: 1, channels: 2, sampleRate: 8_000, bits: 16, data: encodeSamples([left, right], ENCODERS.pcm16) });
  const decoded = decodeWav(wav, LIMITS);
  t.equal(decoded.channels, 2);
  const mean = left.map((l, i) => (l + right[i]) / 2);
  t.ok(maxError(decoded.pcm, mean) <= 1, 'the mean of both channels');
  const opposite = buildWav({ format: 3, channels: 2, sampleRate: 8_000, bits: 32, data: encodeSamples([left, left.map((x) => -x)], ENCODERS.float32) });
  t.ok(decodeWav(opposite, LIMITS).pcm.every((x) => Math.abs(x) <= 1), 'opposite channels cancel');
  const stereo24 = buildWav({ format: 1, channels: 2, sampleRate: 8_000, bits: 24, data: encodeSamples([left, right], ENCODERS.pcm24), extensible: true });
  t.ok(maxError(decodeWav(stereo24, LIMITS).pcm, mean) <= 1.5, 'extensible 24-bit stereo too');
});

t.test('unknown chunks are skipped, odd ones with their pad byte, and rates 8–48 kHz are read', async (t) => {
  const signal = sine(1000, 44_100, 0.2);
  const wav = buildWav({
    format: 1,
    channels: 1,
    sampleRate: 44_100,
    bits: 16,
    data: encodeSamples([signal], ENCODERS.pcm16),
    extraChunks: [chunk('LIST', Buffer.from('INFOISFT\x05\0\0\0ferry')), chunk('fact', Buffer.alloc(4))],
  });
  const decoded = decodeWav(wav, LIMITS);
  t.equal(decoded.sampleRate, 44_100);
  t.ok(maxError(decoded.pcm, signal) <= 0.5);
  const telephony = wavToTelephonyPcm(wav, LIMITS);
  t.equal(telephony.length, 1_600, '0.2 s at 8 kHz');
  t.ok(Math.abs(dominantFrequency(telephony, 8_000) - 1000) < 5, 'still 1 kHz after resampling');
  for (const rate of [8_000, 11_025, 16_000, 22_050, 32_000, 48_000]) {
    const pcm = toInt16(sine(300, rate, 0.05));
    t.equal(decodeWav(encodeWav(pcm, rate), LIMITS).sampleRate, rate, `${rate} Hz`);
  }
});

t.test('malformed and unsupported files are refused with a reason', async (t) => {
  const pcm = toInt16(sine(440, 8_000, 0.1));
  const good = encodeWav(pcm, 8_000);
  const data = encodeSamples([sine(440, 8_000, 0.1)], ENCODERS.pcm16);
  const spec = { format: 1, channels: 1, sampleRate: 8_000, bits: 16, data };
  const withFmt = (patch: (fmt: Buffer) => void): Buffer => {
    const copy = Buffer.from(good);
    patch(copy.subarray(20, 36));
    return copy;
  };

  t.equal(refusal(Buffer.from('ID3\x04 this is an mp3')), 'not a WAV file');
  t.equal(refusal(Buffer.alloc(0)), 'not a WAV file');
  t.equal(refusal(Buffer.from('RIFF\x04\0\0\0AVI LIST')), 'not a WAV file');
  t.match(refusal(Buffer.from('RF64\xff\xff\xff\xffWAVE', 'latin1')), /RF64/);
  t.match(refusal(good.subarray(0, 100)), /^WAV: the file is truncated \(its "data" chunk declares 1600 bytes, 56 follow\)$/);
  t.match(refusal(good.subarray(0, 30)), /WAV: the file is truncated \(its "fmt " chunk/);
  t.equal(refusal(buildWav({ ...spec, channels: 24, blockAlign: 48 })), 'WAV: 24 channels are not supported (mono or stereo only)');
  t.equal(refusal(withFmt((f) => f.writeUInt16LE(0, 2))), 'WAV: the header declares no channels');
  t.match(refusal(buildWav({ ...spec, sampleRate: 96_000 })), /^WAV: a sample rate of 96000 Hz is not supported/);
  t.match(refusal(buildWav({ ...spec, sampleRate: 4_000 })), /^WAV: a sample rate of 4000 Hz is not supported/);
  t.equal(refusal(buildWav({ ...spec, format: 0x55 })), 'WAV: the MP3 (format 0x0055) encoding is not supported; use PCM, float, μ-law or A-law');
  t.equal(refusal(buildWav({ ...spec, format: 0x1234 })), 'WAV: the format 0x1234 encoding is not supported; use PCM, float, μ-law or A-law');
  t.equal(refusal(buildWav({ ...spec, bits: 12, blockAlign: 2 })), 'WAV: 12-bit PCM is not supported');
  t.equal(refusal(buildWav({ ...spec, format: 7, bits: 16 })), 'WAV: 16-bit μ-law is not supported');
  t.match(refusal(buildWav({ ...spec, blockAlign: 4 })), /^WAV: the block size 4 does not match 1 channel\(s\) of 16 bits$/);
  t.match(refusal(buildWav({ ...spec, extensible: true }).fill(0, 50, 52)), /unknown sub-format/);
  t.match(refusal(Buffer.concat([good.subarray(0, 12), chunk('data', data)])), /format chunk is missing/);
  t.match(refusal(good.subarray(0, 36)), /data chunk is missing/);
  t.match(refusal(Buffer.concat([good.subarray(0, 12), chunk('fmt ', Buffer.alloc(14)), chunk('data', data)])), /format chunk is too short \(14 bytes\)/);
  t.match(refusal(Buffer.concat([good.subarray(0, 36), good.subarray(12, 36), good.subarray(36)])), /two format chunks/);
  t.equal(refusal(encodeWav(new Int16Array(0), 8_000)), 'WAV: the file holds no audio');
  t.equal(refusal(good, { maxBytes: 1_000, maxDurationSeconds: 60 }), `WAV: the file is ${good.length} bytes, over the limit of 1000`);
  t.equal(refusal(good, { maxBytes: 1e6, maxDurationSeconds: 0.05 }), 'WAV: the audio lasts 0.1 s, over the limit of 0.05 s');
});

t.test('a lying data size is caught before any allocation, unless the caller reads a stream', async (t) => {
  const pcm = toInt16(sine(440, 8_000, 0.1));
  const lying = encodeWav(pcm, 8_000);
  lying.writeUInt32LE(0xfffffff0, 40);
  const before = process.memoryUsage().arrayBuffers;
  t.match(refusal(lying), /truncated \(its "data" chunk declares 4294967280 bytes, 1600 follow\)/);
  t.ok(process.memoryUsage().arrayBuffers - before < 1e6, 'nothing sized by the header was allocated');
  const streamed = decodeWav(lying, { ...LIMITS, streamedLength: true });
  t.same(Array.from(streamed.pcm), Array.from(pcm), 'streamed: the bytes present are the audio');
  // A streamed header still obeys the duration limit, counted on the bytes present.
  t.match(refusal(lying, { maxBytes: 1e6, maxDurationSeconds: 0.01, streamedLength: true }), /lasts 0.1 s/);
  const oddLength = encodeWav(pcm, 8_000).subarray(0, 44 + 1_001);
  t.equal(decodeWav(oddLength, { ...LIMITS, streamedLength: true }).pcm.length, 500, 'a trailing partial frame is dropped');
});

t.test('random and mutated input throws nothing but AudioFormatError', async (t) => {
  const good = buildWav({ format: 1, channels: 2, sampleRate: 22_050, bits: 24, data: Buffer.alloc(600, 7), extensible: true });
  const onlyOwnErrors = (bytes: Uint8Array, streamedLength: boolean): boolean => {
    try {
      const out = decodeWav(bytes, { ...LIMITS, streamedLength });
      return out.pcm.length <= bytes.length;
    } catch (err) {
      return err instanceof AudioFormatError;
    }
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (bytes, s) => onlyOwnErrors(bytes, s)), { numRuns: 500 });
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(good.length - 1), fc.nat(255)), { minLength: 1, maxLength: 6 }),
      fc.nat(good.length),
      fc.boolean(),
      (edits, cut, streamed) => {
        const bytes = Buffer.from(good.subarray(0, Math.max(cut, 12)));
        for (const [at, value] of edits) if (at < bytes.length) bytes[at] = value;
        return onlyOwnErrors(bytes, streamed);
      },
    ),
    { numRuns: 2_000 },
  );
  t.pass('2,500 inputs');
});
