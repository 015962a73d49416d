import type { FastifyInstance } from 'fastify';
import { audit } from '../../admin/audit.js';
import { ok } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import type { MessengerSimulator } from '../../sim/messenger/messenger-simulator.js';
import type { BusinessNumbers, NewNumber } from './business-numbers.js';

export interface MessengerAdminDeps {
  numbers: BusinessNumbers;
  simulator: () => MessengerSimulator | null;
}

const id = { type: 'string', pattern: '^[0-9]{1,30}$' } as const;
const credential = { type: 'string', minLength: 1, maxLength: 4096 } as const;
const params = { type: 'object', required: ['id'], properties: { id } } as const;

/**
 * The operator's part of the messenger: business numbers (`ferry messenger numbers …`) and the embedded platform's
 * test user (`ferry sim messenger reply`). Credentials go in (plain or sealed:…) and never come out: a number is
 * shown with fingerprints of them, and audit lines name the number and account only.
 */
export async function messengerAdminRoutes(app: FastifyInstance, deps: MessengerAdminDeps): Promise<void> {
  const { numbers } = deps;

  app.post<{ Body: NewNumber }>(
    '/admin/messenger/numbers',
    {
      schema: {
        body: {
          type: 'object',
          required: ['phoneNumberId', 'account', 'wabaId', 'accessToken', 'appSecret'],
          additionalProperties: false,
          properties: {
            phoneNumberId: id,
            account: { type: 'string', minLength: 1, maxLength: 100 },
            displayNumber: { type: 'string', pattern: '^\\+?[0-9]{5,20}$' },
            wabaId: id,
            accessToken: credential,
            appSecret: credential,
            verifyToken: credential,
          },
        },
      },
    },
    async (req) => {
      const view = await numbers.add(req.body);
      audit(req, 'messenger.number.added', { phoneNumberId: view.phoneNumberId, account: view.account }, 'messenger business number added');
      return ok(req, 'MESSENGER_NUMBER_ADDED', view);
    },
  );

  app.get<{ Querystring: { account?: string } }>(
    '/admin/messenger/numbers',
    { schema: { querystring: { type: 'object', additionalProperties: false, properties: { account: { type: 'string', minLength: 1, maxLength: 100 } } } } },
    async (req) => ok(req, 'MESSENGER_NUMBERS', { numbers: await numbers.list(req.query.account) }),
  );

  app.get<{ Params: { id: string } }>('/admin/messenger/numbers/:id', { schema: { params } }, async (req) => ok(req, 'MESSENGER_NUMBER', await numbers.show(req.params.id)));

  app.post<{ Params: { id: string }; Body: { accessToken?: string; appSecret?: string; verifyToken?: string } }>(
    '/admin/messenger/numbers/:id/rotate',
    {
      schema: {
        params,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { accessToken: credential, appSecret: credential, verifyToken: credential } },
      },
    },
    async (req) => {
      const view = await numbers.rotate(req.params.id, req.body);
      audit(req, 'messenger.number.rotated', { phoneNumberId: view.phoneNumberId, rotated: Object.keys(req.body) }, 'messenger business number credentials rotated');
      return ok(req, 'MESSENGER_NUMBER_ROTATED', view);
    },
  );

  app.delete<{ Params: { id: string } }>('/admin/messenger/numbers/:id', { schema: { params } }, async (req) => {
    await numbers.remove(req.params.id);
    audit(req, 'messenger.number.removed', { phoneNumberId: req.params.id }, 'messenger business number removed');
    return ok(req, 'MESSENGER_NUMBER_REMOVED', { phoneNumberId: req.params.id });
  });

  // The embedded platform's test user writes to a business number: the inbound webhook is answered before this is.
  app.post<{ Body: { from: string; text: string; to?: string; name?: string } }>(
    '/admin/sim/messenger/reply',
    {
      schema: {
        body: {
          type: 'object',
          required: ['from', 'text'],
          additionalProperties: false,
          properties: {
            from: { type: 'string', pattern: '^\\+?[0-9]{8,15}$', description: "the user's number" },
            text: { type: 'string', minLength: 1, maxLength: 4096 },
            to: { ...id, description: 'the business phone number id written to (default: the config number)' },
            name: { type: 'string', maxLength: 100 },
          },
        },
      },
    },
    async (req) => {
      const sim = deps.simulator();
      if (!sim) throw new ApiError('SIMULATOR_NOT_RUNNING', { message: 'This daemon runs no embedded messenger platform simulator (messenger.baseUrl is set, or messenger.simulator is off)' });
      const to = req.body.to;
      if (to !== undefined && !(await numbers.byId(to))) throw new ApiError('MESSENGER_NUMBER_NOT_FOUND');
      const from = req.body.from.replace(/^\+/, '');
      const r = await sim.reply(from, req.body.text, req.body.name, to);
      if (!r.delivered) throw new ApiError('SERVICE_UNAVAILABLE', { message: "The daemon's messenger webhook did not take the reply" });
      return ok(req, 'SIM_MESSENGER_REPLIED', { wamid: r.wamid, from, to: to ?? sim.phoneNumberId });
    },
  );
}
