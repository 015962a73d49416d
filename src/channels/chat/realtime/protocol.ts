/**
 * The socket protocol of namespace `/chat-sdk` (docs/chat.md, "Real time (Socket.IO)"): event names, payloads and
 * acks, and the checks of what a client sends. Errors carry the REST API's codes (errors.ts and the core catalogue).
 */
import { ApiError } from '../../../http/errors.js';
import type { ChatChannel, ChatMember, ChatMessage } from '../chat-types.js';

export const NAMESPACE = '/chat-sdk';
export const SOCKET_PATH = '/socket.io';

/** What an ack carries when the event was refused or failed. */
export interface AckError {
  ok: false;
  error: { code: string; message: string; data?: Record<string, unknown> };
}
export type Ack<T> = ({ ok: true } & T) | AckError;
type AckFn<T> = (answer: Ack<T>) => void;

export interface SendPayload {
  channelId: string;
  text: string;
  clientMsgId: string;
  attachments?: unknown[];
  data?: Record<string, unknown>;
}
export interface SyncPayload {
  channelId: string;
  afterSeq: number;
  limit?: number;
}

/** Client → server. Every event takes an ack callback (optional for typing). */
export interface ClientToServerEvents {
  'message.send': (p: SendPayload, ack?: AckFn<{ message: ChatMessage; created: boolean }>) => void;
  'messages.sync': (p: SyncPayload, ack?: AckFn<{ messages: ChatMessage[]; hasMore: boolean }>) => void;
  'typing.start': (p: { channelId: string }, ack?: AckFn<object>) => void;
  'typing.stop': (p: { channelId: string }, ack?: AckFn<object>) => void;
  read: (p: { channelId: string; seq: number }, ack?: AckFn<{ lastReadSeq: number }>) => void;
  'presence.get': (p: { userIds: string[] }, ack?: AckFn<{ presence: Array<{ userId: string; online: boolean }> }>) => void;
}

/** Server → client. */
export interface ServerToClientEvents {
  'message.new': (p: { channelId: string; message: ChatMessage }) => void;
  'message.updated': (p: { channelId: string; message: ChatMessage }) => void;
  'message.deleted': (p: { channelId: string; message: ChatMessage }) => void;
  'typing.start': (p: { channelId: string; userId: string }) => void;
  'typing.stop': (p: { channelId: string; userId: string }) => void;
  read: (p: { channelId: string; userId: string; lastReadSeq: number }) => void;
  'member.added': (p: { channelId: string; member: ChatMember | { channelId: string; userId: string } }) => void;
  'member.removed': (p: { channelId: string; userId: string }) => void;
  'channel.updated': (p: { channel: ChatChannel }) => void;
  'channel.deleted': (p: { channelId: string }) => void;
  presence: (p: { userId: string; online: boolean }) => void;
  /** The socket is closed right after: the token expired or was revoked, the user banned or deleted. No reconnect. */
  revoked: (p: { reason: 'revoked' | 'banned' | 'deleted' | 'expired' }) => void;
  /** This instance is stopping; the connection closes right after and the client reconnects (to another instance). */
  reconnect: (p: { reason: 'draining' }) => void;
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface InterServerEvents {}

/** What a socket carries from its handshake. */
export interface SocketData {
  accountId: string;
  userId: string;
  /** Seconds (the token's exp). */
  expiresAt: number;
  /** Channel ids found at the handshake, joined on connection. */
  channelIds: string[];
}

export const userRoom = (accountId: string, userId: string) => `u:${accountId}:${userId}`;
export const channelRoom = (accountId: string, channelId: string) => `c:${accountId}:${channelId}`;

/** Default and largest page of messages.sync (the REST history pages the same). */
export const SYNC_DEFAULT_LIMIT = 100;
export const SYNC_MAX_LIMIT = 200;
export const PRESENCE_MAX_USERS = 100;
/** The longest id a client may name (channel, user, clientMsgId); longer is refused before any lookup. */
const MAX_ID_CHARS = 200;

/** Throws VALIDATION_ERROR naming the field, as REST validation does. */
function invalid(field: string, message: string): never {
  throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field, message }] } });
}

function object(p: unknown): Record<string, unknown> {
  if (!p || typeof p !== 'object' || Array.isArray(p)) invalid('', 'the payload must be an object');
  return p as Record<string, unknown>;
}

function id(p: Record<string, unknown>, field: string): string {
  const v = p[field];
  if (typeof v !== 'string' || !v || v.length > MAX_ID_CHARS) invalid(field, `a non-empty string of at most ${MAX_ID_CHARS} characters`);
  return v;
}

function nonNegativeInt(p: Record<string, unknown>, field: string): number {
  const v = p[field];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) invalid(field, 'an integer ≥ 0');
  return v;
}

export function parseSend(raw: unknown): SendPayload {
  const p = object(raw);
  const out: SendPayload = { channelId: id(p, 'channelId'), text: '', clientMsgId: id(p, 'clientMsgId') };
  if (p.text !== undefined) {
    if (typeof p.text !== 'string') invalid('text', 'a string');
    out.text = p.text;
  }
  if (p.attachments !== undefined) {
    if (!Array.isArray(p.attachments)) invalid('attachments', 'an array');
    out.attachments = p.attachments;
  }
  if (p.data !== undefined) {
    if (!p.data || typeof p.data !== 'object' || Array.isArray(p.data)) invalid('data', 'an object');
    out.data = p.data as Record<string, unknown>;
  }
  if (!out.text && !out.attachments?.length) invalid('text', 'a message needs text or attachments');
  return out;
}

export function parseSync(raw: unknown): Required<SyncPayload> {
  const p = object(raw);
  const channelId = id(p, 'channelId');
  const afterSeq = nonNegativeInt(p, 'afterSeq');
  let limit = SYNC_DEFAULT_LIMIT;
  if (p.limit !== undefined) {
    limit = nonNegativeInt(p, 'limit');
    if (limit < 1 || limit > SYNC_MAX_LIMIT) invalid('limit', `from 1 to ${SYNC_MAX_LIMIT}`);
  }
  return { channelId, afterSeq, limit };
}

export function parseChannel(raw: unknown): { channelId: string } {
  return { channelId: id(object(raw), 'channelId') };
}

export function parseRead(raw: unknown): { channelId: string; seq: number } {
  const p = object(raw);
  return { channelId: id(p, 'channelId'), seq: nonNegativeInt(p, 'seq') };
}

export function parsePresence(raw: unknown): { userIds: string[] } {
  const p = object(raw);
  if (!Array.isArray(p.userIds) || p.userIds.length > PRESENCE_MAX_USERS) invalid('userIds', `an array of at most ${PRESENCE_MAX_USERS} user ids`);
  for (const u of p.userIds) if (typeof u !== 'string' || !u || u.length > MAX_ID_CHARS) invalid('userIds', 'user ids are non-empty strings');
  return { userIds: [...new Set(p.userIds as string[])] };
}

/** The ack for an error: an ApiError's code, message and data; anything else INTERNAL_ERROR (logged by the caller). */
export function ackError(err: unknown): AckError {
  if (err instanceof ApiError) return { ok: false, error: { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) } };
  return { ok: false, error: { code: 'INTERNAL_ERROR', message: 'Internal error' } };
}
