import type { FastifyInstance, FastifyRequest } from 'fastify';
import { envelopeSchema, errorEnvelopeSchema, ok } from '../../http/envelope.js';
import { ApiError, type FieldError } from '../../http/errors.js';
import { idempotencyHeaderSchema, idempotent, type IdempotencyStore } from '../../http/idempotency.js';
import { RatePolicy } from '../../limits/rate-policy.js';
import { MESSENGER_RATE_LIMITS, type MessengerRateAction } from '../../limits/messenger-rate-limits.js';
import type { RateWindows } from '../../store/types.js';
import { checkMessage, MESSAGE_TYPES, normalizeE164, type MessageType } from './message-rules.js';
import { MessengerRefusal, type MessengerService } from './messenger-service.js';
import { GraphError } from './providers/meta-graph.js';

export interface MessengerRoutesDeps {
  service: MessengerService;
  rateWindows: RateWindows;
  idempotency: IdempotencyStore;
}

const MAX_BULK_CHECK = 1000;
const err = (description: string) => ({ ...errorEnvelopeSchema, description });
const COMMON_ERRORS = {
  401: err('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: err('INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
  429: err('WA005: a §8 rate limit (data.window second/minute/day, data.limit, data.retryAfter and Retry-After)'),
  500: err('INTERNAL_ERROR'),
  503: err('SERVICE_UNAVAILABLE'),
} as const;

const historySchema = {
  type: 'array',
  items: { type: 'object', properties: { status: { type: 'string' }, at: { type: 'string', format: 'date-time' }, kind: { type: 'string' }, detail: { type: 'object', nullable: true, additionalProperties: true } } },
} as const;
const messageSchema = {
  type: 'object',
  properties: {
    messageId: { type: 'string', description: 'prefix wam_' },
    wamid: { type: 'string', nullable: true, description: "the platform's message id, once sent" },
    to: { type: 'string' },
    type: { type: 'string' },
    status: { type: 'string', enum: ['queued', 'sent', 'delivered', 'read', 'failed'] },
    reference: { type: 'string', nullable: true },
    resentFrom: { type: 'string', nullable: true },
    error: {
      type: 'object',
      nullable: true,
      properties: { code: { type: 'string', description: "Ferry's code (WA002…)" }, providerCode: { type: 'string', nullable: true, description: "the platform's code (131026…)" }, message: { type: 'string', nullable: true } },
    },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    history: historySchema,
  },
} as const;
const acceptedSchema = {
  type: 'object',
  properties: {
    messageId: { type: 'string' },
    wamid: {
      type: 'string',
      nullable: true,
      description: "the platform's id when it answered the first attempt within messenger.inlineAttemptMs; else null (the attempt goes on: GET /status or the messenger.sent event give it)",
    },
    status: { type: 'string', enum: ['accepted'] },
    resentFrom: { type: 'string' },
  },
} as const;
const checkSchema = {
  type: 'object',
  properties: {
    phone: { type: 'string' },
    status: { type: 'string', enum: ['on_platform', 'not_on_platform', 'unknown'] },
    source: { type: 'string', nullable: true, description: 'provider, inbound, delivery or failure_131026' },
    checkedAt: { type: 'string', nullable: true, format: 'date-time' },
  },
} as const;
const templateSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    language: { type: 'string' },
    category: { type: 'string', enum: ['MARKETING', 'UTILITY', 'AUTHENTICATION'] },
    components: { type: 'array', items: { type: 'object', additionalProperties: true } },
    status: { type: 'string', enum: ['PENDING', 'APPROVED', 'REJECTED', 'PAUSED', 'DISABLED'] },
    rejectionReason: { type: 'string', nullable: true },
    quality: { type: 'string', nullable: true },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;

const contentSchema = { type: 'object', additionalProperties: true } as const;

/** A refusal of the service as the API answers it. */
function httpError(e: unknown): unknown {
  if (e instanceof MessengerRefusal) return new ApiError(e.code, { message: e.message, data: e.data });
  if (e instanceof GraphError) return new ApiError('MESSENGER_PROVIDER_ERROR', { message: `The platform refused: ${e.message}`, data: { providerCode: e.code, httpStatus: e.httpStatus } });
  return e;
}

async function refusals<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw httpError(e);
  }
}

