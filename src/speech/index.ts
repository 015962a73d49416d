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
export {
  classifyTranscriptionFailure,
  OPENAI_TRANSCRIPTION_ERRORS,
  OpenAiTranscriptionRecognizer,
  parseHypotheses,
  POCKETSPHINX_DEFAULT_MODEL_DIR,
  POCKETSPHINX_ENGINE_ID,
  PocketsphinxRecognizer,
  ScriptedRecognizer,
  servesLocale,
  transcriptionErrorRule,
  type OpenAiTranscriptionOptions,
  type PocketsphinxOptions,
  type RecognitionRequest,
  type RecognitionResult,
  type ScriptedRecognizerOptions,
  type SpeechRecognizer,
  type TranscriptionFailure,
  type TranscriptionResponseFormat,
} from './recognition/index.js';
