import type { FastifyInstance, FastifyRequest } from 'fastify';
import { envelopeSchema, errorEnvelopeSchema, ok } from '../../http/envelope.js';
import { ApiError, invalidField } from '../../http/errors.js';
import { newId } from '../../util/ids.js';
import { normalizeNumber } from '../../numbers/phone.js';
import type { TargetGuard } from '../../security/target-guard.js';
import { APP_DIALECTS, dynamicUrls, menuTreeSchema, shapeErrors, validateTree, type AppDialect, type MenuTree } from './menu-tree.js';
import { canonicalCode, displayCode } from './service-code.js';
import type { LiveSessions } from './live-sessions.js';
import type { ReservedCodes } from './reserved-codes.js';
import type { UssdCore } from './session-core.js';
import type { SessionFilter, SessionRow, SessionStore } from './session-store.js';
import { ServiceCodeTakenError, type MenuRow, type ServiceCodeRow, type UssdStore } from './ussd-store.js';
import { randomBytes } from 'node:crypto';

export interface UssdRoutesDeps {
  store: UssdStore;
  sessions: SessionStore;
  /** Live sessions' latest hops (Redis) overlay their SQL rows. */
  live: LiveSessions;
  core: UssdCore;
  guard: TargetGuard;
  /** Codes the platform answers (the OTP fallback): no claim may overlap them. */
  reserved: ReservedCodes;
  defaultCountry: string | null;
  signingSecret(accountId: string): string;
}

const err = (description: string) => ({ ...errorEnvelopeSchema, description });
const AUTH_ERRORS = {
  401: err('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: err('INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
  429: err('RATE_LIMIT_EXCEEDED'),
  500: err('INTERNAL_ERROR'),
  503: err('SERVICE_UNAVAILABLE'),
} as const;

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 64 } } } as const;
const menuSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix menu_' },
    name: { type: 'string' },
    publishedVersion: { type: ['integer', 'null'], description: 'the version new sessions start on (null: never published)' },
    latestVersion: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    tree: { type: 'object', additionalProperties: true, description: 'the latest version (GET one menu only)' },
  },
} as const;
const codeSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix usc_' },
    serviceCode: { type: 'string', description: "as dialled: '*384*12#'" },
    menuId: { type: ['string', 'null'] },
    webhookUrl: { type: ['string', 'null'] },
    dialect: { type: 'string', enum: [...APP_DIALECTS] },
    signingSecret: { type: 'string', description: "verifies the webhook-signature header of Ferry's POSTs to the account's apps (as webhooks)" },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const;
const transcriptSchema = {
  type: 'array',
  items: { type: 'object', properties: { at: { type: 'string', format: 'date-time' }, dir: { type: 'string', enum: ['in', 'out'] }, text: { type: 'string' } } },
} as const;
const sessionSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix ussd_' },
    serviceCode: { type: 'string' },
    dialled: { type: 'string' },
    phoneNumber: { type: 'string' },
    networkCode: { type: 'string' },
    channel: { type: 'string', enum: ['smpp', 'africastalking', 'hubtel', 'simulate'] },
    status: { type: 'string', enum: ['active', 'ended'] },
    endStatus: { type: ['string', 'null'], enum: ['Success', 'Incomplete', 'Failed', null] },
    error: { type: ['string', 'null'] },
    app: { type: 'object', additionalProperties: true },
    hops: { type: 'integer' },
    lastInput: { type: ['string', 'null'] },
    resumedFrom: { type: ['string', 'null'] },
    startedAt: { type: 'string', format: 'date-time' },
    endedAt: { type: ['string', 'null'], format: 'date-time' },
    durationMs: { type: 'integer' },
    transcript: transcriptSchema,
  },
} as const;

