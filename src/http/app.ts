import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type onRequestHookHandler,
  type preValidationHookHandler,
} from 'fastify';
import swagger from '@fastify/swagger';
import type { Logger } from 'pino';
import type { AuthContext } from '../accounts/key-service.js';
import { isConnectionError, isDataError, StorageUnavailableError } from '../store/sql/db.js';
import { newId } from '../util/ids.js';
import { ClientAddresses } from './client-address.js';
import { ApiError, CORE_ERRORS, errorCatalogue, errorEntry, invalidField, type ErrorCode, type FieldError } from './errors.js';
import { errorEnvelopeSchema } from './envelope.js';
import { guardText } from './text-guard.js';
import type { Metrics } from '../metrics.js';
import './types.js';

export interface AppOptions {
  log: Logger;
  metrics: Metrics;
  bodyLimitBytes: number;
  /**
   * The reverse proxies whose X-Forwarded-For (and X-Forwarded-Proto/Host) are believed (http.trustProxy); false or
   * empty: none, and the auth plugin warns about requests that look proxied.
   */
  trustProxy?: false | readonly string[];
  /** Included in the OpenAPI document when set. */
  openapi?: {
    version: string;
    title: string;
    description: string;
    publicUrl: string | null;
    /** Operation tags with their description and maturity (`x-maturity`, spec §9.2). */
    tags?: Array<{ name: string; description: string; 'x-maturity'?: string }>;
  };
}

/** Fastify's ajv errors → field-level details: { field: 'to', message: 'must be string' }. */
function fieldErrors(err: FastifyError): FieldError[] {
  return (err.validation ?? []).map((v) => {
    const params = v.params as Record<string, unknown>;
    let field = (v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    if (v.keyword === 'required' && params.missingProperty) field = field ? `${field}.${String(params.missingProperty)}` : String(params.missingProperty);
    if (v.keyword === 'additionalProperties' && params.additionalProperty) {
      field = field ? `${field}.${String(params.additionalProperty)}` : String(params.additionalProperty);
      return { field, message: 'unknown field' };
    }
    const where = err.validationContext && err.validationContext !== 'body' ? `${err.validationContext}.` : '';
    return { field: where + (field || '(root)'), message: v.message ?? 'is not valid' };
  });
}

/**
 * Sees every answered request after its response went out, with the body as sent (the request logs). Called on the
 * event loop after the answer, never awaited: an observer only queues what it needs and returns.
 */
export type ResponseObserver = (req: FastifyRequest, status: number, durationMs: number, route: string) => void;

/** What the app keeps for its hooks and plugins: a response's error code (access log), the proxy setting (auth). */
declare module 'fastify' {
  interface FastifyRequest {
    /** The catalogue code of the error this request was answered with, for the access log; null when it succeeded. */
    errorCode: ErrorCode | null;
    /** The response body as sent, kept only while a response observer is registered. */
    sentPayload: unknown;
    /**
     * The client's address: the connection's peer, or under http.trustProxy the rightmost untrusted X-Forwarded-For
     * hop (IPv4-mapped addresses in their IPv4 form). Use it, not `ip`, wherever a client is told apart.
     */
    readonly clientIp: string;
  }
  interface FastifyInstance {
    /** Whether http.trustProxy names any proxy (the auth plugin warns about proxies when it does not). */
    ferryTrustProxy: boolean;
    /** Client addresses under http.trustProxy (the one reading of X-Forwarded-For, src/http/client-address.ts). */
    ferryClientAddresses: ClientAddresses;
    /** Called after every answered request (the request logs add theirs); empty by default. */
    ferryResponseObservers: ResponseObserver[];
  }
}

function send(reply: FastifyReply, req: FastifyRequest, e: ApiError): FastifyReply {
  if (e.headers) reply.headers(e.headers);
  req.errorCode = e.code;
  if (!errorEntry(e.code)) req.log.error({ code: e.code }, 'an error code no running module declares: answered 500');
  const body: Record<string, unknown> = { success: false, code: e.code, message: e.message, requestId: req.id };
  if (e.data) body.data = e.data;
  return reply.code(e.status).header('x-request-id', req.id).type('application/json; charset=utf-8').send(body);
}

/** Maps anything thrown to a catalogue error; unknown errors are logged and become INTERNAL_ERROR. */
export function toApiError(err: unknown, log: Logger, req?: FastifyRequest): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as FastifyError & { type?: string };
  if (e.validation) return new ApiError('VALIDATION_ERROR', { data: { errors: fieldErrors(e) } });
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('PAYLOAD_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('INVALID_JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('MALFORMED_REQUEST', { message: 'Content-Length does not match the body' });
  }
  if (e instanceof SyntaxError || (e.statusCode === 400 && /JSON/i.test(e.message))) return new ApiError('INVALID_JSON');
  // A value the database refused (SQLSTATE class 22): the request's fault, never an outage. The edge check
  // (text-guard.ts) refuses the known cases with the field named; this covers what slips past it.
  if (isDataError(e)) {
    log.warn({ err: { message: e.message, code: e.code }, reqId: req?.id }, 'a value the database refused');
    return invalidField('(request)', 'a value in the request cannot be stored');
  }
  // ioredis reports an outage under several names (a closed stream, a command given up after its retries).
  const redisDown = ['MaxRetriesPerRequestError', 'AbortError'].includes(e.name) || /Redis|Stream isn't writeable|Connection is closed|max retries per request|ECONNREFUSED|ECONNRESET|EPIPE/i.test(e.message ?? '');
  if (e instanceof StorageUnavailableError || isConnectionError(e) || redisDown) {
    log.warn({ err: { message: e.message, code: e.code }, reqId: req?.id }, 'storage unavailable');
    return new ApiError('SERVICE_UNAVAILABLE');
  }
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    const code: ErrorCode =
      e.statusCode === 404 ? 'NOT_FOUND' : e.statusCode === 405 ? 'METHOD_NOT_ALLOWED' : e.statusCode === 413 ? 'PAYLOAD_TOO_LARGE' : e.statusCode === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'MALFORMED_REQUEST';
    return new ApiError(code, { message: e.message });
  }
  log.error({ err, reqId: req?.id }, 'unhandled error');
  return new ApiError('INTERNAL_ERROR');
}

