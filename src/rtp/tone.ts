/** Test signals: sine tones and DTMF key sequences as 8 kHz PCM, and the dominant frequency of a recording. */
import { DTMF_COLUMNS, DTMF_ROWS, goertzelPower, KEYPAD } from './dtmf-detector.js';

/** A sum of sines (each at `amplitude`), `durationMs` long, starting at phase 0. */
export function generateTone(frequencies: readonly number[], durationMs: number, amplitude = 8000, sampleRate = 8000): Int16Array {
  const length = Math.round((durationMs * sampleRate) / 1000);
  const pcm = new Int16Array(length);
  for (let i = 0; i < length; i++) {
    let value = 0;
    for (const f of frequencies) value += amplitude * Math.sin((2 * Math.PI * f * i) / sampleRate);
    pcm[i] = Math.max(-32768, Math.min(32767, Math.round(value)));
  }
  return pcm;
}

/** The row and column frequencies of a key. */
export function dtmfFrequencies(digit: string): [number, number] {
  const index = KEYPAD.indexOf(digit.toUpperCase());
  if (index < 0) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
  return [DTMF_ROWS[index >> 2], DTMF_COLUMNS[index & 3]];
}

export interface DtmfSignalOptions {
  toneMs?: number;
  gapMs?: number;
  /** Per tone (default 6000; a row `twistDb` quieter than the column when set). */
  amplitude?: number;
  twistDb?: number;
}

/** Keys as in-band tones: each `toneMs` (default 100) then `gapMs` (default 100) of silence. */
export function generateDtmf(digits: string, options: DtmfSignalOptions = {}): Int16Array {
  const toneMs = options.toneMs ?? 100;
  const gapMs = options.gapMs ?? 100;
  const amplitude = options.amplitude ?? 6000;
  const rowAmplitude = amplitude / 10 ** ((options.twistDb ?? 0) / 20);
  const perKey = Math.round(((toneMs + gapMs) * 8000) / 1000);
  const toneSamples = Math.round((toneMs * 8000) / 1000);
  const pcm = new Int16Array(perKey * digits.length);
  for (let d = 0; d < digits.length; d++) {
    const [row, column] = dtmfFrequencies(digits[d]);
    for (let i = 0; i < toneSamples; i++) {
      const v = rowAmplitude * Math.sin((2 * Math.PI * row * i) / 8000) + amplitude * Math.sin((2 * Math.PI * column * i) / 8000);
      pcm[d * perKey + i] = Math.round(v);
    }
  }
  return pcm;
}

/** The candidate frequency (from `from` to `to` by `step` Hz) with the most Goertzel power over the whole signal. */
export function dominantFrequency(pcm: Int16Array, from = 100, to = 3000, step = 10): number {
  let best = from;
  let bestPower = -1;
  for (let f = from; f <= to; f += step) {
    const power = goertzelPower(pcm, f);
    if (power > bestPower) {
      bestPower = power;
      best = f;
    }
  }
  return best;
}
