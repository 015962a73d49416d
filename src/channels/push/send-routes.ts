import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import { idempotencyHeaderSchema, idempotent, type IdempotencyStore } from '../../http/idempotency.js';
import type { PushSends, SendInput } from './push-sends.js';

const TAG = ['push'];
const err = (description: string) => ({ description, $ref: 'ErrorEnvelope#' });
const COMMON_ERRORS = {
  401: err('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: err('INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
  429: err('RATE_LIMITED'),
};

const errorSchema = {
  type: ['object', 'null'],
  properties: { code: { type: 'string', description: "Ferry's code" }, providerCode: { type: ['string', 'null'], description: 'the service\'s own code, verbatim' }, message: { type: ['string', 'null'] } },
} as const;

/** Whom a send goes to: exactly one of a device, a user, a topic (the route's body and the send_push tool). */
export const sendTargetSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  maxProperties: 1,
  description: 'exactly one of deviceId, userId, topic',
  properties: {
    deviceId: { type: 'string', minLength: 1, maxLength: 100 },
    userId: { type: 'string', minLength: 1, maxLength: 200 },
    topic: { type: 'string', minLength: 1, maxLength: 200 },
  },
} as const;

export const notificationSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    title: { type: 'string', maxLength: 1000 },
    body: { type: 'string', maxLength: 4000 },
    image: { type: 'string', maxLength: 2000, description: 'an https URL of an image the device shows with the notification' },
    sound: { type: 'string', maxLength: 200, description: '`default` or a sound file bundled with the app' },
    badge: { type: 'integer', minimum: 0, maximum: 1_000_000, description: 'the app icon\'s badge count' },
  },
} as const;

const sendAnswerSchema = {
  type: 'object',
  properties: {
    pushId: { type: 'string', description: 'prefix push_' },
    status: { type: 'string', enum: ['queued', 'sent', 'failed', 'invalidated'], description: 'a single device: its outcome when the service answered within the short wait, else queued' },
    targeted: { type: 'integer', description: 'devices targeted: for a topic, the devices subscribed when the send was accepted' },
    providerId: { type: ['string', 'null'], description: 'the service\'s id of the message (FCM `name`, APNs `apns-id`)' },
    error: errorSchema,
  },
} as const;

const sendViewSchema = {
  type: 'object',
  properties: {
    pushId: { type: 'string' },
    status: { type: 'string', enum: ['expanding', 'sending', 'completed'], description: 'expanding: devices of the topic are still being found; sending: every device has its batch; completed: every device has its outcome' },
    target: { type: 'object', properties: { kind: { type: 'string', enum: ['device', 'user', 'topic'] }, value: { type: 'string' } } },
    notification: { type: ['object', 'null'], additionalProperties: true },
    targeted: { type: 'integer' },
    sent: { type: 'integer' },
    failed: { type: 'integer' },
    invalidated: { type: 'integer' },
    pending: { type: 'integer', description: 'devices whose outcome is not known yet' },
    createdAt: { type: 'string', format: 'date-time' },
    completedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

const outcomeSchema = {
  type: 'object',
  properties: {
    deviceId: { type: 'string' },
    status: { type: 'string', enum: ['sent', 'failed', 'invalidated'] },
    providerId: { type: ['string', 'null'] },
    error: errorSchema,
    at: { type: 'string', format: 'date-time' },
  },
} as const;

/** A page size from the query (digits by its schema), within 1..max. */
function limitOf(raw: string | undefined, dflt: number, max: number): number {
  const n = raw === undefined ? dflt : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'limit', message: `1–${max}` }] } });
  return n;
}

interface SendBody {
  to: { deviceId?: string; userId?: string; topic?: string };
  notification?: SendInput['notification'];
  data?: Record<string, string>;
  priority?: 'high' | 'normal';
  ttlSeconds?: number;
  collapseKey?: string;
}

