export type RoutingErrorCode = 'UNKNOWN_RULE' | 'UNKNOWN_UPSTREAM' | 'INVALID_RULE';

/** A routing request that cannot be honoured; `code` lets the admin API map it to 404 / 400. */
export class RoutingError extends Error {
  constructor(readonly code: RoutingErrorCode, message: string) {
    super(message);
    this.name = 'RoutingError';
  }
}
