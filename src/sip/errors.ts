import type { SipRequest } from './message.js';

/** Base class so callers can tell Ferry's SIP failures from everything else with one instanceof. */
export class SipError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The only error the parsers throw. `request` is set when the start line and headers were readable but the message
 * broke a rule (e.g. CSeq method mismatch): enough for a UAS to answer 400 with `reason`.
 */
export class SipParseError extends SipError {
  constructor(readonly reason: string, readonly request?: SipRequest) {
    super(`SIP parse error: ${reason}`);
  }
}

/** A request got no final response in time (Timer B/F). */
export class SipTimeoutError extends SipError {
  constructor(readonly method: string, readonly timeoutMs: number) {
    super(`${method} got no final response within ${timeoutMs} ms`);
  }
}

/** The transport could not deliver (connect refused, socket closed, UA closed). */
export class SipTransportError extends SipError {}
