import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import { EVENT_DATA_SCHEMAS, EVENT_DESCRIPTIONS, EVENT_PAYLOAD_SCHEMA, EVENT_TYPES, eventCatalogueMarkdown, isEventType } from '../../events/catalogue.js';
import type { WebhookService } from './webhook-service.js';
import type { DeliveryRecord, EndpointBatch, WebhookEndpoint } from './webhook-store.js';

export interface WebhookRoutesDeps {
  webhooks: WebhookService;
}

const DEFAULT_OVERLAP_HOURS = 24;
const MAX_OVERLAP_HOURS = 168;

function iso(v: number | null): string | null {
  return v === null ? null : new Date(v).toISOString();
}

function endpointData(e: WebhookEndpoint, secret?: string): Record<string, unknown> {
  return {
    id: e.id,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    failingSince: iso(e.failingSince),
    previousSecretValidUntil: iso(e.previousSecretValidUntil),
    batch: e.batch,
    createdAt: iso(e.createdAt),
    updatedAt: iso(e.updatedAt),
    ...(secret ? { secret } : {}),
  };
}

function deliveryData(d: DeliveryRecord): Record<string, unknown> {
  return {
    id: d.id,
    eventId: d.eventId,
    eventType: d.eventType,
    status: d.status,
    attempts: d.attempts,
    lastStatusCode: d.lastStatusCode,
    lastLatencyMs: d.lastLatencyMs,
    lastError: d.lastError,
    nextAttemptAt: iso(d.nextAttemptAt),
    createdAt: iso(d.createdAt),
    deliveredAt: iso(d.deliveredAt),
  };
}

const nullableString = { type: ['string', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

const endpointSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix wh_' },
    url: { type: 'string' },
    events: { type: 'array', items: { type: 'string' } },
    description: nullableString,
    enabled: { type: 'boolean' },
    disabledReason: { ...nullableString, description: 'why Ferry disabled the endpoint (it failed continuously); PATCH enabled=true to resume' },
    failingSince: { ...nullableTime, description: 'every delivery has failed since then' },
    previousSecretValidUntil: { ...nullableTime, description: 'during a rotation overlap: until when the old secret also signs' },
    batch: {
      type: ['object', 'null'],
      properties: { maxEvents: { type: 'integer' }, maxWaitMs: { type: 'integer' } },
      description: 'batched delivery (null: one event per POST)',
    },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    secret: { type: 'string', description: 'create and rotate-secret only: the signing secret (whsec_…), shown once' },
  },
} as const;

const deliverySchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix whd_' },
    eventId: { type: 'string' },
    eventType: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'failed', 'delivered', 'dead'], description: 'failed: the last attempt failed and a retry is scheduled' },
    attempts: { type: 'integer' },
    lastStatusCode: { type: ['integer', 'null'] },
    lastLatencyMs: { type: ['integer', 'null'] },
    lastError: nullableString,
    nextAttemptAt: { ...nullableTime, description: 'next retry' },
    createdAt: { type: 'string', format: 'date-time' },
    deliveredAt: nullableTime,
  },
} as const;

const eventsField = {
  type: 'array',
  minItems: 1,
  maxItems: 50,
  uniqueItems: true,
  items: { type: 'string', minLength: 1, maxLength: 64 },
  description: 'event types to receive, or ["*"] for all (including types added later)',
} as const;

const batchField = {
  type: ['object', 'null'],
  required: ['maxEvents'],
  additionalProperties: false,
  properties: {
    maxEvents: { type: 'integer', minimum: 1, maximum: 1000, description: 'events per POST at most' },
    maxWaitMs: { type: 'integer', minimum: 0, maximum: 60000, default: 1000, description: 'how long the oldest waiting event may wait for others' },
  },
  description:
    'Batched delivery: each POST carries a JSON array of up to maxEvents events (in order), signed as one body under a webhook-id of its own; ' +
    'sent once maxEvents are waiting or the oldest has waited maxWaitMs. Retries are sent as arrays of one. null or absent: one event per POST.',
} as const;

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 64 } } } as const;

const DELIVERY_DESCRIPTION = `Deliveries are POSTs of JSON \`{id, type, createdAt, accountId, data}\` with the headers \`webhook-id\` (the event id),
\`webhook-timestamp\` (unix seconds) and \`webhook-signature\`: \`v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>\`
where key is the base64-decoded part of the secret after \`whsec_\` (Standard Webhooks). During a secret rotation overlap the header carries
two signatures separated by a space; accept the request when either matches. Any 2xx answer within the timeout is success; anything else is
retried with backoff (5 s, 30 s, 2 min, 10 min, 1 h, 6 h, 24 h by default) and then the delivery is dead (replayable). Delivery is at least once:
deduplicate on webhook-id. Events of one message reach an endpoint in order while it is healthy. An endpoint with \`batch\` set gets
JSON arrays of such events instead (see the batch field), each array signed as one body.

## Events

${eventCatalogueMarkdown()}`;

