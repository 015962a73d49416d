import type { ModuleErrors } from '../../http/errors.js';

/**
 * Mobile push's error codes, merged into the one catalogue at boot. Shapes of requests (a bad token, topic name,
 * locale) are the core's VALIDATION_ERROR naming the field; another account's app, device or topic is the same 404 as
 * one that does not exist.
 */
export const PUSH_ERRORS = {
  APP_NOT_FOUND: { status: 404, message: 'No such push app' },
  DEVICE_NOT_FOUND: { status: 404, message: 'No such device' },
  TOPIC_NOT_FOUND: { status: 404, message: 'No such topic' },
  INVALID_FCM_CREDENTIALS: { status: 400, message: 'The FCM service account is not valid; nothing was stored' },
  INVALID_APNS_CREDENTIALS: { status: 400, message: 'The APNs auth key or its ids are not valid; nothing was stored' },
  PUSH_NOT_FOUND: { status: 404, message: 'No such push send' },
  DEVICE_INVALID: { status: 422, message: "The device's token was invalidated by its service; register the device again with a new token" },
  NO_ACTIVE_DEVICES: { status: 422, message: 'The user has no active device' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof PUSH_ERRORS, true> {}
}
