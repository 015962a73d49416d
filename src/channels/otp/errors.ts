import type { ModuleErrors } from '../../http/errors.js';

/** The OTP module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const OTP_ERRORS = {
  ACTIVE_OTP_EXISTS: { status: 409, message: 'An unexpired OTP is already active for this phone' },
  OTP_EXPIRED: { status: 410, message: 'The OTP has expired' },
  INVALID_PIN: { status: 400, message: 'The code is wrong' },
  OTP_NOT_FOUND: { status: 404, message: 'No such OTP, or it was already verified' },
  OTP_LOCKED: { status: 423, message: 'No verification attempts left; request a new OTP' },
  RESEND_COOLDOWN: { status: 429, message: 'Wait for the resend cooldown to pass' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof OTP_ERRORS, true> {}
}
