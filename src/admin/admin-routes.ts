import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import type { KeyService } from '../accounts/key-service.js';
import { AMOUNT_SCHEMA } from '../accounts/money.js';
import { SCOPES } from '../accounts/scopes.js';
import { ApiError } from '../http/errors.js';
import { ok } from '../http/envelope.js';
import { registerAccountSettingsRoutes } from './account-settings-routes.js';
import { adminActor, audit } from './audit.js';

export interface AdminDeps {
  token: string;
  accounts: AccountService;
  keys: KeyService;
  /**
   * The modules' own admin routes (ModuleInstance.adminRoutes), behind the same token: SMS's routes, upstreams,
   * messages, receipts, pricing and simulator; each product's read-only lists; the logs' key statistics.
   */
  moduleRoutes?: (app: FastifyInstance) => Promise<void>;
}

function tokenMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  const given = Buffer.from(header.slice(7).trim());
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

const ref = { type: 'object', required: ['ref'], properties: { ref: { type: 'string', minLength: 1, maxLength: 100 } } } as const;
const keyParam = { type: 'object', required: ['keyId'], properties: { keyId: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

const movementBody = {
  type: 'object',
  required: ['amount'],
  additionalProperties: false,
  properties: { amount: AMOUNT_SCHEMA, reference: { type: 'string', maxLength: 200 } },
} as const;

/** The operator API under /admin, behind the admin bearer token. The `ferry` CLI is its client. */
export async function adminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  app.addHook('onRequest', async (req) => {
    if (!tokenMatches(req.headers.authorization, deps.token)) throw new ApiError('ADMIN_UNAUTHORIZED');
  });

  app.post<{ Body: { name: string; currency?: string; defaultCountry?: string; smppPassword?: string; smppSystemId?: string } }>(
    '/admin/accounts',
    {
      schema: {
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 64 },
            currency: { type: 'string', minLength: 3, maxLength: 3 },
            defaultCountry: { type: 'string', minLength: 2, maxLength: 2 },
            smppPassword: { type: 'string', minLength: 1, maxLength: 8 },
            smppSystemId: { type: 'string', minLength: 1, maxLength: 15 },
          },
        },
      },
    },
    async (req, reply) => {
      const out = await deps.accounts.create(req.body);
      audit(
        req,
        'account.created',
        { accountId: out.account.id, account: out.account.name, currency: out.account.currency, smppSystemId: out.smpp.systemId },
        'account created',
      );
      reply.code(201);
      return ok(req, 'ACCOUNT_CREATED', { ...out.account, smpp: out.smpp }, 'Account created; the SMPP password is shown only now');
    },
  );

  app.get('/admin/accounts', async (req) => ok(req, 'ACCOUNTS', await deps.accounts.list()));

  app.get<{ Params: { ref: string } }>('/admin/accounts/:ref', { schema: { params: ref } }, async (req) => {
    const account = await deps.accounts.get(req.params.ref);
    const smpp = await deps.accounts.smppCredentials(account.id);
    const keys = await deps.keys.list(account.id);
    return ok(req, 'ACCOUNT', { ...account, smpp, keys });
  });

  app.post<{ Params: { ref: string }; Body: { reason?: string } | undefined }>(
    '/admin/accounts/:ref/suspend',
    { schema: { params: ref, body: { type: ['object', 'null'], additionalProperties: false, properties: { reason: { type: 'string', maxLength: 500 } } } } },
    async (req) => {
      const account = await deps.accounts.setStatus(req.params.ref, 'suspended', req.body?.reason ?? null);
      audit(req, 'account.suspended', { accountId: account.id, account: account.name, reason: account.suspendedReason }, 'account suspended');
      return ok(req, 'ACCOUNT_SUSPENDED', account);
    },
  );

  app.post<{ Params: { ref: string } }>('/admin/accounts/:ref/resume', { schema: { params: ref } }, async (req) => {
    const account = await deps.accounts.setStatus(req.params.ref, 'active');
    audit(req, 'account.resumed', { accountId: account.id, account: account.name }, 'account resumed');
    return ok(req, 'ACCOUNT_RESUMED', account);
  });

  // Credit and debit: one positive amount each way, refused with INVALID_AMOUNT (400) when it is not a valid amount
  // of the account currency, and a debit with CREDIT_LIMIT_EXCEEDED (409) below −creditLimit.
  for (const kind of ['credit', 'debit'] as const) {
    app.post<{ Params: { ref: string }; Body: { amount: number | string; reference?: string } }>(
      `/admin/accounts/:ref/${kind}`,
      { schema: { params: ref, body: movementBody } },
      async (req) => {
        const opts = { reference: req.body.reference ?? null, actor: adminActor(req) };
        const { account, transaction } =
          kind === 'credit' ? await deps.accounts.credit(req.params.ref, req.body.amount, opts) : await deps.accounts.debit(req.params.ref, req.body.amount, opts);
        audit(
          req,
          kind === 'credit' ? 'account.credited' : 'account.debited',
          {
            accountId: account.id,
            account: account.name,
            amount: transaction.amount,
            balance: account.balance,
            creditLimit: account.creditLimit,
            currency: account.currency,
            transactionId: transaction.id,
            reference: transaction.reference,
          },
          kind === 'credit' ? 'account credited' : 'account debited',
        );
        return ok(req, kind === 'credit' ? 'ACCOUNT_CREDITED' : 'ACCOUNT_DEBITED', { ...account, transaction });
      },
    );
  }

  app.post<{ Params: { ref: string }; Body: { systemId?: string; password?: string; allowedIps?: string[] | null; maxBinds?: number } }>(
    '/admin/accounts/:ref/smpp-credentials',
    {
      schema: {
        params: ref,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            systemId: { type: 'string', minLength: 1, maxLength: 15 },
            password: { type: 'string', minLength: 1, maxLength: 8 },
            allowedIps: { type: ['array', 'null'], items: { type: 'string', maxLength: 64 } },
            maxBinds: { type: 'integer', minimum: 1, maximum: 1000 },
          },
        },
      },
    },
    async (req) => {
      const out = await deps.accounts.setSmppCredentials(req.params.ref, req.body ?? {});
      audit(
        req,
        'account.smpp_credentials_set',
        { account: req.params.ref, systemId: out.systemId, allowedIps: out.allowedIps, maxBinds: out.maxBinds },
        'account SMPP credentials set',
      );
      return ok(req, 'SMPP_CREDENTIALS_SET', out, 'The SMPP password is shown only now');
    },
  );

  app.post<{ Body: { account: string; scopes: string[] | string; environment?: string; name?: string; expiresAt?: string; allowedRecipients?: string[] } }>(
    '/admin/keys',
    {
      schema: {
        body: {
          type: 'object',
          required: ['account', 'scopes'],
          additionalProperties: false,
          properties: {
            account: { type: 'string', minLength: 1 },
            scopes: { anyOf: [{ type: 'array', items: { type: 'string', enum: [...SCOPES] }, minItems: 1 }, { type: 'string', minLength: 1 }] },
            environment: { type: 'string', maxLength: 12 },
            name: { type: 'string', maxLength: 100 },
            expiresAt: { type: 'string', format: 'date-time' },
            allowedRecipients: { type: 'array', items: { type: 'string', pattern: '^\\+?[0-9]{1,15}\\*?$' } },
          },
        },
      },
    },
    async (req, reply) => {
      const out = await deps.keys.create(req.body);
      audit(
        req,
        'key.created',
        { keyId: out.key.keyId, accountId: out.key.accountId, environment: out.key.environment, scopes: out.key.scopes, expiresAt: out.key.expiresAt },
        'API key created',
      );
      reply.code(201);
      return ok(req, 'KEY_CREATED', { ...out.key, secret: out.secret, token: out.token }, 'Key created; the secret is shown only now');
    },
  );

  app.get<{ Querystring: { account?: string } }>(
    '/admin/keys',
    { schema: { querystring: { type: 'object', properties: { account: { type: 'string' } } } } },
    async (req) => ok(req, 'KEYS', await deps.keys.list(req.query.account)),
  );

  app.post<{ Params: { keyId: string }; Body: { graceSeconds?: number } | undefined }>(
    '/admin/keys/:keyId/rotate',
    {
      schema: {
        params: keyParam,
        body: { type: ['object', 'null'], additionalProperties: false, properties: { graceSeconds: { type: 'integer', minimum: 0, maximum: 90 * 86400 } } },
      },
    },
    async (req) => {
      const out = await deps.keys.rotate(req.params.keyId, req.body?.graceSeconds);
      audit(
        req,
        'key.rotated',
        { keyId: out.key.keyId, accountId: out.key.accountId, previousSecretValidUntil: out.key.previousSecretValidUntil },
        'API key rotated',
      );
      return ok(req, 'KEY_ROTATED', { ...out.key, secret: out.secret, token: out.token }, 'New secret shown only now; the old one works until previousSecretValidUntil');
    },
  );

  app.post<{ Params: { keyId: string } }>('/admin/keys/:keyId/revoke', { schema: { params: keyParam } }, async (req) => {
    const key = await deps.keys.revoke(req.params.keyId);
    audit(req, 'key.revoked', { keyId: key.keyId, accountId: key.accountId, revokedAt: key.revokedAt }, 'API key revoked');
    return ok(req, 'KEY_REVOKED', key);
  });

  registerAccountSettingsRoutes(app, deps.accounts);
  if (deps.moduleRoutes) await deps.moduleRoutes(app);
}
