import { ErrorTable, type SendResult } from '../../../outbound/index.js';
import { DEVICE_TOKEN_INVALID, DEVICE_UNREGISTERED, PUSH_CREDENTIALS_REJECTED } from './types.js';

/** The provider's name (the metrics' `provider` label, the sends' provider column). */
export const FCM_PROVIDER = 'fcm';

/** Ferry's code for a message FCM refused for what it carries (not for its token): nothing a retry can fix. */
export const PUSH_REJECTED = 'PUSH_REJECTED';

/**
 * The table's key for an INVALID_ARGUMENT about the registration token (FCM answers the same INVALID_ARGUMENT for a
 * malformed token and for, say, a bad TTL; only the former says the device is gone). Not an FCM code: the answer keeps
 * `INVALID_ARGUMENT` as the provider's code.
 */
const INVALID_TOKEN_KEY = 'INVALID_ARGUMENT(message.token)';

/**
 * THE FCM table: FCM HTTP v1's `FcmError.errorCode` (else the error's `status`), and the OAuth2 token endpoint's
 * `error`, onto Ferry's code and what to do. Dead tokens invalidate the device; credential errors pause the app.
 */
export const FCM_ERRORS = new ErrorTable(FCM_PROVIDER, {
  // 404: the app was uninstalled, the token expired or the app unregistered itself.
  UNREGISTERED: { ferryCode: DEVICE_UNREGISTERED, action: 'fail', message: 'FCM: the registration token is no longer registered' },
  [INVALID_TOKEN_KEY]: { ferryCode: DEVICE_TOKEN_INVALID, action: 'fail', message: 'FCM: not a valid FCM registration token' },
  // 403: a token of another Firebase project (another sender id): never deliverable with these credentials.
  SENDER_ID_MISMATCH: { ferryCode: DEVICE_TOKEN_INVALID, action: 'fail', message: 'FCM: the registration token belongs to another Firebase project' },
  // 400 about the message itself: too big, a reserved data key, a bad TTL...
  INVALID_ARGUMENT: { ferryCode: PUSH_REJECTED, action: 'fail' },
  // 429: the project's or the device's sending rate; Retry-After says when.
  QUOTA_EXCEEDED: { ferryCode: 'PROVIDER_THROTTLED', action: 'backoff' },
  RESOURCE_EXHAUSTED: { ferryCode: 'PROVIDER_THROTTLED', action: 'backoff' },
  // 503 / 500: FCM's own trouble.
  UNAVAILABLE: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  INTERNAL: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  DEADLINE_EXCEEDED: { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  // The app's APNs key or web push key in the Firebase console is missing or refused.
  THIRD_PARTY_AUTH_ERROR: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'FCM refused the app\'s APNs or web push credentials (THIRD_PARTY_AUTH_ERROR)' },
  // Still refused with a fresh access token (the client retries once first), or the account may not send for the project.
  UNAUTHENTICATED: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'FCM refused the access token of the service account' },
  PERMISSION_DENIED: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail', message: 'the service account may not send messages for this Firebase project' },
  // The OAuth2 token endpoint (RFC 6749 §5.2): the key is revoked, the account deleted, the assertion refused.
  invalid_grant: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail' },
  invalid_client: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail' },
  unauthorized_client: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail' },
  invalid_scope: { ferryCode: PUSH_CREDENTIALS_REJECTED, action: 'fail' },
});

/** An FCM HTTP v1 error answer's body (google.rpc.Status as JSON). */
export interface FcmErrorBody {
  error?: {
    code?: number;
    message?: string;
    status?: string;
    details?: Array<{ '@type'?: string; errorCode?: string; fieldViolations?: Array<{ field?: string; description?: string }> }>;
  };
}

const FCM_ERROR_TYPE = 'type.googleapis.com/google.firebase.fcm.v1.FcmError';
const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest';
const ABOUT_TOKEN = /registration token/i;

/** The FcmError's errorCode of an error body, when it has one (UNSPECIFIED_ERROR says nothing). */
export function fcmErrorCode(body: FcmErrorBody | null | undefined): string | undefined {
  for (const d of body?.error?.details ?? []) {
    if (d?.['@type'] === FCM_ERROR_TYPE && typeof d.errorCode === 'string' && d.errorCode !== 'UNSPECIFIED_ERROR') return d.errorCode;
  }
  return undefined;
}

/** Whether an INVALID_ARGUMENT is about the registration token: a field violation on message.token, or the message says so. */
function aboutToken(body: FcmErrorBody): boolean {
  if (ABOUT_TOKEN.test(body.error?.message ?? '')) return true;
  for (const d of body.error?.details ?? []) {
    if (d?.['@type'] !== BAD_REQUEST_TYPE) continue;
    for (const v of d.fieldViolations ?? []) if (v?.field === 'message.token' || ABOUT_TOKEN.test(v?.description ?? '')) return true;
  }
  return false;
}

/** A messages:send error answer as a SendResult: by the FcmError's errorCode, else the status, else the HTTP status. */
export function classifyFcmError(httpStatus: number, body: FcmErrorBody | null, retryAfterMs?: number): Exclude<SendResult, { kind: 'sent' }> {
  const code = fcmErrorCode(body) ?? body?.error?.status;
  const key = code === 'INVALID_ARGUMENT' && body && aboutToken(body) ? INVALID_TOKEN_KEY : code;
  const r = FCM_ERRORS.classify({ providerCode: key, message: body?.error?.message, httpStatus, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
  return key === INVALID_TOKEN_KEY ? { ...r, providerCode: code } : r;
}

/** The OAuth2 token endpoint's error body (RFC 6749 §5.2). */
export interface OAuthErrorBody {
  error?: string;
  error_description?: string;
}

/**
 * A token endpoint error answer as a SendResult. Any other 4xx than 408/429 (an unknown `error`, or none) is a refusal
 * of the credentials too: nothing but new credentials changes what the endpoint answers to the same assertion.
 */
export function classifyFcmTokenError(httpStatus: number, body: OAuthErrorBody | null, retryAfterMs?: number): Exclude<SendResult, { kind: 'sent' }> {
  const code = typeof body?.error === 'string' && body.error ? body.error : undefined;
  const message = `the OAuth2 token endpoint refused the service account: ${code ?? `HTTP ${httpStatus}`}${body?.error_description ? ` (${body.error_description})` : ''}`;
  const r = FCM_ERRORS.classify({ providerCode: code, message, httpStatus, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
  if (r.kind === 'fail' && r.code === 'PROVIDER_REJECTED') return { ...r, code: PUSH_CREDENTIALS_REJECTED };
  return r;
}
