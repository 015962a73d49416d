import type { Logger } from 'pino';
import { ApiError, invalidField } from '../../http/errors.js';
import type { ModuleEvent, ModuleEvents } from '../../platform/event-sink.js';
import type { Db, TakeResult, Throttle, Transaction } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { ChatStore, decodeCursor, type ChannelWithReadState, type UserFields } from './chat-store.js';
import { ChatTokens, type RotateResult } from './chat-tokens.js';
import type {
  ChannelType,
  ChatChannel,
  ChatMember,
  ChatMessage,
  ChatRealtimeEvent,
  ChatRealtimeSink,
  ChatServiceApi,
  ChatTokenClaims,
  ChatUser,
  MemberRole,
  MessagePage,
  SendMessageInput,
} from './chat-types.js';
import type { ChatConfig } from './config.js';

export interface ChatServiceOptions {
  db: Db;
  events: ModuleEvents;
  config: ChatConfig;
  /** ctx.deriveKey('chat-tokens'): every account's token keys derive from it. */
  signingKey: Buffer;
  /** The real-time side: told of each change after its commit. */
  sink: ChatRealtimeSink;
  /** Per-user send limit shared by the instances (ctx.backends.throttle); none: unlimited. */
  throttle?: Throttle;
  log?: Logger;
  /** Milliseconds since the epoch (tests). */
  clock?: () => number;
}

/** Who acts: null for the server (an API key), else the end user whose token the request carries. */
export type Actor = string | null;

export interface MintInput extends UserFields {
  userId: string;
  expiresInSeconds?: number;
}

export interface CreateChannelInput {
  type: ChannelType;
  id?: string;
  members: string[];
  name?: string | null;
  data?: Record<string, unknown>;
  /** A user who owns it (and is made a member). */
  createdBy?: string;
}

export interface MessageChange {
  text?: string;
  attachments?: unknown[];
  data?: Record<string, unknown>;
}

/**
 * How long after its commit a message's push evaluation is left to the process that stored it before the
 * chat.push-outbox job may take it (that process crashed, or its queue was full).
 */
export const PUSH_OUTBOX_DUE_MS = 5000;

/** Marks a send that lost to a concurrent one with the same clientMsgId: its transaction rolls back. */
class DuplicateSend extends Error {}

/**
 * In-app chat's rules: user tokens, users, channels, members and messages. Every write commits with its webhook
 * events, and only then is the real-time side told (stored before sent). Every method takes the account: another
 * account's user or channel answers as one that does not exist; a channel an end user is not a member of, too.
 */
export class ChatService implements ChatServiceApi {
  readonly store = new ChatStore();
  private readonly tokens: ChatTokens;
  private readonly clock: () => number;

  constructor(private readonly o: ChatServiceOptions) {
    this.clock = o.clock ?? Date.now;
    this.tokens = new ChatTokens({ signingKey: o.signingKey, clock: this.clock });
  }

  get db(): Db {
    return this.o.db;
  }

  get config(): ChatConfig {
    return this.o.config;
  }

  /**
   * Runs a change in one transaction with its webhook events; after the commit, wakes delivery and tells the
   * real-time side. A failure of the latter is logged, never the caller's: the change is stored.
   */
  private async write<T>(fn: (q: Transaction, emit: (e: ModuleEvent) => Promise<void>, publish: (e: ChatRealtimeEvent) => void) => Promise<T>): Promise<T> {
    const published: ChatRealtimeEvent[] = [];
    let emitted = 0;
    const result = await this.o.db.tx((q) =>
      fn(
        q,
        async (e) => {
          emitted += await this.o.events.emit(q, e);
        },
        (e) => published.push(e),
      ),
    );
    if (emitted) this.o.events.wake();
    for (const e of published) {
      try {
        this.o.sink.publish(e);
      } catch (err) {
        this.o.log?.warn({ err, type: e.type }, 'chat: the real-time side refused an event (stored; clients resync)');
      }
    }
    return result;
  }

  // Tokens

  verifyToken(token: string): Promise<ChatTokenClaims> {
    return this.tokens.verify(this.o.db, token);
  }

