import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import { chatChannelRoutes } from './chat-channel-routes.js';
import { chatMessageRoutes } from './chat-message-routes.js';
import { API_KEY_SECURITY, END_USER_SECURITY, TAG, routeConfigs, userFields, userId, userSchema, type ChatRouteDeps } from './chat-schemas.js';

const userParams = { type: 'object', required: ['userId'], properties: { userId } } as const;
const userAnswer = (description = 'The user') => withErrors({ 200: envelopeSchema(userSchema, description) });

interface UserBody {
  name?: string | null;
  image?: string | null;
  data?: Record<string, unknown>;
}

/** In-app chat's REST API under /v1/chat-sdk: user tokens and users here, channels, members and messages beside. */
export async function chatRoutes(app: FastifyInstance, deps: ChatRouteDeps): Promise<void> {
  const { service, config } = deps;
  const { server, client } = routeConfigs(service);

  app.post<{ Body: UserBody & { userId: string; expiresInSeconds?: number } }>(
    '/v1/chat-sdk/users/token',
    {
      config: server,
      schema: {
        tags: TAG,
        summary: 'Mint a user token (upserts the user)',
        description:
          'Creates the user, or changes the fields given, and answers a token the user\'s app sends as `Authorization: Bearer <token>` and in the ' +
          'Socket.IO handshake. An HS256 JWT signed with a key of the account (derived, never stored), claims iss `ferry`, aud `chat-sdk`, sub the ' +
          `user id, acc the account id. It lives expiresInSeconds (default chat.tokenTtlSeconds, ${config.tokenTtlSeconds}; at most ` +
          `chat.maxTokenTtlSeconds, ${config.maxTokenTtlSeconds}). Revoked by POST /users/{userId}/revoke-tokens, a ban, deleting the user, or ` +
          'POST /secret/rotate. A banned user gets CHAT_USER_BANNED.',
        security: API_KEY_SECURITY,
        body: {
          type: 'object',
          required: ['userId'],
          additionalProperties: false,
          properties: {
            userId,
            ...userFields,
            expiresInSeconds: { type: 'integer', minimum: 60, maximum: 31_536_000, description: `the token's lifetime (default chat.tokenTtlSeconds)` },
          },
        },
        response: withErrors({
          200: envelopeSchema(
            {
              type: 'object',
              properties: {
                token: { type: 'string', description: 'the JWT; give it to this user only' },
                expiresAt: { type: 'string', format: 'date-time' },
                user: userSchema,
              },
            },
            'Minted (code CHAT_TOKEN_MINTED)',
          ),
        }),
      },
    },
    async (req) => {
      const { userId: id, expiresInSeconds, ...fields } = req.body;
      const minted = await service.mintToken(req.auth.accountId, { userId: id, expiresInSeconds, ...fields });
      return ok(req, 'CHAT_TOKEN_MINTED', minted, 'Token minted');
    },
  );

  app.post<{ Body: { graceSeconds?: number } }>(
    '/v1/chat-sdk/secret/rotate',
    {
      config: server,
      schema: {
        tags: TAG,
        summary: "Rotate the account's token signing key",
        description:
          'Tokens are signed with the new key from now on. Tokens signed with the previous one stay valid graceSeconds (default ' +
          `chat.secretGraceSeconds, ${config.secretGraceSeconds}; 0: refused at once, CHAT_TOKEN_INVALID). Only one previous key is kept: a second ` +
          'rotation within the grace retires the first key at once.',
        security: API_KEY_SECURITY,
        body: { type: 'object', additionalProperties: false, properties: { graceSeconds: { type: 'integer', minimum: 0, maximum: 2_592_000 } } },
        response: withErrors({
          200: envelopeSchema(
            {
              type: 'object',
              properties: {
                generation: { type: 'integer', description: "the new key's generation (a token's kid)" },
                previousValidUntil: { type: ['string', 'null'], format: 'date-time', description: 'tokens of the previous key are accepted until then; null: not at all' },
              },
            },
            'Rotated (code CHAT_SECRET_ROTATED)',
          ),
        }),
      },
    },
    async (req) => ok(req, 'CHAT_SECRET_ROTATED', await service.rotateSecret(req.auth.accountId, req.body.graceSeconds), 'Signing key rotated'),
  );

  app.get(
    '/v1/chat-sdk/me',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'The end user of the token',
        description: 'For an app holding a user token: who it is. An API key gets CHAT_USER_TOKEN_REQUIRED.',
        security: END_USER_SECURITY,
        response: userAnswer(),
      },
    },
    async (req) => {
      if (!req.endUser) throw new ApiError('CHAT_USER_TOKEN_REQUIRED');
      const user = await service.getUser(req.endUser.accountId, req.endUser.userId);
      // The token was verified against the user a moment ago; gone since: revoked.
      if (!user) throw new ApiError('CHAT_TOKEN_REVOKED');
      return ok(req, 'CHAT_ME', user);
    },
  );

  app.get<{ Params: { userId: string } }>(
    '/v1/chat-sdk/users/:userId',
    { config: server, schema: { tags: TAG, summary: 'A user', security: API_KEY_SECURITY, params: userParams, response: userAnswer() } },
    async (req) => {
      const user = await service.getUser(req.auth.accountId, req.params.userId);
      if (!user) throw new ApiError('CHAT_USER_NOT_FOUND');
      return ok(req, 'CHAT_USER', user);
    },
  );

  app.patch<{ Params: { userId: string }; Body: UserBody }>(
    '/v1/chat-sdk/users/:userId',
    {
      config: server,
      schema: {
        tags: TAG,
        summary: "Change a user's name, image or data",
        description: 'Fields given replace the stored ones (data as a whole); null clears name or image.',
        security: API_KEY_SECURITY,
        params: userParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: userFields },
        response: userAnswer('Changed (code CHAT_USER_UPDATED)'),
      },
    },
    async (req) => ok(req, 'CHAT_USER_UPDATED', await service.updateUser(req.auth.accountId, req.params.userId, req.body), 'User updated'),
  );

  app.delete<{ Params: { userId: string } }>(
    '/v1/chat-sdk/users/:userId',
    {
      config: server,
      schema: {
        tags: TAG,
        summary: 'Delete a user',
        description:
          'Removes the user from every channel (chat.member.removed for each), refuses their tokens (CHAT_TOKEN_REVOKED) and closes their sockets. ' +
          'Their messages stay, with their user id. Minting a token for the id again makes a new user.',
        security: API_KEY_SECURITY,
        params: userParams,
        response: withErrors({
          200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' }, channelsLeft: { type: 'array', items: { type: 'string' } } } }),
        }),
      },
    },
    async (req) => {
      const r = await service.deleteUser(req.auth.accountId, req.params.userId);
      return ok(req, 'CHAT_USER_DELETED', { id: r.id, deleted: true, channelsLeft: r.channelsLeft }, 'User deleted');
    },
  );

  const userAction = (path: string, summary: string, description: string, code: string, act: (accountId: string, id: string) => Promise<unknown>) =>
    app.post<{ Params: { userId: string } }>(
      `/v1/chat-sdk/users/:userId/${path}`,
      { config: server, schema: { tags: TAG, summary, description, security: API_KEY_SECURITY, params: userParams, response: userAnswer(`Done (code ${code})`) } },
      async (req) => ok(req, code, await act(req.auth.accountId, req.params.userId)),
    );
  userAction(
    'ban',
    'Ban a user',
    'Their tokens are refused (CHAT_USER_BANNED), no token is minted for them and their sockets are closed, until unbanned. Memberships and messages stay.',
    'CHAT_USER_BAN_SET',
    (a, id) => service.setBanned(a, id, true),
  );
  userAction('unban', 'Lift a ban', 'Tokens that were not otherwise revoked or expired work again.', 'CHAT_USER_BAN_LIFTED', (a, id) => service.setBanned(a, id, false));
  userAction(
    'revoke-tokens',
    "Revoke a user's tokens",
    'Every token minted for the user until now is refused (CHAT_TOKEN_REVOKED) and their sockets are closed; tokens minted afterwards work.',
    'CHAT_TOKENS_REVOKED',
    (a, id) => service.revokeTokens(a, id),
  );

  await chatChannelRoutes(app, deps);
  await chatMessageRoutes(app, deps);
}
