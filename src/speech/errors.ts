/** Base class, so callers can tell speech failures from everything else with one instanceof. */
export class SpeechError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The engine cannot run on this host (e.g. the espeak-ng program is not installed). */
export class SpeechUnavailableError extends SpeechError {}

/** The request cannot be spoken as given: empty or too long text, an unknown voice, a rate out of range. */
export class SpeechInputError extends SpeechError {}

/** Too many syntheses are already waiting; try again later (back-pressure, not a fault). */
export class SpeechBusyError extends SpeechError {}

/** The engine ran and failed: a timeout, an error exit, output over the cap or unreadable. */
export class SpeechFailedError extends SpeechError {}
