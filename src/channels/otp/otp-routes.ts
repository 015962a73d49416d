import type { FastifyInstance, FastifyRequest } from 'fastify';
import { envelopeSchema, errorEnvelopeSchema, ok } from '../../http/envelope.js';
import { ApiError, rateLimited, type FieldError } from '../../http/errors.js';
import { countSegments } from '../../smpp/text/segments.js';
import { normalizeNumber } from '../../numbers/phone.js';
import { isValidSender, SENDER_RULE } from '../../messaging/sender.js';
import { MAX_MESSAGE_CHARS, smsHttpError } from '../../messaging/sms-http-errors.js';
import { expiryMinutes, OTP_LIMITS, PIN_TYPES, renderOtpMessage, type OtpDuration, type OtpPinType, type OtpService } from './otp-service.js';

export interface OtpRoutesDeps {
  otp: OtpService;
  /** Country for local numbers when the account sets none (config sms.defaultCountry). */
  defaultCountry: string | null;
  /** Sender when a request gives no `from` (config otp.defaultSender); null makes `from` required. */
  defaultSender: string | null;
  /** For the descriptions. */
  resendCooldownSeconds: number;
  requestsPerHour: number;
  ussdServiceCode: string;
}

interface RequestBody {
  phone: string;
  from?: string;
  message: string;
  pinLength?: number;
  pinType?: OtpPinType;
  expiry?: { amount: number; duration?: OtpDuration };
  maxAmountOfValidationRetries?: number;
  metadata?: Record<string, unknown>;
}

const MAX_METADATA_BYTES = 4096;
const MAX_SEGMENTS = 10;

/** An error response documented with the codes this route gives at that status. */
function errorResponse(description: string) {
  return { ...errorEnvelopeSchema, description };
}

const AUTH_ERRORS = {
  401: errorResponse('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: errorResponse('INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
  413: errorResponse('PAYLOAD_TOO_LARGE'),
  415: errorResponse('UNSUPPORTED_MEDIA_TYPE'),
  500: errorResponse('INTERNAL_ERROR'),
  503: errorResponse('SERVICE_UNAVAILABLE: a storage backend is unreachable'),
} as const;

/**
 * The error for a request's field problems, with the codes a single SMS send uses: a bad sender alone is
 * INVALID_SENDER_ID, a bad phone alone INVALID_PHONE_NUMBER (a bad sender and a bad phone: INVALID_SENDER_ID, as the
 * sender is checked first there too); anything else VALIDATION_ERROR. data.errors always names every field.
 */
function requestError(errors: FieldError[], badSender: boolean, badPhone: boolean): ApiError {
  const others = errors.length - (badSender ? 1 : 0) - (badPhone ? 1 : 0);
  if (others === 0 && badSender) return new ApiError('INVALID_SENDER_ID', { data: { errors } });
  if (others === 0 && badPhone) return new ApiError('INVALID_PHONE_NUMBER', { data: { errors } });
  return new ApiError('VALIDATION_ERROR', { data: { errors } });
}

/** The request rules a JSON schema cannot say: pin length per type, expiry range in either unit, the rendered text. */
function checkRequest(
  b: RequestBody,
  from: string | undefined,
): { errors: FieldError[]; badSender: boolean; pinType: OtpPinType; pinLength: number; expiry: { amount: number; duration: OtpDuration } } {
  const errors: FieldError[] = [];
  const pinType = b.pinType ?? 'NUMERIC';
  const rule = PIN_TYPES[pinType];
  const pinLength = b.pinLength ?? Math.max(rule.min, Math.min(rule.max, OTP_LIMITS.defaultPinLength));
  if (pinLength < rule.min || pinLength > rule.max) errors.push({ field: 'pinLength', message: `${pinType} codes are ${rule.min}–${rule.max} characters` });
  const expiry = { amount: b.expiry?.amount ?? OTP_LIMITS.defaultExpiryMinutes, duration: b.expiry?.duration ?? 'minutes' };
  const minutes = expiryMinutes(expiry);
  if (minutes < OTP_LIMITS.minExpiryMinutes || minutes > OTP_LIMITS.maxExpiryMinutes) {
    errors.push({ field: 'expiry', message: `must be 1 minute to 24 hours (${OTP_LIMITS.minExpiryMinutes}–${OTP_LIMITS.maxExpiryMinutes} minutes)` });
  }
  if (!b.message.includes('{code}')) errors.push({ field: 'message', message: 'must contain the placeholder {code}' });
  else {
    // Checked with a code of the right length, before an OTP exists, so a text that cannot be sent creates nothing.
    const text = renderOtpMessage(b.message, 'X'.repeat(pinLength), expiry);
    if ([...text].length > MAX_MESSAGE_CHARS || countSegments(text).segments > MAX_SEGMENTS) {
      errors.push({ field: 'message', message: `the text with its code must fit ${MAX_MESSAGE_CHARS} characters and ${MAX_SEGMENTS} SMS parts` });
    }
  }
  const badSender = from !== undefined && !isValidSender(from);
  if (from === undefined) errors.push({ field: 'from', message: 'a sender ID is required' });
  else if (badSender) errors.push({ field: 'from', message: `not a valid sender ID: ${SENDER_RULE}` });
  if (b.metadata !== undefined && Buffer.byteLength(JSON.stringify(b.metadata)) > MAX_METADATA_BYTES) {
    errors.push({ field: 'metadata', message: `at most ${MAX_METADATA_BYTES} bytes as JSON` });
  }
  return { errors, badSender, pinType, pinLength, expiry };
}

async function viaSms<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw smsHttpError(err);
  }
}

