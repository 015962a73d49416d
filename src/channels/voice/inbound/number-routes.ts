import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../../accounts/account-service.js';
import { envelopeSchema, ok } from '../../../http/envelope.js';
import { ApiError, invalidField } from '../../../http/errors.js';
import { normalizeNumber } from '../../../numbers/phone.js';
import type { AgentService } from '../agents/agent-service.js';
import type { NumberRouteStore } from './number-route-store.js';

const TAG = ['voice'];
const err = (description: string) => ({ description, $ref: 'ErrorEnvelope#' });
const COMMON_ERRORS = {
  401: err('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: err('INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
  429: err('RATE_LIMIT_EXCEEDED'),
};
const NOT_OWNED = "NUMBER_NOT_FOUND (the account does not own this number: it is not in GET /v1/voice/numbers; another account's number is refused the same way)";

const numberViewSchema = {
  type: 'object',
  properties: {
    number: { type: 'string', description: 'the number in E.164, with +' },
    agentId: {
      type: ['string', 'null'],
      description: 'the AI voice agent (prefix agent_) that answers calls to this number, or null. A deleted agent answers no call: its number shows null',
    },
    dialerIdentity: {
      type: ['string', 'null'],
      description: 'or the browser dialer identity whose signed-in browsers ring for calls to this number (docs/voice-agents.md, the browser dialer); null when neither answers',
    },
  },
} as const;
const numberParams = {
  type: 'object',
  required: ['number'],
  properties: { number: { type: 'string', minLength: 1, maxLength: 32, description: 'E.164: + (URL-encoded %2B) and country code, or the same digits without +; a short code as GET /v1/voice/numbers lists it' } },
} as const;

interface NumberView {
  number: string;
  agentId: string | null;
  dialerIdentity: string | null;
}

/**
 * Routing inbound calls to AI voice agents: GET /v1/voice/numbers, GET and PUT /v1/voice/numbers/:number. The numbers
 * are the account's (the operator assigns them: /admin/accounts/:ref/numbers); each is answered by the agent routed to
 * it, or not at all. PUT with `agentId: null` takes the route away: one resource, set and cleared the same way.
 */
export async function numberRoutes(app: FastifyInstance, deps: { routes: NumberRouteStore; agents: AgentService; accounts: AccountService }): Promise<void> {
  const { routes, agents, accounts } = deps;

  /**
   * The path's number as stored digits, refused unless the account owns it. Digits the phone plan does not know (a
   * short code, a test number) are taken as they are: the account may own them, and the listing shows them.
   */
  const ownedNumber = async (accountId: string, raw: string): Promise<string> => {
    const digits = normalizeNumber(raw, { international: true }) ?? (/^\+?[0-9]{3,15}$/.test(raw) ? raw.replace(/^\+/, '') : null);
    if (!digits) throw invalidField('number', 'an E.164 number (+ and country code)');
    if ((await accounts.ownerOfNumber(digits)) !== accountId) {
      throw new ApiError('NUMBER_NOT_FOUND', { message: `The account does not own +${digits}: GET /v1/voice/numbers lists its numbers`, data: { number: '+' + digits } });
    }
    return digits;
  };
  const view = (digits: string, route: { agentId: string | null; dialerIdentity: string | null } | null | undefined): NumberView => ({
    number: '+' + digits,
    agentId: route?.agentId ?? null,
    dialerIdentity: route?.dialerIdentity ?? null,
  });

  app.get(
    '/v1/voice/numbers',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: "The account's numbers and the voice agent answering calls to each",
        description:
          'Every number the account owns (the operator assigns them; the same numbers it may call from and receive SMS on), by number, each with ' +
          'the AI voice agent that answers calls to it (`agentId`), or null when calls to it are not answered. Route a number with ' +
          'PUT /v1/voice/numbers/{number}.',
        response: { 200: envelopeSchema({ type: 'object', properties: { numbers: { type: 'array', items: numberViewSchema } } }), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const accountId = req.auth.accountId;
      const [owned, live] = await Promise.all([accounts.numbers(accountId), routes.list(accountId)]);
      const routeOf = new Map(live.map((r) => [r.number, r]));
      return ok(req, 'VOICE_NUMBERS', { numbers: owned.map((n) => view(n, routeOf.get(n))) });
    },
  );

  app.get<{ Params: { number: string } }>(
    '/v1/voice/numbers/:number',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: TAG,
        summary: "One of the account's numbers and the voice agent answering calls to it",
        params: numberParams,
        response: { 200: envelopeSchema(numberViewSchema), 400: err('VALIDATION_ERROR (not an E.164 number)'), 404: err(NOT_OWNED), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const digits = await ownedNumber(req.auth.accountId, req.params.number);
      return ok(req, 'VOICE_NUMBER', view(digits, await routes.get(req.auth.accountId, digits)));
    },
  );

  app.put<{ Params: { number: string }; Body: { agentId?: string | null; dialerIdentity?: string } }>(
    '/v1/voice/numbers/:number',
    {
      config: { scope: 'voice:agents' },
      schema: {
        tags: TAG,
        summary: "Route calls to one of the account's numbers to a voice agent, or stop answering them",
        description:
          'With `agentId`, calls coming in to the number through the SIP trunks are answered by that AI voice agent of the account, at its version ' +
          'current when each call comes in; with `dialerIdentity` they ring the browser signed in to the dialer (/dialer) under that identity ' +
          '(the one that registered last), on the instance the call comes in to. An earlier route of the number is replaced. With `agentId: null` the route is taken away and calls ' +
          'to the number are no longer answered (also when it had none: the request can be repeated). The number must be one the account owns ' +
          '(GET /v1/voice/numbers): a route also ends when the operator takes the number from the account, and a deleted agent answers no call. ' +
          'Answers the number as GET /v1/voice/numbers/{number} shows it.',
        params: numberParams,
        body: {
          type: 'object',
          minProperties: 1,
          maxProperties: 1,
          additionalProperties: false,
          description: 'exactly one of agentId and dialerIdentity',
          properties: {
            agentId: { type: ['string', 'null'], minLength: 1, maxLength: 100, description: 'a voice agent of the account (prefix agent_), or null to stop answering' },
            dialerIdentity: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'a browser dialer identity (the `identity` of POST /v1/voice/dialer/token)' },
          },
        },
        response: {
          200: envelopeSchema(numberViewSchema, 'Routed or unrouted (code VOICE_NUMBER_UPDATED)'),
          400: err('VALIDATION_ERROR (not an E.164 number, or a body the schema refuses)'),
          404: err(`${NOT_OWNED}, VOICE_AGENT_NOT_FOUND (no such agent in the account, or deleted)`),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req) => {
      const accountId = req.auth.accountId;
      const digits = await ownedNumber(accountId, req.params.number);
      const { agentId, dialerIdentity } = req.body;
      if (dialerIdentity !== undefined) {
        const route = await routes.set(accountId, digits, { dialerIdentity });
        if (!route) await ownedNumber(accountId, digits);
        return ok(req, 'VOICE_NUMBER_UPDATED', view(digits, route), 'Calls to this number ring the browser dialer');
      }
      if (agentId === null || agentId === undefined) {
        await routes.remove(accountId, digits);
        return ok(req, 'VOICE_NUMBER_UPDATED', view(digits, null), 'Calls to this number are no longer answered');
      }
      await agents.get(accountId, agentId);
      const route = await routes.set(accountId, digits, { agentId });
      if (!route) {
        // The number or the agent went between the checks and the write: say which.
        await ownedNumber(accountId, digits);
        throw new ApiError('VOICE_AGENT_NOT_FOUND', { data: { agentId } });
      }
      return ok(req, 'VOICE_NUMBER_UPDATED', view(digits, route), 'Calls to this number are answered by the voice agent');
    },
  );
}
