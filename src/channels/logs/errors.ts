import type { ModuleErrors } from '../../http/errors.js';

/** The request logs module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const LOGS_ERRORS = {
  LOG_NOT_FOUND: { status: 404, message: 'No such request in the logs of this account' },
  LOGS_SESSION_REQUIRED: { status: 401, message: 'Sign in to the logs page with an API key holding logs:read' },
  CSRF_TOKEN_INVALID: { status: 403, message: 'The X-CSRF-Token header is missing or does not belong to this session' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof LOGS_ERRORS, true> {}
}
