import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../http/envelope.js';
import { ApiError, invalidField, rateLimited } from '../../http/errors.js';
import { CLIENT_SECURITY, TAG, callerOf, channelId, limitQuery, memberSchema, messageContent, messageSchema, pageLimit, routeConfigs, seqQuery, userId, type ChatRouteDeps } from './chat-schemas.js';

const channelParams = { type: 'object', required: ['channelId'], properties: { channelId } } as const;
const messageParams = { type: 'object', required: ['channelId', 'messageId'], properties: { channelId, messageId: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

interface SendBody {
  text: string;
  attachments?: unknown[];
  data?: Record<string, unknown>;
  clientMsgId?: string;
  skipPush?: boolean;
  userId?: string;
}

/** A seq from the query (digits by its schema). */
function seqOf(raw: string | undefined, field: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw invalidField(`querystring.${field}`, 'must be a sequence number');
  return n;
}

/** `/v1/chat-sdk/channels/{channelId}/messages` and the read mark. */
export async function chatMessageRoutes(app: FastifyInstance, deps: ChatRouteDeps): Promise<void> {
  const { service, config } = deps;
  const { client } = routeConfigs(service);

  /** An end user's sends count against chat.messagesPerSecond (its sockets' too). */
  const allowSend = async (accountId: string, user: string) => {
    const r = await service.allowSend(accountId, user);
    if (r && !r.allowed) throw rateLimited('RATE_LIMIT_EXCEEDED', r.retryAfterMs, { limit: 'chat.messagesPerSecond' });
  };

  app.post<{ Params: { channelId: string }; Body: SendBody }>(
    '/v1/chat-sdk/channels/:channelId/messages',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'Send a message',
        description:
          'Stored under the channel\'s next seq before anything is emitted; then message.new goes to the members\' sockets, pushes to offline ' +
          'members (unless skipPush) and chat.message.new to webhooks. With a user token the sender is that user (a member, not muted; userId ' +
          'may only name itself); with an API key the sender is `userId` (a member: CHAT_MEMBER_NOT_FOUND otherwise), or the system when absent ' +
          '(type system). `clientMsgId` makes a retry safe: the same sender and clientMsgId answer the stored message (200, ' +
          `CHAT_MESSAGE_ALREADY_SENT) instead of a second one. At most chat.maxMessageBytes (${config.maxMessageBytes}) bytes of text, attachments ` +
          'and data as JSON (CHAT_MESSAGE_TOO_LARGE).',
        security: CLIENT_SECURITY,
        params: channelParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ...messageContent,
            text: { ...messageContent.text, default: '' },
            clientMsgId: { type: 'string', minLength: 1, maxLength: 100, description: "the client's id for this send (e.g. a UUID): a retry with it returns the stored message" },
            skipPush: { type: 'boolean', description: 'no push to offline members for this message' },
            userId: { ...userId, description: 'API key: the sender (absent: a system message); user token: only its own id' },
          },
        },
        response: withErrors({
          201: envelopeSchema(messageSchema, 'Stored (code CHAT_MESSAGE_SENT)'),
          200: envelopeSchema(messageSchema, 'A retried clientMsgId: the stored message (code CHAT_MESSAGE_ALREADY_SENT)'),
          409: { $ref: 'ErrorEnvelope#' },
        }),
      },
    },
    async (req, reply) => {
      const { accountId, actor } = callerOf(req);
      const b = req.body;
      if (actor !== null && b.userId !== undefined && b.userId !== actor) throw new ApiError('CHAT_NOT_ALLOWED', { message: 'A user token sends only as its own user' });
      if (b.text === '' && !b.attachments?.length) throw invalidField('body.text', 'a message needs text or attachments');
      if (actor !== null) await allowSend(accountId, actor);
      const sender = actor ?? b.userId ?? null;
      const r = await service.sendMessage(
        { accountId, channelId: req.params.channelId, userId: sender, text: b.text, attachments: b.attachments, data: b.data, clientMsgId: b.clientMsgId, skipPush: b.skipPush },
        { server: actor === null },
      );
      if (!r.created) return ok(req, 'CHAT_MESSAGE_ALREADY_SENT', r.message, 'Message already sent (same clientMsgId)');
      return reply.code(201).send(ok(req, 'CHAT_MESSAGE_SENT', r.message, 'Message sent'));
    },
  );

  app.get<{ Params: { channelId: string }; Querystring: { afterSeq?: string; beforeSeq?: string; limit?: string } }>(
    '/v1/chat-sdk/channels/:channelId/messages',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: "A channel's messages by seq",
        description:
          'Oldest first. `afterSeq`: the messages after it (a client resyncs with its last seq after any reconnect); else the newest ones before ' +
          '`beforeSeq` (older history) or of all. `hasMore`: more exist in the direction asked. Deleted messages keep their seq, emptied.',
        security: CLIENT_SECURITY,
        params: channelParams,
        querystring: { type: 'object', additionalProperties: false, properties: { afterSeq: seqQuery, beforeSeq: seqQuery, limit: limitQuery } },
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { messages: { type: 'array', items: messageSchema }, hasMore: { type: 'boolean' } } }) }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      const o = { afterSeq: seqOf(req.query.afterSeq, 'afterSeq'), beforeSeq: seqOf(req.query.beforeSeq, 'beforeSeq'), limit: pageLimit(req.query.limit) };
      if (actor !== null) await service.requireMember(accountId, req.params.channelId, actor);
      else if (!(await service.getChannel(accountId, req.params.channelId))) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
      return ok(req, 'CHAT_MESSAGES', await service.listMessages(accountId, req.params.channelId, o));
    },
  );

  app.patch<{ Params: { channelId: string; messageId: string }; Body: { text?: string; attachments?: unknown[]; data?: Record<string, unknown> } }>(
    '/v1/chat-sdk/channels/:channelId/messages/:messageId',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'Edit a message',
        description: 'Fields given replace the stored ones. An API key, or a user token of its sender (CHAT_NOT_ALLOWED otherwise, or once deleted). Sends chat.message.updated and message.updated.',
        security: CLIENT_SECURITY,
        params: messageParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: messageContent },
        response: withErrors({ 200: envelopeSchema(messageSchema, 'Changed (code CHAT_MESSAGE_UPDATED)') }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      return ok(req, 'CHAT_MESSAGE_UPDATED', await service.updateMessage(accountId, req.params.channelId, req.params.messageId, req.body, actor), 'Message updated');
    },
  );

  app.delete<{ Params: { channelId: string; messageId: string } }>(
    '/v1/chat-sdk/channels/:channelId/messages/:messageId',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'Delete a message',
        description:
          'Its text, attachments and data are emptied and deletedAt set; its seq stays. An API key, its sender, or an owner of the channel. Deleting ' +
          'it again answers it unchanged. Sends chat.message.deleted and message.deleted.',
        security: CLIENT_SECURITY,
        params: messageParams,
        response: withErrors({ 200: envelopeSchema(messageSchema, 'Deleted (code CHAT_MESSAGE_DELETED)') }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      return ok(req, 'CHAT_MESSAGE_DELETED', await service.deleteMessage(accountId, req.params.channelId, req.params.messageId, actor), 'Message deleted');
    },
  );

  app.post<{ Params: { channelId: string }; Body: { seq: number; userId?: string } }>(
    '/v1/chat-sdk/channels/:channelId/read',
    {
      config: client,
      schema: {
        tags: TAG,
        summary: 'Mark messages read up to a seq',
        description:
          "Moves the member's read mark forward to seq (never back, never past the last message); `read` goes to the channel's sockets when it " +
          'moved. With an API key, userId names the member; with a user token it is the token\'s user.',
        security: CLIENT_SECURITY,
        params: channelParams,
        body: {
          type: 'object',
          required: ['seq'],
          additionalProperties: false,
          properties: { seq: { type: 'integer', minimum: 0, maximum: 1_000_000_000_000_000 }, userId: { ...userId, description: 'API key: the member (required); user token: only its own id' } },
        },
        response: withErrors({ 200: envelopeSchema(memberSchema, 'The member with its read mark (code CHAT_READ)') }),
      },
    },
    async (req) => {
      const { accountId, actor } = callerOf(req);
      if (actor !== null && req.body.userId !== undefined && req.body.userId !== actor) throw new ApiError('CHAT_NOT_ALLOWED', { message: 'A user token marks only its own reads' });
      const member = actor ?? req.body.userId;
      if (member === undefined) throw invalidField('body.userId', 'is required with an API key');
      return ok(req, 'CHAT_READ', await service.markRead(accountId, req.params.channelId, member, req.body.seq, { server: actor === null }));
    },
  );
}
