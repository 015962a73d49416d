import t from 'tap';
import { decodeG711, encodeG711, FRAME_SAMPLES, silenceOctet, type G711Codec } from '../../src/rtp/g711.js';
import { dominantFrequency, generateTone } from '../../src/rtp/tone.js';

const encodeOne = (codec: G711Codec, sample: number): number => {
  const out = new Uint8Array(1);
  encodeG711(codec, Int16Array.of(sample), out);
  return out[0];
};
const decodeOne = (codec: G711Codec, octet: number): number => {
  const out = new Int16Array(1);
  decodeG711(codec, Uint8Array.of(octet), out);
  return out[0];
};

t.test('known μ-law values (G.711 table)', async (t) => {
  t.equal(encodeOne('PCMU', 0), 0xff);
  t.equal(silenceOctet('PCMU'), 0xff);
  t.equal(encodeOne('PCMU', -1), 0x7f);
  t.equal(encodeOne('PCMU', 32767), 0x80);
  t.equal(encodeOne('PCMU', -32768), 0x00);
  t.equal(encodeOne('PCMU', 1000), 0xce);
  t.equal(decodeOne('PCMU', 0xff), 0);
  t.equal(decodeOne('PCMU', 0x80), 32124);
  t.equal(decodeOne('PCMU', 0x00), -32124);
  t.equal(decodeOne('PCMU', 0xce), 988);
});

t.test('known A-law values (G.711 table)', async (t) => {
  t.equal(encodeOne('PCMA', 0), 0xd5);
  t.equal(silenceOctet('PCMA'), 0xd5);
  t.equal(encodeOne('PCMA', -8), 0x55);
  t.equal(encodeOne('PCMA', 32767), 0xaa);
  t.equal(encodeOne('PCMA', -32768), 0x2a);
  t.equal(encodeOne('PCMA', 1000), 0xfa);
  t.equal(decodeOne('PCMA', 0xd5), 8);
  t.equal(decodeOne('PCMA', 0x55), -8);
  t.equal(decodeOne('PCMA', 0xaa), 32256);
  t.equal(decodeOne('PCMA', 0x2a), -32256);
  t.equal(decodeOne('PCMA', 0xfa), 1008);
});

t.test('every octet decodes to a value that encodes back to it (except μ-law negative zero)', async (t) => {
  for (const codec of ['PCMU', 'PCMA'] as const) {
    let mismatches = 0;
    for (let octet = 0; octet < 256; octet++) {
      if (codec === 'PCMU' && octet === 0x7f) continue; // -0 decodes to 0, which encodes as +0 (0xff)
      if (encodeOne(codec, decodeOne(codec, octet)) !== octet) mismatches++;
    }
    t.equal(mismatches, 0, `${codec}: 255+ octets are fixed points`);
  }
});

t.test('a 1 kHz sine survives within the logarithmic error bound', async (t) => {
  const sine = generateTone([1000], 200, 12000);
  for (const codec of ['PCMU', 'PCMA'] as const) {
    const bytes = new Uint8Array(sine.length);
    t.equal(encodeG711(codec, sine, bytes), sine.length);
    const back = new Int16Array(sine.length);
    t.equal(decodeG711(codec, bytes, back), sine.length);
    let worstRelative = 0;
    let signal = 0;
    let noise = 0;
    for (let i = 0; i < sine.length; i++) {
      const error = Math.abs(back[i] - sine[i]);
      // 4-bit mantissa: the step is at most 1/16 of the segment, so the error stays within ~1/32 of the value (+ a floor near 0).
      if (Math.abs(sine[i]) > 256) worstRelative = Math.max(worstRelative, error / Math.abs(sine[i]));
      signal += sine[i] * sine[i];
      noise += error * error;
    }
    t.ok(worstRelative < 1 / 16, `${codec}: worst relative error ${worstRelative.toFixed(4)}`);
    const snrDb = 10 * Math.log10(signal / noise);
    t.ok(snrDb > 30, `${codec}: SNR ${snrDb.toFixed(1)} dB`);
    t.equal(dominantFrequency(back, 500, 1500, 10), 1000);
  }
});

t.test('a 20 ms frame is 160 samples and 160 octets; encode writes at an offset', async (t) => {
  t.equal(FRAME_SAMPLES, 160);
  const frame = generateTone([440], 20);
  t.equal(frame.length, 160);
  const out = new Uint8Array(12 + 160).fill(0x11);
  t.equal(encodeG711('PCMU', frame, out, 12), 160);
  t.equal(out[11], 0x11, 'the header area is untouched');
  t.equal(out[12], 0xff, 'sin(0) = 0 → μ-law 0xff');
});
