import {
  SpeechBusyError,
  SpeechError,
  SpeechFailedError,
  SpeechInputError,
  SpeechUnavailableError,
  type SpeechErrorOptions,
} from '../errors.js';
import { sanitiseDetail, type SpeechErrorKind, type SpeechErrorRule, type SpeechFailureCode } from '../speech-errors-table.js';

/**
 * How an OpenAI-compatible transcription provider's failures become SpeechErrors, in one table like the speech one
 * (speech-errors-table.ts), which it mirrors row for row except where hearing differs from speaking:
 *
 * - the audio is the input here: a 400/413/415/422 means this utterance cannot be heard as sent (`input`, final);
 * - an answer we cannot read (not JSON, no text) is the provider's fault and may pass (`failed`, retryable once).
 *
 * `retryable` is what the caller may do later; whether the adapter asks again itself is its own bounded policy
 * (never after a timeout: the caller is waiting on the line).
 */
export const OPENAI_TRANSCRIPTION_ERRORS: Readonly<Record<string, SpeechErrorRule>> = {
  '400': { kind: 'input', retryable: false },
  '401': { kind: 'unavailable', retryable: false, message: 'the provider refused the key' },
  '403': { kind: 'unavailable', retryable: false, message: 'the provider refused the key' },
  '404': { kind: 'input', retryable: false },
  '408': { kind: 'failed', retryable: true, message: 'the provider timed out reading the request' },
  '409': { kind: 'failed', retryable: true },
  '413': { kind: 'input', retryable: false },
  '415': { kind: 'input', retryable: false },
  '422': { kind: 'input', retryable: false },
  '429': { kind: 'busy', retryable: true, message: 'the provider is throttling requests' },
  timeout: { kind: 'failed', retryable: true },
  connection: { kind: 'failed', retryable: true },
  unreadable: { kind: 'failed', retryable: true },
  'too-large': { kind: 'failed', retryable: false },
};

export function transcriptionErrorRule(code: SpeechFailureCode): SpeechErrorRule {
  const listed = OPENAI_TRANSCRIPTION_ERRORS[code];
  if (listed) return listed;
  // Not listed: 5xx are the provider's trouble (retryable); any other status is final.
  return { kind: 'failed', retryable: Number(code) >= 500 };
}

export interface TranscriptionFailure {
  /** The recognizer id, so the message says which provider. */
  engine: string;
  code: SpeechFailureCode;
  detail?: string;
  retryAfterMs?: number;
  /** Strings that must never reach a message (the API key). */
  secrets: readonly string[];
}

const ERROR_CLASS: Record<SpeechErrorKind, typeof SpeechError> = {
  input: SpeechInputError,
  unavailable: SpeechUnavailableError,
  busy: SpeechBusyError,
  failed: SpeechFailedError,
};

export function classifyTranscriptionFailure(failure: TranscriptionFailure): SpeechError {
  const rule = transcriptionErrorRule(failure.code);
  const what = /^\d+$/.test(failure.code) ? `HTTP ${failure.code}` : failure.code;
  const detail = rule.message ?? (failure.detail ? sanitiseDetail(failure.detail, failure.secrets) : undefined);
  const message = `speech-to-text provider "${failure.engine}": ${detail ?? 'no message'} (${what})`;
  const options: SpeechErrorOptions = { retryable: rule.retryable };
  if (failure.retryAfterMs !== undefined) options.retryAfterMs = failure.retryAfterMs;
  return new ERROR_CLASS[rule.kind](message, options);
}
