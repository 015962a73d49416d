import {
  SpeechBusyError,
  SpeechError,
  SpeechFailedError,
  SpeechInputError,
  SpeechUnavailableError,
  type SpeechErrorOptions,
} from './errors.js';

/**
 * How an OpenAI-compatible speech provider's failures become SpeechErrors: ONE table, courier-style, so the
 * treatment of every answer is read in one place and tested as a table.
 *
 * - `input`: the request itself is wrong (bad text, unknown voice or model); the provider's own words are kept.
 * - `unavailable`: the provider refuses us (key wrong or revoked); a fixed text, never the provider's, since providers
 *   echo the key they were given.
 * - `busy`: the provider throttles; retryable, after its Retry-After when it gave one.
 * - `failed`: the provider or the way to it broke; retryable where asking again can help.
 */
export type SpeechErrorKind = 'input' | 'unavailable' | 'busy' | 'failed';

export interface SpeechErrorRule {
  kind: SpeechErrorKind;
  retryable: boolean;
  /** A fixed text in place of the provider's message. */
  message?: string;
}

/** What went wrong: an HTTP status as text ("429"), or a failure with no answer. */
export type SpeechFailureCode = `${number}` | 'timeout' | 'connection' | 'unreadable' | 'too-large';

export const OPENAI_SPEECH_ERRORS: Readonly<Record<string, SpeechErrorRule>> = {
  '400': { kind: 'input', retryable: false },
  '401': { kind: 'unavailable', retryable: false, message: 'the provider refused the key' },
  '403': { kind: 'unavailable', retryable: false, message: 'the provider refused the key' },
  '404': { kind: 'input', retryable: false },
  '408': { kind: 'failed', retryable: true, message: 'the provider timed out reading the request' },
  '409': { kind: 'failed', retryable: true },
  '413': { kind: 'input', retryable: false },
  '422': { kind: 'input', retryable: false },
  '429': { kind: 'busy', retryable: true, message: 'the provider is throttling requests' },
  timeout: { kind: 'failed', retryable: true },
  connection: { kind: 'failed', retryable: true },
  // An answer we cannot use (not WAV, truncated, wrong rate): asking again rarely changes it.
  unreadable: { kind: 'failed', retryable: false },
  'too-large': { kind: 'failed', retryable: false },
};

/** Codes the table does not list: 5xx are the provider's trouble (retryable); any other status is final. */
function fallbackRule(code: SpeechFailureCode): SpeechErrorRule {
  const status = Number(code);
  if (status >= 500) return { kind: 'failed', retryable: true };
  return { kind: 'failed', retryable: false };
}

export function speechErrorRule(code: SpeechFailureCode): SpeechErrorRule {
  return OPENAI_SPEECH_ERRORS[code] ?? fallbackRule(code);
}

export interface SpeechFailure {
  /** The engine id, so the message says which provider (e.g. "mms"). */
  engine: string;
  code: SpeechFailureCode;
  /** What the provider said, or what Ferry observed (for timeouts and unusable answers); sanitised here. */
  detail?: string;
  retryAfterMs?: number;
  /** Strings that must never reach a message (the API key). */
  secrets: readonly string[];
}

const MAX_DETAIL_LENGTH = 200;
const ERROR_CLASS = {
  input: SpeechInputError,
  unavailable: SpeechUnavailableError,
  busy: SpeechBusyError,
  failed: SpeechFailedError,
} as const;

export function classifySpeechFailure(failure: SpeechFailure): SpeechError {
  const rule = speechErrorRule(failure.code);
  const what = /^\d+$/.test(failure.code) ? `HTTP ${failure.code}` : failure.code;
  const detail = rule.message ?? (failure.detail ? sanitiseDetail(failure.detail, failure.secrets) : undefined);
  const message = `speech provider "${failure.engine}": ${detail ?? 'no message'} (${what})`;
  const options: SpeechErrorOptions = { retryable: rule.retryable };
  if (failure.retryAfterMs !== undefined) options.retryAfterMs = failure.retryAfterMs;
  return new ERROR_CLASS[rule.kind](message, options);
}

/* eslint-disable no-control-regex -- removing control characters is the point */
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]+/g;
/* eslint-enable no-control-regex */
/** Token shapes providers echo back: "Bearer …", OpenAI-style "sk-…" keys. */
const TOKEN_SHAPES = /\bBearer\s+\S+|\bsk-[A-Za-z0-9_-]{8,}/gi;

/**
 * A provider's message made fit for Ferry's logs and API answers: one line, printable, no key (whole or token-shaped)
 * and at most 200 characters.
 */
export function sanitiseDetail(text: string, secrets: readonly string[]): string {
  let clean = text;
  for (const secret of secrets) {
    if (secret.length > 0) clean = clean.split(secret).join('[redacted]');
  }
  clean = clean.replace(TOKEN_SHAPES, '[redacted]').replace(CONTROL_CHARACTERS, ' ').replace(/\s+/g, ' ').trim();
  return clean.length > MAX_DETAIL_LENGTH ? `${clean.slice(0, MAX_DETAIL_LENGTH - 1)}…` : clean;
}
