import {
  LlmAbortedError,
  LlmAuthError,
  LlmBadRequestError,
  LlmBadResponseError,
  LlmError,
  LlmRateLimitedError,
  LlmTimeoutError,
  LlmUnavailableError,
  type LlmErrorCode,
  type LlmErrorOptions,
} from './errors.js';

/**
 * How a chat provider's failures become LlmErrors: ONE table, so the treatment of every answer is read in one place
 * and tested as a table.
 *
 * - `retry`: ask again after a short pause (the provider or the way to it broke; another try may well work).
 * - `back-off`: ask again after the provider's Retry-After, or an exponential wait when it gave none (throttled,
 *   overloaded).
 * - `fail`: asking again cannot help (the request, the key, or the answer is wrong; the caller cancelled; the time
 *   is up).
 *
 * Retries happen only before the first token reached the caller: once text is spoken, a second answer would differ.
 */
export type LlmFailureAction = 'retry' | 'back-off' | 'fail';

export interface LlmErrorRule {
  code: LlmErrorCode;
  action: LlmFailureAction;
  /** A fixed text in place of the provider's message (providers echo the key they were given). */
  message?: string;
}

/**
 * What went wrong: an HTTP status as text ("429"), or a failure with no status:
 * `timeout` (the first token or the whole answer came too late), `connection` (refused, reset, DNS …),
 * `stream-error` (an error object inside the event stream), `truncated` (the stream ended with no finish reason),
 * `malformed` (not a chat completion), `too-large` (over the size cap), `aborted` (the caller cancelled).
 */
export type LlmFailureKind =
  | `${number}`
  | 'timeout'
  | 'connection'
  | 'stream-error'
  | 'truncated'
  | 'malformed'
  | 'too-large'
  | 'aborted';

export const OPENAI_CHAT_ERRORS: Readonly<Record<string, LlmErrorRule>> = {
  '400': { code: 'bad-request', action: 'fail' },
  '401': { code: 'auth', action: 'fail', message: 'the provider refused the key' },
  '403': { code: 'auth', action: 'fail', message: 'the provider refused the key' },
  // An unknown model or a wrong base URL.
  '404': { code: 'bad-request', action: 'fail' },
  '408': { code: 'unavailable', action: 'retry', message: 'the provider timed out reading the request' },
  '409': { code: 'unavailable', action: 'retry' },
  // The conversation is over the model's context size.
  '413': { code: 'bad-request', action: 'fail' },
  '422': { code: 'bad-request', action: 'fail' },
  '429': { code: 'rate-limited', action: 'back-off', message: 'the provider is throttling requests' },
  '500': { code: 'unavailable', action: 'retry' },
  '502': { code: 'unavailable', action: 'retry' },
  // Overloaded, or a local server still loading the model: it says when to come back.
  '503': { code: 'unavailable', action: 'back-off' },
  '504': { code: 'unavailable', action: 'retry' },
  timeout: { code: 'timeout', action: 'fail' },
  connection: { code: 'unavailable', action: 'retry' },
  'stream-error': { code: 'unavailable', action: 'retry' },
  truncated: { code: 'unavailable', action: 'retry' },
  malformed: { code: 'bad-response', action: 'fail' },
  'too-large': { code: 'bad-response', action: 'fail' },
  aborted: { code: 'aborted', action: 'fail', message: 'the generation was cancelled' },
};

/** Statuses the table does not list: 5xx (and 529, "overloaded") are the provider's trouble; any other is final. */
function fallbackRule(kind: LlmFailureKind): LlmErrorRule {
  const status = Number(kind);
  if (status === 529) return { code: 'unavailable', action: 'back-off' };
  if (status >= 500) return { code: 'unavailable', action: 'retry' };
  if (status >= 400) return { code: 'bad-request', action: 'fail' };
  return { code: 'bad-response', action: 'fail' };
}

export function llmErrorRule(kind: LlmFailureKind): LlmErrorRule {
  return OPENAI_CHAT_ERRORS[kind] ?? fallbackRule(kind);
}

export interface LlmFailure {
  /** The model's label, so the message says which provider (e.g. "llm gpt-4o-mini"). */
  model: string;
  kind: LlmFailureKind;
  /** What the provider said, or what Ferry observed; sanitised here. */
  detail?: string;
  retryAfterMs?: number;
  attempts?: number;
  /** Only what cannot hold the provider's words (a network error's code): those may echo the key. */
  cause?: unknown;
  /** Strings that must never reach a message (the API key). */
  secrets: readonly string[];
}

const MAX_DETAIL_LENGTH = 200;
const ERROR_CLASS: Record<LlmErrorCode, new (message: string, options?: LlmErrorOptions) => LlmError> = {
  timeout: LlmTimeoutError,
  unavailable: LlmUnavailableError,
  'rate-limited': LlmRateLimitedError,
  auth: LlmAuthError,
  'bad-request': LlmBadRequestError,
  'bad-response': LlmBadResponseError,
  aborted: LlmAbortedError,
};

export function classifyLlmFailure(failure: LlmFailure): { error: LlmError; action: LlmFailureAction } {
  const rule = llmErrorRule(failure.kind);
  const status = /^\d+$/.test(failure.kind) ? Number(failure.kind) : undefined;
  const what = status === undefined ? failure.kind : `HTTP ${status}`;
  const detail = rule.message ?? (failure.detail ? sanitiseLlmDetail(failure.detail, failure.secrets) : undefined);
  const message = `chat model "${failure.model}": ${detail || 'no message'} (${what})`;
  const options: LlmErrorOptions = { retryable: rule.action !== 'fail' };
  if (failure.retryAfterMs !== undefined) options.retryAfterMs = failure.retryAfterMs;
  if (status !== undefined) options.status = status;
  if (failure.attempts !== undefined) options.attempts = failure.attempts;
  if (failure.cause !== undefined) options.cause = failure.cause;
  return { error: new ERROR_CLASS[rule.code](message, options), action: rule.action };
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
export function sanitiseLlmDetail(text: string, secrets: readonly string[]): string {
  let clean = text;
  for (const secret of secrets) {
    if (secret.length > 0) clean = clean.split(secret).join('[redacted]');
  }
  clean = clean.replace(TOKEN_SHAPES, '[redacted]').replace(CONTROL_CHARACTERS, ' ').replace(/\s+/g, ' ').trim();
  return clean.length > MAX_DETAIL_LENGTH ? `${clean.slice(0, MAX_DETAIL_LENGTH - 1)}…` : clean;
}
