/**
 * More rows are waiting for a commit than the writer holds (maxPending): the caller answers
 * ESME_RTHROTTLED / HTTP 429 instead of the process buffering without bound (principle 3).
 */
export class LedgerBusyError extends Error {
  override readonly name = 'LedgerBusyError';
  constructor(readonly pending: number) {
    super(`ledger busy: ${pending} rows waiting for commit`);
  }
}