/** The messenger's REST API (spec §2.5, §3.2, §7.2, §8) under /v1/messenger. */
export async function messengerRoutes(app: FastifyInstance, deps: MessengerRoutesDeps): Promise<void> {
  const { service } = deps;
  const policy = new RatePolicy(deps.rateWindows, MESSENGER_RATE_LIMITS);
  const limit = async (req: FastifyRequest, action: MessengerRateAction) => {
    const r = await policy.take(action, { accountId: req.auth.accountId, keyId: req.auth.keyId });
    if (!r.allowed) {
      const seconds = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
      throw new ApiError('WA005', { data: { retryAfter: seconds, window: r.window, limit: r.limit }, headers: { 'retry-after': String(seconds) } });
    }
  };

  app.post<{ Body: { to: string; type: MessageType; reference?: string; from?: string } & Record<string, unknown> }>(
    '/v1/messenger/send',
    {
      config: { scope: 'messenger:send' },
      schema: {
        tags: ['messenger'],
        summary: 'Send a text, media, interactive or template message',
        description:
          'The Cloud API\'s own message objects: `text {body, previewUrl}` (≤ 4096 characters), `image|video|audio|document {link, caption, filename}` ' +
          '(public HTTPS; fetched and checked by content: image JPEG/PNG ≤ 5 MB, video MP4/3GPP ≤ 16 MB, audio AAC/MP4/MPEG/OGG ≤ 16 MB, document ≤ 100 MB ' +
          'with a filename; else WA004), `interactive {type: button|list|cta_url, header, body, footer, action}` (≤ 3 reply buttons, ≤ 10 list rows, ' +
          'a well-formed https CTA URL), `template {name, language, components}`. Anything but a template needs the 24-hour window the user\'s last ' +
          'message opened (else WA003 at once, nothing sent). A number Ferry knows is not on the platform is WA002. Accepted messages are sent through ' +
          'the outbound pipeline; follow them with GET /status or the messenger.* webhook events. 80/s, 3,000/min, 100,000/day per account.',
        headers: { type: 'object', properties: { 'idempotency-key': idempotencyHeaderSchema } },
        body: {
          type: 'object',
          required: ['to', 'type'],
          additionalProperties: false,
          properties: {
            to: { type: 'string', minLength: 1, maxLength: 20, description: 'E.164, digits (a leading + is accepted); else WA001' },
            type: { type: 'string', enum: [...MESSAGE_TYPES] },
            reference: { type: 'string', maxLength: 128, description: 'your reference, returned in status and events' },
            from: {
              type: 'string',
              pattern: '^[0-9]{1,30}$',
              description: "the business phone number id to send from (the Cloud API's {phone-number-id}), one of the account's; absent: the account's first number",
            },
            // The message itself (text, media captions, template parameters): the customer's content, never in the request logs.
            ...Object.fromEntries(MESSAGE_TYPES.map((t) => [t, { ...contentSchema, 'x-ferry-redact': 'personal' }])),
          },
        },
        response: {
          200: envelopeSchema(acceptedSchema, 'Accepted (code MESSAGE_ACCEPTED)'),
          400: err('WA001 (the number is not E.164), VALIDATION_ERROR (data.errors: the object of the type missing or out of its limits)'),
          422: err(
            'WA002 (known not to be on the platform), WA003 (window closed), WA004 (media not public HTTPS, unreachable, wrong type by content or too large), ' +
              'MESSENGER_NO_NUMBER (the account has no business number, or `from` is not one of its numbers)',
          ),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req, reply) => {
      await limit(req, 'messenger.send');
      const b = req.body;
      const to = normalizeE164(b.to);
      if (!to) throw new ApiError('WA001', { data: { errors: [{ field: 'to', message: 'E.164: 8–15 digits, no leading 0' }] } });
      const errors: FieldError[] = checkMessage(b.type, b[b.type]);
      for (const other of MESSAGE_TYPES) if (other !== b.type && b[other] !== undefined) errors.push({ field: other, message: `not allowed with type ${b.type}` });
      if (errors.length) throw new ApiError('VALIDATION_ERROR', { data: { errors } });
      return idempotent(req, reply, deps.idempotency, async () => {
        const r = await refusals(() =>
          service.send({ accountId: req.auth.accountId, to, type: b.type, content: b[b.type] as Record<string, unknown>, reference: b.reference ?? null, from: b.from ?? null }),
        );
        return ok(req, 'MESSAGE_ACCEPTED', r);
      });
    },
  );

  const statusRoute = async (req: FastifyRequest<{ Params: { messageId: string } }>) => {
    await limit(req, 'messenger.status');
    const m = await service.status(req.auth.accountId, req.params.messageId);
    if (!m) throw new ApiError('MESSAGE_NOT_FOUND');
    return ok(req, 'MESSAGE_STATUS', m);
  };
  app.get<{ Params: { messageId: string } }>(
    '/v1/messenger/status/:messageId',
    {
      config: { scope: 'messenger:read' },
      schema: {
        tags: ['messenger'],
        summary: "A message's status and history, by Ferry's id or by its wamid",
        params: { type: 'object', properties: { messageId: { type: 'string', maxLength: 200, description: 'wam_… or wamid.…' } } },
        response: { 200: envelopeSchema(messageSchema), 404: err('MESSAGE_NOT_FOUND'), ...COMMON_ERRORS },
      },
    },
    statusRoute,
  );

  app.post<{ Body: { messageId: string } }>(
    '/v1/messenger/resend',
    {
      config: { scope: 'messenger:send' },
      schema: {
        tags: ['messenger'],
        summary: 'Send a failed message again (a new message; resentFrom names the first)',
        headers: { type: 'object', properties: { 'idempotency-key': idempotencyHeaderSchema } },
        body: { type: 'object', required: ['messageId'], additionalProperties: false, properties: { messageId: { type: 'string', minLength: 1, maxLength: 200 } } },
        response: { 200: envelopeSchema(acceptedSchema), 404: err('MESSAGE_NOT_FOUND'), 409: err('NOT_RESENDABLE'), 422: err('WA003, WA004 as for /send'), ...COMMON_ERRORS },
      },
    },
    async (req, reply) => {
      await limit(req, 'messenger.resend');
      return idempotent(req, reply, deps.idempotency, async () => ok(req, 'MESSAGE_ACCEPTED', await refusals(() => service.resend(req.auth.accountId, req.body.messageId))));
    },
  );

  const checkOne = async (req: FastifyRequest<{ Querystring: { phone: string } }>) => {
    await limit(req, 'messenger.numbers.check');
    const phone = normalizeE164(req.query.phone);
    if (!phone) throw new ApiError('WA001', { data: { errors: [{ field: 'phone', message: 'E.164: 8–15 digits' }] } });
    return ok(req, 'NUMBER_CHECKED', (await refusals(() => service.checkNumbers(req.auth.accountId, [phone])))[0]);
  };
  app.get<{ Querystring: { phone: string } }>(
    '/v1/messenger/numbers/check',
    {
      config: { scope: 'numbers:read' },
      schema: {
        tags: ['messenger'],
        summary: 'Whether a number is on the messenger platform, and where the answer came from',
        querystring: { type: 'object', required: ['phone'], properties: { phone: { type: 'string', minLength: 1, maxLength: 20 } } },
        response: { 200: envelopeSchema(checkSchema), 400: err('WA001'), ...COMMON_ERRORS },
      },
    },
    checkOne,
  );
  app.post<{ Body: { phones: string[] } }>(
    '/v1/messenger/numbers/check',
    {
      config: { scope: 'numbers:read' },
      schema: {
        tags: ['messenger'],
        summary: `Whether up to ${MAX_BULK_CHECK} numbers are on the platform`,
        body: {
          type: 'object',
          required: ['phones'],
          additionalProperties: false,
          properties: { phones: { type: 'array', minItems: 1, maxItems: MAX_BULK_CHECK, items: { type: 'string', minLength: 1, maxLength: 20 } } },
        },
        response: { 200: envelopeSchema({ type: 'object', properties: { results: { type: 'array', items: checkSchema } } }), 400: err('WA001 (data.errors names each bad entry)'), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      await limit(req, 'messenger.numbers.check');
      const errors: FieldError[] = [];
      const phones = req.body.phones.map((p, i) => {
        const n = normalizeE164(p);
        if (!n) errors.push({ field: `phones[${i}]`, message: 'E.164: 8–15 digits' });
        return n ?? '';
      });
      if (errors.length) throw new ApiError('WA001', { data: { errors } });
      return ok(req, 'NUMBERS_CHECKED', { results: await refusals(() => service.checkNumbers(req.auth.accountId, phones)) });
    },
  );

  app.post<{ Body: { name: string; language: string; category: string; components: unknown[] } }>(
    '/v1/messenger/templates',
    {
      config: { scope: 'messenger:templates' },
      schema: {
        tags: ['messenger'],
        summary: 'Submit a template for review (PENDING → APPROVED or REJECTED; messenger.template.status event)',
        body: {
          type: 'object',
          required: ['name', 'language', 'category', 'components'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', pattern: '^[a-z0-9_]{1,512}$' },
            language: { type: 'string', pattern: '^[a-z]{2,3}(_[A-Z]{2})?$' },
            category: { type: 'string', enum: ['MARKETING', 'UTILITY', 'AUTHENTICATION'] },
            components: { type: 'array', minItems: 1, maxItems: 10, items: { type: 'object', additionalProperties: true } },
          },
        },
        response: { 200: envelopeSchema(templateSchema), 409: err('TEMPLATE_EXISTS'), 502: err('MESSENGER_PROVIDER_ERROR'), ...COMMON_ERRORS, 429: err('WA005: 100 creates per day') },
      },
    },
    async (req) => {
      await limit(req, 'messenger.templates.create');
      return ok(req, 'TEMPLATE_SUBMITTED', await refusals(() => service.createTemplate(req.auth.accountId, req.body)));
    },
  );
  app.get(
    '/v1/messenger/templates',
    {
      config: { scope: 'messenger:templates' },
      schema: { tags: ['messenger'], summary: "The account's templates", response: { 200: envelopeSchema({ type: 'object', properties: { templates: { type: 'array', items: templateSchema } } }), ...COMMON_ERRORS } },
    },
    async (req) => ok(req, 'TEMPLATES', { templates: await service.listTemplates(req.auth.accountId) }),
  );
  app.get<{ Params: { name: string } }>(
    '/v1/messenger/templates/:name',
    {
      config: { scope: 'messenger:templates' },
      schema: {
        tags: ['messenger'],
        summary: 'A template in each of its languages',
        params: { type: 'object', properties: { name: { type: 'string', maxLength: 512 } } },
        response: { 200: envelopeSchema({ type: 'object', properties: { templates: { type: 'array', items: templateSchema } } }), 404: err('TEMPLATE_NOT_FOUND'), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const found = await service.getTemplate(req.auth.accountId, req.params.name);
      if (!found.length) throw new ApiError('TEMPLATE_NOT_FOUND');
      return ok(req, 'TEMPLATE', { templates: found });
    },
  );
  app.delete<{ Params: { name: string } }>(
    '/v1/messenger/templates/:name',
    {
      config: { scope: 'messenger:templates' },
      schema: {
        tags: ['messenger'],
        summary: 'Delete a template (every language) here and at the provider',
        params: { type: 'object', properties: { name: { type: 'string', maxLength: 512 } } },
        response: { 200: envelopeSchema({ type: 'object', properties: { deleted: { type: 'integer' } } }), 404: err('TEMPLATE_NOT_FOUND'), 502: err('MESSENGER_PROVIDER_ERROR'), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const deleted = await refusals(() => service.deleteTemplate(req.auth.accountId, req.params.name));
      if (!deleted) throw new ApiError('TEMPLATE_NOT_FOUND');
      return ok(req, 'TEMPLATE_DELETED', { deleted });
    },
  );
  app.get(
    '/v1/messenger/quality',
    {
      config: { scope: 'messenger:read' },
      schema: {
        tags: ['messenger'],
        summary: "The business number's quality rating and messaging tier, as the provider reports them",
        response: {
          200: envelopeSchema({ type: 'object', properties: { rating: { type: 'string' }, tier: { type: 'string', nullable: true }, source: { type: 'string' }, updatedAt: { type: 'string', format: 'date-time' } } }),
          502: err('MESSENGER_PROVIDER_ERROR'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req) => ok(req, 'QUALITY', await refusals(() => service.quality(req.auth.accountId))),
  );
}