  /**
   * Upserts the user (the fields given) and mints a token. Its iat is never before the user's revocation mark (a
   * whole second), so a token minted in the second of a revoke-tokens holds.
   */
  async mintToken(accountId: string, input: MintInput): Promise<{ token: string; expiresAt: string; user: ChatUser }> {
    const ttl = input.expiresInSeconds ?? this.o.config.tokenTtlSeconds;
    if (ttl > this.o.config.maxTokenTtlSeconds) throw invalidField('body.expiresInSeconds', `must be at most chat.maxTokenTtlSeconds (${this.o.config.maxTokenTtlSeconds})`);
    const { user, generation } = await this.o.db.tx(async (q) => {
      const { tokensValidAfter, ...user } = await this.store.upsertUser(q, accountId, input.userId, { name: input.name, image: input.image, data: input.data });
      if (user.banned) throw new ApiError('CHAT_USER_BANNED');
      return { user: { user, tokensValidAfter }, generation: await this.tokens.currentGeneration(q, accountId) };
    });
    const nowSeconds = Math.floor(this.clock() / 1000);
    const issuedAt = Math.max(nowSeconds, user.tokensValidAfter ? Math.ceil(user.tokensValidAfter.getTime() / 1000) : 0);
    const expiresAt = issuedAt + ttl;
    const token = await this.tokens.sign(accountId, input.userId, generation, issuedAt, expiresAt);
    return { token, expiresAt: new Date(expiresAt * 1000).toISOString(), user: user.user };
  }

  rotateSecret(accountId: string, graceSeconds?: number): Promise<RotateResult> {
    return this.tokens.rotate(this.o.db, accountId, graceSeconds ?? this.o.config.secretGraceSeconds);
  }

  /**
   * One send of an end user against chat.messagesPerSecond (burst twice that), shared by every instance through the
   * platform's throttle under `chat:send:<account>:<user>`; null when no throttle is wired.
   */
  async allowSend(accountId: string, userId: string): Promise<TakeResult | null> {
    if (!this.o.throttle) return null;
    const rate = this.o.config.messagesPerSecond;
    return this.o.throttle.take(`chat:send:${accountId}:${userId}`, rate, rate * 2);
  }

  // Users

  getUser(accountId: string, userId: string): Promise<ChatUser | null> {
    return this.store.getUser(this.o.db, accountId, userId);
  }

  async updateUser(accountId: string, userId: string, f: UserFields): Promise<ChatUser> {
    const user = await this.store.updateUser(this.o.db, accountId, userId, f);
    if (!user) throw new ApiError('CHAT_USER_NOT_FOUND');
    return user;
  }

  /** Deletes the user and their memberships; their messages stay (with their id); their tokens and sockets end. */
  async deleteUser(accountId: string, userId: string): Promise<{ id: string; channelsLeft: string[] }> {
    return this.write(async (q, emit, publish) => {
      const left = await this.store.deleteUser(q, accountId, userId);
      if (left === null) throw new ApiError('CHAT_USER_NOT_FOUND');
      for (const channelId of left) {
        await emit({ accountId, type: 'chat.member.removed', data: { channelId, userIds: [userId] }, messageKey: channelId });
        publish({ type: 'member.removed', accountId, channelId, member: { channelId, userId } });
      }
      publish({ type: 'user.revoked', accountId, userId, reason: 'deleted' });
      return { id: userId, channelsLeft: left };
    });
  }

  /** A banned user's tokens are refused and their sockets closed until unbanned; memberships stay. */
  async setBanned(accountId: string, userId: string, banned: boolean): Promise<ChatUser> {
    return this.write(async (q, _emit, publish) => {
      const user = await this.store.setBanned(q, accountId, userId, banned);
      if (!user) throw new ApiError('CHAT_USER_NOT_FOUND');
      if (banned) publish({ type: 'user.revoked', accountId, userId, reason: 'banned' });
      return user;
    });
  }