interface BatchBody {
  maxEvents: number;
  maxWaitMs?: number;
}

function batchOf(b: BatchBody | null | undefined): EndpointBatch | null {
  return b ? { maxEvents: b.maxEvents, maxWaitMs: b.maxWaitMs ?? 1000 } : null;
}

function checkEvents(events: string[] | undefined): string[] | undefined {
  if (!events) return undefined;
  for (const e of events) if (e !== '*' && !isEventType(e)) throw new ApiError('VALIDATION_ERROR', { message: `events: unknown event type ${e}`, data: { errors: [{ field: 'events', message: `unknown event type ${e}` }] } });
  return events.includes('*') ? ['*'] : events;
}

/** Webhook endpoint management and the delivery log under /v1/webhooks (scope webhooks:manage). */
export async function webhookRoutes(app: FastifyInstance, deps: WebhookRoutesDeps): Promise<void> {
  const { store, guard } = deps.webhooks;

  const checkUrl = async (url: string): Promise<string> => {
    const r = await guard.check(url);
    if (!r.ok) throw new ApiError('INVALID_WEBHOOK_URL', { message: `The webhook URL is not accepted: ${r.reason}` });
    return r.url.toString();
  };
  const endpointOf = async (accountId: string, id: string): Promise<WebhookEndpoint> => {
    const e = await store.get(accountId, id);
    if (!e) throw new ApiError('WEBHOOK_NOT_FOUND');
    return e;
  };
  const common = { config: { scope: 'webhooks:manage' } } as const;

  app.get(
    '/v1/webhooks/event-types',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'The event catalogue with payload schemas',
        description: DELIVERY_DESCRIPTION,
        response: withErrors({
          200: envelopeSchema({
            type: 'object',
            properties: {
              payload: { type: 'object', additionalProperties: true, description: 'JSON schema of every delivery body' },
              types: {
                type: 'array',
                items: { type: 'object', properties: { type: { type: 'string' }, description: { type: 'string' }, data: { type: 'object', additionalProperties: true } } },
              },
            },
          }),
        }),
      },
    },
    async (req) =>
      ok(req, 'WEBHOOK_EVENT_TYPES', {
        payload: EVENT_PAYLOAD_SCHEMA,
        types: EVENT_TYPES.map((t) => ({ type: t, description: EVENT_DESCRIPTIONS[t], data: EVENT_DATA_SCHEMAS[t] })),
      }),
  );

  app.post<{ Body: { url: string; events: string[]; description?: string; enabled?: boolean; batch?: BatchBody | null } }>(
    '/v1/webhooks',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'Create a webhook endpoint',
        description: `The URL must be https and resolve to a public address (else INVALID_WEBHOOK_URL), unless the operator allows private targets. The response carries the signing secret; it is not shown again.\n\n${DELIVERY_DESCRIPTION}`,
        body: {
          type: 'object',
          required: ['url', 'events'],
          additionalProperties: false,
          properties: {
            url: { type: 'string', minLength: 1, maxLength: 2048 },
            events: eventsField,
            description: { type: 'string', maxLength: 500 },
            enabled: { type: 'boolean', default: true },
            batch: batchField,
          },
        },
        response: withErrors({ 200: envelopeSchema(endpointSchema, 'Created (code WEBHOOK_CREATED)') }),
      },
    },
    async (req) => {
      const b = req.body;
      const events = checkEvents(b.events)!;
      const url = await checkUrl(b.url);
      const { endpoint, secret } = await store.create(req.auth.accountId, { url, events, description: b.description ?? null, enabled: b.enabled ?? true, batch: batchOf(b.batch) });
      return ok(req, 'WEBHOOK_CREATED', endpointData(endpoint, secret), 'Webhook created; store the secret now, it is not shown again');
    },
  );

  app.get(
    '/v1/webhooks',
    {
      ...common,
      schema: { tags: ['webhooks'], summary: 'List webhook endpoints', response: withErrors({ 200: envelopeSchema({ type: 'array', items: endpointSchema }) }) },
    },
    async (req) => ok(req, 'WEBHOOKS', (await store.list(req.auth.accountId)).map((e) => endpointData(e))),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/webhooks/:id',
    { ...common, schema: { tags: ['webhooks'], summary: 'One webhook endpoint', params: idParams, response: withErrors({ 200: envelopeSchema(endpointSchema) }) } },
    async (req) => ok(req, 'WEBHOOK', endpointData(await endpointOf(req.auth.accountId, req.params.id))),
  );

  app.patch<{ Params: { id: string }; Body: { url?: string; events?: string[]; description?: string | null; enabled?: boolean; batch?: BatchBody | null } }>(
    '/v1/webhooks/:id',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'Change a webhook endpoint',
        description: 'enabled=true re-enables an endpoint Ferry disabled and clears its failure state.',
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            url: { type: 'string', minLength: 1, maxLength: 2048 },
            events: eventsField,
            description: { type: ['string', 'null'], maxLength: 500 },
            enabled: { type: 'boolean' },
            batch: batchField,
          },
        },
        response: withErrors({ 200: envelopeSchema(endpointSchema) }),
      },
    },
    async (req) => {
      await endpointOf(req.auth.accountId, req.params.id);
      const b = req.body;
      const url = b.url === undefined ? undefined : await checkUrl(b.url);
      const e = await store.update(req.auth.accountId, req.params.id, {
        url,
        events: checkEvents(b.events),
        description: b.description,
        enabled: b.enabled,
        batch: b.batch === undefined ? undefined : batchOf(b.batch),
      });
      if (!e) throw new ApiError('WEBHOOK_NOT_FOUND');
      return ok(req, 'WEBHOOK_UPDATED', endpointData(e));
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/webhooks/:id',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a webhook endpoint (and its delivery log)',
        params: idParams,
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }) }),
      },
    },
    async (req) => {
      if (!(await store.remove(req.auth.accountId, req.params.id))) throw new ApiError('WEBHOOK_NOT_FOUND');
      return ok(req, 'WEBHOOK_DELETED', { id: req.params.id, deleted: true });
    },
  );

  app.post<{ Params: { id: string }; Body: { overlapHours?: number } | undefined }>(
    '/v1/webhooks/:id/rotate-secret',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'Rotate the signing secret',
        description: `The new secret is shown once. For overlapHours (default ${DEFAULT_OVERLAP_HOURS}, 0 = none) deliveries carry signatures by both secrets.`,
        params: idParams,
        body: { type: 'object', additionalProperties: false, properties: { overlapHours: { type: 'number', minimum: 0, maximum: MAX_OVERLAP_HOURS } } },
        response: withErrors({ 200: envelopeSchema(endpointSchema) }),
      },
    },
    async (req) => {
      const overlap = req.body?.overlapHours ?? DEFAULT_OVERLAP_HOURS;
      const r = await store.rotate(req.auth.accountId, req.params.id, overlap * 3_600_000);
      if (!r) throw new ApiError('WEBHOOK_NOT_FOUND');
      return ok(req, 'WEBHOOK_SECRET_ROTATED', endpointData(r.endpoint, r.secret), 'Secret rotated; store it now, it is not shown again');
    },
  );

  app.get<{ Params: { id: string }; Querystring: { limit?: string; status?: string } }>(
    '/v1/webhooks/:id/deliveries',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'Delivery log of an endpoint, newest first',
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          // Query values are strings (the app's ajv does not coerce): the bound is in the pattern.
          properties: {
            limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$', description: 'rows, 1–500 (default 50)' },
            status: { type: 'string', enum: ['pending', 'failed', 'delivered', 'dead'] },
          },
        },
        response: withErrors({ 200: envelopeSchema({ type: 'array', items: deliverySchema }) }),
      },
    },
    async (req) => {
      const e = await endpointOf(req.auth.accountId, req.params.id);
      const list = await store.deliveries(e.id, { limit: req.query.limit ? Number(req.query.limit) : 50, status: req.query.status });
      return ok(req, 'WEBHOOK_DELIVERIES', list.map(deliveryData));
    },
  );

  app.post<{ Params: { id: string; deliveryId: string } }>(
    '/v1/webhooks/:id/deliveries/:deliveryId/replay',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'Send a delivery again',
        description: 'The same event (same webhook-id) is sent again from the first attempt, whatever its status.',
        params: { type: 'object', required: ['id', 'deliveryId'], properties: { id: { type: 'string', maxLength: 64 }, deliveryId: { type: 'string', maxLength: 64 } } },
        response: withErrors({ 200: envelopeSchema(deliverySchema) }),
      },
    },
    async (req) => {
      const e = await endpointOf(req.auth.accountId, req.params.id);
      if (!(await store.resetForReplay(e.id, req.params.deliveryId))) throw new ApiError('DELIVERY_NOT_FOUND');
      await deps.webhooks.enqueue(req.params.deliveryId);
      const d = await store.delivery(e.id, req.params.deliveryId);
      return ok(req, 'WEBHOOK_DELIVERY_REPLAYED', deliveryData(d!));
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/webhooks/:id/test',
    {
      ...common,
      schema: {
        tags: ['webhooks'],
        summary: 'Send a webhook.test event to this endpoint',
        params: idParams,
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { eventId: { type: 'string' }, deliveryId: { type: 'string' } } }) }),
      },
    },
    async (req) => {
      const e = await endpointOf(req.auth.accountId, req.params.id);
      const r = await store.createTest(req.auth.accountId, e.id, { message: 'This is a test event from Ferry', webhookId: e.id });
      await deps.webhooks.enqueue(r.deliveryId);
      return ok(req, 'WEBHOOK_TEST_SENT', r, 'Test event queued');
    },
  );
}
