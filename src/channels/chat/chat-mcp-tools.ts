import { query, type McpTool } from '../../platform/mcp-tool.js';
import { CHANNEL_ID_PATTERN, USER_ID_PATTERN } from './chat-schemas.js';

const userId = { type: 'string', pattern: USER_ID_PATTERN, description: 'your id of the user' } as const;
const channelId = { type: 'string', pattern: CHANNEL_ID_PATTERN } as const;
const channelPath = (a: Record<string, unknown>) => `/v1/chat-sdk/channels/${encodeURIComponent(String(a.channelId))}`;

/** The chat tools of the MCP server: the server-side calls (an API key with chat:manage), each onto its REST endpoint. */
export const CHAT_MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'create_chat_user_token',
    product: 'chat',
    scope: 'chat:manage',
    title: 'Mint a chat user token',
    description:
      'Creates the chat user (or updates its name and image) and mints a token the user\'s app uses for the chat REST API and Socket.IO ' +
      '(POST /v1/chat-sdk/users/token). The token is a secret of that user: hand it only to them.',
    inputSchema: {
      type: 'object',
      required: ['userId'],
      additionalProperties: false,
      properties: {
        userId,
        name: { type: 'string', maxLength: 200 },
        image: { type: 'string', maxLength: 2000 },
        expiresInSeconds: { type: 'integer', minimum: 60, maximum: 31_536_000 },
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    request: (a) => ({ method: 'POST', url: '/v1/chat-sdk/users/token', body: a }),
  },
  {
    name: 'create_chat_channel',
    product: 'chat',
    scope: 'chat:manage',
    title: 'Create a chat channel',
    description:
      'Creates a channel (messaging between users, or livechat) with its members by user id; unknown users are created bare; createdBy becomes ' +
      'its owner (POST /v1/chat-sdk/channels). An id already used answers CHAT_CHANNEL_EXISTS.',
    inputSchema: {
      type: 'object',
      required: ['type', 'members'],
      additionalProperties: false,
      properties: {
        type: { type: 'string', enum: ['messaging', 'livechat'] },
        id: channelId,
        members: { type: 'array', maxItems: 1000, items: userId },
        name: { type: 'string', maxLength: 200 },
        createdBy: userId,
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    request: (a) => ({ method: 'POST', url: '/v1/chat-sdk/channels', body: a }),
  },
  {
    name: 'list_chat_channels',
    product: 'chat',
    scope: 'chat:manage',
    title: 'List chat channels',
    description:
      'Channels by latest activity (GET /v1/chat-sdk/channels); with member, that user\'s channels with their unread counts. Pass nextCursor as ' +
      'cursor for more.',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        member: userId,
        type: { type: 'string', enum: ['messaging', 'livechat'] },
        cursor: { type: 'string', maxLength: 600 },
        limit: { type: 'integer', minimum: 1, maximum: 200 },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `/v1/chat-sdk/channels${query(a, ['member', 'type', 'cursor', 'limit'])}` }),
  },
  {
    name: 'add_chat_members',
    product: 'chat',
    scope: 'chat:manage',
    title: 'Add members to a chat channel',
    description: 'Adds users to a channel (POST /v1/chat-sdk/channels/{channelId}/members); users already members are left as they are.',
    inputSchema: {
      type: 'object',
      required: ['channelId', 'userIds'],
      additionalProperties: false,
      properties: { channelId, userIds: { type: 'array', minItems: 1, maxItems: 1000, items: userId }, role: { type: 'string', enum: ['owner', 'member'] } },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    request: ({ channelId: c, ...body }) => ({ method: 'POST', url: `${channelPath({ channelId: c })}/members`, body }),
  },
  {
    name: 'send_chat_message',
    product: 'chat',
    scope: 'chat:manage',
    title: 'Send a chat message',
    description:
      'Sends a message to a channel as a member (userId) or, without userId, as the system (POST /v1/chat-sdk/channels/{channelId}/messages). ' +
      'Members see it in real time; offline members get a push. Give clientMsgId so a retry returns the same message instead of a second one.',
    inputSchema: {
      type: 'object',
      required: ['channelId', 'text'],
      additionalProperties: false,
      properties: {
        channelId,
        text: { type: 'string', minLength: 1, maxLength: 65_536 },
        userId,
        clientMsgId: { type: 'string', minLength: 1, maxLength: 100 },
        skipPush: { type: 'boolean' },
      },
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    request: ({ channelId: c, ...body }) => ({ method: 'POST', url: `${channelPath({ channelId: c })}/messages`, body }),
  },
  {
    name: 'list_chat_messages',
    product: 'chat',
    scope: 'chat:manage',
    title: "A chat channel's messages",
    description:
      "A channel's messages, oldest first (GET /v1/chat-sdk/channels/{channelId}/messages): after afterSeq, or the newest before beforeSeq " +
      '(or of all); hasMore tells whether more exist that way.',
    inputSchema: {
      type: 'object',
      required: ['channelId'],
      additionalProperties: false,
      properties: { channelId, afterSeq: { type: 'integer', minimum: 0 }, beforeSeq: { type: 'integer', minimum: 0 }, limit: { type: 'integer', minimum: 1, maximum: 200 } },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    request: (a) => ({ method: 'GET', url: `${channelPath(a)}/messages${query(a, ['afterSeq', 'beforeSeq', 'limit'])}` }),
  },
];
