import type { FastifyInstance } from 'fastify';
import { errorEnvelopeSchema } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import type { EmailService } from './email-service.js';
import { isMachineOpen, type TrackingTokens } from './tracking.js';

const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const tokenParam = { type: 'object', required: ['token'], properties: { token: { type: 'string', minLength: 3, maxLength: 8192 } } } as const;
const notFound = { 404: { ...errorEnvelopeSchema, description: 'EMAIL_NOT_FOUND: a forged, altered or unknown token' } };

/**
 * The public tracking addresses (no API key: the signed token is the credential): the open pixel, the click redirect
 * and the RFC 8058 one-click unsubscribe. A token that does not verify is 404 and counts nothing.
 */
export async function trackingRoutes(app: FastifyInstance, deps: { email: EmailService; tokens: TrackingTokens }): Promise<void> {
  const { email, tokens } = deps;
  // RFC 8058: mail clients POST "List-Unsubscribe=One-Click" form-encoded (or multipart). Only in this plugin's scope;
  // the body is not needed (the token says everything).
  for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data']) {
    app.addContentTypeParser(type, { parseAs: 'string', bodyLimit: 4096 }, (_req, _body, done) => done(null, {}));
  }

  app.get<{ Params: { token: string } }>(
    '/v1/email/t/o/:token',
    { config: { auth: false }, schema: { tags: ['email'], summary: 'Open pixel (public, signed token)', params: tokenParam, response: notFound } },
    async (req, reply) => {
      const t = tokens.verify(req.params.token.replace(/\.gif$/, ''), 'o');
      if (!t) throw new ApiError('EMAIL_NOT_FOUND');
      const machine = isMachineOpen(req.headers['user-agent']);
      if (!(await email.engage(t.messageId, 'opened', { machine, userAgent: (req.headers['user-agent'] ?? '').slice(0, 300) }, !machine))) throw new ApiError('EMAIL_NOT_FOUND');
      return reply.header('content-type', 'image/gif').header('cache-control', 'no-store, private').send(PIXEL);
    },
  );

  app.get<{ Params: { token: string } }>(
    '/v1/email/t/c/:token',
    { config: { auth: false }, schema: { tags: ['email'], summary: 'Click redirect (public, signed token)', params: tokenParam, response: notFound } },
    async (req, reply) => {
      const t = tokens.verify(req.params.token, 'c');
      if (!t?.url || !/^https?:\/\//i.test(t.url)) throw new ApiError('EMAIL_NOT_FOUND');
      const machine = isMachineOpen(req.headers['user-agent']);
      if (!(await email.engage(t.messageId, 'clicked', { url: t.url, machine }, !machine))) throw new ApiError('EMAIL_NOT_FOUND');
      return reply.redirect(t.url, 302);
    },
  );

  app.post<{ Params: { token: string } }>(
    '/v1/email/t/u/:token',
    {
      config: { auth: false },
      schema: {
        tags: ['email'],
        summary: 'One-click unsubscribe (RFC 8058 List-Unsubscribe-Post; public, signed token)',
        params: tokenParam,
        response: notFound,
      },
    },
    async (req, reply) => {
      const t = tokens.verify(req.params.token, 'u');
      if (!t) throw new ApiError('EMAIL_NOT_FOUND');
      if (!(await email.engage(t.messageId, 'unsubscribed', { method: 'one-click' }, true))) throw new ApiError('EMAIL_NOT_FOUND');
      return reply.header('content-type', 'text/plain; charset=utf-8').send('You are unsubscribed.\n');
    },
  );
}
