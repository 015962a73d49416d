import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import { TOPIC_NAME_PATTERN, TOPIC_NAME_RULE } from './device-rules.js';
import { TAG, pageLimit, pageQuery, topicSchema, topicView } from './push-schemas.js';
import type { PushService, SubscriptionTarget } from './push-service.js';

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', pattern: TOPIC_NAME_PATTERN, description: TOPIC_NAME_RULE } },
} as const;

const targetBody = {
  type: 'object',
  additionalProperties: false,
  description: 'exactly one of deviceIds and userId',
  oneOf: [{ required: ['deviceIds'] }, { required: ['userId'] }],
  properties: {
    deviceIds: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 100 } },
    userId: { type: 'string', minLength: 1, maxLength: 200, description: "every device of this user (those it has now; a device registered later is not added)" },
  },
} as const;

const changeSchema = (counted: 'added' | 'removed') =>
  ({ type: 'object', properties: { ...topicSchema.properties, [counted]: { type: 'integer', description: `devices ${counted} by this request (already there, or not there, do not count)` } } }) as const;

/** `/v1/push/topics`: topics live in Ferry (the same on FCM and APNs), with their exact size. */
export async function topicRoutes(app: FastifyInstance, deps: { service: PushService }): Promise<void> {
  const { service } = deps;

  app.post<{ Params: { name: string }; Body: SubscriptionTarget }>(
    '/v1/push/topics/:name/subscriptions',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'Subscribe devices to a topic (created by its first subscription)',
        description: 'DEVICE_NOT_FOUND (404) names every device id the account does not have, and nothing changes.',
        params: nameParams,
        body: targetBody,
        response: withErrors({ 200: envelopeSchema(changeSchema('added'), 'Subscribed (code TOPIC_SUBSCRIBED)') }),
      },
    },
    async (req) => {
      const r = await service.subscribe(req.auth.accountId, req.params.name, req.body);
      return ok(req, 'TOPIC_SUBSCRIBED', { ...topicView(r.topic), added: r.added }, 'Subscribed');
    },
  );

  app.delete<{ Params: { name: string }; Body: SubscriptionTarget }>(
    '/v1/push/topics/:name/subscriptions',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'Unsubscribe devices from a topic',
        description: 'The topic stays (size 0 when empty). TOPIC_NOT_FOUND (404); DEVICE_NOT_FOUND (404) names every device id the account does not have.',
        params: nameParams,
        body: targetBody,
        response: withErrors({ 200: envelopeSchema(changeSchema('removed'), 'Unsubscribed (code TOPIC_UNSUBSCRIBED)') }),
      },
    },
    async (req) => {
      const r = await service.unsubscribe(req.auth.accountId, req.params.name, req.body);
      return ok(req, 'TOPIC_UNSUBSCRIBED', { ...topicView(r.topic), removed: r.removed }, 'Unsubscribed');
    },
  );

  app.get<{ Querystring: { cursor?: string; limit: string } }>(
    '/v1/push/topics',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'List topics by name',
        querystring: { type: 'object', additionalProperties: false, properties: pageQuery },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { topics: { type: 'array', items: topicSchema }, nextCursor: { type: ['string', 'null'] } } }) }),
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit);
      const topics = await service.listTopics(req.auth.accountId, req.query.cursor, limit);
      return ok(req, 'TOPICS', { topics: topics.map(topicView), nextCursor: topics.length === limit ? topics[topics.length - 1].name : null });
    },
  );

  app.get<{ Params: { name: string } }>(
    '/v1/push/topics/:name',
    { config: { scope: 'push:manage' }, schema: { tags: TAG, summary: 'One topic with its size', params: nameParams, response: withErrors({ 200: envelopeSchema(topicSchema) }) } },
    async (req) => {
      const topic = await service.getTopic(req.auth.accountId, req.params.name);
      if (!topic) throw new ApiError('TOPIC_NOT_FOUND');
      return ok(req, 'TOPIC', topicView(topic));
    },
  );
}