  /** Every token the user holds now is refused (from the next whole second on); new ones may be minted. */
  async revokeTokens(accountId: string, userId: string): Promise<ChatUser> {
    const validAfter = new Date((Math.floor(this.clock() / 1000) + 1) * 1000);
    return this.write(async (q, _emit, publish) => {
      const user = await this.store.revokeTokens(q, accountId, userId, validAfter);
      if (!user) throw new ApiError('CHAT_USER_NOT_FOUND');
      publish({ type: 'user.revoked', accountId, userId, reason: 'revoked' });
      return user;
    });
  }

  // Channels

  /** Creates a channel with its members (users not known yet are created bare); createdBy is made its owner. */
  async createChannel(accountId: string, input: CreateChannelInput): Promise<{ channel: ChatChannel; members: ChatMember[] }> {
    const memberIds = [...new Set([...(input.createdBy ? [input.createdBy] : []), ...input.members])];
    if (memberIds.length > this.o.config.maxMembersPerChannel) throw new ApiError('CHAT_TOO_MANY_MEMBERS', { data: { limit: this.o.config.maxMembersPerChannel } });
    const id = input.id ?? newId('chn_');
    return this.write(async (q, emit, publish) => {
      await this.store.ensureUsers(q, accountId, memberIds);
      const channel = await this.store.insertChannel(q, accountId, { id, type: input.type, name: input.name ?? null, data: input.data ?? {}, createdBy: input.createdBy ?? null, memberCount: memberIds.length });
      if (!channel) throw new ApiError('CHAT_CHANNEL_EXISTS', { data: { channelId: id } });
      const members = await this.store.addMembers(q, accountId, id, memberIds, (u) => (u === input.createdBy ? 'owner' : 'member'), false);
      await emit({ accountId, type: 'chat.channel.created', data: { channel, memberIds: members.map((m) => m.userId) }, messageKey: id });
      for (const member of members) publish({ type: 'member.added', accountId, channelId: id, member });
      return { channel, members };
    });
  }

  getChannel(accountId: string, channelId: string): Promise<ChatChannel | null> {
    return this.store.getChannel(this.o.db, accountId, channelId);
  }

  /** The account's channels, or a member's (with read state), by latest activity; `cursor` is the previous page's nextCursor. */
  async listChannels(accountId: string, o: { member?: string; type?: ChannelType; cursor?: string; limit: number }): Promise<{ channels: ChannelWithReadState[]; nextCursor: string | null }> {
    const after = o.cursor === undefined ? null : decodeCursor(o.cursor);
    if (o.cursor !== undefined && after === null) throw invalidField('querystring.cursor', 'is not a cursor this list gave');
    const channels = await this.store.listChannels(this.o.db, accountId, { member: o.member, type: o.type, after, limit: o.limit });
    return { channels, nextCursor: channels.length === o.limit ? channels[channels.length - 1].cursor : null };
  }

  /** Renames or changes the data of a channel: the server, or its owner. */
  async updateChannel(accountId: string, channelId: string, f: { name?: string | null; data?: Record<string, unknown> }, actor: Actor): Promise<ChatChannel> {
    if (actor !== null) await this.requireOwner(accountId, channelId, actor);
    return this.write(async (q, emit, publish) => {
      const channel = await this.store.updateChannel(q, accountId, channelId, f);
      if (!channel) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
      await emit({ accountId, type: 'chat.channel.updated', data: { channel }, messageKey: channelId });
      publish({ type: 'channel.updated', accountId, channel });
      return channel;
    });
  }

  /** Deletes a channel with its members and history. */
  async deleteChannel(accountId: string, channelId: string): Promise<void> {
    await this.write(async (q, emit, publish) => {
      if (!(await this.store.deleteChannel(q, accountId, channelId))) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
      await emit({ accountId, type: 'chat.channel.deleted', data: { channelId }, messageKey: channelId });
      publish({ type: 'channel.deleted', accountId, channelId });
    });
  }

  // Members

  channelIdsOf(accountId: string, userId: string, limit: number): Promise<string[]> {
    return this.store.channelIdsOf(this.o.db, accountId, userId, limit);
  }

