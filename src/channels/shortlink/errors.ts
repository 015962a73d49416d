import type { ModuleErrors } from '../../http/errors.js';

/** The short links module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const SHORTLINK_ERRORS = {
  SHORTLINK_NOT_FOUND: { status: 404, message: 'No such short link' },
  SLUG_TAKEN: { status: 409, message: 'That slug is already in use; choose another' },
  EXTERNAL_ID_TAKEN: { status: 409, message: 'Another short link of the account has that externalId' },
  DESTINATION_DENIED: { status: 422, message: 'The destination URL is refused by the deny-list' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof SHORTLINK_ERRORS, true> {}
}
