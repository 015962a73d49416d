import type { FastifyInstance } from 'fastify';
import { envelopeSchema, errorEnvelopeSchema, ok } from '../../http/envelope.js';
import { ApiError, invalidField } from '../../http/errors.js';
import type { LogsService } from './logs-service.js';
import { statusRange } from './request-log-store.js';

function errorResponse(description: string) {
  return { ...errorEnvelopeSchema, description };
}

const AUTH_ERRORS = {
  401: errorResponse('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: errorResponse('INSUFFICIENT_SCOPE (logs:read), ACCOUNT_SUSPENDED'),
  429: errorResponse("RATE_LIMIT_EXCEEDED: the key's request rate"),
  500: errorResponse('INTERNAL_ERROR'),
  503: errorResponse('SERVICE_UNAVAILABLE: a storage backend is unreachable'),
} as const;

const nullableString = { type: ['string', 'null'] } as const;

export const logRowSchema = {
  type: 'object',
  properties: {
    requestId: { type: 'string' },
    seq: { type: 'string', description: 'position in the log (the live tail resumes after it)' },
    at: { type: 'string', format: 'date-time' },
    method: { type: 'string' },
    route: { type: 'string', description: 'the route pattern, e.g. /v1/sms/status/:messageId (unmatched for unknown paths)' },
    path: { type: 'string', description: 'the path as asked, without the query' },
    product: { type: 'string', description: 'the first path segment after /v1' },
    status: { type: 'integer' },
    latencyMs: { type: 'number' },
    keyId: nullableString,
    clientIp: nullableString,
    userAgent: nullableString,
    idempotencyKey: nullableString,
    errorCode: { ...nullableString, description: 'the error code of an error response' },
  },
} as const;

const logDetailSchema = {
  type: 'object',
  properties: {
    ...logRowSchema.properties,
    requestBody: { ...nullableString, description: 'the JSON body, redacted and truncated (may then not parse)' },
    responseBody: { ...nullableString, description: 'the JSON body, redacted and truncated' },
  },
} as const;

export interface LogsQuery {
  status?: string;
  method?: string;
  path?: string;
  keyId?: string;
  requestId?: string;
  from?: string;
  to?: string;
  cursor?: string;
  limit?: string;
}

export const logsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', pattern: '^([1-5]xx|[1-5][0-9]{2})$', description: 'a class (2xx, 4xx, 5xx) or one status (404)' },
    method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] },
    path: { type: 'string', minLength: 1, maxLength: 512, description: 'a path prefix: /v1/sms matches /v1/sms/send' },
    keyId: { type: 'string', minLength: 1, maxLength: 100 },
    requestId: { type: 'string', minLength: 1, maxLength: 100 },
    from: { type: 'string', format: 'date-time', description: 'at or after (ISO 8601)' },
    to: { type: 'string', format: 'date-time', description: 'at or before (ISO 8601)' },
    cursor: { type: 'string', pattern: '^[0-9]{1,19}$', description: 'data.nextCursor of the previous page' },
    limit: { type: 'string', pattern: '^([1-9]|[1-9][0-9]|1[0-9][0-9]|200)$', description: 'rows per page, 1–200 (default 50)' },
  },
} as const;

/** The query as a store filter; VALIDATION_ERROR for a time range that is not one. */
export function toFilter(q: LogsQuery) {
  const from = q.from ? Date.parse(q.from) : undefined;
  const to = q.to ? Date.parse(q.to) : undefined;
  if (from !== undefined && to !== undefined && from > to) throw invalidField('from', 'must not be after to');
  if (q.status && !statusRange(q.status)) throw invalidField('status', 'a class (4xx) or a status (404)');
  return { status: q.status, method: q.method, path: q.path, keyId: q.keyId, requestId: q.requestId, from, to, before: q.cursor };
}

