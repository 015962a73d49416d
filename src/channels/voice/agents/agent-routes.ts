import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok } from '../../../http/envelope.js';
import { invalidField } from '../../../http/errors.js';
import { idempotencyHeaderSchema, idempotent, type IdempotencyStore } from '../../../http/idempotency.js';
import type { AgentInput } from './agent-config.js';
import { createAgentBody, agentViewSchema, agentView, patchAgentBody } from './agent-schemas.js';
import type { RecognizerInfo } from './agent-runtime.js';
import type { AgentService } from './agent-service.js';
import { AGENT_ID } from './agent-store.js';

const TAG = ['voice'];
const SCOPE = { scope: 'voice:agents' } as const;
const err = (description: string) => ({ description, $ref: 'ErrorEnvelope#' });
const COMMON_ERRORS = {
  401: err('AUTH_HEADER_MISSING, AUTH_HEADER_MALFORMED, INVALID_CREDENTIALS'),
  403: err('INSUFFICIENT_SCOPE, ACCOUNT_SUSPENDED'),
  429: err('RATE_LIMIT_EXCEEDED'),
};
const INVALID = err(
  'VALIDATION_ERROR (a shape the schema refuses), VOICE_AGENT_INVALID (a rule across fields: data.errors names each field), VOICE_NOT_AVAILABLE (no such voice here)',
);
const agentParams = { type: 'object', required: ['agentId'], properties: { agentId: { type: 'string', minLength: 1, maxLength: 100 } } } as const;
const limitQuery = { type: 'string', pattern: '^[0-9]{1,3}$', description: '1–100, default 50' } as const;
const listOf = (key: string) => envelopeSchema({ type: 'object', properties: { [key]: { type: 'array', items: agentViewSchema }, nextCursor: { type: ['string', 'null'] } } });

function pageLimit(raw: string | undefined): number {
  const limit = raw === undefined ? 50 : Number(raw);
  if (limit < 1 || limit > 100) throw invalidField('limit', '1–100');
  return limit;
}

