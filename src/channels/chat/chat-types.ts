/**
 * The shapes the chat module's parts agree on: the stored objects as the API shows them, and what the service tells
 * the real-time side after each commit (chat-service.ts → realtime/).
 */
import type { EndUser } from '../../http/auth.js';

export type ChannelType = 'messaging' | 'livechat';
export type MemberRole = 'owner' | 'member';

export interface ChatUser {
  id: string;
  name: string | null;
  image: string | null;
  data: Record<string, unknown>;
  banned: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface ChatChannel {
  id: string;
  type: ChannelType;
  name: string | null;
  data: Record<string, unknown>;
  createdBy: string | null;
  /** The sequence number of its newest message (0: none yet). */
  lastSeq: number;
  lastMessageAt: string | null;
  memberCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface ChatMember {
  channelId: string;
  userId: string;
  role: MemberRole;
  muted: boolean;
  /** The newest sequence number this member has read (0: nothing). */
  lastReadSeq: number;
  joinedAt: string;
}

export interface ChatMessage {
  id: string;
  channelId: string;
  /** Per channel, from 1, without gaps: a client resyncs with `afterSeq`. */
  seq: number;
  /** null: sent by the system (the server API without `userId`). */
  userId: string | null;
  type: 'regular' | 'system';
  text: string;
  attachments: unknown[];
  data: Record<string, unknown>;
  clientMsgId: string | null;
  createdAt: string;
  updatedAt: string;
  /** Set when deleted; the text and attachments are then emptied, the seq kept. */
  deletedAt: string | null;
}

/** A verified end-user token: the platform's EndUser plus what revocation checks. */
export interface ChatTokenClaims extends EndUser {
  /** Issued at, in seconds (the JWT's iat). */
  issuedAt: number;
  /** Expires at, in seconds (the JWT's exp). */
  expiresAt: number;
}

/**
 * What the service tells the real-time side after a commit (never before: stored before sent). `members` are the
 * channel's member ids at that moment (for presence and offline push); the real-time side emits to the channel's room.
 */
export type ChatRealtimeEvent =
  | { type: 'message.new'; accountId: string; channelId: string; message: ChatMessage; members: string[]; mutedMembers: string[]; skipPush: boolean; channelName: string | null; senderName: string | null }
  | { type: 'message.updated' | 'message.deleted'; accountId: string; channelId: string; message: ChatMessage }
  | { type: 'member.added' | 'member.removed'; accountId: string; channelId: string; member: ChatMember | { channelId: string; userId: string } }
  | { type: 'read'; accountId: string; channelId: string; userId: string; lastReadSeq: number }
  | { type: 'channel.updated'; accountId: string; channel: ChatChannel }
  | { type: 'channel.deleted'; accountId: string; channelId: string }
  /** The user's tokens were revoked, the user banned or deleted: their live sockets are closed. */
  | { type: 'user.revoked'; accountId: string; userId: string; reason: 'revoked' | 'banned' | 'deleted' };

/** Implemented by the real-time side (realtime/chat-realtime.ts); the service calls it after each commit. */
export interface ChatRealtimeSink {
  publish(event: ChatRealtimeEvent): void;
}

/** A page of a channel's messages, oldest first. */
export interface MessagePage {
  messages: ChatMessage[];
  /** More exist past this page in the direction asked. */
  hasMore: boolean;
}

export interface SendMessageInput {
  accountId: string;
  channelId: string;
  /** The sender; null for a system message (server API only). */
  userId: string | null;
  text: string;
  attachments?: unknown[];
  data?: Record<string, unknown>;
  /** A client's id for this send: the same (user, clientMsgId) returns the stored message, never a second one. */
  clientMsgId?: string;
  /** No push to offline members for this message. */
  skipPush?: boolean;
}

/**
 * What the real-time side (and the widget and inbox) use of the service: chat-service.ts implements it. Every method
 * checks existence and membership where it says so and throws an ApiError with a code of errors.ts otherwise.
 */
export interface ChatServiceApi {
  /** Verifies an end-user token (signature, expiry, the account's key generation, the user's revocation and ban). */
  verifyToken(token: string): Promise<ChatTokenClaims>;
  /** Ids of the channels the user is a member of (what a socket joins), at most `limit`. */
  channelIdsOf(accountId: string, userId: string, limit: number): Promise<string[]>;
  /** Throws CHAT_CHANNEL_NOT_FOUND unless the channel exists and the user is a member (a non-member cannot tell it exists). */
  requireMember(accountId: string, channelId: string, userId: string): Promise<ChatMember>;
  /** Stores a message under the channel's next seq and emits message.new after the commit. `created` false: a retried clientMsgId. */
  sendMessage(input: SendMessageInput): Promise<{ message: ChatMessage; created: boolean }>;
  /** Messages after `afterSeq` (ascending) or before `beforeSeq` (the newest `limit` of them, ascending). */
  listMessages(accountId: string, channelId: string, o: { afterSeq?: number; beforeSeq?: number; limit: number }): Promise<MessagePage>;
  /** Moves the member's read mark forward (never back) and emits `read`. */
  markRead(accountId: string, channelId: string, userId: string, seq: number): Promise<ChatMember>;
  getUser(accountId: string, userId: string): Promise<ChatUser | null>;
}