  async requireMember(accountId: string, channelId: string, userId: string): Promise<ChatMember> {
    const member = await this.store.getMember(this.o.db, accountId, channelId, userId);
    if (!member) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
    return member;
  }

  private async requireOwner(accountId: string, channelId: string, userId: string): Promise<ChatMember> {
    const member = await this.requireMember(accountId, channelId, userId);
    if (member.role !== 'owner') throw new ApiError('CHAT_NOT_ALLOWED', { message: 'Only an owner of the channel may do this' });
    return member;
  }

  async listMembers(accountId: string, channelId: string, o: { after?: string; limit: number }): Promise<{ members: ChatMember[]; nextCursor: string | null }> {
    const members = await this.store.listMembers(this.o.db, accountId, channelId, o.after, o.limit);
    return { members, nextCursor: members.length === o.limit ? members[members.length - 1].userId : null };
  }

  /** Adds users (created bare when unknown) to a channel; those already members are left as they are. */
  async addMembers(accountId: string, channelId: string, userIds: string[], role: MemberRole = 'member'): Promise<{ added: ChatMember[]; channel: ChatChannel }> {
    const ids = [...new Set(userIds)];
    return this.write(async (q, emit, publish) => {
      // Locked: concurrent additions count against the limit one after the other.
      const channel = await this.store.getChannel(q, accountId, channelId, true);
      if (!channel) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
      await this.store.ensureUsers(q, accountId, ids);
      const added = await this.store.addMembers(q, accountId, channelId, ids, () => role, true);
      if (channel.memberCount + added.length > this.o.config.maxMembersPerChannel) throw new ApiError('CHAT_TOO_MANY_MEMBERS', { data: { limit: this.o.config.maxMembersPerChannel } });
      if (added.length) await emit({ accountId, type: 'chat.member.added', data: { channelId, userIds: added.map((m) => m.userId) }, messageKey: channelId });
      for (const member of added) publish({ type: 'member.added', accountId, channelId, member });
      return { added, channel: { ...channel, memberCount: channel.memberCount + added.length } };
    });
  }

  /** Removes a member: the server; an end user leaving; or an owner removing another. */
  async removeMember(accountId: string, channelId: string, userId: string, actor: Actor): Promise<void> {
    if (actor !== null && actor !== userId) await this.requireOwner(accountId, channelId, actor);
    await this.write(async (q, emit, publish) => {
      if (!(await this.store.removeMember(q, accountId, channelId, userId))) {
        if (actor === null && !(await this.store.getChannel(q, accountId, channelId))) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
        throw new ApiError(actor === userId ? 'CHAT_CHANNEL_NOT_FOUND' : 'CHAT_MEMBER_NOT_FOUND');
      }
      await emit({ accountId, type: 'chat.member.removed', data: { channelId, userIds: [userId] }, messageKey: channelId });
      publish({ type: 'member.removed', accountId, channelId, member: { channelId, userId } });
    });
  }

  /** Changes a member's role or mute: the server, or an owner. */
  async updateMember(accountId: string, channelId: string, userId: string, f: { role?: MemberRole; muted?: boolean }, actor: Actor): Promise<ChatMember> {
    if (actor !== null) await this.requireOwner(accountId, channelId, actor);
    const member = await this.store.updateMember(this.o.db, accountId, channelId, userId, f);
    if (member) return member;
    if (!(await this.store.getChannel(this.o.db, accountId, channelId))) throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
    throw new ApiError('CHAT_MEMBER_NOT_FOUND');
  }

  // Messages

  private checkSize(text: string, attachments: unknown[], data: Record<string, unknown>): void {
    const bytes = Buffer.byteLength(JSON.stringify({ text, attachments, data }));
    if (bytes > this.o.config.maxMessageBytes) throw new ApiError('CHAT_MESSAGE_TOO_LARGE', { data: { bytes, limit: this.o.config.maxMessageBytes } });
  }

