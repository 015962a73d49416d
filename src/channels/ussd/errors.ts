import type { ModuleErrors } from '../../http/errors.js';

/** The USSD module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const USSD_ERRORS = {
  USSD_MENU_NOT_FOUND: { status: 404, message: 'No such USSD menu' },
  INVALID_MENU_TREE: { status: 400, message: 'The menu tree is not valid; see data.errors for each problem' },
  USSD_MENU_IN_USE: { status: 409, message: 'A service code is answered by this menu; release or change the code first' },
  USSD_SERVICE_CODE_TAKEN: { status: 409, message: 'That service code is already claimed' },
  USSD_SERVICE_CODE_RESERVED: { status: 409, message: 'That service code is reserved (the OTP fallback)' },
  USSD_SERVICE_CODE_NOT_FOUND: { status: 404, message: 'No such service code claim' },
  USSD_SESSION_NOT_FOUND: { status: 404, message: 'No such USSD session' },
  USSD_CONNECTOR_NOT_FOUND: { status: 404, message: 'No such USSD aggregator connector' },
  INVALID_APP_URL: { status: 400, message: 'The app URL is not accepted (https and a public address are required)' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof USSD_ERRORS, true> {}
}
