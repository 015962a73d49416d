export interface SpeechErrorOptions {
  cause?: unknown;
  /** Whether the same request may succeed if asked again later (provider overloaded, timed out …). */
  retryable?: boolean;
  /** How long the provider asked callers to wait before asking again, when it said. */
  retryAfterMs?: number;
}

/** Base class, so callers can tell speech failures from everything else with one instanceof. */
export class SpeechError extends Error {
  readonly retryable: boolean;
  readonly retryAfterMs?: number;

  constructor(message: string, options?: SpeechErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retryable = options?.retryable ?? false;
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/** The engine cannot run on this host (e.g. the espeak-ng program is not installed). */
export class SpeechUnavailableError extends SpeechError {}

/** The request cannot be spoken as given: empty or too long text, an unknown voice, a rate out of range. */
export class SpeechInputError extends SpeechError {}

/** Too many syntheses are already waiting; try again later (back-pressure, not a fault, so retryable by default). */
export class SpeechBusyError extends SpeechError {
  constructor(message: string, options?: SpeechErrorOptions) {
    super(message, { ...options, retryable: options?.retryable ?? true });
  }
}

/** The engine ran and failed: a timeout, an error exit, output over the cap or unreadable. */
export class SpeechFailedError extends SpeechError {}