/** POST/GET /v1/voice/agents, GET/PATCH/DELETE /v1/voice/agents/:agentId, GET /v1/voice/agents/:agentId/versions. */
export async function agentRoutes(app: FastifyInstance, deps: { agents: AgentService; idempotency: IdempotencyStore; recognizers: () => Promise<RecognizerInfo[]> }): Promise<void> {
  const { agents } = deps;

  app.get(
    '/v1/voice/agents/recognizers',
    {
      config: SCOPE,
      schema: {
        tags: TAG,
        summary: 'The speech-to-text engines an agent may use (stt.provider), with the locales each serves on this server',
        description:
          'pocketsphinx runs offline on this server (en-US only, rough on telephone audio) when its Debian packages are installed; openai-compatible is ' +
          "the agent's own provider (stt.baseUrl, stt.model), whose locales are the provider's. The voices agents speak with are GET /v1/voice/voices.",
        response: {
          200: envelopeSchema({
            type: 'object',
            properties: {
              recognizers: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    provider: { type: 'string', enum: ['pocketsphinx', 'openai-compatible'] },
                    offline: { type: 'boolean', description: 'runs on this server, nothing leaves it' },
                    available: { type: 'boolean' },
                    locales: { type: ['array', 'null'], items: { type: 'string' }, description: 'BCP 47; null: the configured provider decides' },
                    note: { type: 'string' },
                  },
                },
              },
            },
          }),
        },
      },
    },
    async (req) => ok(req, 'VOICE_RECOGNIZERS', { recognizers: await deps.recognizers() }),
  );

  app.post<{ Body: AgentInput }>(
    '/v1/voice/agents',
    {
      config: SCOPE,
      schema: {
        tags: TAG,
        summary: 'Create an AI voice agent',
        description:
          'An agent is a system prompt, a first message, a voice, a model (`llm`, any OpenAI-compatible chat-completions endpoint, or `relay`, your own ' +
          'over a WebSocket: exactly one), speech-to-text, tools (transfer to configured destinations, end_call, webhook, send_sms) and limits. It is ' +
          'stored as version 1; every change makes a new version and a call keeps the version it started with. Keys (`llm.apiKey`, `stt.apiKey`) are ' +
          'sealed at rest and never returned: `apiKeySet` says whether one is set. Send an Idempotency-Key to make a retry safe.',
        headers: { type: 'object', properties: { 'idempotency-key': idempotencyHeaderSchema } },
        body: createAgentBody,
        response: { 201: envelopeSchema(agentViewSchema, 'Created (code VOICE_AGENT_CREATED)'), 400: INVALID, ...COMMON_ERRORS },
      },
    },
    async (req, reply) => {
      reply.code(201);
      return idempotent(req, reply, deps.idempotency, async () => ok(req, 'VOICE_AGENT_CREATED', agentView(await agents.create(req.auth.accountId, req.body)), 'Voice agent created'), 201);
    },
  );

  app.get<{ Querystring: { name?: string; limit?: string; cursor?: string } }>(
    '/v1/voice/agents',
    {
      config: SCOPE,
      schema: {
        tags: TAG,
        summary: "The account's voice agents at their current versions, newest first",
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { name: { type: 'string', minLength: 1, maxLength: 200, description: 'exactly this name' }, limit: limitQuery, cursor: { type: 'string', maxLength: 200 } },
        },
        response: { 200: listOf('agents'), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit);
      const cursor = req.query.cursor;
      if (cursor !== undefined && !AGENT_ID.test(cursor)) throw invalidField('cursor', 'not a cursor this API gave');
      const found = await agents.list(req.auth.accountId, { name: req.query.name, before: cursor }, limit + 1);
      const page = found.slice(0, limit);
      return ok(req, 'VOICE_AGENTS', { agents: page.map(agentView), nextCursor: found.length > limit ? page[page.length - 1].id : null });
    },
  );

  app.get<{ Params: { agentId: string }; Querystring: { version?: string } }>(
    '/v1/voice/agents/:agentId',
    {
      config: SCOPE,
      schema: {
        tags: TAG,
        summary: 'A voice agent at its current version, or at `version`',
        params: agentParams,
        querystring: { type: 'object', additionalProperties: false, properties: { version: { type: 'string', pattern: '^[1-9][0-9]{0,8}$', description: 'a version number (default the current)' } } },
        response: { 200: envelopeSchema(agentViewSchema), 404: err('VOICE_AGENT_NOT_FOUND (the agent, or that version of it)'), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const version = req.query.version === undefined ? undefined : Number(req.query.version);
      return ok(req, 'VOICE_AGENT', agentView(await agents.get(req.auth.accountId, req.params.agentId, version)));
    },
  );

  app.patch<{ Params: { agentId: string }; Body: AgentInput }>(
    '/v1/voice/agents/:agentId',
    {
      config: SCOPE,
      schema: {
        tags: TAG,
        summary: 'Change a voice agent: a new version',
        description:
          'A JSON merge patch (RFC 7396) onto the current version: objects (llm, stt, voice, failure, variables, metadata) merge member by member, null ' +
          'removes a member (back to its default), arrays (tools, endCallPhrases) replace. Giving `relay` replaces `llm` and the other way round. A changed ' +
          '`llm.baseUrl` or `stt.baseUrl` needs its `apiKey` again (or null): a stored key is never sent to another host. The result is checked as a ' +
          'whole and stored as the next version; calls already started keep theirs.',
        params: agentParams,
        body: patchAgentBody,
        response: { 200: envelopeSchema(agentViewSchema, 'Changed (code VOICE_AGENT_UPDATED)'), 400: INVALID, 404: err('VOICE_AGENT_NOT_FOUND'), 409: err('CONFLICT'), ...COMMON_ERRORS },
      },
    },
    async (req) => ok(req, 'VOICE_AGENT_UPDATED', agentView(await agents.update(req.auth.accountId, req.params.agentId, req.body)), 'Voice agent updated'),
  );

  app.delete<{ Params: { agentId: string } }>(
    '/v1/voice/agents/:agentId',
    {
      config: SCOPE,
      schema: {
        tags: TAG,
        summary: 'Delete a voice agent',
        description: 'It is no longer listed, read or used for new calls; calls in progress keep the version they started with.',
        params: agentParams,
        response: {
          200: envelopeSchema({ type: 'object', properties: { agentId: { type: 'string' }, deleted: { type: 'boolean' } } }, 'Deleted (code VOICE_AGENT_DELETED)'),
          404: err('VOICE_AGENT_NOT_FOUND'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (req) => {
      await agents.remove(req.auth.accountId, req.params.agentId);
      return ok(req, 'VOICE_AGENT_DELETED', { agentId: req.params.agentId, deleted: true }, 'Voice agent deleted');
    },
  );

  app.get<{ Params: { agentId: string }; Querystring: { limit?: string; cursor?: string } }>(
    '/v1/voice/agents/:agentId/versions',
    {
      config: SCOPE,
      schema: {
        tags: TAG,
        summary: "A voice agent's versions, newest first",
        params: agentParams,
        querystring: { type: 'object', additionalProperties: false, properties: { limit: limitQuery, cursor: { type: 'string', maxLength: 20 } } },
        response: { 200: listOf('versions'), 404: err('VOICE_AGENT_NOT_FOUND'), ...COMMON_ERRORS },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit);
      const cursor = req.query.cursor;
      if (cursor !== undefined && !/^[1-9][0-9]{0,8}$/.test(cursor)) throw invalidField('cursor', 'not a cursor this API gave');
      const found = await agents.versions(req.auth.accountId, req.params.agentId, cursor === undefined ? undefined : Number(cursor), limit + 1);
      const page = found.slice(0, limit);
      return ok(req, 'VOICE_AGENT_VERSIONS', { versions: page.map(agentView), nextCursor: found.length > limit ? String(page[page.length - 1].version) : null });
    },
  );
}
