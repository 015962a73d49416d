import { statusName } from './constants.js';

/** Base class so callers can tell Ferry's SMPP failures from everything else with one instanceof. */
export class SmppError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export type DecodeErrorCode =
  | 'INVALID_COMMAND_LENGTH'
  | 'TRUNCATED'
  | 'UNKNOWN_COMMAND_ID'
  | 'UNTERMINATED_CSTRING'
  | 'INVALID_FIELD';

/** The only error the decoder throws. Carries what was readable of the header so a nack can be addressed. */
export class SmppDecodeError extends SmppError {
  constructor(
    readonly code: DecodeErrorCode,
    message: string,
    readonly commandId?: number,
    readonly sequenceNumber?: number,
  ) {
    super(message);
  }
}

/** Thrown by the encoder for values SMPP cannot carry (e.g. short_message over 254 octets). */
export class SmppEncodeError extends SmppError {}

/** A request got no response within its timeout. */
export class SmppTimeoutError extends SmppError {
  constructor(readonly command: string, readonly sequenceNumber: number, readonly timeoutMs: number) {
    super(`${command} seq=${sequenceNumber} got no response within ${timeoutMs} ms`);
  }
}

export type CloseReason =
  | 'local'
  | 'unbind'
  | 'peer_unbind'
  | 'peer_closed'
  | 'socket_error'
  | 'decode_error'
  | 'idle_timeout'
  | 'enquire_link_timeout';

/** The session closed (for the given reason) before this request was answered. */
export class SessionClosedError extends SmppError {
  constructor(readonly reason: CloseReason, cause?: unknown) {
    super(`SMPP session closed (${reason})`, cause === undefined ? undefined : { cause });
  }
}

/** The window is full and the bounded wait queue too: the caller should back off (e.g. answer ESME_RTHROTTLED). */
export class SmppQueueFullError extends SmppError {
  constructor(readonly queued: number) {
    super(`SMPP send queue full (${queued} waiting)`);
  }
}

/** A bind was answered with a non-zero command_status. */
export class SmppBindError extends SmppError {
  constructor(readonly status: number) {
    super(`bind refused: ${statusName(status)}`);
  }
}

/** An operation not allowed in the session's current state. */
export class SmppStateError extends SmppError {}
