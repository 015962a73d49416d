import { CHANNEL_ID_PATTERN, USER_ID_PATTERN, messageSchema } from '../chat-schemas.js';
import { businessHoursSchema } from './business-hours.js';
import { VISITOR_KEY_PATTERN } from './identity.js';

/** The JSON schemas of live chat's requests and answers (validation, serialization and the OpenAPI document). */

export const TAG = ['chat'];

const time = { type: 'string', format: 'date-time' } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
const nullableString = { type: ['string', 'null'] } as const;

const field = { type: 'object', additionalProperties: false, required: ['required'], properties: { required: { type: 'boolean' } } } as const;

export const preChatFormSchema = {
  type: ['object', 'null'],
  additionalProperties: false,
  description: 'what the widget asks before the first message: `{name: {required: true}, email: {required: false}}` (a field left out is not asked); null: no form',
  properties: { name: field, email: field },
} as const;

export const inboxInputProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200, description: 'shown in the widget header and to agents' },
  requireIdentity: {
    type: 'boolean',
    description: "only identified visitors (identity.userId with its HMAC from your server) may chat; anonymous sessions are refused (CHAT_IDENTITY_REQUIRED). Default false",
  },
  preChatForm: preChatFormSchema,
  businessHours: businessHoursSchema,
  offlineMode: {
    type: 'string',
    enum: ['form', 'hide'],
    description: 'outside business hours: `form` takes a message (the visitor leaves an email; the conversation is pending), `hide` hides the launcher. Default form',
  },
  greeting: { type: ['string', 'null'], maxLength: 1000, description: 'the first line the widget shows' },
} as const;

export const inboxSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix inb_' },
    name: { type: 'string' },
    widgetKey: { type: 'string', description: "public (it is in your page's script tag): prefix wk_" },
    requireIdentity: { type: 'boolean' },
    preChatForm: { type: ['object', 'null'], additionalProperties: true },
    businessHours: { type: ['object', 'null'], additionalProperties: true },
    offlineMode: { type: 'string', enum: ['form', 'hide'] },
    greeting: nullableString,
    createdAt: time,
    updatedAt: time,
  },
} as const;

export const inboxWithSecretSchema = {
  type: 'object',
  properties: {
    ...inboxSchema.properties,
    identitySecret: {
      type: 'string',
      description: "the key your server signs visitors' ids with: identity.hmac = HMAC-SHA256(identitySecret, userId) in hex. Keep it on your server; shown on create and rotate only",
    },
  },
} as const;

export const visitorDetailsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', maxLength: 300 },
    email: { type: 'string', maxLength: 300 },
    pageUrl: { type: 'string', maxLength: 2000 },
    userAgent: { type: 'string', maxLength: 1000 },
  },
} as const;

export const conversationSchema = {
  type: 'object',
  properties: {
    channelId: { type: 'string', description: 'the chat channel (type livechat) of the conversation' },
    inboxId: { type: 'string' },
    visitorId: { type: 'string', description: "the visitor's chat user id: visitor:… for anonymous visitors, your user id for identified ones" },
    status: { type: 'string', enum: ['open', 'pending', 'resolved'] },
    assignee: { ...nullableString, description: "the agent's chat user id (agent:<keyId>); null: unassigned" },
    visitor: { ...visitorDetailsSchema, additionalProperties: true },
    identified: { type: 'boolean', description: 'your server vouched for the visitor (identity HMAC)' },
    lastVisitorMessageAt: nullableTime,
    resolvedAt: nullableTime,
    createdAt: time,
    updatedAt: time,
  },
} as const;

export const conversationSummarySchema = {
  type: 'object',
  properties: {
    ...conversationSchema.properties,
    inboxName: { type: 'string' },
    lastSeq: { type: 'integer' },
    lastMessageAt: nullableTime,
    lastMessageText: nullableString,
    lastMessageUserId: nullableString,
    unread: { type: 'integer', description: "messages after the agent's read mark (the inbox page's agent; on the server API: all)" },
  },
} as const;

