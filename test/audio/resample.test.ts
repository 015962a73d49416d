import fc from 'fast-check';
import t from 'tap';
import { dominantFrequency, rmsDbfs, toneDb } from '../../src/audio/analysis.js';
import { resample, Resampler } from '../../src/audio/resample.js';
import { sine, toInt16 } from './fixtures/signals.js';

/** Sign changes per second: twice the frequency of a clean tone. */
function zeroCrossingsPerSecond(pcm: Int16Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) if ((pcm[i - 1] < 0) !== (pcm[i] < 0)) crossings++;
  return crossings / ((pcm.length - 1) / rate);
}

/** The output without its first and last 25 ms, where the filter meets the silence around the signal. */
const inner = (pcm: Int16Array): Int16Array => pcm.subarray(200, pcm.length - 200);

t.test('a 1 kHz tone stays at 1 kHz from 22,050 and 44,100 Hz', async (t) => {
  for (const rate of [22_050, 44_100]) {
    const out = resample(toInt16(sine(1000, rate, 1)), rate);
    t.equal(out.length, 8_000, `${rate}: one second is 8,000 samples`);
    t.ok(Math.abs(dominantFrequency(out, 8_000) - 1000) < 2, `${rate}: FFT peak at 1 kHz (${dominantFrequency(out, 8_000).toFixed(2)})`);
    const zc = zeroCrossingsPerSecond(inner(out), 8_000);
    t.ok(Math.abs(zc - 2000) < 10, `${rate}: 2,000 zero crossings a second (${zc.toFixed(0)})`);
    t.ok(Math.abs(toneDb(inner(out), 8_000, 1000) - -6.02) < 0.2, `${rate}: level kept (-6 dB sine)`);
  }
});

t.test('a 6 kHz tone at 44.1 kHz is removed, not folded to 2 kHz', async (t) => {
  const input = toInt16(sine(6000, 44_100, 1));
  const out = inner(resample(input, 44_100));
  const inputDb = rmsDbfs(input);
  const attenuation = inputDb - rmsDbfs(out);
  t.ok(attenuation > 30, `attenuated by ${attenuation.toFixed(1)} dB`);
  t.ok(toneDb(out, 8_000, 2000) < -6 - 30, `nothing at the alias frequency (${toneDb(out, 8_000, 2000).toFixed(1)} dB)`);
  // Without the filter (taking every 5.5th sample) the alias would be as loud as the tone.
  const naive = new Int16Array(8_000).map((_, i) => input[Math.floor((i * 44_100) / 8_000)]);
  t.ok(toneDb(inner(naive), 8_000, 2000) > -10, 'the naive decimation shows the alias the test looks for');
});

t.test('the telephone band passes flat, and just above 4 kHz is stopped, from every common rate', async (t) => {
  for (const rate of [11_025, 16_000, 24_000, 32_000, 48_000, 44_099]) {
    const pass = inner(resample(toInt16(sine(3400, rate, 0.5)), rate));
    t.ok(Math.abs(toneDb(pass, 8_000, 3400) - -6.02) < 0.5, `${rate}: 3.4 kHz kept (${toneDb(pass, 8_000, 3400).toFixed(2)} dB)`);
    const stop = inner(resample(toInt16(sine(4300, rate, 0.5)), rate));
    t.ok(rmsDbfs(stop) < -9 - 50, `${rate}: 4.3 kHz stopped (${rmsDbfs(stop).toFixed(1)} dBFS)`);
  }
});

t.test('lengths: ceil(n · 8000 / rate), and 8 kHz is a copy', async (t) => {
  for (const [rate, n] of [[44_100, 44_100], [44_100, 1_000], [22_050, 11_025], [48_000, 7], [16_000, 1], [11_025, 0]]) {
    t.equal(resample(new Int16Array(n), rate).length, Math.ceil((n * 8_000) / rate), `${n} samples at ${rate} Hz`);
  }
  const pcm = toInt16(sine(440, 8_000, 0.1));
  const copy = resample(pcm, 8_000);
  t.not(copy, pcm);
  t.same(Array.from(copy), Array.from(pcm));
});

t.test('a constant stays constant (unity gain at DC for every phase)', async (t) => {
  const out = resample(new Int16Array(44_100).fill(12_345), 44_100);
  t.ok(inner(out).every((x) => Math.abs(x - 12_345) <= 1));
  const loud = resample(new Int16Array(4_410).fill(32_767), 44_100);
  t.ok(loud.every((x) => x <= 32_767 && x >= -32_768), 'full scale clamps instead of wrapping');
});

t.test('streaming in chunks of any size gives the one-shot output', async (t) => {
  const signal = toInt16(sine(700, 22_050, 0.3));
  const oneShot = resample(signal, 22_050);
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 3_000 }), { minLength: 1, maxLength: 20 }), (sizes) => {
      const r = new Resampler(22_050);
      const parts: number[] = [];
      let at = 0;
      for (let i = 0; at < signal.length; i++) {
        const size = sizes[i % sizes.length];
        parts.push(...r.process(signal.subarray(at, at + size)));
        at += size;
      }
      parts.push(...r.flush());
      return parts.length === oneShot.length && parts.every((x, i) => x === oneShot[i]);
    }),
    { numRuns: 30 },
  );
  const r = new Resampler(16_000);
  r.flush();
  t.throws(() => r.process(new Int16Array(10)), /after flush/);
  t.equal(r.flush().length, 0, 'a second flush adds nothing');
});

t.test('rates out of range are refused', async (t) => {
  t.throws(() => new Resampler(0), RangeError);
  t.throws(() => new Resampler(44_100.5), RangeError);
  t.throws(() => new Resampler(1e9), RangeError);
});
