/**
 * Measurements of mono 16-bit PCM, enough to prove "non-silent audio of about the expected duration at the expected
 * pitch" in tests and to sanity-check uploads. Levels are in dBFS: 0 dB is a full-scale square wave, a full-scale
 * sine is -3 dB, digital silence is -Infinity.
 */

export interface AudioAnalysis {
  durationSeconds: number;
  rmsDbfs: number;
  peakDbfs: number;
  /** Share (0–1) of 20 ms frames louder than the silence threshold. */
  nonSilentShare: number;
  /** Strongest frequency in Hz, or 0 for silence. */
  dominantFrequencyHz: number;
}

/** Below this a 20 ms frame counts as silence: quieter than line noise on a call, louder than dither. */
export const SILENCE_THRESHOLD_DBFS = -50;

const FULL_SCALE = 32768;
const FRAME_SECONDS = 0.02;

export function analyzeAudio(pcm: Int16Array, sampleRate: number): AudioAnalysis {
  return {
    durationSeconds: durationSeconds(pcm, sampleRate),
    rmsDbfs: rmsDbfs(pcm),
    peakDbfs: peakDbfs(pcm),
    nonSilentShare: nonSilentShare(pcm, sampleRate),
    dominantFrequencyHz: dominantFrequency(pcm, sampleRate),
  };
}

export function durationSeconds(pcm: Int16Array, sampleRate: number): number {
  return pcm.length / sampleRate;
}

/** RMS level of `pcm[start, end)` in dBFS. */
export function rmsDbfs(pcm: Int16Array, start = 0, end = pcm.length): number {
  if (end <= start) return -Infinity;
  let sum = 0;
  for (let i = start; i < end; i++) sum += pcm[i] * pcm[i];
  return toDb(Math.sqrt(sum / (end - start)) / FULL_SCALE);
}

export function peakDbfs(pcm: Int16Array): number {
  let peak = 0;
  for (let i = 0; i < pcm.length; i++) peak = Math.max(peak, Math.abs(pcm[i]));
  return toDb(peak / FULL_SCALE);
}

/** Share of whole 20 ms frames whose RMS is above `thresholdDbfs`; a trailing partial frame counts if ≥ 10 ms. */
export function nonSilentShare(pcm: Int16Array, sampleRate: number, thresholdDbfs = SILENCE_THRESHOLD_DBFS): number {
  const frame = Math.max(1, Math.round(sampleRate * FRAME_SECONDS));
  let frames = 0;
  let loud = 0;
  for (let start = 0; start < pcm.length; start += frame) {
    const end = Math.min(pcm.length, start + frame);
    if (end - start < frame / 2) break;
    frames++;
    if (rmsDbfs(pcm, start, end) > thresholdDbfs) loud++;
  }
  return frames === 0 ? 0 : loud / frames;
}

/**
 * Power of one frequency over the whole signal (Goertzel), normalised so a full-scale sine at that frequency gives
 * about 0 dB: 10·log10 of it compares tones directly.
 */
export function tonePower(pcm: Int16Array, sampleRate: number, frequencyHz: number): number {
  if (pcm.length === 0) return 0;
  const coefficient = 2 * Math.cos((2 * Math.PI * frequencyHz) / sampleRate);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < pcm.length; i++) {
    const s0 = pcm[i] / FULL_SCALE + coefficient * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const power = s1 * s1 + s2 * s2 - coefficient * s1 * s2;
  return (4 * power) / (pcm.length * pcm.length);
}

/** Tone level in dBFS of a sine's peak (0 dB = full-scale sine at that frequency). */
export function toneDb(pcm: Int16Array, sampleRate: number, frequencyHz: number): number {
  return 10 * Math.log10(tonePower(pcm, sampleRate, frequencyHz));
}

const FFT_SIZE = 4_096;
const MIN_FFT_SIZE = 64;
/** Averaging every window of a long recording gains nothing: the spectrum is stable long before this many. */
const MAX_WINDOWS = 64;

/**
 * The strongest frequency: Hann-windowed FFTs of 4,096 samples, half overlapping, power-averaged (Welch), with the
 * peak bin refined by parabolic interpolation. Resolution is about a tenth of a bin (≈ 0.2 Hz at 8 kHz). 0 for silence.
 */
export function dominantFrequency(pcm: Int16Array, sampleRate: number): number {
  if (pcm.length < MIN_FFT_SIZE) return 0;
  const size = Math.min(FFT_SIZE, 2 ** Math.floor(Math.log2(pcm.length)));
  const hop = size / 2;
  const windowCount = Math.min(MAX_WINDOWS, Math.floor((pcm.length - size) / hop) + 1);
  const stride = windowCount > 1 ? Math.floor((pcm.length - size) / (windowCount - 1)) : 0;
  const hann = new Float64Array(size);
  for (let i = 0; i < size; i++) hann[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / size);
  const power = new Float64Array(size / 2 + 1);
  const re = new Float64Array(size);
  const im = new Float64Array(size);
  for (let w = 0; w < windowCount; w++) {
    const start = w * stride;
    for (let i = 0; i < size; i++) {
      re[i] = pcm[start + i] * hann[i];
      im[i] = 0;
    }
    fft(re, im);
    for (let k = 0; k <= size / 2; k++) power[k] += re[k] * re[k] + im[k] * im[k];
  }
  let best = 1;
  for (let k = 2; k < size / 2; k++) if (power[k] > power[best]) best = k;
  if (power[best] === 0) return 0;
  // Parabola through the log powers of the peak bin and its neighbours.
  const a = Math.log(power[best - 1] + 1e-30);
  const b = Math.log(power[best] + 1e-30);
  const c = Math.log(power[best + 1] + 1e-30);
  const denominator = a - 2 * b + c;
  const offset = denominator === 0 ? 0 : (0.5 * (a - c)) / denominator;
  return ((best + offset) * sampleRate) / size;
}

/** In-place iterative radix-2 FFT; `re.length` must be a power of two. */
function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j], re[i]];
      [im[i], im[j]] = [im[j], im[i]];
    }
  }
  for (let length = 2; length <= n; length <<= 1) {
    const angle = (-2 * Math.PI) / length;
    const wRe = Math.cos(angle);
    const wIm = Math.sin(angle);
    for (let i = 0; i < n; i += length) {
      let uRe = 1;
      let uIm = 0;
      for (let k = 0; k < length / 2; k++) {
        const aRe = re[i + k];
        const aIm = im[i + k];
        const bRe = re[i + k + length / 2] * uRe - im[i + k + length / 2] * uIm;
        const bIm = re[i + k + length / 2] * uIm + im[i + k + length / 2] * uRe;
        re[i + k] = aRe + bRe;
        im[i + k] = aIm + bIm;
        re[i + k + length / 2] = aRe - bRe;
        im[i + k + length / 2] = aIm - bIm;
        const next = uRe * wRe - uIm * wIm;
        uIm = uRe * wIm + uIm * wRe;
        uRe = next;
      }
    }
  }
}

function toDb(ratio: number): number {
  return ratio === 0 ? -Infinity : 20 * Math.log10(ratio);
}
