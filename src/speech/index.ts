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
export {
  OPENAI_SPEECH_MAX_RATE,
  OPENAI_SPEECH_MIN_RATE,
  OPENAI_SPEECH_NORMAL_RATE,
  OpenAiSpeechEngine,
  type OpenAiSpeechEngineOptions,
  type OpenAiSpeechVoiceConfig,
} from './openai-speech-engine.js';
export {
  classifySpeechFailure,
  OPENAI_SPEECH_ERRORS,
  sanitiseDetail,
  speechErrorRule,
  type SpeechErrorKind,
  type SpeechErrorRule,
  type SpeechFailure,
  type SpeechFailureCode,
} from './speech-errors-table.js';
export type { SpeechErrorOptions } from './errors.js';
