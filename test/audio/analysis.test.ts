import t from 'tap';
import { analyzeAudio, dominantFrequency, nonSilentShare, peakDbfs, rmsDbfs, toneDb } from '../../src/audio/analysis.js';
import { sine, toInt16 } from './fixtures/signals.js';

const close = (actual: number, expected: number, tolerance: number): boolean => Math.abs(actual - expected) <= tolerance;

t.test('silence measures as silence', async (t) => {
  const silence = new Int16Array(8_000);
  t.same(analyzeAudio(silence, 8_000), { durationSeconds: 1, rmsDbfs: -Infinity, peakDbfs: -Infinity, nonSilentShare: 0, dominantFrequencyHz: 0 });
  t.equal(analyzeAudio(new Int16Array(0), 8_000).nonSilentShare, 0);
});

t.test('levels in dBFS', async (t) => {
  const full = toInt16(sine(1000, 8_000, 1, 1));
  t.ok(close(rmsDbfs(full), -3.01, 0.05), `full-scale sine RMS ${rmsDbfs(full).toFixed(2)}`);
  t.ok(close(peakDbfs(full), 0, 0.01));
  t.ok(close(toneDb(full, 8_000, 1000), 0, 0.1), 'tone level of a full-scale sine is 0 dB');
  const quiet = toInt16(sine(1000, 8_000, 1, 0.1));
  t.ok(close(rmsDbfs(quiet), -23.01, 0.05));
  t.ok(close(toneDb(quiet, 8_000, 1000), -20, 0.1));
  t.ok(toneDb(quiet, 8_000, 2500) < -60, 'no energy at a frequency that is not there');
});

t.test('non-silent share and duration of a tone followed by silence', async (t) => {
  const pcm = new Int16Array(16_000);
  pcm.set(toInt16(sine(440, 8_000, 1.5, 0.3)));
  const a = analyzeAudio(pcm, 8_000);
  t.equal(a.durationSeconds, 2);
  t.ok(close(a.nonSilentShare, 0.75, 0.02), `3/4 of the frames are loud (${a.nonSilentShare})`);
  t.ok(close(a.dominantFrequencyHz, 440, 1), `dominant ${a.dominantFrequencyHz.toFixed(2)} Hz`);
  t.equal(nonSilentShare(pcm, 8_000, -5), 0, 'nothing is louder than -5 dBFS');
});

t.test('the dominant frequency is the loudest of several, at any rate', async (t) => {
  const loud = sine(300, 16_000, 1, 0.5);
  const soft = sine(2000, 16_000, 1, 0.1);
  const mix = toInt16(loud.map((x, i) => x + soft[i]));
  t.ok(close(dominantFrequency(mix, 16_000), 300, 1));
  t.ok(close(dominantFrequency(toInt16(sine(1234, 44_100, 0.5)), 44_100), 1234, 2));
  t.ok(close(dominantFrequency(toInt16(sine(1000, 8_000, 0.05)), 8_000), 1000, 15), 'a short clip uses a shorter FFT');
  t.equal(dominantFrequency(new Int16Array(10).fill(100), 8_000), 0, 'too short to say');
});