  /** A stored message for a retried clientMsgId: the same channel's, or a conflict. */
  private retried(found: ChatMessage, channelId: string): { message: ChatMessage; created: false } {
    if (found.channelId !== channelId) throw new ApiError('CONFLICT', { message: 'This clientMsgId was used for a message in another channel', data: { channelId: found.channelId, messageId: found.id } });
    return { message: found, created: false };
  }

  /**
   * Stores a message under the channel's next seq, then tells the real-time side. The same sender's clientMsgId
   * returns the stored message (created false), even when two sends with it race. `server`: the caller is the server
   * API, told CHAT_MEMBER_NOT_FOUND for a sender that is no member (an end user is told the channel is not found).
   */
  async sendMessage(input: SendMessageInput, o: { server?: boolean } = {}): Promise<{ message: ChatMessage; created: boolean }> {
    const attachments = input.attachments ?? [];
    const data = input.data ?? {};
    this.checkSize(input.text, attachments, data);
    const clientMsgId = input.clientMsgId ?? null;
    if (clientMsgId !== null) {
      const found = await this.store.byClientMsgId(this.o.db, input.accountId, input.userId, clientMsgId);
      if (found) return this.retried(found, input.channelId);
    }
    try {
      const message = await this.write(async (q, emit, publish) => {
        const next = await this.store.nextSeq(q, input.accountId, input.channelId, input.userId);
        if (!next) throw await this.whyNotSender(q, input.accountId, input.channelId, input.userId, o.server === true);
        const message: Omit<ChatMessage, 'createdAt' | 'updatedAt' | 'deletedAt'> = {
          id: newId('msg_'),
          channelId: input.channelId,
          seq: next.seq,
          userId: input.userId,
          type: input.userId === null ? 'system' : 'regular',
          text: input.text,
          attachments,
          data,
          clientMsgId,
        };
        // A message that may push someone is stored with its push evaluation in the outbox (durable offline push).
        const mayPush = input.skipPush !== true && next.memberCount > 1;
        // Issued together (one round trip on Postgres), settled before anything is thrown.
        const [stored, ids, own] = await Promise.allSettled([
          this.store.insertMessage(q, input.accountId, message, mayPush ? PUSH_OUTBOX_DUE_MS : null),
          this.store.memberIds(q, input.accountId, input.channelId),
          input.userId === null ? Promise.resolve() : this.store.readOwn(q, input.accountId, input.channelId, input.userId, next.seq),
        ]);
        for (const r of [stored, ids, own]) if (r.status === 'rejected') throw r.reason;
        const saved = (stored as PromiseFulfilledResult<ChatMessage | null>).value;
        if (!saved) throw new DuplicateSend();
        const { members, muted } = (ids as PromiseFulfilledResult<{ members: string[]; muted: string[] }>).value;
        await emit({ accountId: input.accountId, type: 'chat.message.new', data: { ...saved }, messageKey: input.channelId });
        publish({
          type: 'message.new',
          accountId: input.accountId,
          channelId: input.channelId,
          message: saved,
          members,
          mutedMembers: muted,
          skipPush: input.skipPush === true,
          channelName: next.channelName,
          senderName: next.senderName,
        });
        return saved;
      });
      return { message, created: true };
    } catch (err) {
      if (!(err instanceof DuplicateSend) || clientMsgId === null) throw err;
      const found = await this.store.byClientMsgId(this.o.db, input.accountId, input.userId, clientMsgId);
      if (!found) throw new Error('chat: a send lost to a duplicate clientMsgId whose message is not there');
      return this.retried(found, input.channelId);
    }
  }

  /** Why nextSeq found no row: the channel, the membership, the ban or the mute. */
  private async whyNotSender(q: Transaction, accountId: string, channelId: string, userId: string | null, server: boolean): Promise<ApiError> {
    if (userId === null) return new ApiError('CHAT_CHANNEL_NOT_FOUND');
    const s = await this.store.senderState(q, accountId, channelId, userId);
    if (!s.channel) return new ApiError('CHAT_CHANNEL_NOT_FOUND');
    if (!s.member) return new ApiError(server ? 'CHAT_MEMBER_NOT_FOUND' : 'CHAT_CHANNEL_NOT_FOUND');
    if (s.banned) return new ApiError('CHAT_USER_BANNED');
    return new ApiError('CHAT_NOT_ALLOWED', { message: 'The member is muted in this channel' });
  }

