import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import { ROLLUP_DIMS } from './click-recorder.js';
import type { Link } from './link.js';
import { MAX_URL_LENGTH, type LinkInput, type LinkResult, type ShortlinkService } from './shortlink-service.js';
import { CHOSEN_SLUG_RULE } from './slugs.js';

const TAG = ['shortlink'];
const nullableUrl = { type: ['string', 'null'], maxLength: MAX_URL_LENGTH } as const;
const utmField = { type: 'string', minLength: 1, maxLength: 200 } as const;

const linkBodyProperties = {
  url: { type: 'string', minLength: 1, maxLength: MAX_URL_LENGTH, description: 'destination: an absolute http(s) URL, checked against the deny-list' },
  slug: { type: 'string', minLength: 1, maxLength: 64, description: `chosen slug (${CHOSEN_SLUG_RULE}; reserved words refused); default: 7 generated characters without look-alikes` },
  title: { type: ['string', 'null'], maxLength: 200 },
  tags: { type: 'array', maxItems: 20, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 50 } },
  externalId: { type: ['string', 'null'], minLength: 1, maxLength: 100, description: "the caller's own id, unique per account" },
  utm: {
    type: 'object',
    additionalProperties: false,
    description: 'added to the destination as utm_* parameters at redirect, never replacing ones the URL already has',
    properties: { source: utmField, medium: utmField, campaign: utmField, term: utmField, content: utmField },
  },
  password: { type: ['string', 'null'], 'x-ferry-redact': 'secret', minLength: 1, maxLength: 200, description: 'visitors must enter it first (a form); stored as an scrypt hash, never returned; null removes it' },
  expiresAt: { type: ['string', 'null'], format: 'date-time', description: 'after it, visits go to expiredUrl or get 410 Gone; in the future when creating (an update may set a past time to end the link now)' },
  expiredUrl: { ...nullableUrl, description: 'where visits go once the link expired or its clicks are used up' },
  maxClicks: { type: ['integer', 'null'], minimum: 1, maximum: 1_000_000_000, description: 'redirects to the destination allowed, exact across instances' },
  ios: { ...nullableUrl, description: 'destination for iOS user agents' },
  android: { ...nullableUrl, description: 'destination for Android user agents' },
} as const;

const linkSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix lnk_' },
    slug: { type: 'string' },
    shortUrl: { type: 'string', description: 'the public address: shortlink.baseUrl/slug' },
    url: { type: 'string' },
    title: { type: ['string', 'null'] },
    tags: { type: 'array', items: { type: 'string' } },
    externalId: { type: ['string', 'null'] },
    utm: { type: 'object', properties: { source: { type: 'string' }, medium: { type: 'string' }, campaign: { type: 'string' }, term: { type: 'string' }, content: { type: 'string' } } },
    hasPassword: { type: 'boolean' },
    expiresAt: { type: ['string', 'null'], format: 'date-time' },
    expiredUrl: { type: ['string', 'null'] },
    maxClicks: { type: ['integer', 'null'] },
    clicksUsed: { type: 'integer', description: 'redirects counted against maxClicks (written with each click batch)' },
    ios: { type: ['string', 'null'] },
    android: { type: ['string', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

function fail(r: Exclude<LinkResult, { ok: true }>): ApiError {
  if (r.code === 'VALIDATION_ERROR') return new ApiError('VALIDATION_ERROR', { data: { errors: r.errors } });
  return new ApiError(r.code, r.message ? { message: r.message } : {});
}

/** A number from the query string (the API does not coerce types), in range or VALIDATION_ERROR. */
function intParam(field: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: `querystring.${field}`, message: `must be an integer from ${min} to ${max}` }] } });
  return n;
}

const notFound = () => new ApiError('SHORTLINK_NOT_FOUND');

const analyticsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    groupBy: { type: 'string', enum: ['time', ...ROLLUP_DIMS], default: 'time' },
    interval: { type: 'string', enum: ['hour', 'day'], default: 'day', description: 'bucket size of groupBy=time (UTC)' },
    from: { type: 'string', format: 'date-time', description: 'default: 30 days ago (hour precision)' },
    to: { type: 'string', format: 'date-time', description: 'default: now' },
    includeBots: { type: 'string', enum: ['true', 'false'], default: 'false', description: 'count bots and link previews too' },
  },
} as const;

const analyticsSchema = {
  type: 'object',
  properties: {
    total: { type: 'integer', description: 'clicks that reached the destination in the range (GET only; HEAD never counts)' },
    groupBy: { type: 'string' },
    interval: { type: 'string' },
    from: { type: 'string', format: 'date-time' },
    to: { type: 'string', format: 'date-time' },
    groups: { type: 'array', items: { type: 'object', properties: { key: { type: 'string', description: "bucket start, or the value ('' = unknown)" }, clicks: { type: 'integer' } } } },
  },
} as const;

interface AnalyticsQs {
  groupBy: 'time' | (typeof ROLLUP_DIMS)[number];
  interval: 'hour' | 'day';
  from?: string;
  to?: string;
  includeBots: 'true' | 'false';
}

