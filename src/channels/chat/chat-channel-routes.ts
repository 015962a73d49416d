import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError } from '../../http/errors.js';
import {
  API_KEY_SECURITY,
  CLIENT_SECURITY,
  TAG,
  callerOf,
  channelId,
  channelInListSchema,
  channelSchema,
  limitQuery,
  memberSchema,
  pageLimit,
  routeConfigs,
  userId,
  type ChatRouteDeps,
} from './chat-schemas.js';
import type { ChannelType, MemberRole } from './chat-types.js';

const channelParams = { type: 'object', required: ['channelId'], properties: { channelId } } as const;
const memberParams = { type: 'object', required: ['channelId', 'userId'], properties: { channelId, userId } } as const;
const freeData = { type: 'object', additionalProperties: true, 'x-ferry-redact': 'personal', description: 'your fields' } as const;
const channelName = { type: ['string', 'null'], maxLength: 200, description: 'shown to members (and as the title of their pushes)' } as const;

/** `/v1/chat-sdk/channels` and their members. */
export async function chatChannelRoutes(app: FastifyInstance, deps: ChatRouteDeps): Promise<void> {
  const { service, config } = deps;
  const { server, client } = routeConfigs(service);

  app.post<{ Body: { type: ChannelType; id?: string; members: string[]; name?: string | null; data?: Record<string, unknown>; createdBy?: string } }>(
    '/v1/chat-sdk/channels',
    {
      config: server,
      schema: {
        tags: TAG,
        summary: 'Create a channel with its members',
        description:
          '`members` are user ids; a user not known yet is created bare (no name; a token minted later fills it). `createdBy` is made a member with ' +
          `the role owner (an owner may rename the channel, change members and delete others' messages with a user token). At most ` +
          `chat.maxMembersPerChannel (${config.maxMembersPerChannel}) members (CHAT_TOO_MANY_MEMBERS); add more with POST /channels/{channelId}/members. ` +
          'An id the account already has: CHAT_CHANNEL_EXISTS. Without id, one is made (chn_…).',
        security: API_KEY_SECURITY,
        body: {
          type: 'object',
          required: ['type', 'members'],
          additionalProperties: false,
          properties: {
            type: { type: 'string', enum: ['messaging', 'livechat'], description: 'messaging: between users; livechat: a visitor and agents (the widget and inbox)' },
            id: { ...channelId, description: 'your id for it (letters, digits, _ . @ : + = -)' },
            members: { type: 'array', maxItems: 1000, uniqueItems: true, items: userId, description: 'user ids' },
            name: channelName,
            data: freeData,
            createdBy: { ...userId, description: 'the user who owns it (made a member)' },
          },
        },
        response: withErrors({
          201: envelopeSchema({ type: 'object', properties: { ...channelSchema.properties, members: { type: 'array', items: memberSchema } } }, 'Created (code CHAT_CHANNEL_CREATED)'),
          409: { $ref: 'ErrorEnvelope#' },
          422: { $ref: 'ErrorEnvelope#' },
        }),
      },
    },
    async (req, reply) => {
      const { channel, members } = await service.createChannel(req.auth.accountId, req.body);
      return reply.code(201).send(ok(req, 'CHAT_CHANNEL_CREATED', { ...channel, members }, 'Channel created'));
    },
  );

  app.get<{ Querystring: { member?: string; type?: ChannelType; cursor?: string; limit?: string } }>(
    '/v1/chat-sdk/channels',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'List channels by latest activity',
        description:
          'Newest message first (channels without messages last). With `member` (an API key) or a user token (always its own): that member\'s ' +
          'channels with lastReadSeq and unreadCount (messages after their read mark; their own messages count as read). Pass nextCursor as cursor ' +
          'for the next page.',
        security: CLIENT_SECURITY,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            member: { ...userId, description: "a member's channels (with a user token: only its own id)" },
            type: { type: 'string', enum: ['messaging', 'livechat'] },
            cursor: { type: 'string', maxLength: 600, description: 'nextCursor of the previous page' },
            limit: limitQuery,
          },
        },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { channels: { type: 'array', items: channelInListSchema }, nextCursor: { type: ['string', 'null'] } } }) }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      if (actor !== null && req.query.member !== undefined && req.query.member !== actor) throw new ApiError('CHAT_NOT_ALLOWED', { message: 'A user token lists only its own channels' });
      const member = actor ?? req.query.member;
      const page = await service.listChannels(accountId, { member, type: req.query.type, cursor: req.query.cursor, limit: pageLimit(req.query.limit) });
      return ok(req, 'CHAT_CHANNELS', {
        channels: page.channels.map((c) => ({ ...c.channel, lastReadSeq: c.lastReadSeq, unreadCount: c.unreadCount })),
        nextCursor: page.nextCursor,
      });
    },
  );

  app.get<{ Params: { channelId: string } }>(
    '/v1/chat-sdk/channels/:channelId',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'A channel',
        description: 'With a user token, only a channel the user is a member of (CHAT_CHANNEL_NOT_FOUND otherwise), with their read state.',
        security: CLIENT_SECURITY,
        params: channelParams,
        response: withErrors({ 200: envelopeSchema(channelInListSchema) }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      const member = actor === null ? null : await service.requireMember(accountId, req.params.channelId, actor);
      const channel = await service.getChannel(accountId, req.params.channelId);
      if (!channel) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
      const lastReadSeq = member?.lastReadSeq ?? null;
      return ok(req, 'CHAT_CHANNEL', { ...channel, lastReadSeq, unreadCount: lastReadSeq === null ? null : Math.max(0, channel.lastSeq - lastReadSeq) });
    },
  );

  app.patch<{ Params: { channelId: string }; Body: { name?: string | null; data?: Record<string, unknown> } }>(
    '/v1/chat-sdk/channels/:channelId',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: "Rename a channel or replace its data",
        description: 'An API key, or a user token of an owner of the channel (CHAT_NOT_ALLOWED for another member). Sends chat.channel.updated and channel.updated to members.',
        security: CLIENT_SECURITY,
        params: channelParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { name: channelName, data: freeData } },
        response: withErrors({ 200: envelopeSchema(channelSchema, 'Changed (code CHAT_CHANNEL_UPDATED)') }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      return ok(req, 'CHAT_CHANNEL_UPDATED', await service.updateChannel(accountId, req.params.channelId, req.body, actor), 'Channel updated');
    },
  );

  app.delete<{ Params: { channelId: string } }>(
    '/v1/chat-sdk/channels/:channelId',
    {
      config: server,
      schema: {
        tags: TAG,
        summary: 'Delete a channel with its members and history',
        security: API_KEY_SECURITY,
        params: channelParams,
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }) }),
      },
    },
    async (req) => {
      await service.deleteChannel(req.auth.accountId, req.params.channelId);
      return ok(req, 'CHAT_CHANNEL_DELETED', { id: req.params.channelId, deleted: true }, 'Channel deleted');
    },
  );

  app.get<{ Params: { channelId: string }; Querystring: { cursor?: string; limit?: string } }>(
    '/v1/chat-sdk/channels/:channelId/members',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: "A channel's members, by user id",
        description: 'With a user token, only for a member of the channel. Pass nextCursor as cursor for the next page.',
        security: CLIENT_SECURITY,
        params: channelParams,
        querystring: { type: 'object', additionalProperties: false, properties: { cursor: { ...userId, description: 'nextCursor of the previous page' }, limit: limitQuery } },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { members: { type: 'array', items: memberSchema }, nextCursor: { type: ['string', 'null'] } } }) }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      if (actor !== null) await service.requireMember(accountId, req.params.channelId, actor);
      else if (!(await service.getChannel(accountId, req.params.channelId))) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
      return ok(req, 'CHAT_MEMBERS', await service.listMembers(accountId, req.params.channelId, { after: req.query.cursor, limit: pageLimit(req.query.limit) }));
    },
  );

  app.post<{ Params: { channelId: string }; Body: { userIds: string[]; role?: MemberRole } }>(
    '/v1/chat-sdk/channels/:channelId/members',
    {
      config: server,
      schema: {
        tags: TAG,
        summary: 'Add members',
        description:
          'Users not known yet are created bare; users already members are left as they are (`added` lists the new ones). Past ' +
          'chat.maxMembersPerChannel: CHAT_TOO_MANY_MEMBERS and nobody is added. Sends chat.member.added and member.added (their sockets join the channel).',
        security: API_KEY_SECURITY,
        params: channelParams,
        body: {
          type: 'object',
          required: ['userIds'],
          additionalProperties: false,
          properties: {
            userIds: { type: 'array', minItems: 1, maxItems: 1000, items: userId },
            role: { type: 'string', enum: ['owner', 'member'], description: 'default member' },
          },
        },
        response: withErrors({
          200: envelopeSchema({ type: 'object', properties: { added: { type: 'array', items: memberSchema }, memberCount: { type: 'integer' } } }, 'Added (code CHAT_MEMBERS_ADDED)'),
          422: { $ref: 'ErrorEnvelope#' },
        }),
      },
    },
    async (req) => {
      const r = await service.addMembers(req.auth.accountId, req.params.channelId, req.body.userIds, req.body.role);
      return ok(req, 'CHAT_MEMBERS_ADDED', { added: r.added, memberCount: r.channel.memberCount }, 'Members added');
    },
  );

  app.patch<{ Params: { channelId: string; userId: string }; Body: { role?: MemberRole; muted?: boolean } }>(
    '/v1/chat-sdk/channels/:channelId/members/:userId',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: "Change a member's role or mute",
        description: 'A muted member cannot send (CHAT_NOT_ALLOWED) and gets no push. An API key, or a user token of an owner of the channel.',
        security: CLIENT_SECURITY,
        params: memberParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { role: { type: 'string', enum: ['owner', 'member'] }, muted: { type: 'boolean' } } },
        response: withErrors({ 200: envelopeSchema(memberSchema, 'Changed (code CHAT_MEMBER_UPDATED)') }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      return ok(req, 'CHAT_MEMBER_UPDATED', await service.updateMember(accountId, req.params.channelId, req.params.userId, req.body, actor), 'Member updated');
    },
  );

  app.delete<{ Params: { channelId: string; userId: string } }>(
    '/v1/chat-sdk/channels/:channelId/members/:userId',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'Remove a member (or leave)',
        description: 'An API key; a user token for its own id (leaving) or, of an owner, for another member. Sends chat.member.removed and member.removed.',
        security: CLIENT_SECURITY,
        params: memberParams,
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { channelId: { type: 'string' }, userId: { type: 'string' }, removed: { type: 'boolean' } } }) }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      await service.removeMember(accountId, req.params.channelId, req.params.userId, actor);
      return ok(req, 'CHAT_MEMBER_REMOVED', { channelId: req.params.channelId, userId: req.params.userId, removed: true }, 'Member removed');
    },
  );
}
