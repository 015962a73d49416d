/** The writer was closed (shutdown): nothing new is accepted. */
export class LedgerClosedError extends Error {
  override readonly name = 'LedgerClosedError';
  constructor() {
    super('ledger writer is closed');
  }
}
