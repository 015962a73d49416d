import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../envelope.js';

/** GET/HEAD /v1/health: 200 with valid credentials, 401 otherwise (spec §1.5, §4). */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/v1/health',
    {
      schema: {
        tags: ['account'],
        summary: 'Check that the credentials are valid',
        description: 'Returns 200 when the Authorization header carries a valid key, 401 when not. HEAD works too.',
        response: withErrors({
          200: envelopeSchema({
            type: 'object',
            properties: {
              status: { type: 'string', enum: ['ok'] },
              keyId: { type: 'string' },
              accountId: { type: 'string' },
              environment: { type: 'string' },
              scopes: { type: 'array', items: { type: 'string' } },
            },
          }),
        }),
      },
    },
    async (req) =>
      ok(req, 'HEALTHY', {
        status: 'ok',
        keyId: req.auth.keyId,
        accountId: req.auth.accountId,
        environment: req.auth.environment,
        scopes: [...req.auth.scopes],
      }, 'Credentials are valid'),
  );
}
