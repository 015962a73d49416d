import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import { ok } from '../http/envelope.js';
import type { CredentialView } from '../security/credential-store.js';

export interface CredentialAdminDeps {
  accounts: AccountService;
  /** Every module's credentials of an account (or one module's), fingerprints only: ModulePlatform.credentialViews. */
  views(accountId: string, module?: string): Promise<Array<CredentialView & { module: string }>>;
}

/**
 * GET /admin/credentials?account=<id or name>[&module=<name>]: what the per-account credential store holds for an
 * account, as fingerprints, versions and times; a value never leaves the store through an API. Writing is each
 * module's own admin API (e.g. /admin/messenger/numbers), which knows what a credential is for.
 */
export async function credentialAdminRoutes(app: FastifyInstance, deps: CredentialAdminDeps): Promise<void> {
  app.get<{ Querystring: { account: string; module?: string } }>(
    '/admin/credentials',
    {
      schema: {
        querystring: {
          type: 'object',
          required: ['account'],
          additionalProperties: false,
          properties: { account: { type: 'string', minLength: 1, maxLength: 100 }, module: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,39}$' } },
        },
      },
    },
    async (req) => {
      const account = await deps.accounts.get(req.query.account);
      return ok(req, 'CREDENTIALS', { account: account.id, credentials: await deps.views(account.id, req.query.module) });
    },
  );
}
