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
export { Vad, preloadVad, type VadMode, type VadOptions, type VadSampleRate } from './vad.js';
export {
  UtteranceSegmenter,
  SEGMENTER_FRAME_MS,
  SEGMENTER_FRAME_SAMPLES,
  SEGMENTER_SAMPLE_RATE,
  type SpeechDetector,
  type UtteranceEndReason,
  type UtteranceInfo,
  type UtteranceSegmenterEvents,
  type UtteranceSegmenterOptions,
} from './utterance-segmenter.js';