/** Errors Fastify's router raises before a route is found (a URL it cannot decode, an over-long path parameter). */
function frameworkError(err: FastifyError, log: Logger, req: FastifyRequest): ApiError {
  if (err.code === 'FST_ERR_BAD_URL') return new ApiError('MALFORMED_REQUEST', { message: 'The URL is not valid (a malformed percent-encoding)' });
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return invalidField('params', 'a path parameter is longer than the server accepts');
  return toApiError(err, log, req);
}

/**
 * The whole HTTP response for a request Node's HTTP parser refused before Fastify saw it (headers too large, a
 * malformed request line or header, a request not received in time): the error envelope, with a fresh request id,
 * and Connection: close.
 */
export function clientErrorResponse(errCode: string | undefined): { status: number; code: ErrorCode; requestId: string; raw: string } {
  const code: keyof typeof CORE_ERRORS = errCode === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : errCode === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'REQUEST_TIMEOUT' : 'MALFORMED_REQUEST';
  const { status, message } = CORE_ERRORS[code];
  const requestId = newId('req_');
  const body = JSON.stringify({ success: false, code, message, requestId });
  const raw =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`;
  return { status, code, requestId, raw };
}

/** How long a refused connection may take to read the answer and close before it is cut. */
const CLIENT_ERROR_LINGER_MS = 2000;

/** A path pattern of a route (`/v1/sms/status/:messageId`) as a regular expression over request paths. */
function routePattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) =>
      segment
        .split(/(:[A-Za-z0-9_]+(?:\([^)]*\))?|\*)/)
        .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join(''),
    )
    .join('/');
  return new RegExp(`^${source}/?$`);
}

/**
 * The methods each route path answers, to tell "no such endpoint" (404) from "not with this method" (405 and Allow).
 * Consulted only for requests no route matched.
 */
class RouteMethods {
  private readonly byUrl = new Map<string, Set<string>>();
  private compiled: Array<{ pattern: RegExp; methods: Set<string> }> | null = null;

  add(url: string, methods: string | string[]): void {
    let set = this.byUrl.get(url);
    if (!set) this.byUrl.set(url, (set = new Set()));
    for (const m of Array.isArray(methods) ? methods : [methods]) {
      set.add(m.toUpperCase());
      if (m.toUpperCase() === 'GET') set.add('HEAD'); // Fastify answers HEAD on every GET route
    }
    this.compiled = null;
  }

  /** The methods some route answers on this path (without its query), sorted; empty when none does. */
  allowed(path: string): string[] {
    this.compiled ??= [...this.byUrl].map(([url, methods]) => ({ pattern: routePattern(url), methods }));
    const out = new Set<string>();
    for (const r of this.compiled) if (r.pattern.test(path)) for (const m of r.methods) out.add(m);
    return [...out].sort();
  }
}

/** preValidation of routes whose body is optional: a request without one is validated (and handled) as `{}`. */
const noBodyAsEmptyObject: preValidationHookHandler = (req, _reply, done) => {
  if (req.body === undefined) req.body = {};
  done();
};

function hasOptionalBody(schema: unknown): boolean {
  const body = (schema as { body?: { type?: unknown; required?: unknown[] } } | undefined)?.body;
  return !!body && body.type === 'object' && !(Array.isArray(body.required) && body.required.length > 0);
}

/**
 * The Fastify instance every listener (API and admin) starts from: request ids, the error envelope for every answer
 * from every layer (Node's HTTP parser, the router, body parsing, validation, handlers, shutdown), 405 with Allow for a
 * known path asked with another method, metrics, and one access log line per request.
 */
export async function createApp(opts: AppOptions): Promise<FastifyInstance> {
  const log = opts.log;
  const routes = new RouteMethods();
  let closing = false;
  // Connections already answered after a parser error: the parser reports the same error for every further chunk.
  const refused = new WeakSet<Socket>();

  /**
   * One line per answered request, as one object on one logger made once (a child logger per request would cost more).
   * That logger does not redact: the paths of the daemon's logger cost four times the rest of the line (about 10 µs), and
   * the access line holds only the fields below, none of them secret (never a header, a body or a URL).
   */
  const access = log.child({}, { redact: [] });
  const accessLog = (req: FastifyRequest, status: number, durationMs: number, route: string): void => {
    const level = status >= 500 ? 'warn' : 'info';
    if (!access.isLevelEnabled(level)) return;
    const auth = (req as { auth?: AuthContext | null }).auth;
    access[level](
      {
        reqId: req.id,
        method: req.method,
        route,
        status,
        durationMs: Math.round(durationMs * 10) / 10,
        ip: req.clientIp,
        keyId: auth?.keyId,
        accountId: auth?.accountId,
        code: req.errorCode ?? undefined,
      },
      status >= 500 ? 'request failed' : 'request',
    );
  };

  const addresses = new ClientAddresses(opts.trustProxy || []);
  const app = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    // Fastify's own request logging is off: one access line per request is logged in onResponse instead.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    bodyLimit: opts.bodyLimitBytes,
    // Fastify's own reading (req.ip, req.protocol, req.host) trusts the same proxies; clientIp reads the chain.
    trustProxy: addresses.enabled ? (address: string) => addresses.isTrusted(address) : false,
    genReqId: () => newId('req_'),
    // While closing, requests still arriving on open connections get SHUTTING_DOWN (onRequest below), in the envelope.
    return503OnClosing: false,
    // Requests the router refuses before any route (a URL it cannot decode, an over-long path parameter).
    frameworkErrors: (err, req, reply) => {
      const e = frameworkError(err, log, req);
      void send(reply, req, e);
      accessLog(req, e.status, 0, 'unmatched');
    },
    // Requests Node's HTTP parser refuses (headers too large, malformed, too slow): no request object exists.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed || refused.has(socket)) return;
      refused.add(socket);
      const r = clientErrorResponse(err.code);
      log.info({ reqId: r.requestId, status: r.status, code: r.code, ip: socket.remoteAddress, parserError: err.code }, 'request refused by the HTTP parser');
      // As Node does: answer only when no response of an earlier request on this connection is under way.
      const current = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (socket.writable && !current?.headersSent) {
        // end, not destroy: destroying with unread input in the buffer would send a reset that can discard the answer;
        // the rest of the input is read (and refused again, ignored above) until the client closes or the linger ends.
        socket.end(r.raw);
        setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
      } else {
        socket.destroy();
      }
    },
    // x-ferry-redact: a body property the request logs never store (src/channels/logs/redact.ts). Union types (a
    // value given as an object or its text) are meant: allowed, rather than warned about at every start.
    ajv: { customOptions: { allErrors: true, coerceTypes: false, useDefaults: true, removeAdditional: false, allowUnionTypes: true, keywords: ['x-ferry-redact'] } },
    routerOptions: { maxParamLength: 200, ignoreTrailingSlash: true },
  });

  app.decorate('ferryTrustProxy', addresses.enabled);
  app.decorate('ferryClientAddresses', addresses);
  app.decorateRequest('clientIp', {
    getter(this: FastifyRequest) {
      return addresses.of(this.raw.socket?.remoteAddress, this.headers['x-forwarded-for']) ?? '';
    },
  });
  app.decorateRequest('errorCode', null);
  app.decorateRequest('sentPayload', null);
  const observers: ResponseObserver[] = [];
  app.decorate('ferryResponseObservers', observers);
  app.addSchema({ $id: 'ErrorEnvelope', ...errorEnvelopeSchema });

  // Only JSON bodies (no text/plain: a text body is UNSUPPORTED_MEDIA_TYPE, as documented). An empty JSON body is no
  // body: a route whose body is optional takes it as `{}` (below); one that needs a body says which fields are missing.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if ((body as string).length === 0) done(null, undefined);
    else parseJson(req, body as string, done);
  });

  app.addHook('onRoute', (route) => {
    routes.add(route.url, route.method);
    if (hasOptionalBody(route.schema)) {
      const existing = route.preValidation;
      route.preValidation = existing ? [...(Array.isArray(existing) ? existing : [existing]), noBodyAsEmptyObject] : [noBodyAsEmptyObject];
    }
  });

  if (opts.openapi) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: { title: opts.openapi.title, version: opts.openapi.version, description: opts.openapi.description },
        servers: [{ url: `${opts.openapi.publicUrl ?? ''}/v1` }],
        ...(opts.openapi.tags ? { tags: opts.openapi.tags } : {}),
        components: {
          securitySchemes: {
            basicAuth: { type: 'http', scheme: 'basic', description: 'Authorization: Basic base64(API key:API secret)' },
            bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer base64(API key:API secret), or Bearer API key:API secret' },
            endUserToken: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description: 'Authorization: Bearer <token> minted for one end user by a product (POST /chat-sdk/users/token); opens only the routes that list it',
            },
          },
        },
        security: [{ basicAuth: [] }, { bearerAuth: [] }],
      },
    });
  }

  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });

  const first: onRequestHookHandler = (req, reply, done) => {
    reply.header('x-request-id', req.id);
    if (closing) {
      reply.header('connection', 'close');
      done(new ApiError('SHUTTING_DOWN', { headers: { 'retry-after': '1' } }));
      return;
    }
    done();
  };
  app.addHook('onRequest', first);
  // Text Postgres cannot store (NUL, lone surrogates) in a path parameter, a query value or the body: 400 naming the field.
  guardText(app);

  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const durationMs = reply.elapsedTime;
    opts.metrics.httpDuration.observe({ method: req.method, route, status: String(status) }, durationMs / 1000);
    if (req.errorCode) opts.metrics.httpErrors.inc({ code: req.errorCode, route });
    accessLog(req, status, durationMs, route);
    for (const observe of observers) {
      try {
        observe(req, status, durationMs, route);
      } catch (err) {
        log.warn({ err, reqId: req.id }, 'response observer failed');
      }
    }
    done();
  });
  app.addHook('onSend', (req, _reply, payload, done) => {
    if (observers.length) req.sentPayload = payload;
    done(null, payload);
  });

  app.setErrorHandler((err, req, reply) => send(reply, req, toApiError(err, log, req)));
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0];
    const allowed = routes.allowed(path);
    // The path is echoed back, so not at any length.
    const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
    if (allowed.length && !allowed.includes(req.method)) {
      return send(
        reply,
        req,
        new ApiError('METHOD_NOT_ALLOWED', { message: `${shown} does not accept ${req.method}; it accepts ${allowed.join(', ')}`, headers: { allow: allowed.join(', ') } }),
      );
    }
    return send(reply, req, new ApiError('NOT_FOUND', { message: `No endpoint ${req.method} ${shown}` }));
  });

  return app;
}

/** The error catalogue (the core's codes and the running modules'), as a Markdown table for the OpenAPI description. */
export function errorCatalogueMarkdown(): string {
  const rows = Object.entries(errorCatalogue()).map(([code, e]) => `| ${code} | ${e.status} | ${e.message} |`);
  return ['| code | HTTP status | meaning |', '|---|---|---|', ...rows].join('\n');
}
