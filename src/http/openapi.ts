import type { FastifyInstance } from 'fastify';

/**
 * Serves the generated OpenAPI 3.0.3 document at /v1/openapi.json. Routes live under /v1; the
 * document names the server `{base}/v1` and (as @fastify/swagger strips the server's base path)
 * lists paths without the prefix (spec §1.2): `/sms/send` under that server is POST /v1/sms/send.
 */
export function registerOpenApiRoute(app: FastifyInstance): void {
  let cached: unknown = null;
  app.get('/v1/openapi.json', { schema: { hide: true }, config: { auth: false } }, async () => {
    cached ??= app.swagger();
    return cached;
  });
}
