import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import type { Logger } from 'pino';
import { isConnectionError, StorageUnavailableError } from '../store/sql/db.js';
import { newId } from '../util/ids.js';
import { ApiError, ERROR_CATALOGUE, type FieldError } from './errors.js';
import { errorEnvelopeSchema } from './envelope.js';
import type { Metrics } from '../metrics.js';
import './types.js';

export interface AppOptions {
  log: Logger;
  metrics: Metrics;
  bodyLimitBytes: number;
  trustProxy?: boolean;
  /** Included in the OpenAPI document when set. */
  openapi?: { version: string; title: string; description: string; publicUrl: string | null };
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

function send(reply: FastifyReply, req: FastifyRequest, e: ApiError): FastifyReply {
  if (e.headers) reply.headers(e.headers);
  const body: Record<string, unknown> = { success: false, code: e.code, message: e.message, requestId: req.id };
  if (e.data) body.data = e.data;
  return reply.code(e.status).type('application/json; charset=utf-8').send(body);
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
      return new ApiError('VALIDATION_ERROR', { message: 'Content-Length does not match the body' });
  }
  if (e instanceof SyntaxError || (e.statusCode === 400 && /JSON/i.test(e.message))) return new ApiError('INVALID_JSON');
  // ioredis reports an outage under several names (a closed stream, a command given up after its retries).
  const redisDown = ['MaxRetriesPerRequestError', 'AbortError'].includes(e.name) || /Redis|Stream isn't writeable|Connection is closed|max retries per request|ECONNREFUSED|ECONNRESET|EPIPE/i.test(e.message ?? '');
  if (e instanceof StorageUnavailableError || isConnectionError(e) || redisDown) {
    log.warn({ err: { message: e.message, code: e.code }, reqId: req?.id }, 'storage unavailable');
    return new ApiError('SERVICE_UNAVAILABLE');
  }
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return new ApiError(e.statusCode === 404 ? 'NOT_FOUND' : e.statusCode === 405 ? 'METHOD_NOT_ALLOWED' : 'VALIDATION_ERROR', { message: e.message });
  }
  log.error({ err, reqId: req?.id }, 'unhandled error');
  return new ApiError('INTERNAL_ERROR');
}

/** The Fastify instance every listener (API and admin) starts from: ids, envelope errors, metrics. */
export async function createApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.log as unknown as FastifyBaseLogger,
    // Per-request access logs would cost more than the request at high rates; 5xx are logged in onResponse.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    bodyLimit: opts.bodyLimitBytes,
    trustProxy: opts.trustProxy ?? false,
    genReqId: () => newId('req_'),
    return503OnClosing: true,
    ajv: { customOptions: { allErrors: true, coerceTypes: false, useDefaults: true, removeAdditional: false } },
    routerOptions: { maxParamLength: 200, ignoreTrailingSlash: true },
  });

  app.addSchema({ $id: 'ErrorEnvelope', ...errorEnvelopeSchema });

  if (opts.openapi) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: { title: opts.openapi.title, version: opts.openapi.version, description: opts.openapi.description },
        servers: [{ url: `${opts.openapi.publicUrl ?? ''}/v1` }],
        components: {
          securitySchemes: {
            basicAuth: { type: 'http', scheme: 'basic', description: 'Authorization: Basic base64(API key:API secret)' },
            bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer base64(API key:API secret), or Bearer API key:API secret' },
          },
        },
        security: [{ basicAuth: [] }, { bearerAuth: [] }],
      },
    });
  }

  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    opts.metrics.httpDuration.observe({ method: req.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    if (reply.statusCode >= 500) req.log.warn({ method: req.method, route, status: reply.statusCode }, 'request failed');
  });

  app.setErrorHandler((err, req, reply) => send(reply, req, toApiError(err, opts.log, req)));
  app.setNotFoundHandler((req, reply) => send(reply, req, new ApiError('NOT_FOUND', { message: `No endpoint ${req.method} ${req.url.split('?')[0]}` })));

  return app;
}

/** The error catalogue as a Markdown table, for the OpenAPI description. */
export function errorCatalogueMarkdown(): string {
  const rows = Object.entries(ERROR_CATALOGUE).map(([code, e]) => `| ${code} | ${e.status} | ${e.message} |`);
  return ['| code | HTTP status | meaning |', '|---|---|---|', ...rows].join('\n');
}
