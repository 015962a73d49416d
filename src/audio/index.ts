export { AudioFormatError } from './errors.js';
export { decodeWav, encodeWav, MAX_WAV_RATE, MIN_WAV_RATE, type DecodedWav, type WavLimits } from './wav.js';
export { resample, Resampler, TELEPHONY_RATE } from './resample.js';
export { wavToTelephonyPcm } from './telephony-audio.js';
export { ALAW_TO_LINEAR, MULAW_TO_LINEAR } from './g711.js';
export {
  analyzeAudio,
  dominantFrequency,
  durationSeconds,
  nonSilentShare,
  peakDbfs,
  rmsDbfs,
  SILENCE_THRESHOLD_DBFS,
  toneDb,
  tonePower,
  type AudioAnalysis,
} from './analysis.js';
