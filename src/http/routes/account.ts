import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../accounts/account-service.js';
import { envelopeSchema, ok, withErrors } from '../envelope.js';

/** GET /v1/account/balance (scope account:read). */
export async function accountRoutes(app: FastifyInstance, opts: { accounts: AccountService }): Promise<void> {
  app.get(
    '/v1/account/balance',
    {
      config: { scope: 'account:read' },
      schema: {
        tags: ['account'],
        summary: 'Read the account and its credit balance',
        response: withErrors({
          200: envelopeSchema({
            type: 'object',
            properties: {
              accountId: { type: 'string' },
              name: { type: 'string' },
              status: { type: 'string', enum: ['active', 'suspended'] },
              balance: { type: 'number', description: 'in the account currency' },
              currency: { type: 'string' },
              updatedAt: { type: 'string', format: 'date-time' },
            },
          }),
        }),
      },
    },
    async (req) => {
      const a = await opts.accounts.get(req.auth.accountId);
      return ok(req, 'BALANCE', { accountId: a.id, name: a.name, status: a.status, balance: a.balance, currency: a.currency, updatedAt: a.updatedAt });
    },
  );
}
