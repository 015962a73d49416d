import type { FastifyInstance } from 'fastify';
import { registerInspectListing, type InspectAdminDeps } from '../../admin/inspect-routes.js';
import { ok } from '../../http/envelope.js';
import type { LogsService } from './logs-service.js';

/** Its historic admin path (older than the `/admin/<module>` rule): `ferry keys stats`, an account's keys' statistics. */
export const LOGS_HISTORIC_ADMIN_PATHS = ['/admin/accounts/:ref/keys/stats'] as const;

const ref = { type: 'object', required: ['ref'], properties: { ref: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

/** The logs' part of the admin API: `ferry logs list|show` and `ferry keys stats`. */
export async function logsAdminRoutes(app: FastifyInstance, deps: InspectAdminDeps & { logs: LogsService }): Promise<void> {
  const { logs, accounts } = deps;
  // `ferry keys stats`: what GET /v1/keys/stats answers the account's own keys.
  app.get<{ Params: { ref: string }; Querystring: { days?: string } }>(
    '/admin/accounts/:ref/keys/stats',
    { schema: { params: ref, querystring: { type: 'object', additionalProperties: false, properties: { days: { type: 'string', pattern: '^[1-9][0-9]{0,3}$' } } } } },
    async (req) => {
      const account = await accounts.get(req.params.ref);
      return ok(req, 'KEY_STATS', await logs.keyStats(account.id, req.query.days ? Number(req.query.days) : undefined));
    },
  );
  registerInspectListing(app, deps, {
    path: '/admin/logs',
    code: 'LOGS',
    table: 'request_logs',
    select: `request_id AS "id", account_id AS "accountId", status, method, path, error_code AS "errorCode", latency_ms AS "latencyMs", key_id AS "keyId", at AS "createdAt"`,
    time: { column: 'at', kind: 'ms' },
    id: 'request_id',
    // One status (404) or a class (4xx).
    status: (p) => `(status::text = ${p} OR (status / 100)::text || 'xx' = ${p})`,
    statusPattern: '^[1-5](?:[0-9]{2}|xx)$',
    show: { notFound: 'LOG_NOT_FOUND', get: (accountId, id) => logs.get(accountId, id) },
  });
}
