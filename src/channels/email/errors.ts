import type { ModuleErrors } from '../../http/errors.js';

/** The email module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const EMAIL_ERRORS = {
  SENDER_DOMAIN_UNKNOWN: { status: 422, message: 'from is not an address of a sending domain of this account (POST /v1/email/domains)' },
  SENDER_DOMAIN_NOT_VERIFIED: { status: 422, message: "The sending domain's DKIM record is not published yet (GET /v1/email/domains/{id})" },
  EMAIL_DOMAIN_NOT_FOUND: { status: 404, message: 'No such sending domain' },
  TEMPLATE_RENDER_ERROR: { status: 422, message: 'The template could not be rendered: a variable is missing from data, or the template is malformed' },
  ATTACHMENTS_TOO_LARGE: { status: 413, message: 'The attachments exceed 10 MB after decoding' },
  SUPPRESSION_NOT_FOUND: { status: 404, message: 'The address is not suppressed' },
  EMAIL_NOT_FOUND: { status: 404, message: 'No such email message' },
  SCHEDULE_NOT_FOUND: { status: 404, message: 'No such email schedule' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof EMAIL_ERRORS, true> {}
}