function notFound(id: string): ApiError {
  return new ApiError('OTP_NOT_FOUND', { message: `No OTP ${id}, or it was already verified` });
}

function locked(): ApiError {
  return new ApiError('OTP_LOCKED', { data: { verified: false, attemptsRemaining: 0 } });
}

function accountCountry(req: FastifyRequest, fallback: string | null): string | null {
  return req.auth.defaultCountry ?? fallback;
}

/**
 * The OTP channel's REST API (spec §2.4, §3.1, §7.1): request, verify, resend. HTTP statuses of the OTP codes:
 * ACTIVE_OTP_EXISTS 409, RATE_LIMIT_EXCEEDED 429, INVALID_PIN 400, OTP_LOCKED 423, OTP_EXPIRED 410, OTP_NOT_FOUND 404,
 * RESEND_COOLDOWN 429.
 */
export async function otpRoutes(app: FastifyInstance, deps: OtpRoutesDeps): Promise<void> {
  const { otp } = deps;
  const cooldown = deps.resendCooldownSeconds;

  app.post<{ Body: RequestBody }>(
    '/v1/otp/request',
    {
      config: { scope: 'otp:send' },
      schema: {
        tags: ['otp'],
        summary: 'Generate a one-time password and send it by SMS',
        description:
          `Creates an OTP for the phone and sends \`message\` with {code} (and {amount}, {duration}: the expiry) replaced, as an SMS on ` +
          `the priority lane. One OTP at a time per phone: while one is unexpired and not yet verified or locked, requests get ` +
          `ACTIVE_OTP_EXISTS (409, data.remainingSeconds). At most ${deps.requestsPerHour} OTPs per phone in any hour, else ` +
          `RATE_LIMIT_EXCEEDED (429, data.retryAfter and Retry-After). The phone may also dial ${deps.ussdServiceCode} to read the ` +
          `pending code (USSD fallback). Codes: NUMERIC digits; ALPHANUMERIC upper-case letters and digits without 0, O, 1, I; ` +
          `ALPHABETIC upper-case letters. A phone that is not a valid number is INVALID_PHONE_NUMBER and a sender that breaks the ` +
          `sender rule INVALID_SENDER_ID, as for an SMS; any other field out of range is VALIDATION_ERROR. data.errors names every ` +
          `field at fault. ` +
          `If the SMS is refused (credit, route, suspension), the OTP is withdrawn and the SMS error is returned.`,
        body: {
          type: 'object',
          required: ['phone', 'message'],
          additionalProperties: false,
          properties: {
            phone: { type: 'string', minLength: 1, maxLength: 32, description: "destination, local (the account's country) or international" },
            from: { type: 'string', minLength: 1, description: `sender ID: ${SENDER_RULE}${deps.defaultSender ? ` (default ${deps.defaultSender})` : ''} (else INVALID_SENDER_ID)` },
            message: { type: 'string', 'x-ferry-redact': 'personal', minLength: 1, maxLength: MAX_MESSAGE_CHARS, description: 'text template; must contain {code}; may contain {amount} and {duration}' },
            pinLength: { type: 'integer', description: 'NUMERIC 4–8, ALPHANUMERIC 6–12, ALPHABETIC 5–10 (default 6)' },
            pinType: { type: 'string', enum: ['NUMERIC', 'ALPHANUMERIC', 'ALPHABETIC'], description: 'default NUMERIC' },
            expiry: {
              type: 'object',
              required: ['amount'],
              additionalProperties: false,
              description: '1 minute to 24 hours; default 5 minutes',
              properties: {
                amount: { type: 'integer' },
                duration: { type: 'string', enum: ['minutes', 'hours'], description: 'default minutes' },
              },
            },
            maxAmountOfValidationRetries: { type: 'integer', minimum: 1, maximum: OTP_LIMITS.maxRetries, description: `verification attempts, default ${OTP_LIMITS.defaultRetries}, at most ${OTP_LIMITS.maxRetries}` },
            metadata: { type: 'object', additionalProperties: true, description: `free-form audit context (userId, sessionId, ipAddress…), at most ${MAX_METADATA_BYTES} bytes` },
          },
        },
        response: {
          200: envelopeSchema(
            {
              type: 'object',
              properties: {
                id: { type: 'string', description: 'OTP id, prefix otp_' },
                expiresAt: { type: 'string', format: 'date-time' },
                to: { type: 'string', description: 'the phone in international form without a plus sign' },
                messageId: { type: 'string', description: 'the SMS carrying the code (GET /v1/sms/status/{messageId} with sms:read)' },
              },
            },
            'Sent (code OTP_SENT)',
          ),
          400: errorResponse(
            'INVALID_PHONE_NUMBER (data.errors names phone), INVALID_SENDER_ID (data.errors names from), VALIDATION_ERROR (data.errors: message ' +
              'without {code}, pinLength outside its type, expiry outside 1–1440 minutes, retries above 10, a missing sender), MESSAGE_TOO_LONG',
          ),
          402: errorResponse('INSUFFICIENT_CREDIT: the SMS is not covered by the balance'),
          409: errorResponse('ACTIVE_OTP_EXISTS: an unexpired OTP is active for the phone; data.remainingSeconds (and data.retryAfter, Retry-After) until it expires'),
          422: errorResponse('NO_ROUTE'),
          429: errorResponse(`RATE_LIMIT_EXCEEDED: more than ${deps.requestsPerHour} OTPs for the phone in the past hour (or the key's request rate); data.retryAfter and Retry-After in seconds`),
          ...AUTH_ERRORS,
        },
      },
    },
    async (req) => {
      const b = req.body;
      const from = b.from ?? deps.defaultSender ?? undefined;
      const checked = checkRequest(b, from);
      const phone = normalizeNumber(b.phone, { defaultCountry: accountCountry(req, deps.defaultCountry) });
      if (!phone) checked.errors.unshift({ field: 'phone', message: 'not a valid phone number' });
      if (checked.errors.length) throw requestError(checked.errors, checked.badSender, !phone);
      const res = await viaSms(() =>
        otp.request({
          accountId: req.auth.accountId,
          phone: phone!,
          from: from!,
          message: b.message,
          pinType: checked.pinType,
          pinLength: checked.pinLength,
          expiry: checked.expiry,
          maxAttempts: b.maxAmountOfValidationRetries ?? OTP_LIMITS.defaultRetries,
          metadata: b.metadata ?? {},
          allowedRecipients: req.auth.allowedRecipients,
        }),
      );
      if (!res.ok) {
        if (res.reason === 'RATE_LIMIT_EXCEEDED') throw rateLimited('RATE_LIMIT_EXCEEDED', res.retryAfterMs);
        const seconds = Math.max(1, Math.ceil(res.retryAfterMs / 1000));
        throw new ApiError('ACTIVE_OTP_EXISTS', {
          message: `An OTP for this phone is active for another ${seconds} s`,
          data: { remainingSeconds: seconds, retryAfter: seconds },
          headers: { 'retry-after': String(seconds) },
        });
      }
      return ok(req, 'OTP_SENT', { id: res.id, expiresAt: new Date(res.expiresAt).toISOString(), to: phone!, messageId: res.messageId }, 'OTP sent');
    },
  );

  app.post<{ Body: { id: string; pin: string } }>(
    '/v1/otp/verify',
    {
      config: { scope: 'otp:verify' },
      schema: {
        tags: ['otp'],
        summary: 'Check a code',
        description:
          'The right pin answers data.verified true, once: the id then behaves as not found. A wrong pin uses one attempt: ' +
          'INVALID_PIN (400) with data.attemptsRemaining. The wrong pin that uses the last attempt answers INVALID_PIN with ' +
          'attemptsRemaining 0 (lock the flow at 0) and locks the OTP: every verify after it, the right pin included, gets OTP_LOCKED ' +
          '(423, attemptsRemaining 0), and the phone may request a new OTP at once. After the expiry: OTP_EXPIRED (410). ' +
          'Unknown, verified, long-expired or another account\'s ids: OTP_NOT_FOUND (404). Letters are compared case-insensitively.',
        body: {
          type: 'object',
          required: ['id', 'pin'],
          additionalProperties: false,
          properties: {
            id: { type: 'string', minLength: 1, maxLength: 100, description: 'the id from POST /v1/otp/request' },
            pin: { type: 'string', 'x-ferry-redact': 'secret', minLength: 1, maxLength: 64, description: 'the code entered' },
          },
        },
        response: {
          200: envelopeSchema({ type: 'object', properties: { verified: { type: 'boolean', enum: [true] }, id: { type: 'string' } } }, 'Verified (code OTP_VERIFIED)'),
          400: errorResponse('INVALID_PIN: wrong code, data.verified false and data.attemptsRemaining (0: that was the last attempt, the OTP is now locked); VALIDATION_ERROR'),
          404: errorResponse('OTP_NOT_FOUND: unknown id, already verified, or past retention'),
          410: errorResponse('OTP_EXPIRED: the expiry time has passed'),
          423: errorResponse('OTP_LOCKED: a verify after the last attempt was used, even with the right pin (data.attemptsRemaining 0); request a new OTP'),
          429: errorResponse("RATE_LIMIT_EXCEEDED: the key's request rate"),
          ...AUTH_ERRORS,
        },
      },
    },
    async (req) => {
      const { id, pin } = req.body;
      const res = await otp.verify(req.auth.accountId, id, pin);
      switch (res.status) {
        case 'verified':
          return ok(req, 'OTP_VERIFIED', { verified: true, id }, 'OTP verified');
        case 'invalid':
          throw new ApiError('INVALID_PIN', { data: { verified: false, attemptsRemaining: res.attemptsRemaining } });
        case 'locked':
          throw locked();
        case 'expired':
          throw new ApiError('OTP_EXPIRED');
        default:
          throw notFound(id);
      }
    },
  );

  app.post<{ Body: { id: string } }>(
    '/v1/otp/resend',
    {
      config: { scope: 'otp:send' },
      schema: {
        tags: ['otp'],
        summary: 'Send the active code again',
        description:
          `Sends the same code, with the same id and expiry, by SMS again: never a second active code. Only ${cooldown} s after the ` +
          `last send (the request counts as one), else RESEND_COOLDOWN (429, data.retryAfter and Retry-After). Does not count ` +
          `toward the hourly request limit.`,
        body: {
          type: 'object',
          required: ['id'],
          additionalProperties: false,
          properties: { id: { type: 'string', minLength: 1, maxLength: 100 } },
        },
        response: {
          200: envelopeSchema(
            {
              type: 'object',
              properties: {
                id: { type: 'string' },
                expiresAt: { type: 'string', format: 'date-time', description: 'unchanged' },
                messageId: { type: 'string', description: 'the new SMS' },
              },
            },
            'Sent again (code OTP_RESENT)',
          ),
          400: errorResponse('VALIDATION_ERROR, MESSAGE_TOO_LONG'),
          402: errorResponse('INSUFFICIENT_CREDIT'),
          404: errorResponse('OTP_NOT_FOUND'),
          410: errorResponse('OTP_EXPIRED'),
          422: errorResponse('NO_ROUTE'),
          423: errorResponse('OTP_LOCKED'),
          429: errorResponse("RESEND_COOLDOWN: data.retryAfter and Retry-After in seconds; RATE_LIMIT_EXCEEDED: the key's request rate"),
          ...AUTH_ERRORS,
        },
      },
    },
    async (req) => {
      const { id } = req.body;
      const res = await viaSms(() => otp.resend(req.auth.accountId, id, req.auth.allowedRecipients));
      switch (res.status) {
        case 'ok':
          return ok(req, 'OTP_RESENT', { id, expiresAt: new Date(res.expiresAt).toISOString(), messageId: res.messageId }, 'OTP sent again');
        case 'cooldown':
          throw rateLimited('RESEND_COOLDOWN', res.retryAfterMs);
        case 'locked':
          throw locked();
        case 'expired':
          throw new ApiError('OTP_EXPIRED');
        default:
          throw notFound(id);
      }
    },
  );
}
