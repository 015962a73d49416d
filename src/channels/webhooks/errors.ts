import type { ModuleErrors } from '../../http/errors.js';

/** The webhooks module's error codes: merged into the one catalogue at boot (its HTTP status, its default message). */
export const WEBHOOKS_ERRORS = {
  WEBHOOK_NOT_FOUND: { status: 404, message: 'No such webhook endpoint' },
  INVALID_WEBHOOK_URL: { status: 400, message: 'The webhook URL is not accepted (https and a public address are required)' },
  DELIVERY_NOT_FOUND: { status: 404, message: 'No such webhook delivery' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof WEBHOOKS_ERRORS, true> {}
}
