import { invalidField } from '../../http/errors.js';
import type { AppWithCredentials } from './push-service.js';
import type { PushDevice } from './device.js';
import { MAX_TOKEN_LENGTH } from './device-rules.js';
import { MAX_ENDPOINT_LENGTH } from './app-input.js';
import type { PushTopic } from './topic-store.js';

/** The JSON schemas of push's answers and the views that fill them: a credential's key is in none of them. */

export const TAG = ['push'];

const time = { type: 'string', format: 'date-time' } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
const endpointUrl = { type: 'string', minLength: 1, maxLength: MAX_ENDPOINT_LENGTH } as const;

export const endpointsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'provider base URLs (absolute http(s)), for private relays and tests against other implementations; absent: the real services',
  properties: {
    fcm: { ...endpointUrl, description: 'FCM HTTP v1 base (default https://fcm.googleapis.com)' },
    oauthToken: { ...endpointUrl, description: "where the service account's assertion is exchanged for an access token (default: its token_uri)" },
    apns: { ...endpointUrl, description: 'APNs base (default https://api.push.apple.com, or api.sandbox.push.apple.com for sandbox)' },
  },
} as const;

const fcmSummarySchema = {
  type: ['object', 'null'],
  description: 'the FCM service account (its key is never returned); null: none',
  properties: { projectId: { type: 'string' }, clientEmail: { type: 'string' }, fingerprint: { type: 'string' }, updatedAt: time },
} as const;

const apnsSummarySchema = {
  type: ['object', 'null'],
  description: 'the APNs auth key (never returned); null: none',
  properties: {
    keyId: { type: 'string' },
    teamId: { type: 'string' },
    bundleId: { type: 'string' },
    environment: { type: 'string', enum: ['sandbox', 'production'] },
    fingerprint: { type: 'string' },
    updatedAt: time,
  },
} as const;

export const appSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix papp_' },
    name: { type: 'string' },
    fcm: fcmSummarySchema,
    apns: apnsSummarySchema,
    endpoints: { type: 'object', properties: endpointsSchema.properties },
    paused: {
      type: ['object', 'null'],
      description: "set when a provider rejected the app's credentials: its sends wait until they change",
      properties: { service: { type: 'string' }, reason: { type: ['string', 'null'] }, at: time },
    },
    createdAt: time,
    updatedAt: time,
  },
} as const;

export const deviceSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix pdev_' },
    appId: { type: 'string' },
    token: { type: 'string' },
    platform: { type: 'string', enum: ['android', 'ios', 'web'] },
    environment: { type: ['string', 'null'], enum: ['sandbox', 'production', null], description: "APNs environment of an iOS token; null: the app's" },
    userId: { type: ['string', 'null'] },
    locale: { type: ['string', 'null'] },
    timezone: { type: ['string', 'null'] },
    tags: { type: 'array', items: { type: 'string' } },
    status: { type: 'string', enum: ['active', 'invalid'] },
    invalidReason: { type: ['string', 'null'], description: 'why the service refused the token (e.g. DEVICE_UNREGISTERED)' },
    invalidatedAt: nullableTime,
    createdAt: time,
    updatedAt: time,
  },
} as const;

export const topicSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, size: { type: 'integer', description: 'devices subscribed' }, createdAt: time },
} as const;

/** The device fields a registration or a change may carry. */
export const deviceFieldProperties = {
  userId: { type: ['string', 'null'], minLength: 1, maxLength: 200, description: "your user's id; a token registered again with another userId moves to that user; null detaches" },
  environment: { type: ['string', 'null'], enum: ['sandbox', 'production', null], description: 'ios only: the APNs environment the token belongs to (a sandbox build gets sandbox tokens)' },
  locale: { type: ['string', 'null'], maxLength: 35, description: 'a language tag (en, pt-BR)' },
  timezone: { type: ['string', 'null'], maxLength: 64, description: 'an IANA time zone (Europe/Paris)' },
  tags: { type: 'array', maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 64 }, description: 'replaces the stored tags' },
} as const;

/** A device token lets whoever holds it (and the app's credentials) reach the device: never kept in the request logs. */
export const tokenProperty = {
  type: 'string',
  'x-ferry-redact': 'secret',
  minLength: 1,
  maxLength: MAX_TOKEN_LENGTH,
  description: 'the registration token FCM gave the app (android, web) or the APNs device token in hex (ios: 64 hex characters)',
} as const;

export const pageQuery = {
  cursor: { type: 'string', maxLength: 300, description: 'nextCursor of the previous page' },
  limit: { type: 'string', pattern: '^[0-9]{1,3}$', default: '50', description: '1–200, default 50' },
} as const;

export const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

/** The page size of a list (the API does not coerce query strings). */
export function pageLimit(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw invalidField('querystring.limit', 'must be an integer from 1 to 200');
  return n;
}

export function appView(a: AppWithCredentials) {
  const { app, credentials } = a;
  return {
    id: app.id,
    name: app.name,
    fcm: credentials.fcm,
    apns: credentials.apns,
    endpoints: app.endpoints,
    paused: app.paused && { service: app.paused.service, reason: app.paused.reason, at: app.paused.at.toISOString() },
    createdAt: app.createdAt.toISOString(),
    updatedAt: app.updatedAt.toISOString(),
  };
}

export function deviceView(d: PushDevice) {
  return {
    id: d.id,
    appId: d.appId,
    token: d.token,
    platform: d.platform,
    environment: d.environment,
    userId: d.userId,
    locale: d.locale,
    timezone: d.timezone,
    tags: d.tags,
    status: d.status,
    invalidReason: d.invalidReason,
    invalidatedAt: d.invalidatedAt?.toISOString() ?? null,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}

export function topicView(t: PushTopic) {
  return { name: t.name, size: t.size, createdAt: t.createdAt.toISOString() };
}