/** The request logs (GET /v1/logs, GET /v1/logs/:requestId) and the key statistics (GET /v1/keys/stats). */
export async function logsRoutes(app: FastifyInstance, deps: { logs: LogsService }): Promise<void> {
  const { logs } = deps;
  const retention = logs.retentionDays;

  app.get<{ Querystring: LogsQuery }>(
    '/v1/logs',
    {
      config: { scope: 'logs:read' },
      schema: {
        tags: ['logs'],
        summary: "Search the account's request logs",
        description:
          `Every /v1 request of the account's keys, newest first: time, method, route and path, status, latency, key, client ` +
          `address, user agent, idempotency key and error code. Bodies are in GET /v1/logs/{requestId}. Kept ${retention} days ` +
          `(logs.retentionDays). Requests are written in batches a fraction of a second after they are answered. Page with ` +
          `data.nextCursor (null on the last page).`,
        querystring: logsQuerySchema,
        response: {
          200: envelopeSchema(
            {
              type: 'object',
              properties: { items: { type: 'array', items: logRowSchema }, nextCursor: nullableString },
            },
            'A page of requests (code LOGS_FOUND)',
          ),
          400: errorResponse('VALIDATION_ERROR: a filter out of form, from after to'),
          ...AUTH_ERRORS,
        },
      },
    },
    async (req) => {
      const page = await logs.search(req.auth.accountId, toFilter(req.query), Number(req.query.limit ?? 50));
      return ok(req, 'LOGS_FOUND', page);
    },
  );

  app.get<{ Params: { requestId: string } }>(
    '/v1/logs/:requestId',
    {
      config: { scope: 'logs:read' },
      schema: {
        tags: ['logs'],
        summary: 'One request of the logs, with its bodies',
        description:
          'The request and response bodies are stored redacted (Authorization, secrets, passwords, tokens, OTP codes and ' +
          `message text never are) and cut at ${logs.bodyLimitBytes} bytes. Another account's request is LOG_NOT_FOUND.`,
        params: { type: 'object', properties: { requestId: { type: 'string', minLength: 1, maxLength: 100 } } },
        response: {
          200: envelopeSchema(logDetailSchema, 'The request (code LOG_FOUND)'),
          404: errorResponse('LOG_NOT_FOUND: unknown, past retention, or not yet written'),
          ...AUTH_ERRORS,
        },
      },
    },
    async (req) => {
      const row = await logs.get(req.auth.accountId, req.params.requestId);
      if (!row) throw new ApiError('LOG_NOT_FOUND');
      return ok(req, 'LOG_FOUND', row);
    },
  );

  const counts = { requests: { type: 'integer' }, errors: { type: 'integer' }, rateLimited: { type: 'integer' } } as const;
  app.get<{ Querystring: { days?: string } }>(
    '/v1/keys/stats',
    {
      config: { scope: 'logs:read' },
      schema: {
        tags: ['logs'],
        summary: "Usage of the account's API keys and the rate limits in force",
        description:
          `Per key of the account: requests, errors (status 400 and above) and rate-limit refusals (RATE_LIMIT_EXCEEDED, ` +
          `RESEND_COOLDOWN) by day (UTC) and by product over the last \`days\` (at most the ${retention}-day retention), the ` +
          `last use (time and client address), and data.limits: every rate rule that applies (per key, per account, per ` +
          `product endpoint), stated in one place.`,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { days: { type: 'string', pattern: '^[1-9][0-9]{0,3}$', description: `whole days, default and at most ${retention}` } },
        },
        response: {
          200: envelopeSchema(
            {
              type: 'object',
              properties: {
                since: { type: 'string', format: 'date-time' },
                keys: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      keyId: { type: 'string' },
                      name: nullableString,
                      scopes: { type: 'array', items: { type: 'string' } },
                      revoked: { type: 'boolean' },
                      ...counts,
                      lastUsedAt: nullableString,
                      lastUsedFrom: nullableString,
                      byDay: { type: 'array', items: { type: 'object', properties: { day: { type: 'string', format: 'date' }, ...counts } } },
                      byProduct: { type: 'array', items: { type: 'object', properties: { product: { type: 'string' }, ...counts } } },
                    },
                  },
                },
                limits: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      scope: { type: 'string', enum: ['key', 'account', 'address', 'endpoint'] },
                      applies: { type: 'string', description: 'what the rule counts' },
                      limit: { type: ['number', 'null'], description: 'null: no limit' },
                      per: { type: 'string' },
                      refusal: { type: 'string', description: 'the error code of a refusal' },
                    },
                  },
                },
              },
            },
            'Statistics (code KEY_STATS)',
          ),
          400: errorResponse('VALIDATION_ERROR'),
          ...AUTH_ERRORS,
        },
      },
    },
    async (req) => ok(req, 'KEY_STATS', await logs.keyStats(req.auth.accountId, req.query.days ? Number(req.query.days) : undefined)),
  );
}