const iso = (ms: number) => new Date(ms).toISOString();
const menuOut = (m: MenuRow, tree?: MenuTree) => ({ ...m, createdAt: iso(m.createdAt), updatedAt: iso(m.updatedAt), ...(tree ? { tree } : {}) });
function sessionOut(s: SessionRow, withTranscript: boolean) {
  return {
    id: s.id,
    serviceCode: displayCode(s.serviceCode),
    dialled: s.dialled,
    phoneNumber: s.phone,
    networkCode: s.networkCode,
    channel: s.channel,
    status: s.status,
    endStatus: s.endStatus,
    error: s.error,
    app: s.app,
    hops: s.hops,
    lastInput: s.lastInput,
    resumedFrom: s.resumedFrom,
    startedAt: iso(s.startedAt),
    endedAt: s.endedAt ? iso(s.endedAt) : null,
    durationMs: (s.endedAt ?? s.updatedAt) - s.startedAt,
    ...(withTranscript ? { transcript: s.transcript.map((e) => ({ ...e, at: iso(e.at) })) } : {}),
  };
}

/** The USSD REST surface: menus and versions, service codes, aggregator connectors, sessions, simulate. */
export async function ussdRoutes(app: FastifyInstance, deps: UssdRoutesDeps): Promise<void> {
  const { store, sessions, core } = deps;
  /** A live session as of its last hop (its live copy, when one exists). */
  const latest = async (s: SessionRow): Promise<SessionRow> => {
    if (s.status !== 'active') return s;
    const l = await deps.live.get(s.networkKey).catch(() => null);
    return l && l.id === s.id ? l : s;
  };
  const codeOut = (c: ServiceCodeRow) => ({ ...c, code: undefined, serviceCode: displayCode(c.code), createdAt: iso(c.createdAt), signingSecret: deps.signingSecret(c.accountId) });

  async function checkTree(tree: MenuTree): Promise<void> {
    const errors = shapeErrors(tree);
    if (!errors.length) errors.push(...validateTree(tree));
    for (const url of errors.length ? [] : dynamicUrls(tree)) {
      const c = await deps.guard.check(url);
      if (!c.ok) errors.push({ field: 'tree.nodes', message: `dynamic node URL ${url}: ${c.reason}` });
    }
    if (errors.length) throw new ApiError('INVALID_MENU_TREE', { data: { errors } });
  }
  async function ownMenu(req: FastifyRequest, id: string): Promise<MenuRow> {
    const m = await store.menu(req.auth.accountId, id);
    if (!m) throw new ApiError('USSD_MENU_NOT_FOUND');
    return m;
  }

  app.post<{ Body: { name: string; tree: MenuTree } }>(
    '/v1/ussd/menus',
    {
      config: { scope: 'ussd:manage' },
      schema: {
        tags: ['ussd'],
        summary: 'Upload a menu tree (version 1, a draft until published)',
        description:
          'A tree of nodes: menu (text, options [{key, label, next}]), input (text, pattern matched against the whole input, error, var, next), ' +
          'end (text), dynamic (url: the account\'s app is asked for the screen, dialect, next, var). Validated on upload: the start and every ' +
          'target must exist, every node must be reachable from start, every text GSM-7, keys unique, patterns valid, end screens at most 182 ' +
          'characters; a menu over 182 characters is paged ("98 More", "0 Back") and may not use keys 98 or 0. `{var}` in a text shows a value ' +
          'an input node kept. INVALID_MENU_TREE (400) lists every problem in data.errors.',
        body: {
          type: 'object',
          required: ['name', 'tree'],
          additionalProperties: false,
          properties: { name: { type: 'string', minLength: 1, maxLength: 100 }, tree: menuTreeSchema },
        },
        response: { 200: envelopeSchema(menuSchema, 'Created (code USSD_MENU_CREATED)'), 400: err('VALIDATION_ERROR, INVALID_MENU_TREE'), ...AUTH_ERRORS },
      },
    },
    async (req) => {
      await checkTree(req.body.tree);
      return ok(req, 'USSD_MENU_CREATED', menuOut(await store.createMenu(req.auth.accountId, req.body.name, req.body.tree)));
    },
  );

  app.get('/v1/ussd/menus', {
    config: { scope: 'ussd:read' },
    schema: { tags: ['ussd'], summary: "The account's menus", response: { 200: envelopeSchema({ type: 'array', items: menuSchema }), ...AUTH_ERRORS } },
  }, async (req) => ok(req, 'OK', (await store.menus(req.auth.accountId)).map((m) => menuOut(m))));

  app.get<{ Params: { id: string } }>('/v1/ussd/menus/:id', {
    config: { scope: 'ussd:read' },
    schema: { tags: ['ussd'], summary: 'A menu with its latest tree', params: idParams, response: { 200: envelopeSchema(menuSchema), 404: err('USSD_MENU_NOT_FOUND'), ...AUTH_ERRORS } },
  }, async (req) => {
    const m = await ownMenu(req, req.params.id);
    return ok(req, 'OK', menuOut(m, (await store.tree(m.id, m.latestVersion)) ?? undefined));
  });

  app.put<{ Params: { id: string }; Body: { name?: string; tree?: MenuTree } }>('/v1/ussd/menus/:id', {
    config: { scope: 'ussd:manage' },
    schema: {
      tags: ['ussd'],
      summary: 'Rename a menu or upload a new version of its tree (a draft: live sessions and new ones keep the published version)',
      params: idParams,
      body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { name: { type: 'string', minLength: 1, maxLength: 100 }, tree: menuTreeSchema } },
      response: { 200: envelopeSchema(menuSchema), 400: err('VALIDATION_ERROR, INVALID_MENU_TREE'), 404: err('USSD_MENU_NOT_FOUND'), ...AUTH_ERRORS },
    },
  }, async (req) => {
    if (req.body.tree) await checkTree(req.body.tree);
    const m = await store.updateMenu(req.auth.accountId, req.params.id, req.body);
    if (!m) throw new ApiError('USSD_MENU_NOT_FOUND');
    return ok(req, 'OK', menuOut(m));
  });

  app.delete<{ Params: { id: string } }>('/v1/ussd/menus/:id', {
    config: { scope: 'ussd:manage' },
    schema: { tags: ['ussd'], summary: "Delete a menu no service code uses (another account's menu is USSD_MENU_NOT_FOUND, in use or not)", params: idParams, response: { 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' } } }), 404: err('USSD_MENU_NOT_FOUND'), 409: err('USSD_MENU_IN_USE'), ...AUTH_ERRORS } },
  }, async (req) => {
    const r = await store.deleteMenu(req.auth.accountId, req.params.id);
    if (r === 'missing') throw new ApiError('USSD_MENU_NOT_FOUND');
    if (r === 'in_use') throw new ApiError('USSD_MENU_IN_USE');
    return ok(req, 'USSD_MENU_DELETED', { id: req.params.id });
  });

  app.post<{ Params: { id: string }; Body: { version?: number } }>('/v1/ussd/menus/:id/publish', {
    config: { scope: 'ussd:manage' },
    schema: {
      tags: ['ussd'],
      summary: 'Publish a version (default the latest) atomically',
      description: 'Sessions starting afterwards get this version; sessions already running finish on the version they started on.',
      params: idParams,
      body: { type: ['object', 'null'], additionalProperties: false, properties: { version: { type: 'integer', minimum: 1 } } },
      response: { 200: envelopeSchema(menuSchema, 'Published (code USSD_MENU_PUBLISHED)'), 404: err('USSD_MENU_NOT_FOUND (or no such version)'), ...AUTH_ERRORS },
    },
  }, async (req) => {
    await ownMenu(req, req.params.id);
    const m = await store.publish(req.auth.accountId, req.params.id, req.body?.version ?? null);
    if (!m) throw new ApiError('USSD_MENU_NOT_FOUND', { message: 'No such version of the menu' });
    return ok(req, 'USSD_MENU_PUBLISHED', menuOut(m));
  });

  app.get<{ Params: { id: string } }>('/v1/ussd/menus/:id/versions', {
    config: { scope: 'ussd:read' },
    schema: {
      tags: ['ussd'],
      summary: "A menu's versions, newest first",
      params: idParams,
      response: {
        200: envelopeSchema({ type: 'array', items: { type: 'object', properties: { version: { type: 'integer' }, createdAt: { type: 'string', format: 'date-time' }, publishedAt: { type: ['string', 'null'], format: 'date-time' }, live: { type: 'boolean' } } } }),
        404: err('USSD_MENU_NOT_FOUND'),
        ...AUTH_ERRORS,
      },
    },
  }, async (req) => {
    const m = await ownMenu(req, req.params.id);
    const vs = await store.versions(m.id);
    return ok(req, 'OK', vs.map((v) => ({ version: v.version, createdAt: iso(v.createdAt), publishedAt: v.publishedAt ? iso(v.publishedAt) : null, live: v.version === m.publishedVersion })));
  });

  app.get<{ Params: { id: string; version: string } }>('/v1/ussd/menus/:id/versions/:version', {
    config: { scope: 'ussd:read' },
    schema: {
      tags: ['ussd'],
      summary: 'One version of a menu with its tree',
      params: { type: 'object', required: ['id', 'version'], properties: { id: { type: 'string', maxLength: 64 }, version: { type: 'string', pattern: '^[1-9][0-9]{0,8}$' } } },
      response: {
        200: envelopeSchema({ type: 'object', properties: { version: { type: 'integer' }, live: { type: 'boolean' }, tree: { type: 'object', additionalProperties: true } } }),
        404: err('USSD_MENU_NOT_FOUND (or no such version)'),
        ...AUTH_ERRORS,
      },
    },
  }, async (req) => {
    const m = await ownMenu(req, req.params.id);
    const version = Number(req.params.version);
    const tree = await store.tree(m.id, version);
    if (!tree) throw new ApiError('USSD_MENU_NOT_FOUND', { message: 'No such version of the menu' });
    return ok(req, 'OK', { version, live: version === m.publishedVersion, tree });
  });

  // ------------------------------------------------------------ service codes

  app.post<{ Body: { serviceCode: string; menuId?: string; webhookUrl?: string; dialect?: AppDialect } }>('/v1/ussd/service-codes', {
    config: { scope: 'ussd:manage' },
    schema: {
      tags: ['ussd'],
      summary: 'Claim a service code (or an extension of one) for a hosted menu or a webhook app',
      description:
        `A dialled code reaches the longest claim it extends; the parts beyond pre-fill inputs ('*384*12*3#' on '*384*12#' enters with 3). ` +
        `Exactly one of menuId or webhookUrl. A webhook app gets each hop POSTed (dialect africastalking: form fields sessionId, serviceCode, ` +
        `phoneNumber, networkCode, text = every input joined by *; json: the same as JSON plus inputs), signed like webhooks with signingSecret, and ` +
        `answers 'CON <screen>' or 'END <screen>' (or JSON {end, text}) within the hard timeout. A claim owns the code's extensions and the codes ` +
        `it extends: a code that is, extends or is extended by another account's claim ('*384*12#', '*384*12*1#', '*384#'), or that the account ` +
        `claimed already, is USSD_SERVICE_CODE_TAKEN; an account may claim extensions of its own codes. The OTP fallback's code ` +
        `(otp.ussdServiceCode, '*889*142#'), its extensions and the codes it extends are reserved (USSD_SERVICE_CODE_RESERVED).`,
      body: {
        type: 'object',
        required: ['serviceCode'],
        additionalProperties: false,
        properties: {
          serviceCode: { type: 'string', minLength: 2, maxLength: 40, description: "'*384#' or '*384*12#'" },
          menuId: { type: 'string', maxLength: 64 },
          webhookUrl: { type: 'string', maxLength: 2048 },
          dialect: { type: 'string', enum: [...APP_DIALECTS], description: 'how a webhook app is called (default africastalking)' },
        },
      },
      response: {
        200: envelopeSchema(codeSchema, 'Claimed (code USSD_SERVICE_CODE_CLAIMED)'),
        400: err('VALIDATION_ERROR, INVALID_APP_URL'),
        404: err('USSD_MENU_NOT_FOUND'),
        409: err('USSD_SERVICE_CODE_TAKEN, USSD_SERVICE_CODE_RESERVED'),
        ...AUTH_ERRORS,
      },
    },
  }, async (req) => {
    const b = req.body;
    const code = canonicalCode(b.serviceCode);
    if (!code) throw invalidField('serviceCode', "a USSD code: '*', digits, optional '*'-separated extensions, '#'");
    if (!!b.menuId === !!b.webhookUrl) throw invalidField('menuId', 'give exactly one of menuId and webhookUrl');
    if (deps.reserved.overlapping(code)) throw new ApiError('USSD_SERVICE_CODE_RESERVED');
    if (b.menuId) await ownMenu(req, b.menuId);
    if (b.webhookUrl) {
      const c = await deps.guard.check(b.webhookUrl);
      if (!c.ok) throw new ApiError('INVALID_APP_URL', { message: `The app URL is not accepted: ${c.reason}` });
    }
    try {
      const row = await store.claim({ accountId: req.auth.accountId, code, menuId: b.menuId ?? null, webhookUrl: b.webhookUrl ?? null, dialect: b.dialect ?? 'africastalking' });
      return ok(req, 'USSD_SERVICE_CODE_CLAIMED', codeOut(row));
    } catch (e) {
      if (e instanceof ServiceCodeTakenError) throw new ApiError('USSD_SERVICE_CODE_TAKEN', { message: 'That service code, a code it extends or an extension of it is already claimed' });
      throw e;
    }
  });

  app.get('/v1/ussd/service-codes', {
    config: { scope: 'ussd:read' },
    schema: { tags: ['ussd'], summary: "The account's service codes", response: { 200: envelopeSchema({ type: 'array', items: codeSchema }), ...AUTH_ERRORS } },
  }, async (req) => ok(req, 'OK', (await store.serviceCodes(req.auth.accountId)).map(codeOut)));

  app.delete<{ Params: { id: string } }>('/v1/ussd/service-codes/:id', {
    config: { scope: 'ussd:manage' },
    schema: { tags: ['ussd'], summary: 'Release a service code (live sessions finish)', params: idParams, response: { 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' } } }), 404: err('USSD_SERVICE_CODE_NOT_FOUND'), ...AUTH_ERRORS } },
  }, async (req) => {
    if (!(await store.releaseCode(req.auth.accountId, req.params.id))) throw new ApiError('USSD_SERVICE_CODE_NOT_FOUND');
    return ok(req, 'USSD_SERVICE_CODE_RELEASED', { id: req.params.id });
  });

  // ------------------------------------------------------------ aggregator connectors

  const connectorSchema = {
    type: 'object',
    properties: {
      id: { type: 'string', description: 'prefix ucon_' },
      dialect: { type: 'string', enum: ['africastalking', 'hubtel'] },
      hasSecret: { type: 'boolean' },
      allowIps: { type: 'array', items: { type: 'string' } },
      secret: { type: 'string', description: 'shown once, at creation' },
      callbackPath: { type: 'string', description: "the aggregator's callback: POST {api}/v1/ussd/in/{id}?key={secret} (end-of-session notices: …/events)" },
      createdAt: { type: 'string', format: 'date-time' },
    },
  } as const;
  app.post<{ Body: { dialect: 'africastalking' | 'hubtel'; secret?: boolean; allowIps?: string[] } }>('/v1/ussd/connectors', {
    config: { scope: 'ussd:manage' },
    schema: {
      tags: ['ussd'],
      summary: "Connect an aggregator (Africa's Talking or Hubtel) to the account's service codes",
      description:
        'The aggregator calls POST /v1/ussd/in/{id}, authenticated by a shared secret (query key or header X-Ferry-Ussd-Secret; stored hashed, ' +
        'shown once) and/or an allow-list of its addresses. secret false needs allowIps.',
      body: {
        type: 'object',
        required: ['dialect'],
        additionalProperties: false,
        properties: {
          dialect: { type: 'string', enum: ['africastalking', 'hubtel'] },
          secret: { type: 'boolean', description: 'issue a shared secret (default true)' },
          allowIps: { type: 'array', maxItems: 50, items: { type: 'string', maxLength: 45 } },
        },
      },
      response: { 200: envelopeSchema(connectorSchema, 'Created (code USSD_CONNECTOR_CREATED)'), 400: err('VALIDATION_ERROR'), ...AUTH_ERRORS },
    },
  }, async (req) => {
    const b = req.body;
    const allowIps = b.allowIps ?? [];
    if (b.secret === false && !allowIps.length) throw invalidField('allowIps', 'without a secret, an allow-list is needed');
    const secret = b.secret === false ? null : randomBytes(24).toString('base64url');
    const c = await store.createConnector(req.auth.accountId, b.dialect, secret, allowIps);
    return ok(req, 'USSD_CONNECTOR_CREATED', { ...c, createdAt: iso(c.createdAt), ...(secret ? { secret } : {}), callbackPath: `/v1/ussd/in/${c.id}` });
  });

  app.get('/v1/ussd/connectors', {
    config: { scope: 'ussd:read' },
    schema: { tags: ['ussd'], summary: "The account's aggregator connectors (secrets are never shown again)", response: { 200: envelopeSchema({ type: 'array', items: connectorSchema }), ...AUTH_ERRORS } },
  }, async (req) => ok(req, 'OK', (await store.connectors(req.auth.accountId)).map((c) => ({ ...c, createdAt: iso(c.createdAt), callbackPath: `/v1/ussd/in/${c.id}` }))));

  app.delete<{ Params: { id: string } }>('/v1/ussd/connectors/:id', {
    config: { scope: 'ussd:manage' },
    schema: { tags: ['ussd'], summary: 'Remove a connector', params: idParams, response: { 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' } } }), 404: err('USSD_CONNECTOR_NOT_FOUND'), ...AUTH_ERRORS } },
  }, async (req) => {
    if (!(await store.deleteConnector(req.auth.accountId, req.params.id))) throw new ApiError('USSD_CONNECTOR_NOT_FOUND');
    return ok(req, 'USSD_CONNECTOR_DELETED', { id: req.params.id });
  });

  // ------------------------------------------------------------ sessions

  app.get<{ Querystring: Omit<SessionFilter, 'limit' | 'before'> & { limit?: string; cursor?: string } }>('/v1/ussd/sessions', {
    config: { scope: 'ussd:read' },
    schema: {
      tags: ['ussd'],
      summary: 'Sessions, newest first',
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          status: { type: 'string', enum: ['active', 'ended'] },
          endStatus: { type: 'string', enum: ['Success', 'Incomplete', 'Failed'] },
          phone: { type: 'string', maxLength: 32 },
          serviceCode: { type: 'string', maxLength: 40 },
          channel: { type: 'string', enum: ['smpp', 'africastalking', 'hubtel', 'simulate'] },
          limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|1[0-9]{2}|200)$', description: 'page size, 1-200 (default 50)' },
          cursor: { type: 'string', maxLength: 64, description: 'nextCursor of the previous page' },
        },
      },
      response: {
        200: envelopeSchema({ type: 'object', properties: { sessions: { type: 'array', items: sessionSchema }, nextCursor: { type: ['string', 'null'] } } }),
        ...AUTH_ERRORS,
      },
    },
  }, async (req) => {
    const q = req.query;
    const limit = q.limit ? Number(q.limit) : 50;
    const rows = await sessions.list(req.auth.accountId, {
      status: q.status,
      endStatus: q.endStatus,
      phone: q.phone?.replace(/^\+/, ''),
      serviceCode: q.serviceCode ? (canonicalCode(q.serviceCode) ?? q.serviceCode) : undefined,
      channel: q.channel,
      before: q.cursor,
      limit,
    });
    const current = await Promise.all(rows.map(latest));
    return ok(req, 'OK', { sessions: current.map((s) => sessionOut(s, false)), nextCursor: rows.length === limit ? rows[rows.length - 1].id : null });
  });

  app.get<{ Params: { id: string } }>('/v1/ussd/sessions/:id', {
    config: { scope: 'ussd:read' },
    schema: { tags: ['ussd'], summary: 'A session with its transcript (every screen sent and every input)', params: idParams, response: { 200: envelopeSchema(sessionSchema), 404: err('USSD_SESSION_NOT_FOUND'), ...AUTH_ERRORS } },
  }, async (req) => {
    const s = await sessions.get(req.auth.accountId, req.params.id);
    if (!s) throw new ApiError('USSD_SESSION_NOT_FOUND');
    return ok(req, 'OK', sessionOut(await latest(s), true));
  });

  app.post<{ Body: { serviceCode: string; phoneNumber: string; inputs?: string[] } }>('/v1/ussd/simulate', {
    config: { scope: 'ussd:manage' },
    schema: {
      tags: ['ussd'],
      summary: "Run a session against the account's own app and get every screen",
      description:
        "Dials serviceCode (the account's claims only) from phoneNumber and answers each screen with the next input; stops when the app ends the " +
        'session. A session the inputs leave open is ended Incomplete. The session is stored and sends its events like any other (channel simulate). ' +
        "A code the account does not answer (unclaimed, or another account's) is USSD_SERVICE_CODE_NOT_FOUND. The OTP fallback's code answers " +
        "with the account's own pending code for phoneNumber (no session: sessionId null).",
      body: {
        type: 'object',
        required: ['serviceCode', 'phoneNumber'],
        additionalProperties: false,
        properties: {
          serviceCode: { type: 'string', minLength: 2, maxLength: 40 },
          phoneNumber: { type: 'string', minLength: 1, maxLength: 32 },
          inputs: { type: 'array', 'x-ferry-redact': 'secret', maxItems: 50, items: { type: 'string', maxLength: 182 } },
        },
      },
      response: {
        200: envelopeSchema({
          type: 'object',
          properties: {
            sessionId: { type: ['string', 'null'] },
            ended: { type: 'boolean', description: 'the app ended the session (END)' },
            screens: { type: 'array', items: { type: 'object', properties: { input: { type: ['string', 'null'] }, text: { type: 'string' }, end: { type: 'boolean' } } } },
          },
        }),
        400: err('VALIDATION_ERROR, INVALID_PHONE_NUMBER'),
        404: err('USSD_SERVICE_CODE_NOT_FOUND'),
        ...AUTH_ERRORS,
      },
    },
  }, async (req) => {
    const b = req.body;
    const phone = normalizeNumber(b.phoneNumber, { defaultCountry: req.auth.defaultCountry ?? deps.defaultCountry ?? undefined });
    if (!phone) throw new ApiError('INVALID_PHONE_NUMBER', { data: { errors: [{ field: 'phoneNumber', message: 'not a valid phone number' }] } });
    if (!canonicalCode(b.serviceCode)) throw invalidField('serviceCode', "a USSD code: '*', digits, optional '*'-separated extensions, '#'");
    const key = `sim:${newId('sim_')}`;
    let a = await core.begin({ channel: 'simulate', networkKey: key, phone, dialled: b.serviceCode, accountId: req.auth.accountId });
    // Unclaimed and another account's code answer alike: nothing tells that the other claim exists.
    if (!a.sessionId && !a.reserved) throw new ApiError('USSD_SERVICE_CODE_NOT_FOUND', { message: 'No service code of this account answers that code' });
    const screens: { input: string | null; text: string; end: boolean }[] = [{ input: null, text: a.text, end: a.end }];
    for (const input of b.inputs ?? []) {
      if (a.end) break;
      const next = await core.input(key, input);
      if (!next) break;
      a = next;
      screens.push({ input, text: a.text, end: a.end });
    }
    if (!a.end) await core.networkEnd(key, 'Incomplete', 'SIMULATION_ENDED');
    return ok(req, 'OK', { sessionId: a.sessionId, ended: a.end, screens });
  });
}