export const conversationChangeSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    status: { type: 'string', enum: ['open', 'pending', 'resolved'] },
    assignee: { type: ['string', 'null'], pattern: USER_ID_PATTERN, description: 'an agent (agent:<keyId>, who signed in to /inbox); null: unassign. The agent joins the channel' },
  },
} as const;

export const conversationListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: ['open', 'pending', 'resolved'] },
    assignee: { type: 'string', maxLength: 200, description: "an agent's id, or `none` for unassigned ones" },
    cursor: { type: 'string', maxLength: 400, pattern: '^[A-Za-z0-9_-]+$', description: 'data.nextCursor of the previous page' },
    limit: { type: 'string', pattern: '^([1-9]|[1-9][0-9]|1[0-9][0-9]|200)$', description: '1–200 (default 50)' },
  },
} as const;

export const inboxIdParams = { type: 'object', properties: { inboxId: { type: 'string', minLength: 1, maxLength: 100 } } } as const;
export const conversationParams = {
  type: 'object',
  properties: { inboxId: { type: 'string', minLength: 1, maxLength: 100 }, channelId: { type: 'string', pattern: CHANNEL_ID_PATTERN } },
} as const;

export const widgetKeyField = { type: 'string', minLength: 4, maxLength: 100, pattern: '^wk_[A-Za-z0-9_-]+$', description: "the inbox's public widget key" } as const;

export const widgetInboxSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    greeting: nullableString,
    online: { type: 'boolean', description: 'inside business hours (or none set)' },
    offlineMode: { type: 'string', enum: ['form', 'hide'] },
    preChatForm: { type: ['object', 'null'], additionalProperties: true },
    requireIdentity: { type: 'boolean' },
  },
} as const;

export const sessionBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['widgetKey'],
  properties: {
    widgetKey: widgetKeyField,
    visitorId: {
      type: 'string',
      maxLength: 100,
      'x-ferry-redact': 'secret',
      description: `an anonymous visitor's key (${VISITOR_KEY_PATTERN}, random: the widget makes one with crypto.getRandomValues and keeps it); absent or not one: a new visitor, whose key the answer carries`,
    },
    visitorName: { type: 'string', maxLength: 300, 'x-ferry-redact': 'personal' },
    email: { type: 'string', maxLength: 300, 'x-ferry-redact': 'personal' },
    pageUrl: { type: 'string', maxLength: 2000, 'x-ferry-redact': 'personal', description: 'the page the visitor is on (shown to agents)' },
    identity: {
      type: 'object',
      additionalProperties: false,
      required: ['userId', 'hmac'],
      description: "an identified visitor: your user id and HMAC-SHA256(the inbox's identity secret, userId) in hex, computed on your server",
      properties: { userId: { type: 'string', pattern: USER_ID_PATTERN }, hmac: { type: 'string', maxLength: 128, 'x-ferry-redact': 'secret' } },
    },
  },
} as const;

export const sessionSchema = {
  type: 'object',
  properties: {
    token: { type: 'string', description: "a chat user token for the visitor (Socket.IO /chat-sdk and the client routes)" },
    expiresAt: time,
    userId: { type: 'string' },
    visitorId: { ...nullableString, description: "a new anonymous visitor's key (the request gave none), to keep and give again; null otherwise" },
    identified: { type: 'boolean' },
    conversation: {
      type: ['object', 'null'],
      description: "the visitor's conversation; null until their first message",
      properties: { channelId: { type: 'string' }, status: { type: 'string', enum: ['open', 'pending', 'resolved'] } },
    },
    inbox: widgetInboxSchema,
  },
} as const;

export const widgetSendSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['widgetKey', 'text'],
  properties: {
    widgetKey: widgetKeyField,
    text: { type: 'string', minLength: 1, maxLength: 65_536, 'x-ferry-redact': 'personal' },
    clientMsgId: { type: 'string', minLength: 1, maxLength: 100, description: 'a retry with the same id returns the stored message' },
    visitor: { ...visitorDetailsSchema, 'x-ferry-redact': 'personal', description: 'the pre-chat form (name, email) and the page; merged into the conversation' },
  },
} as const;

export { messageSchema };
