import { resample, TELEPHONY_RATE } from './resample.js';
import { decodeWav, type WavLimits } from './wav.js';

/** A WAV file as a call plays it: mono 16-bit PCM at 8,000 Hz. Throws AudioFormatError for any bad input. */
export function wavToTelephonyPcm(bytes: Uint8Array, limits: WavLimits): Int16Array {
  const { pcm, sampleRate } = decodeWav(bytes, limits);
  return sampleRate === TELEPHONY_RATE ? pcm : resample(pcm, sampleRate, TELEPHONY_RATE);
}