  listMessages(accountId: string, channelId: string, o: { afterSeq?: number; beforeSeq?: number; limit: number }): Promise<MessagePage> {
    return this.store.listMessages(this.o.db, accountId, channelId, o);
  }

  /** Edits a message: the server, or its sender (unmuted). A deleted message stays deleted. */
  async updateMessage(accountId: string, channelId: string, messageId: string, f: MessageChange, actor: Actor): Promise<ChatMessage> {
    if (actor !== null) {
      const member = await this.requireMember(accountId, channelId, actor);
      if (member.muted) throw new ApiError('CHAT_NOT_ALLOWED', { message: 'The member is muted in this channel' });
    }
    return this.write(async (q, emit, publish) => {
      const current = await this.store.getMessage(q, accountId, channelId, messageId, true);
      if (!current) throw await this.messageNotFound(q, accountId, channelId, actor);
      if (actor !== null && current.userId !== actor) throw new ApiError('CHAT_NOT_ALLOWED', { message: 'Only its sender may edit a message' });
      if (current.deletedAt !== null) throw new ApiError('CHAT_NOT_ALLOWED', { message: 'The message was deleted' });
      const next = { text: f.text ?? current.text, attachments: f.attachments ?? current.attachments, data: f.data ?? current.data };
      this.checkSize(next.text, next.attachments, next.data);
      const message = await this.store.updateMessage(q, accountId, messageId, next);
      await emit({ accountId, type: 'chat.message.updated', data: { ...message }, messageKey: channelId });
      publish({ type: 'message.updated', accountId, channelId, message });
      return message;
    });
  }

  /** Deletes a message (soft: its seq stays): the server, its sender, or an owner of the channel. Again: no change. */
  async deleteMessage(accountId: string, channelId: string, messageId: string, actor: Actor): Promise<ChatMessage> {
    const member = actor === null ? null : await this.requireMember(accountId, channelId, actor);
    return this.write(async (q, emit, publish) => {
      const current = await this.store.getMessage(q, accountId, channelId, messageId, true);
      if (!current) throw await this.messageNotFound(q, accountId, channelId, actor);
      if (member && current.userId !== member.userId && member.role !== 'owner') throw new ApiError('CHAT_NOT_ALLOWED', { message: 'Only its sender or an owner may delete a message' });
      if (current.deletedAt !== null) return current;
      const message = await this.store.deleteMessage(q, accountId, messageId);
      await emit({ accountId, type: 'chat.message.deleted', data: { ...message }, messageKey: channelId });
      publish({ type: 'message.deleted', accountId, channelId, message });
      return message;
    });
  }

  private async messageNotFound(q: Transaction, accountId: string, channelId: string, actor: Actor): Promise<ApiError> {
    if (actor === null && !(await this.store.getChannel(q, accountId, channelId))) return new ApiError('CHAT_CHANNEL_NOT_FOUND');
    return new ApiError('CHAT_MESSAGE_NOT_FOUND');
  }

  /** Moves the member's read mark forward (never back, never past the last message); `read` goes out when it moved. */
  async markRead(accountId: string, channelId: string, userId: string, seq: number, o: { server?: boolean } = {}): Promise<ChatMember> {
    const r = await this.store.markRead(this.o.db, accountId, channelId, userId, seq);
    if (!r) {
      if (o.server && (await this.store.getChannel(this.o.db, accountId, channelId))) throw new ApiError('CHAT_MEMBER_NOT_FOUND');
      throw new ApiError('CHAT_CHANNEL_NOT_FOUND');
    }
    if (r.moved) {
      try {
        this.o.sink.publish({ type: 'read', accountId, channelId, userId, lastReadSeq: r.member.lastReadSeq });
      } catch (err) {
        this.o.log?.warn({ err, type: 'read' }, 'chat: the real-time side refused an event');
      }
    }
    return r.member;
  }
}
