import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import type { DeviceFields, DeviceStatus } from './device.js';
import { TAG, deviceFieldProperties, deviceSchema, deviceView, idParams, pageLimit, pageQuery, tokenProperty } from './push-schemas.js';
import type { DeviceRegistration, PushService } from './push-service.js';
import type { PushPlatform } from './providers/types.js';

const droppedSchema = { type: 'array', items: { type: 'string' }, description: "ids of the user's oldest devices deleted to keep it within push.maxDevicesPerUser" } as const;
const deviceWithDropped = { type: 'object', properties: { ...deviceSchema.properties, dropped: droppedSchema } } as const;

interface DeviceListQuery {
  appId?: string;
  userId?: string;
  platform?: PushPlatform;
  status?: DeviceStatus;
  tag?: string;
  cursor?: string;
  limit: string;
}

/** `/v1/push/devices`: the installations of an account's apps, upserted by (app, token). */
export async function deviceRoutes(app: FastifyInstance, deps: { service: PushService }): Promise<void> {
  const { service } = deps;
  const notFound = () => new ApiError('DEVICE_NOT_FOUND');

  app.post<{ Body: DeviceRegistration }>(
    '/v1/push/devices',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'Register a device (upsert by app and token)',
        description:
          'Call it at every app start with the token the service gave. A token the app already has updates its device (201 the first time, 200 after): ' +
          'given fields replace the stored ones, a new userId moves the device to that user, an invalid device becomes active again. ' +
          "A user past push.maxDevicesPerUser loses its oldest devices (invalid ones first): `dropped` names them. APP_NOT_FOUND (404) for an app the account does not have; VALIDATION_ERROR for a token that cannot be one (an iOS token is 64 hex characters).",
        body: {
          type: 'object',
          required: ['token', 'platform', 'appId'],
          additionalProperties: false,
          properties: {
            token: tokenProperty,
            platform: { type: 'string', enum: ['android', 'ios', 'web'] },
            appId: { type: 'string', minLength: 1, maxLength: 100 },
            ...deviceFieldProperties,
          },
        },
        response: withErrors({
          201: envelopeSchema(deviceWithDropped, 'Registered (code DEVICE_REGISTERED)'),
          200: envelopeSchema(deviceWithDropped, 'Known token, updated (code DEVICE_UPDATED)'),
        }),
      },
    },
    async (req, reply) => {
      const r = await service.registerDevice(req.auth.accountId, req.body);
      const data = { ...deviceView(r.device), dropped: r.dropped };
      if (r.created) return reply.code(201).send(ok(req, 'DEVICE_REGISTERED', data, 'Device registered'));
      return ok(req, 'DEVICE_UPDATED', data, 'Device updated');
    },
  );

  app.get<{ Querystring: DeviceListQuery }>(
    '/v1/push/devices',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'List devices, newest first',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            appId: { type: 'string', maxLength: 100 },
            userId: { type: 'string', maxLength: 200 },
            platform: { type: 'string', enum: ['android', 'ios', 'web'] },
            status: { type: 'string', enum: ['active', 'invalid'] },
            tag: { type: 'string', maxLength: 64 },
            ...pageQuery,
          },
        },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { devices: { type: 'array', items: deviceSchema }, nextCursor: { type: ['string', 'null'] } } }) }),
      },
    },
    async (req) => {
      const { cursor, limit: rawLimit, ...filter } = req.query;
      const limit = pageLimit(rawLimit);
      const devices = await service.listDevices(req.auth.accountId, { ...filter, before: cursor, limit });
      return ok(req, 'DEVICES', { devices: devices.map(deviceView), nextCursor: devices.length === limit ? devices[devices.length - 1].id : null });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/push/devices/:id',
    { config: { scope: 'push:manage' }, schema: { tags: TAG, summary: 'One device', params: idParams, response: withErrors({ 200: envelopeSchema(deviceSchema) }) } },
    async (req) => {
      const device = await service.getDevice(req.auth.accountId, req.params.id);
      if (!device) throw notFound();
      return ok(req, 'DEVICE', deviceView(device));
    },
  );

  app.patch<{ Params: { id: string }; Body: DeviceFields }>(
    '/v1/push/devices/:id',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: "Change a device's user, locale, time zone, tags or APNs environment",
        description: 'Fields given replace the stored ones; null clears a nullable one. A device given a userId counts toward that user\'s push.maxDevicesPerUser (`dropped` as at registration).',
        params: idParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: deviceFieldProperties },
        response: withErrors({ 200: envelopeSchema(deviceWithDropped, 'Changed (code DEVICE_UPDATED)') }),
      },
    },
    async (req) => {
      const r = await service.updateDevice(req.auth.accountId, req.params.id, req.body);
      if (!r) throw notFound();
      return ok(req, 'DEVICE_UPDATED', { ...deviceView(r.device), dropped: r.dropped }, 'Device updated');
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/push/devices/:id',
    {
      config: { scope: 'push:manage' },
      schema: {
        tags: TAG,
        summary: 'Delete a device and its topic subscriptions',
        params: idParams,
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }) }),
      },
    },
    async (req) => {
      if (!(await service.deleteDevice(req.auth.accountId, req.params.id))) throw notFound();
      return ok(req, 'DEVICE_DELETED', { id: req.params.id, deleted: true }, 'Device deleted');
    },
  );
}
