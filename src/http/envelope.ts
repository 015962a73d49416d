import type { FastifyRequest } from 'fastify';

/** The shared envelope of every response (spec §2.1). */
export interface Envelope<T> {
  success: boolean;
  code: string;
  message: string;
  data?: T;
  requestId: string;
}

export function ok<T>(req: FastifyRequest, code: string, data: T, message = 'OK'): Envelope<T> {
  return { success: true, code, message, data, requestId: req.id };
}

/** JSON schema of the envelope around a route's data schema; drives serialization and OpenAPI. */
export function envelopeSchema(data: Record<string, unknown>, description = 'Success') {
  return {
    description,
    type: 'object',
    required: ['success', 'code', 'message', 'requestId'],
    properties: {
      success: { type: 'boolean' },
      code: { type: 'string' },
      message: { type: 'string' },
      data,
      requestId: { type: 'string', description: 'request correlation id, prefix req_ (also in X-Request-Id)' },
    },
  } as const;
}

export const errorEnvelopeSchema = {
  description: 'Error (see the error catalogue in the API description for every code and its HTTP status)',
  type: 'object',
  required: ['success', 'code', 'message', 'requestId'],
  properties: {
    success: { type: 'boolean', enum: [false] },
    code: { type: 'string' },
    message: { type: 'string' },
    data: { type: 'object', additionalProperties: true },
    requestId: { type: 'string' },
  },
} as const;

/** Standard error responses every authenticated route can produce, for the OpenAPI document. */
export function withErrors(success: Record<number, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...success };
  for (const s of [400, 401, 403, 404, 413, 415, 429, 500, 503]) out[String(s)] = { $ref: 'ErrorEnvelope#' };
  return out;
}
