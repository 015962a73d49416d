import { ApiError, invalidField, rateLimited, type ErrorCode } from '../http/errors.js';
import { SmsError, type SmsErrorCode } from './types.js';

/** Spec §8: the longest message body over REST (SMS, OTP templates), in characters as people count them. */
export const MAX_MESSAGE_CHARS = 1530;

/**
 * How each SmsError reaches an HTTP client: the catalogue code, and for VALIDATION_ERROR the field it names. THROTTLED
 * and BUSY become 429 with Retry-After; STORAGE_UNAVAILABLE becomes 503 (nothing was accepted).
 */
export const SMS_ERROR_HTTP: Readonly<Record<SmsErrorCode, { code: ErrorCode; field?: string }>> = {
  INVALID_SOURCE: { code: 'INVALID_SENDER_ID' },
  INVALID_DESTINATION: { code: 'INVALID_PHONE_NUMBER' },
  EMPTY_MESSAGE: { code: 'VALIDATION_ERROR', field: 'message' },
  MESSAGE_TOO_LONG: { code: 'MESSAGE_TOO_LONG' },
  INVALID_DATA_CODING: { code: 'VALIDATION_ERROR', field: 'message' },
  INVALID_SCHEDULE: { code: 'VALIDATION_ERROR', field: 'scheduledAt' },
  INVALID_VALIDITY: { code: 'VALIDATION_ERROR', field: 'scheduledAt' },
  NO_ROUTE: { code: 'NO_ROUTE' },
  ACCOUNT_SUSPENDED: { code: 'ACCOUNT_SUSPENDED' },
  INSUFFICIENT_CREDIT: { code: 'INSUFFICIENT_CREDIT' },
  RECIPIENT_NOT_ALLOWED: { code: 'RECIPIENT_NOT_ALLOWED' },
  MESSAGE_NOT_FOUND: { code: 'MESSAGE_NOT_FOUND' },
  NOT_RESENDABLE: { code: 'NOT_RESENDABLE' },
  THROTTLED: { code: 'RATE_LIMIT_EXCEEDED' },
  BUSY: { code: 'RATE_LIMIT_EXCEEDED' },
  STORAGE_UNAVAILABLE: { code: 'SERVICE_UNAVAILABLE' },
};

/** An SmsError as the API error to send; anything else is passed through for the app's error handler. */
export function smsHttpError(err: unknown): unknown {
  if (!(err instanceof SmsError)) return err;
  const map = SMS_ERROR_HTTP[err.code];
  if (map.code === 'RATE_LIMIT_EXCEEDED') return rateLimited('RATE_LIMIT_EXCEEDED', err.retryAfterMs ?? 1000);
  // The service's text may name internals (driver errors): the catalogue's message is enough.
  if (map.code === 'SERVICE_UNAVAILABLE') return new ApiError('SERVICE_UNAVAILABLE');
  if (map.field) return invalidField(map.field, err.message);
  return new ApiError(map.code, { message: err.message });
}