/** POST /v1/push/send, GET /v1/push/sends, GET /v1/push/sends/:pushId[/outcomes]. */
export async function sendRoutes(app: FastifyInstance, deps: { sends: PushSends; idempotency: IdempotencyStore }): Promise<void> {
  const { sends } = deps;
  app.post<{ Body: SendBody }>(
    '/v1/push/send',
    {
      config: { scope: 'push:send' },
      schema: {
        tags: TAG,
        summary: 'Send a notification to a device, a user or a topic',
        description:
          '`to` names exactly one of `deviceId`, `userId` (every active device of the user, on every app) or `topic`. A single device is sent at once: ' +
          'the answer (200) carries its outcome and the service\'s id when FCM or APNs answers within a short wait, else status `queued`. A user or a ' +
          'topic answers 202 with `pushId` and the devices targeted; follow it with GET /v1/push/sends/{pushId} or the push.sent / push.failed events. ' +
          'The payload is checked against each service\'s 4,096-byte limit as that service measures it (PAYLOAD_TOO_LARGE names the platform). ' +
          'Send an Idempotency-Key to make a retry safe.',
        headers: { type: 'object', properties: { 'idempotency-key': idempotencyHeaderSchema } },
        body: {
          type: 'object',
          required: ['to'],
          additionalProperties: false,
          properties: {
            to: sendTargetSchema,
            notification: { ...notificationSchema, 'x-ferry-redact': 'personal' },
            data: { type: 'object', maxProperties: 100, additionalProperties: { type: 'string', maxLength: 4096 }, description: 'key/value strings handed to the app', 'x-ferry-redact': 'personal' },
            priority: { type: 'string', enum: ['high', 'normal'], description: 'default high' },
            ttlSeconds: { type: 'integer', minimum: 0, maximum: 2_419_200, description: 'how long the service may keep it for an offline device (0: now or never); FCM and APNs allow 28 days' },
            collapseKey: { type: 'string', minLength: 1, maxLength: 64, description: 'a later notification with the same key replaces an undelivered one' },
          },
        },
        response: {
          200: envelopeSchema(sendAnswerSchema, 'A single device (code PUSH_SENT, or PUSH_ACCEPTED while its outcome is not known)'),
          202: envelopeSchema(sendAnswerSchema, 'A user or a topic (code PUSH_ACCEPTED)'),
          400: err('VALIDATION_ERROR'),
          404: err('DEVICE_NOT_FOUND, TOPIC_NOT_FOUND, APP_NOT_FOUND'),
          413: err('PAYLOAD_TOO_LARGE (data.platform fcm or apns, data.bytes, data.limit)'),
          422: err('DEVICE_INVALID (the device\'s token was invalidated), NO_ACTIVE_DEVICES (the user has none)'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req, reply) => {
      const b = req.body;
      const input: SendInput = { accountId: req.auth.accountId, to: b.to, notification: b.notification, data: b.data, priority: b.priority, ttlSeconds: b.ttlSeconds, collapseKey: b.collapseKey };
      if (!b.notification && !b.data) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'notification', message: 'a notification or data (or both)' }] } });
      const single = b.to.deviceId !== undefined;
      // Without an Idempotency-Key idempotent() only runs the send: the status is set here (a replay sets its own).
      reply.code(single ? 200 : 202);
      return idempotent(
        req,
        reply,
        deps.idempotency,
        async () => {
          const { final, ...answer } = await sends.send(input);
          return ok(req, final ? 'PUSH_SENT' : 'PUSH_ACCEPTED', answer);
        },
        single ? 200 : 202,
      );
    },
  );

  app.get<{ Querystring: { limit?: string; cursor?: string } }>(
    '/v1/push/sends',
    {
      config: { scope: 'push:send' },
      schema: {
        tags: TAG,
        summary: 'The account\'s sends, newest first',
        querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'string', pattern: '^[0-9]{1,3}$', description: '1–100, default 50' }, cursor: { type: 'string', maxLength: 100 } } },
        response: {
          200: envelopeSchema({ type: 'object', properties: { sends: { type: 'array', items: sendViewSchema }, nextCursor: { type: ['string', 'null'] } } }),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req) => ok(req, 'PUSH_SENDS', await sends.list(req.auth.accountId, { before: req.query.cursor ?? null, limit: limitOf(req.query.limit, 50, 100) })),
  );

  app.get<{ Params: { pushId: string }; Querystring: { limit?: string; cursor?: string; status?: 'sent' | 'failed' | 'invalidated' } }>(
    '/v1/push/sends/:pushId',
    {
      config: { scope: 'push:send' },
      schema: {
        tags: TAG,
        summary: 'A send: its counts and its per-device outcomes',
        description:
          'Counts of every device; `outcomes` lists, cursor-paged by device id, each device that failed or was invalidated, and for a device or a user ' +
          'send each device that got it too (with the service\'s id). A topic\'s devices that got their push are counted, not listed.',
        params: { type: 'object', required: ['pushId'], properties: { pushId: { type: 'string', minLength: 1, maxLength: 100 } } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'string', pattern: '^[0-9]{1,4}$', description: '1–1000, default 100' }, cursor: { type: 'string', maxLength: 100 }, status: { type: 'string', enum: ['sent', 'failed', 'invalidated'] } },
        },
        response: {
          200: envelopeSchema({ type: 'object', properties: { ...sendViewSchema.properties, outcomes: { type: 'array', items: outcomeSchema }, nextCursor: { type: ['string', 'null'] } } }),
          404: err('PUSH_NOT_FOUND'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req) => {
      const view = await sends.get(req.auth.accountId, req.params.pushId);
      if (!view) throw new ApiError('PUSH_NOT_FOUND');
      const page = await sends.outcomes(req.auth.accountId, req.params.pushId, { after: req.query.cursor ?? null, limit: limitOf(req.query.limit, 100, 1000), status: req.query.status });
      return ok(req, 'PUSH_SEND', { ...view, outcomes: page?.outcomes ?? [], nextCursor: page?.nextCursor ?? null });
    },
  );
}
