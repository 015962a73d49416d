import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok, withErrors } from '../../../http/envelope.js';
import { ApiError } from '../../../http/errors.js';
import { API_KEY_SECURITY } from '../chat-schemas.js';
import type { LivechatService } from './livechat-service.js';
import type { ConversationStatus, InboxInput } from './livechat-store.js';
import { inboxView } from './livechat-store.js';
import {
  TAG,
  conversationChangeSchema,
  conversationListQuery,
  conversationParams,
  conversationSchema,
  conversationSummarySchema,
  inboxIdParams,
  inboxInputProperties,
  inboxSchema,
  inboxWithSecretSchema,
} from './livechat-schemas.js';

export interface ConversationListQuery {
  status?: ConversationStatus;
  assignee?: string;
  cursor?: string;
  limit?: string;
}

const config = { scope: 'chat:manage' } as const;

/**
 * `/v1/chat-sdk/inboxes`: the live chat inboxes of the account (server side, API key with chat:manage), their identity
 * secrets, and their conversations' status and assignment.
 */
export async function inboxRoutes(app: FastifyInstance, deps: { livechat: LivechatService }): Promise<void> {
  const { livechat } = deps;

  app.post<{ Body: InboxInput & { name: string } }>(
    '/v1/chat-sdk/inboxes',
    {
      config,
      schema: {
        tags: TAG,
        security: API_KEY_SECURITY,
        summary: 'Create a live chat inbox',
        description:
          'An inbox is what a website embeds: `<script src="{base_url}/chat-widget.js" data-widget-key="wk_…" async></script>`. The answer carries its ' +
          'public widget key and its identity secret (shown now and on rotation only), with which your server signs identified visitors.',
        body: { type: 'object', required: ['name'], additionalProperties: false, properties: inboxInputProperties },
        response: withErrors({ 201: envelopeSchema(inboxWithSecretSchema, 'Created (code CHAT_INBOX_CREATED)') }),
      },
    },
    async (req, reply) => {
      const { inbox, identitySecret } = await livechat.createInbox(req.auth.accountId, req.body);
      return reply.code(201).send(ok(req, 'CHAT_INBOX_CREATED', { ...inbox, identitySecret }, 'Inbox created'));
    },
  );

  app.get(
    '/v1/chat-sdk/inboxes',
    {
      config,
      schema: {
        tags: TAG,
        security: API_KEY_SECURITY,
        summary: "The account's live chat inboxes",
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { inboxes: { type: 'array', items: inboxSchema } } }) }),
      },
    },
    async (req) => ok(req, 'CHAT_INBOXES', { inboxes: (await livechat.store.listInboxes(req.auth.accountId)).map(inboxView) }),
  );

  app.get<{ Params: { inboxId: string } }>(
    '/v1/chat-sdk/inboxes/:inboxId',
    { config, schema: { tags: TAG, security: API_KEY_SECURITY, summary: 'One live chat inbox', params: inboxIdParams, response: withErrors({ 200: envelopeSchema(inboxSchema) }) } },
    async (req) => ok(req, 'CHAT_INBOX', inboxView(await livechat.getInbox(req.auth.accountId, req.params.inboxId))),
  );

  app.patch<{ Params: { inboxId: string }; Body: InboxInput }>(
    '/v1/chat-sdk/inboxes/:inboxId',
    {
      config,
      schema: {
        tags: TAG,
        security: API_KEY_SECURITY,
        summary: 'Change a live chat inbox',
        description: 'Fields given replace the stored ones (null removes the pre-chat form, the business hours or the greeting). The widget key never changes.',
        params: inboxIdParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: inboxInputProperties },
        response: withErrors({ 200: envelopeSchema(inboxSchema, 'Changed (code CHAT_INBOX_UPDATED)') }),
      },
    },
    async (req) => ok(req, 'CHAT_INBOX_UPDATED', await livechat.updateInbox(req.auth.accountId, req.params.inboxId, req.body), 'Inbox updated'),
  );

  app.delete<{ Params: { inboxId: string } }>(
    '/v1/chat-sdk/inboxes/:inboxId',
    {
      config,
      schema: {
        tags: TAG,
        security: API_KEY_SECURITY,
        summary: 'Delete a live chat inbox',
        description: "Its widget stops at once (CHAT_WIDGET_KEY_UNKNOWN) and its conversations' state is deleted; their channels and history stay (type livechat).",
        params: inboxIdParams,
        response: withErrors({ 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }) }),
      },
    },
    async (req) => {
      await livechat.deleteInbox(req.auth.accountId, req.params.inboxId);
      return ok(req, 'CHAT_INBOX_DELETED', { id: req.params.inboxId, deleted: true }, 'Inbox deleted');
    },
  );

  app.post<{ Params: { inboxId: string } }>(
    '/v1/chat-sdk/inboxes/:inboxId/identity-secret/rotate',
    {
      config,
      schema: {
        tags: TAG,
        security: API_KEY_SECURITY,
        summary: "Rotate an inbox's identity secret",
        description: 'A new secret; HMACs made with the previous one are refused from now on (CHAT_IDENTITY_INVALID). Sessions already open keep their tokens.',
        params: inboxIdParams,
        response: withErrors({ 200: envelopeSchema(inboxWithSecretSchema, 'Rotated (code CHAT_IDENTITY_SECRET_ROTATED)') }),
      },
    },
    async (req) => {
      const { inbox, identitySecret } = await livechat.rotateIdentitySecret(req.auth.accountId, req.params.inboxId);
      return ok(req, 'CHAT_IDENTITY_SECRET_ROTATED', { ...inbox, identitySecret }, 'Identity secret rotated');
    },
  );

  app.get<{ Params: { inboxId: string }; Querystring: ConversationListQuery }>(
    '/v1/chat-sdk/inboxes/:inboxId/conversations',
    {
      config,
      schema: {
        tags: TAG,
        security: API_KEY_SECURITY,
        summary: "An inbox's conversations, most recently active first",
        description: 'Each with the visitor\'s details, its status and assignee, and its last message; its messages are the channel\'s (GET /channels/{channelId}/messages).',
        params: inboxIdParams,
        querystring: conversationListQuery,
        response: withErrors({
          200: envelopeSchema({ type: 'object', properties: { conversations: { type: 'array', items: conversationSummarySchema }, nextCursor: { type: ['string', 'null'] } } }),
        }),
      },
    },
    async (req) => {
      const inbox = await livechat.getInbox(req.auth.accountId, req.params.inboxId);
      const q = req.query;
      const page = await livechat.listConversations(req.auth.accountId, {
        inboxId: inbox.id,
        status: q.status,
        assignee: q.assignee === undefined ? undefined : q.assignee === 'none' ? null : q.assignee,
        cursor: q.cursor,
        limit: Number(q.limit ?? 50),
      });
      return ok(req, 'CHAT_CONVERSATIONS', { conversations: page.items, nextCursor: page.nextCursor });
    },
  );

  app.patch<{ Params: { inboxId: string; channelId: string }; Body: { status?: ConversationStatus; assignee?: string | null } }>(
    '/v1/chat-sdk/inboxes/:inboxId/conversations/:channelId',
    {
      config,
      schema: {
        tags: TAG,
        security: API_KEY_SECURITY,
        summary: "Change a conversation's status or assignee",
        params: conversationParams,
        body: conversationChangeSchema,
        response: withErrors({ 200: envelopeSchema(conversationSchema, 'Changed (code CHAT_CONVERSATION_UPDATED)') }),
      },
    },
    async (req) => {
      const c = await livechat.conversation(req.auth.accountId, req.params.channelId);
      if (c.inboxId !== req.params.inboxId) throw new ApiError('CHAT_CONVERSATION_NOT_FOUND');
      return ok(req, 'CHAT_CONVERSATION_UPDATED', await livechat.updateConversation(req.auth.accountId, req.params.channelId, req.body), 'Conversation updated');
    },
  );
}
