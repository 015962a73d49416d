export {
  ESPEAK_DEFAULT_RATE,
  ESPEAK_MAX_RATE,
  ESPEAK_MIN_RATE,
  EspeakSynthesizer,
  type EspeakOptions,
} from './espeak-synthesizer.js';
export { ESPEAK_ENGINE_ID, findVoice, parseEspeakVoices, toBcp47 } from './voices.js';
export { SpeechCache, type SpeechCacheKey, type SpeechCacheOptions } from './speech-cache.js';
export { CachedSpeechEngine } from './cached-speech-engine.js';
export { SpeechBusyError, SpeechError, SpeechFailedError, SpeechInputError, SpeechUnavailableError } from './errors.js';
export type { SpeechEngine, SpeechVoice, SynthesisRequest, VoiceGender, VoiceQuality } from './speech-engine.js';
