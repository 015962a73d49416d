/**
 * Why a relay could not start (start() rejects with a RelayError) or could not go on (the brain's `failed` event carries
 * RELAY_CLOSED or RELAY_TIMEOUT as its code).
 */
export type RelayErrorCode =
  /** The SSRF guard refused the URL (scheme, or an address the server may not reach). */
  | 'RELAY_URL_REFUSED'
  /** The TCP or TLS connection failed (refused, reset, unreachable). */
  | 'RELAY_CONNECT_FAILED'
  /** No WebSocket within connectTimeoutMs. */
  | 'RELAY_CONNECT_TIMEOUT'
  /** The server answered the upgrade with an HTTP status (e.g. 401 when it refused the signature). */
  | 'RELAY_REJECTED'
  /** The socket closed while the call was going on (or before it was open, by close()). */
  | 'RELAY_CLOSED'
  /** The relay did not answer a prompt within responseTimeoutMs, or stalled in the middle of an answer. */
  | 'RELAY_TIMEOUT';

export class RelayError extends Error {
  override readonly name = 'RelayError';
  constructor(
    readonly code: RelayErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
