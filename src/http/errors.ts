import { SENDER_RULE } from '../messaging/sender.js';

/**
 * The core's error codes: code → HTTP status → default message. With the codes each module declares (its
 * `errors`, merged at boot by installModuleErrors) they are the one catalogue: every error response of the API (and
 * the admin API) uses a code from it; the OpenAPI document lists them all.
 */
export const CORE_ERRORS = {
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
  END_USER_TOKEN_NOT_ACCEPTED: { status: 401, message: 'This route takes an API key; an end-user token opens only the routes of the product that minted it' },
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
  // templates (messenger and email)
  TEMPLATE_NOT_FOUND: { status: 404, message: 'No such template' },
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
  // server side
  SERVICE_UNAVAILABLE: { status: 503, message: 'A storage backend is unavailable; retry shortly' },
  SHUTTING_DOWN: { status: 503, message: 'The server is shutting down; retry shortly' },
  INTERNAL_ERROR: { status: 500, message: 'Internal error' },
} as const satisfies Record<string, ErrorDeclaration>;

/** One code of the catalogue: the HTTP status it answers with and its default message (also its documentation). */
export interface ErrorDeclaration {
  readonly status: number;
  readonly message: string;
}

/** The codes a module declares (`ChannelModule.errors`, in its own errors.ts). */
export type ModuleErrors = Readonly<Record<string, ErrorDeclaration>>;

/**
 * The codes of the products, filled in by each product's errors.ts (declaration merging) so that a code is checked
 * where it is thrown without the core importing the product.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ProductErrorCodes {}

export type ErrorCode = keyof typeof CORE_ERRORS | keyof ProductErrorCodes;

/** The one catalogue: the core's codes, then those of the modules installed at boot. Owner 'core' or a module name. */
const catalogue = new Map<string, ErrorDeclaration & { owner: string }>(Object.entries(CORE_ERRORS).map(([code, e]) => [code, { ...e, owner: 'core' }]));

/**
 * Merges the modules' codes into the catalogue, all or none: a code declared twice (by two modules, or by a module
 * and the core) stops the boot naming both. A module installed again (another daemon in this process) keeps its codes.
 */
export function installModuleErrors(modules: readonly { name: string; errors?: ModuleErrors }[]): void {
  const adding = new Map<string, ErrorDeclaration & { owner: string }>();
  for (const m of modules) {
    for (const [code, e] of Object.entries(m.errors ?? {})) {
      const other = adding.get(code)?.owner ?? catalogue.get(code)?.owner;
      if (other !== undefined && other !== m.name) {
        throw new Error(`error code ${code} is declared twice: by ${other === 'core' ? 'the core' : `module ${other}`} and by module ${m.name}`);
      }
      adding.set(code, { status: e.status, message: e.message, owner: m.name });
    }
  }
  for (const [code, e] of adding) catalogue.set(code, e);
}

/** The merged catalogue, in order (core first), for the OpenAPI description, the docs and tests. */
export function errorCatalogue(): Readonly<Record<string, ErrorDeclaration>> {
  return Object.fromEntries([...catalogue].map(([code, { status, message }]) => [code, { status, message }]));
}

/** A code's status and default message; undefined for a code no running module declared. */
export function errorEntry(code: string): ErrorDeclaration | undefined {
  const e = catalogue.get(code);
  return e && { status: e.status, message: e.message };
}

export interface FieldError {
  field: string;
  message: string;
}

/**
 * An error reported to the API's caller, with a catalogue code: thrown by services and routes alike, it carries no
 * HTTP status of its own; the status (and the default message) are the catalogue's for its code.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: ErrorCode,
    opts: { message?: string; data?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(opts.message ?? errorEntry(code)?.message ?? code);
    this.data = opts.data;
    this.headers = opts.headers;
  }
  /** The catalogue's status for the code; 500 for a code no running module declared (a defect, logged by the HTTP layer). */
  get status(): number {
    return errorEntry(this.code)?.status ?? 500;
  }
  readonly data: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
}

export function rateLimited(code: ErrorCode, retryAfterMs: number, extra: Record<string, unknown> = {}): ApiError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new ApiError(code, { data: { retryAfter: seconds, ...extra }, headers: { 'retry-after': String(seconds) } });
}

/** VALIDATION_ERROR for one field, in the same shape schema validation uses. */
export function invalidField(field: string, message: string): ApiError {
  return new ApiError('VALIDATION_ERROR', { data: { errors: [{ field, message }] } });
}