/** Short links' REST API (spec §4, Beta): CRUD, QR codes, analytics and raw clicks under /v1/shortlink. */
export async function shortlinkRoutes(app: FastifyInstance, deps: { service: ShortlinkService }): Promise<void> {
  const { service } = deps;
  const view = (l: Link) => ({
    id: l.id,
    slug: l.slug,
    shortUrl: service.shortUrl(l),
    url: l.url,
    title: l.title,
    tags: l.tags,
    externalId: l.externalId,
    utm: l.utm,
    hasPassword: l.passwordHash !== null,
    expiresAt: l.expiresAt?.toISOString() ?? null,
    expiredUrl: l.expiredUrl,
    maxClicks: l.maxClicks,
    clicksUsed: l.usedClicks,
    ios: l.ios,
    android: l.android,
    createdAt: l.createdAt.toISOString(),
    updatedAt: l.updatedAt.toISOString(),
  });
  const owned = async (req: FastifyRequest<{ Params: { id: string } }>) => {
    const l = await service.get(req.auth.accountId, req.params.id);
    if (!l) throw notFound();
    return l;
  };

  app.post<{ Body: LinkInput & { url: string } }>(
    '/v1/shortlink/links',
    {
      config: { scope: 'shortlink:manage' },
      schema: {
        tags: TAG,
        summary: 'Create a short link',
        description: 'VALIDATION_ERROR names every field at fault (a URL that is not http(s), a bad or reserved slug, an expiresAt already past); SLUG_TAKEN (409) for a chosen slug in use; EXTERNAL_ID_TAKEN (409); DESTINATION_DENIED (422) for a destination on the deny-list.',
        body: { type: 'object', required: ['url'], additionalProperties: false, properties: linkBodyProperties },
        response: withErrors({ 201: envelopeSchema(linkSchema, 'Created (code LINK_CREATED)'), 409: { $ref: 'ErrorEnvelope#' }, 422: { $ref: 'ErrorEnvelope#' } }),
      },
    },
    async (req, reply) => {
      const r = await service.create(req.auth.accountId, req.body);
      if (!r.ok) throw fail(r);
      return reply.code(201).send(ok(req, 'LINK_CREATED', view(r.link), 'Short link created'));
    },
  );

  app.get<{ Querystring: { tag?: string; search?: string; cursor?: string; limit: string } }>(
    '/v1/shortlink/links',
    {
      config: { scope: 'shortlink:read' },
      schema: {
        tags: TAG,
        summary: 'List short links, newest first',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            tag: { type: 'string', maxLength: 50 },
            search: { type: 'string', maxLength: 200, description: 'part of the slug, title or destination' },
            cursor: { type: 'string', maxLength: 100, description: 'nextCursor of the previous page' },
            limit: { type: 'string', pattern: '^[0-9]{1,3}$', default: '50', description: '1–100, default 50' },
          },
        },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { links: { type: 'array', items: linkSchema }, nextCursor: { type: ['string', 'null'] } } }) }),
      },
    },
    async (req) => {
      const q = req.query;
      const limit = intParam('limit', q.limit, 1, 100);
      const links = await service.list(req.auth.accountId, { tag: q.tag, search: q.search, before: q.cursor, limit });
      return ok(req, 'LINKS', { links: links.map(view), nextCursor: links.length === limit ? links[links.length - 1].id : null });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/shortlink/links/:id',
    {
      config: { scope: 'shortlink:read' },
      schema: { tags: TAG, summary: 'One short link', params: idParams, response: withErrors({ 200: envelopeSchema(linkSchema) }) },
    },
    async (req) => ok(req, 'LINK', view(await owned(req))),
  );

  app.patch<{ Params: { id: string }; Body: LinkInput }>(
    '/v1/shortlink/links/:id',
    {
      config: { scope: 'shortlink:manage' },
      schema: {
        tags: TAG,
        summary: 'Change a short link',
        description: 'Fields given replace the stored ones; null clears a nullable one. Every instance drops the old link from its cache at once (Redis) or within cacheTtlSeconds.',
        params: idParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: linkBodyProperties },
        response: withErrors({ 200: envelopeSchema(linkSchema, 'Changed (code LINK_UPDATED)'), 409: { $ref: 'ErrorEnvelope#' }, 422: { $ref: 'ErrorEnvelope#' } }),
      },
    },
    async (req) => {
      const r = await service.update(req.auth.accountId, req.params.id, req.body);
      if (!r.ok) throw fail(r);
      return ok(req, 'LINK_UPDATED', view(r.link), 'Short link updated');
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/shortlink/links/:id',
    {
      config: { scope: 'shortlink:manage' },
      schema: { tags: TAG, summary: 'Delete a short link (its clicks stay in the analytics)', params: idParams, response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }) }) },
    },
    async (req) => {
      if (!(await service.delete(req.auth.accountId, req.params.id))) throw notFound();
      return ok(req, 'LINK_DELETED', { id: req.params.id, deleted: true }, 'Short link deleted');
    },
  );

  app.get<{ Params: { id: string }; Querystring: { format: 'svg' | 'png'; size: string; margin: string; level: 'L' | 'M' | 'Q' | 'H' } }>(
    '/v1/shortlink/links/:id/qr',
    {
      config: { scope: 'shortlink:read' },
      schema: {
        tags: TAG,
        summary: "A QR code of the link's shortUrl (image/svg+xml or image/png)",
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            format: { type: 'string', enum: ['svg', 'png'], default: 'svg' },
            size: { type: 'string', pattern: '^[0-9]{1,4}$', default: '256', description: 'width and height in pixels, 64–2048' },
            margin: { type: 'string', pattern: '^[0-9]{1,2}$', default: '2', description: 'quiet zone in modules, 0–16' },
            level: { type: 'string', enum: ['L', 'M', 'Q', 'H'], default: 'M', description: 'error correction' },
          },
        },
      },
    },
    async (req, reply: FastifyReply) => {
      const { format, level } = req.query;
      const opts = { width: intParam('size', req.query.size, 64, 2048), margin: intParam('margin', req.query.margin, 0, 16), errorCorrectionLevel: level };
      const l = await owned(req);
      reply.header('cache-control', 'private, max-age=300');
      const QRCode = (await import('qrcode')).default; // loaded at the first QR code, not at every start
      if (format === 'png') return reply.type('image/png').send(await QRCode.toBuffer(service.shortUrl(l), { ...opts, type: 'png' }));
      return reply.type('image/svg+xml').send(await QRCode.toString(service.shortUrl(l), { ...opts, type: 'svg' }));
    },
  );

  const range = (q: AnalyticsQs) => {
    const to = q.to ? new Date(q.to) : new Date();
    const from = q.from ? new Date(q.from) : new Date(to.getTime() - 30 * 86_400_000);
    if (from >= to) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'from', message: 'must be before to' }] } });
    return { from, to };
  };
  const analytics = async (req: FastifyRequest<{ Querystring: AnalyticsQs }>, linkId?: string) => {
    const q = req.query;
    const { from, to } = range(q);
    const r = await service.analytics(req.auth.accountId, { linkId, groupBy: q.groupBy, interval: q.interval, from, to, includeBots: q.includeBots === 'true' });
    return ok(req, 'ANALYTICS', { total: r.total, groupBy: q.groupBy, interval: q.interval, from: from.toISOString(), to: to.toISOString(), groups: r.groups });
  };

  app.get<{ Params: { id: string }; Querystring: AnalyticsQs }>(
    '/v1/shortlink/links/:id/analytics',
    {
      config: { scope: 'shortlink:read' },
      schema: {
        tags: TAG,
        summary: "A link's clicks by time, country, device, browser, OS or referrer host",
        description: 'From hourly rollups written with each click batch (about a second behind the redirects). Bots and link previews are left out unless includeBots.',
        params: idParams,
        querystring: analyticsQuery,
        response: withErrors({ 200: envelopeSchema(analyticsSchema) }),
      },
    },
    async (req) => {
      await owned(req);
      return analytics(req, req.params.id);
    },
  );

  app.get<{ Querystring: AnalyticsQs }>(
    '/v1/shortlink/analytics',
    {
      config: { scope: 'shortlink:read' },
      schema: { tags: TAG, summary: "The account's clicks over all its links", querystring: analyticsQuery, response: withErrors({ 200: envelopeSchema(analyticsSchema) }) },
    },
    (req) => analytics(req),
  );

  app.get<{ Params: { id: string }; Querystring: { cursor?: string; limit: string } }>(
    '/v1/shortlink/links/:id/clicks',
    {
      config: { scope: 'shortlink:read' },
      schema: {
        tags: TAG,
        summary: "A link's raw clicks, newest first (HEAD requests, bots and expired visits included, marked)",
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { cursor: { type: 'string', maxLength: 100 }, limit: { type: 'string', pattern: '^[0-9]{1,3}$', default: '100', description: '1–500, default 100' } },
        },
        response: withErrors({
          200: envelopeSchema({
            type: 'object',
            properties: {
              clicks: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'string' },
                    at: { type: 'string', format: 'date-time' },
                    country: { type: ['string', 'null'] },
                    device: { type: 'string' },
                    browser: { type: ['string', 'null'] },
                    os: { type: ['string', 'null'] },
                    referrer: { type: ['string', 'null'] },
                    bot: { type: 'boolean' },
                    method: { type: 'string' },
                    outcome: { type: 'string', enum: ['redirected', 'expired'] },
                  },
                },
              },
              nextCursor: { type: ['string', 'null'] },
            },
          }),
        }),
      },
    },
    async (req) => {
      const limit = intParam('limit', req.query.limit, 1, 500);
      await owned(req);
      const clicks = await service.clicks(req.auth.accountId, req.params.id, req.query.cursor, limit);
      return ok(req, 'CLICKS', {
        clicks: clicks.map((c) => ({ ...c, at: c.at.toISOString() })),
        nextCursor: clicks.length === limit ? clicks[clicks.length - 1].id : null,
      });
    },
  );
}
