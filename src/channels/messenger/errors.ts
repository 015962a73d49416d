import type { ModuleErrors } from '../../http/errors.js';

/** The messenger module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const MESSENGER_ERRORS = {
  WA001: { status: 400, message: 'Invalid phone number (use E.164)' },
  WA002: { status: 422, message: 'The number is not on the messenger platform (check with /numbers/check)' },
  WA003: { status: 422, message: 'The conversation window is closed (send an approved template first)' },
  WA004: { status: 422, message: 'Media download failed (the media URL must be public HTTPS, of an allowed type and size)' },
  WA005: { status: 429, message: 'Rate limit hit (back off and retry)' },
  TEMPLATE_EXISTS: { status: 409, message: 'A template with that name and language exists' },
  MESSENGER_PROVIDER_ERROR: { status: 502, message: 'The messenger platform refused or failed the request' },
  MESSENGER_NO_NUMBER: { status: 422, message: 'The account has no messenger business number to send from (or `from` is not one of its numbers)' },
  MESSENGER_NUMBER_NOT_FOUND: { status: 404, message: 'No such messenger business number' },
  MESSENGER_NUMBER_EXISTS: { status: 409, message: 'This messenger business number (phone number id) exists already' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof MESSENGER_ERRORS, true> {}
}
