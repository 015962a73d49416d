export type { RecognitionRequest, RecognitionResult, SpeechRecognizer } from './speech-recognizer.js';
export { servesLocale } from './speech-recognizer.js';
export {
  parseHypotheses,
  POCKETSPHINX_DEFAULT_MODEL_DIR,
  POCKETSPHINX_ENGINE_ID,
  PocketsphinxRecognizer,
  type PocketsphinxOptions,
} from './pocketsphinx-recognizer.js';
export {
  OpenAiTranscriptionRecognizer,
  type OpenAiTranscriptionOptions,
  type TranscriptionResponseFormat,
} from './openai-transcription-recognizer.js';
export {
  classifyTranscriptionFailure,
  OPENAI_TRANSCRIPTION_ERRORS,
  transcriptionErrorRule,
  type TranscriptionFailure,
} from './transcription-errors-table.js';
export { ScriptedRecognizer, type ScriptedRecognizerOptions } from './scripted-recognizer.js';
