import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import { AMOUNT_SCHEMA } from '../accounts/money.js';
import { NUMBER_VALIDATIONS, type NumberValidation } from '../numbers/number-validation.js';
import { ok } from '../http/envelope.js';
import { ApiError } from '../http/errors.js';
import { audit } from './audit.js';

const refParam = { type: 'object', required: ['ref'], properties: { ref: { type: 'string', minLength: 1, maxLength: 100 } } } as const;
const numberParam = {
  type: 'object',
  required: ['ref', 'number'],
  properties: { ref: refParam.properties.ref, number: { type: 'string', minLength: 1, maxLength: 20 } },
} as const;

/** PATCH /admin/accounts/:ref (limits, credit limit, number checks) and the account's numbers (`ferry accounts set|numbers`). */
export function registerAccountSettingsRoutes(app: FastifyInstance, accounts: AccountService): void {
  app.patch<{
    Params: { ref: string };
    Body: {
      maxTps?: number | null;
      defaultCountry?: string | null;
      allowedRecipients?: string[] | null;
      creditLimit?: number | string;
      numberValidation?: NumberValidation | null;
    };
  }>(
    '/admin/accounts/:ref',
    {
      schema: {
        params: refParam,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: {
            maxTps: { type: ['integer', 'null'], minimum: 0 },
            defaultCountry: { type: ['string', 'null'], minLength: 2, maxLength: 2 },
            allowedRecipients: { type: ['array', 'null'], maxItems: 10000, items: { type: 'string', pattern: '^\\+?[0-9]{1,15}\\*?$' } },
            // How far below zero debits may take the balance (account currency); 0: no overdraft.
            creditLimit: AMOUNT_SCHEMA,
            // How strictly recipients are checked; null: the route rule's, else the ingress default.
            numberValidation: { enum: [...NUMBER_VALIDATIONS, null] },
          },
        },
      },
    },
    async (req) => {
      const account = await accounts.update(req.params.ref, req.body);
      const { allowedRecipients, ...changed } = req.body;
      audit(
        req,
        'account.updated',
        {
          accountId: account.id,
          account: account.name,
          ...changed,
          ...(req.body.creditLimit !== undefined ? { creditLimit: account.creditLimit } : {}),
          ...(allowedRecipients !== undefined ? { allowedRecipients: allowedRecipients === null ? null : `${allowedRecipients.length} entries` } : {}),
        },
        'account updated',
      );
      return ok(req, 'ACCOUNT_UPDATED', account);
    },
  );

  const numbersOf = async (ref: string) => {
    const account = await accounts.get(ref);
    return { account: account.name, numbers: await accounts.numbers(account.id) };
  };

  app.get<{ Params: { ref: string } }>('/admin/accounts/:ref/numbers', { schema: { params: refParam } }, async (req) =>
    ok(req, 'ACCOUNT_NUMBERS', await numbersOf(req.params.ref)),
  );

  app.post<{ Params: { ref: string }; Body: { number: string } }>(
    '/admin/accounts/:ref/numbers',
    {
      schema: {
        params: refParam,
        body: { type: 'object', required: ['number'], additionalProperties: false, properties: { number: { type: 'string', minLength: 1, maxLength: 20 } } },
      },
    },
    async (req, reply) => {
      await accounts.addNumber(req.params.ref, req.body.number);
      audit(req, 'account.number_added', { account: req.params.ref, number: req.body.number }, 'account number added');
      reply.code(201);
      return ok(req, 'NUMBER_ADDED', await numbersOf(req.params.ref), 'MO messages to this number now go to the account');
    },
  );

  app.delete<{ Params: { ref: string; number: string } }>('/admin/accounts/:ref/numbers/:number', { schema: { params: numberParam } }, async (req) => {
    const removed = await accounts.removeNumber(req.params.ref, req.params.number);
    if (!removed) throw new ApiError('NUMBER_NOT_FOUND', { message: `Account ${req.params.ref} does not own ${req.params.number}` });
    audit(req, 'account.number_removed', { account: req.params.ref, number: req.params.number }, 'account number removed');
    return ok(req, 'NUMBER_REMOVED', await numbersOf(req.params.ref));
  });
}
