import { SENDER_RULE } from '../messaging/sender.js';

/**
 * The one error catalogue: code → HTTP status → default message. Every error response of the
 * API (and the admin API) uses a code from here; the OpenAPI document lists them all.
 */
export const ERROR_CATALOGUE = {
  // request shape
  VALIDATION_ERROR: { status: 400, message: 'The request is not valid; see data.errors for each field' },
  INVALID_JSON: { status: 400, message: 'The request body is not valid JSON' },
  MALFORMED_REQUEST: { status: 400, message: 'The HTTP request is malformed' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Send the body as application/json' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is larger than the server accepts' },
  HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are larger than the server accepts' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request was not received in time' },
  NOT_FOUND: { status: 404, message: 'No such endpoint' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'This endpoint does not accept that method; the Allow header lists those it does' },
  // authentication (spec §5.6)
  AUTH_HEADER_MISSING: { status: 401, message: 'The Authorization header is missing' },
  AUTH_HEADER_MALFORMED: { status: 401, message: 'The Authorization header is malformed; use Basic base64(key:secret) or Bearer' },
  INVALID_CREDENTIALS: { status: 401, message: 'The API key or secret is wrong, revoked or expired' },
  INSUFFICIENT_SCOPE: { status: 403, message: 'The API key lacks the scope this endpoint needs' },
  ACCOUNT_SUSPENDED: { status: 403, message: 'The account is suspended' },
  TOO_MANY_AUTH_FAILURES: { status: 429, message: 'Too many failed authentications from this client; retry later' },
  RATE_LIMIT_EXCEEDED: { status: 429, message: 'Rate limit exceeded; retry after the indicated time' },
  // messaging
  INVALID_PHONE_NUMBER: { status: 400, message: 'The phone number is not valid' },
  INVALID_SENDER_ID: { status: 400, message: `The sender ID is not valid: it must be ${SENDER_RULE}` },
  MESSAGE_TOO_LONG: { status: 400, message: 'The message is too long' },
  INSUFFICIENT_CREDIT: { status: 402, message: 'The account balance is too low for this request' },
  RECIPIENT_NOT_ALLOWED: { status: 403, message: 'This key or account may not send to that recipient' },
  MESSAGE_NOT_FOUND: { status: 404, message: 'No such message' },
  NOT_RESENDABLE: { status: 409, message: 'Only failed, undelivered, rejected or expired messages can be resent' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, message: 'This Idempotency-Key was used with a different request' },
  IDEMPOTENCY_IN_PROGRESS: { status: 409, message: 'A request with this Idempotency-Key is still being processed; retry shortly' },
  NO_ROUTE: { status: 422, message: 'No route can deliver to this recipient' },
  BATCH_NOT_FOUND: { status: 404, message: 'No such batch' },
  BULK_REJECTED: { status: 422, message: 'No message of the bulk request was accepted; data.results gives the reason of each' },
  // OTP (spec §7.1)
  ACTIVE_OTP_EXISTS: { status: 409, message: 'An unexpired OTP is already active for this phone' },
  OTP_EXPIRED: { status: 410, message: 'The OTP has expired' },
  INVALID_PIN: { status: 400, message: 'The code is wrong' },
  OTP_NOT_FOUND: { status: 404, message: 'No such OTP, or it was already verified' },
  OTP_LOCKED: { status: 423, message: 'No verification attempts left; request a new OTP' },
  RESEND_COOLDOWN: { status: 429, message: 'Wait for the resend cooldown to pass' },
  // shortlink
  SHORTLINK_NOT_FOUND: { status: 404, message: 'No such short link' },
  SLUG_TAKEN: { status: 409, message: 'That slug is already in use; choose another' },
  EXTERNAL_ID_TAKEN: { status: 409, message: 'Another short link of the account has that externalId' },
  DESTINATION_DENIED: { status: 422, message: 'The destination URL is refused by the deny-list' },
  // messenger (spec §7.2)
  WA001: { status: 400, message: 'Invalid phone number (use E.164)' },
  WA002: { status: 422, message: 'The number is not on the messenger platform (check with /numbers/check)' },
  WA003: { status: 422, message: 'The conversation window is closed (send an approved template first)' },
  WA004: { status: 422, message: 'Media download failed (the media URL must be public HTTPS, of an allowed type and size)' },
  WA005: { status: 429, message: 'Rate limit hit (back off and retry)' },
  TEMPLATE_NOT_FOUND: { status: 404, message: 'No such template' },
  TEMPLATE_EXISTS: { status: 409, message: 'A template with that name and language exists' },
  MESSENGER_PROVIDER_ERROR: { status: 502, message: 'The messenger platform refused or failed the request' },
  MESSENGER_NO_NUMBER: { status: 422, message: 'The account has no messenger business number to send from (or `from` is not one of its numbers)' },
  MESSENGER_NUMBER_NOT_FOUND: { status: 404, message: 'No such messenger business number' },
  MESSENGER_NUMBER_EXISTS: { status: 409, message: 'This messenger business number (phone number id) exists already' },
  // email
  SENDER_DOMAIN_UNKNOWN: { status: 422, message: 'from is not an address of a sending domain of this account (POST /v1/email/domains)' },
  SENDER_DOMAIN_NOT_VERIFIED: { status: 422, message: "The sending domain's DKIM record is not published yet (GET /v1/email/domains/{id})" },
  EMAIL_DOMAIN_NOT_FOUND: { status: 404, message: 'No such sending domain' },
  TEMPLATE_RENDER_ERROR: { status: 422, message: 'The template could not be rendered: a variable is missing from data, or the template is malformed' },
  ATTACHMENTS_TOO_LARGE: { status: 413, message: 'The attachments exceed 10 MB after decoding' },
  SUPPRESSION_NOT_FOUND: { status: 404, message: 'The address is not suppressed' },
  EMAIL_NOT_FOUND: { status: 404, message: 'No such email message' },
  SCHEDULE_NOT_FOUND: { status: 404, message: 'No such email schedule' },
  // operator / admin
  ADMIN_UNAUTHORIZED: { status: 401, message: 'The admin token is missing or wrong' },
  ACCOUNT_NOT_FOUND: { status: 404, message: 'No such account' },
  ACCOUNT_EXISTS: { status: 409, message: 'An account with that name exists' },
  KEY_NOT_FOUND: { status: 404, message: 'No such API key' },
  CONFLICT: { status: 409, message: 'The request conflicts with the current state' },
  RULE_NOT_FOUND: { status: 404, message: 'No such routing rule' },
  UNKNOWN_UPSTREAM: { status: 400, message: 'No upstream with that id is running' },
  UPSTREAM_NOT_FOUND: { status: 404, message: 'No such upstream' },
  UPSTREAM_IN_CONFIG: { status: 409, message: 'This upstream comes from the config file; change or remove it there' },
  NOT_FINAL: { status: 409, message: 'The message has no final status yet' },
  NOT_SMPP: { status: 409, message: 'Receipts are replayed only for messages submitted over SMPP' },
  NUMBER_NOT_FOUND: { status: 404, message: 'The account does not own that number' },
  SIMULATOR_NOT_RUNNING: { status: 404, message: 'The embedded simulator is not running in this daemon' },
  INVALID_AMOUNT: { status: 400, message: 'The amount is not valid: a positive decimal within the money range, with no more decimal places than the currency has' },
  CREDIT_LIMIT_EXCEEDED: { status: 409, message: 'The debit would take the balance below the credit limit of the account (below zero when it has none)' },
  // webhooks
  WEBHOOK_NOT_FOUND: { status: 404, message: 'No such webhook endpoint' },
  INVALID_WEBHOOK_URL: { status: 400, message: 'The webhook URL is not accepted (https and a public address are required)' },
  DELIVERY_NOT_FOUND: { status: 404, message: 'No such webhook delivery' },
  // ussd
  USSD_MENU_NOT_FOUND: { status: 404, message: 'No such USSD menu' },
  INVALID_MENU_TREE: { status: 400, message: 'The menu tree is not valid; see data.errors for each problem' },
  USSD_MENU_IN_USE: { status: 409, message: 'A service code is answered by this menu; release or change the code first' },
  USSD_SERVICE_CODE_TAKEN: { status: 409, message: 'That service code is already claimed' },
  USSD_SERVICE_CODE_RESERVED: { status: 409, message: 'That service code is reserved (the OTP fallback)' },
  USSD_SERVICE_CODE_NOT_FOUND: { status: 404, message: 'No such service code claim' },
  USSD_SESSION_NOT_FOUND: { status: 404, message: 'No such USSD session' },
  USSD_CONNECTOR_NOT_FOUND: { status: 404, message: 'No such USSD aggregator connector' },
  INVALID_APP_URL: { status: 400, message: 'The app URL is not accepted (https and a public address are required)' },
  // logs
  LOG_NOT_FOUND: { status: 404, message: 'No such request in the logs of this account' },
  LOGS_SESSION_REQUIRED: { status: 401, message: 'Sign in to the logs page with an API key holding logs:read' },
  CSRF_TOKEN_INVALID: { status: 403, message: 'The X-CSRF-Token header is missing or does not belong to this session' },
  // mcp
  MCP_HOST_NOT_ALLOWED: { status: 403, message: 'The Host or Origin header is not allowed for /mcp (DNS-rebinding guard; see mcp.allowedHosts)' },
  // server side
  SERVICE_UNAVAILABLE: { status: 503, message: 'A storage backend is unavailable; retry shortly' },
  SHUTTING_DOWN: { status: 503, message: 'The server is shutting down; retry shortly' },
  INTERNAL_ERROR: { status: 500, message: 'Internal error' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface FieldError {
  field: string;
  message: string;
}

/** An error the API reports to its caller, with a catalogue code. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    opts: { message?: string; data?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(opts.message ?? ERROR_CATALOGUE[code].message);
    this.status = ERROR_CATALOGUE[code].status;
    this.data = opts.data;
    this.headers = opts.headers;
  }
  readonly data: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
}

export function rateLimited(code: 'RATE_LIMIT_EXCEEDED' | 'TOO_MANY_AUTH_FAILURES' | 'RESEND_COOLDOWN', retryAfterMs: number, extra: Record<string, unknown> = {}): ApiError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new ApiError(code, { data: { retryAfter: seconds, ...extra }, headers: { 'retry-after': String(seconds) } });
}

/** VALIDATION_ERROR for one field, in the same shape schema validation uses. */
export function invalidField(field: string, message: string): ApiError {
  return new ApiError('VALIDATION_ERROR', { data: { errors: [{ field, message }] } });
}
