import type { FastifyContextConfig, FastifyRequest } from 'fastify';
import { invalidField } from '../../http/errors.js';
import type { Actor, ChatService } from './chat-service.js';
import type { ChatConfig } from './config.js';

/**
 * What chat's routes share: the JSON schemas of requests and answers (they drive validation, serialization and the
 * OpenAPI document), who calls, and the two route configs.
 */

export const TAG = ['chat'];

/** A user id: your own (letters, digits and `_ . @ : + = -`), as it appears in paths and socket rooms. */
export const USER_ID_PATTERN = '^[A-Za-z0-9_.@:+=-]{1,200}$';
/** A channel id, given or made (`chn_…`). */
export const CHANNEL_ID_PATTERN = '^[A-Za-z0-9_.@:+=-]{1,100}$';
export const USER_ID_RE = new RegExp(USER_ID_PATTERN);

/** Who may call: an API key with chat:manage, or (where listed) an end user's token. */
type Security = Array<Record<string, string[]>>;
export const API_KEY_SECURITY: Security = [{ basicAuth: [] }, { bearerAuth: [] }];
export const CLIENT_SECURITY: Security = [{ basicAuth: [] }, { bearerAuth: [] }, { endUserToken: [] }];
export const END_USER_SECURITY: Security = [{ endUserToken: [] }];

const time = { type: 'string', format: 'date-time' } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
const freeObject = { type: 'object', additionalProperties: true } as const;

export const userId = { type: 'string', pattern: USER_ID_PATTERN, description: 'your id of the user' } as const;
export const channelId = { type: 'string', pattern: CHANNEL_ID_PATTERN } as const;

export const userSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: ['string', 'null'] },
    image: { type: ['string', 'null'], description: 'an avatar URL' },
    data: { ...freeObject, description: 'your fields' },
    banned: { type: 'boolean' },
    createdAt: time,
    updatedAt: time,
  },
} as const;

export const channelSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['messaging', 'livechat'] },
    name: { type: ['string', 'null'] },
    data: freeObject,
    createdBy: { type: ['string', 'null'], description: 'the user who created it (owner), null: the server' },
    lastSeq: { type: 'integer', description: 'seq of its newest message (0: none)' },
    lastMessageAt: nullableTime,
    memberCount: { type: 'integer' },
    createdAt: time,
    updatedAt: time,
  },
} as const;

/** A channel in a member's list: with their read mark and unread count (null in a list that is nobody's). */
export const channelInListSchema = {
  type: 'object',
  properties: {
    ...channelSchema.properties,
    lastReadSeq: { type: ['integer', 'null'], description: "the member's read mark" },
    unreadCount: { type: ['integer', 'null'], description: 'messages after the read mark (lastSeq − lastReadSeq)' },
  },
} as const;

export const memberSchema = {
  type: 'object',
  properties: {
    channelId: { type: 'string' },
    userId: { type: 'string' },
    role: { type: 'string', enum: ['owner', 'member'] },
    muted: { type: 'boolean', description: 'a muted member cannot send and gets no push' },
    lastReadSeq: { type: 'integer' },
    joinedAt: time,
  },
} as const;

export const messageSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'prefix msg_' },
    channelId: { type: 'string' },
    seq: { type: 'integer', description: 'per channel, from 1, without gaps' },
    userId: { type: ['string', 'null'], description: 'the sender; null: the system' },
    type: { type: 'string', enum: ['regular', 'system'] },
    text: { type: 'string' },
    attachments: { type: 'array', items: freeObject },
    data: freeObject,
    clientMsgId: { type: ['string', 'null'] },
    createdAt: time,
    updatedAt: time,
    deletedAt: { ...nullableTime, description: 'set when deleted (text and attachments emptied, seq kept)' },
  },
} as const;

/** Message content a send or an edit carries: customer content, never in the request logs. */
export const messageContent = {
  text: { type: 'string', maxLength: 65_536, 'x-ferry-redact': 'personal', description: 'the text (with attachments and data at most chat.maxMessageBytes of JSON)' },
  attachments: {
    type: 'array',
    maxItems: 32,
    'x-ferry-redact': 'personal',
    items: freeObject,
    description: 'your attachment objects (e.g. {type, url, name}), stored and relayed as given',
  },
  data: { ...freeObject, 'x-ferry-redact': 'personal', description: 'your fields' },
} as const;

export const userFields = {
  name: { type: ['string', 'null'], maxLength: 200, 'x-ferry-redact': 'personal', description: 'display name' },
  image: { type: ['string', 'null'], maxLength: 2000, description: 'an avatar URL' },
  data: { ...freeObject, 'x-ferry-redact': 'personal', description: 'your fields (replaces the stored ones)' },
} as const;

export const limitQuery = { type: 'string', pattern: '^[0-9]{1,3}$', description: '1–200, default 50' } as const;
export const seqQuery = { type: 'string', pattern: '^[0-9]{1,15}$' } as const;

/** A page size from the query (digits by its schema), 1..200. */
export function pageLimit(raw: string | undefined, field = 'limit'): number {
  const n = raw === undefined ? 50 : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw invalidField(`querystring.${field}`, 'must be an integer from 1 to 200');
  return n;
}

export interface ChatRouteDeps {
  service: ChatService;
  config: ChatConfig;
}

/** Who calls: the account, and the end user of a token (null: an API key, the server). */
export function callerOf(req: FastifyRequest): { accountId: string; actor: Actor } {
  if (req.endUser) return { accountId: req.endUser.accountId, actor: req.endUser.userId };
  return { accountId: req.auth.accountId, actor: null };
}

/** Route configs: the server's routes take an API key with chat:manage; the client's also an end user's token. */
export function routeConfigs(service: ChatService): { server: FastifyContextConfig; client: FastifyContextConfig } {
  return {
    server: { scope: 'chat:manage' },
    // A user token passes the platform's auth to the verifier (no scope applies to it); the service then limits it to its channels.
    client: { scope: 'chat:manage', endUser: (token) => service.verifyToken(token) },
  };
}

