import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import type { AppInput } from './app-input.js';
import { TAG, appSchema, appView, endpointsSchema, idParams, pageLimit, pageQuery } from './push-schemas.js';
import type { PushService } from './push-service.js';

const fcmInput = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['serviceAccount'],
  description: 'FCM HTTP v1 credentials; null (PATCH) removes them',
  properties: {
    serviceAccount: {
      type: ['object', 'string'],
      'x-ferry-redact': 'secret',
      description: 'the service-account JSON file the Firebase console downloads (the object, or its text); checked, then sealed in the credential store, never returned',
    },
  },
} as const;

const apnsInput = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['privateKey', 'keyId', 'teamId', 'bundleId'],
  description: 'an APNs auth key (token-based); null (PATCH) removes it',
  properties: {
    privateKey: { type: 'string', maxLength: 10_000, 'x-ferry-redact': 'secret', description: 'the text of the .p8 file (BEGIN PRIVATE KEY); sealed, never returned' },
    keyId: { type: 'string', maxLength: 64, description: 'the 10-character key id' },
    teamId: { type: 'string', maxLength: 64, description: 'the 10-character team id' },
    bundleId: { type: 'string', maxLength: 255, description: "the app's bundle id (the apns-topic)" },
    environment: { type: 'string', enum: ['sandbox', 'production'], description: "default APNs environment of the app's devices (default production)" },
  },
} as const;

const appBodyProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  fcm: fcmInput,
  apns: apnsInput,
  endpoints: endpointsSchema,
} as const;

const credentialErrors = 'INVALID_FCM_CREDENTIALS (400) or INVALID_APNS_CREDENTIALS (400) with what is wrong when a credential does not parse (nothing is stored)';

/** `/v1/push/apps`: an account's mobile apps and their provider credentials (sealed, never returned). */
export async function appRoutes(app: FastifyInstance, deps: { service: PushService }): Promise<void> {
  const { service } = deps;
  const notFound = () => new ApiError('APP_NOT_FOUND');

  app.post<{ Body: AppInput & { name: string } }>(
    '/v1/push/apps',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'Create a push app',
        description: `An app with its FCM service account and/or APNs auth key (either may come later, or never). ${credentialErrors}. The answer shows who the credentials name and their fingerprints, never the keys.`,
        body: { type: 'object', required: ['name'], additionalProperties: false, properties: appBodyProperties },
        response: withErrors({ 201: envelopeSchema(appSchema, 'Created (code PUSH_APP_CREATED)') }),
      },
    },
    async (req, reply) => {
      const created = await service.createApp(req.auth.accountId, req.body);
      return reply.code(201).send(ok(req, 'PUSH_APP_CREATED', appView(created), 'Push app created'));
    },
  );

  app.get<{ Querystring: { cursor?: string; limit: string } }>(
    '/v1/push/apps',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'List push apps, newest first',
        querystring: { type: 'object', additionalProperties: false, properties: pageQuery },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { apps: { type: 'array', items: appSchema }, nextCursor: { type: ['string', 'null'] } } }) }),
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit);
      const apps = await service.listApps(req.auth.accountId, req.query.cursor, limit);
      return ok(req, 'PUSH_APPS', { apps: apps.map(appView), nextCursor: apps.length === limit ? apps[apps.length - 1].app.id : null });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/push/apps/:id',
    { config: { scope: 'push:manage' }, schema: { tags: TAG, summary: 'One push app', params: idParams, response: withErrors({ 200: envelopeSchema(appSchema) }) } },
    async (req) => {
      const found = await service.getApp(req.auth.accountId, req.params.id);
      if (!found) throw notFound();
      return ok(req, 'PUSH_APP', appView(found));
    },
  );

  app.patch<{ Params: { id: string }; Body: AppInput }>(
    '/v1/push/apps/:id',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'Change a push app; rotate or remove its credentials',
        description: `Fields given replace the stored ones: a credential given replaces the app's (and ends a pause of that service: its sends go on with the new one); \`fcm: null\` or \`apns: null\` removes it; \`endpoints\` replaces every endpoint. ${credentialErrors}.`,
        params: idParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: appBodyProperties },
        response: withErrors({ 200: envelopeSchema(appSchema, 'Changed (code PUSH_APP_UPDATED)') }),
      },
    },
    async (req) => {
      const updated = await service.updateApp(req.auth.accountId, req.params.id, req.body);
      if (!updated) throw notFound();
      return ok(req, 'PUSH_APP_UPDATED', appView(updated), 'Push app updated');
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/push/apps/:id',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'Delete a push app with its credentials, its devices and their topic subscriptions',
        params: idParams,
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }) }),
      },
    },
    async (req) => {
      if (!(await service.deleteApp(req.auth.accountId, req.params.id))) throw notFound();
      return ok(req, 'PUSH_APP_DELETED', { id: req.params.id, deleted: true }, 'Push app deleted');
    },
  );
}
