import type { ModuleErrors } from '../../http/errors.js';

/** The SMS module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const SMS_ERRORS = {
  BATCH_NOT_FOUND: { status: 404, message: 'No such batch' },
  BULK_REJECTED: { status: 422, message: 'No message of the bulk request was accepted; data.results gives the reason of each' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof SMS_ERRORS, true> {}
}
