/** What went wrong with a chat model, as the call loop decides on it (apologise, transfer, hang up, try later). */
export type LlmErrorCode = 'timeout' | 'unavailable' | 'rate-limited' | 'auth' | 'bad-request' | 'bad-response' | 'aborted';

export interface LlmErrorOptions {
  cause?: unknown;
  /** Whether the same request may succeed if asked again later. */
  retryable?: boolean;
  /** How long the provider asked callers to wait before asking again, when it said. */
  retryAfterMs?: number;
  /** The HTTP status of the provider's answer, when there was one. */
  status?: number;
  /** Requests made for this generation, the failed ones included. */
  attempts?: number;
}

/** Base class, so callers can tell model failures from everything else with one instanceof; `code` says which. */
export class LlmError extends Error {
  readonly code: LlmErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly status?: number;
  readonly attempts?: number;

  constructor(code: LlmErrorCode, message: string, options?: LlmErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options?.retryable ?? false;
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options?.status !== undefined) this.status = options.status;
    if (options?.attempts !== undefined) this.attempts = options.attempts;
  }
}

/** No first token, or no complete answer, within the configured time. */
export class LlmTimeoutError extends LlmError {
  constructor(message: string, options?: LlmErrorOptions) {
    super('timeout', message, options);
  }
}

/** The provider or the way to it is down or failing (connection refused, 5xx, the stream broke off). */
export class LlmUnavailableError extends LlmError {
  constructor(message: string, options?: LlmErrorOptions) {
    super('unavailable', message, options);
  }
}

/** The provider throttles (429); retryable after `retryAfterMs` when it said. */
export class LlmRateLimitedError extends LlmError {
  constructor(message: string, options?: LlmErrorOptions) {
    super('rate-limited', message, options);
  }
}

/** The provider refused the key (401, 403): asking again cannot help until the configuration changes. */
export class LlmAuthError extends LlmError {
  constructor(message: string, options?: LlmErrorOptions) {
    super('auth', message, options);
  }
}

/** The request itself is wrong: unknown model, invalid messages or tools, a conversation over the context size. */
export class LlmBadRequestError extends LlmError {
  constructor(message: string, options?: LlmErrorOptions) {
    super('bad-request', message, options);
  }
}

/** The provider answered something that is not a usable chat completion (unparseable, over the size cap). */
export class LlmBadResponseError extends LlmError {
  constructor(message: string, options?: LlmErrorOptions) {
    super('bad-response', message, options);
  }
}

/** The caller cancelled the generation (barge-in); not a failure of the provider. */
export class LlmAbortedError extends LlmError {
  constructor(message: string, options?: LlmErrorOptions) {
    super('aborted', message, options);
  }
}
