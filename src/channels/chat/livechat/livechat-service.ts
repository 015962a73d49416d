import { createHash } from 'node:crypto';
import { ApiError, invalidField, rateLimited } from '../../../http/errors.js';
import type { Db, Throttle } from '../../../store/types.js';
import type { ChatService } from '../chat-service.js';
import type { ChatMessage, ChatServiceApi, ChatTokenClaims } from '../chat-types.js';
import { checkBusinessHours, isOpen } from './business-hours.js';
import { AGENT_USER_PREFIX, LivechatSecrets, VISITOR_USER_PREFIX, isVisitorKey, newVisitorKey } from './identity.js';
import {
  type Conversation,
  type ConversationStatus,
  type ConversationSummary,
  type Inbox,
  type InboxInput,
  type InboxRow,
  LivechatStore,
  type PreChatForm,
  type VisitorDetails,
  inboxView,
} from './livechat-store.js';

/** What live chat uses of chat's service: ChatService (its interface for the real-time side, plus minting and channels). */
export type LivechatChat = ChatServiceApi & Pick<ChatService, 'mintToken' | 'createChannel' | 'addMembers' | 'allowSend'>;

/** Widget request limits (the core throttle, shared by every instance): per visitor, per client address, per widget key. */
export interface WidgetLimits {
  perVisitorPerSecond: number;
  perVisitorBurst: number;
  /** A visitor not known yet (a first session) counts by address: looser, as many visitors may share one (a NAT, a proxy). */
  perAddressPerSecond: number;
  perAddressBurst: number;
  perKeyPerSecond: number;
  perKeyBurst: number;
}

export const DEFAULT_WIDGET_LIMITS: WidgetLimits = {
  perVisitorPerSecond: 2,
  perVisitorBurst: 20,
  perAddressPerSecond: 10,
  perAddressBurst: 100,
  perKeyPerSecond: 100,
  perKeyBurst: 500,
};

/** Who a widget request counts against besides its widget key: a visitor, a client address, or nobody (the public config). */
export type WidgetCaller = { visitor: string } | { address: string } | null;

/** What the widget learns of its inbox (public: anyone with the page's widget key sees it). */
export interface WidgetInboxView {
  name: string;
  greeting: string | null;
  /** Inside business hours (or none set). */
  online: boolean;
  offlineMode: 'form' | 'hide';
  preChatForm: PreChatForm | null;
  requireIdentity: boolean;
}

export interface SessionInput {
  widgetKey: string;
  visitorId?: string;
  visitorName?: string;
  email?: string;
  pageUrl?: string;
  identity?: { userId: string; hmac: string };
}

export interface SessionResult {
  token: string;
  expiresAt: string;
  userId: string;
  /** A new anonymous visitor's key (none was given), to keep and give again; null otherwise. */
  visitorId: string | null;
  identified: boolean;
  conversation: { channelId: string; status: ConversationStatus } | null;
  inbox: WidgetInboxView;
}

export interface VisitorSendInput {
  widgetKey: string;
  text: string;
  clientMsgId?: string;
  visitor?: VisitorDetails;
}

/** The signed-in agent a page call acts for. */
export interface Agent {
  accountId: string;
  agentId: string;
  agentName: string | null;
}

/** A conversation's channel id: one per inbox and visitor, the same however often they come back. */
export function conversationChannelId(inboxId: string, visitorUserId: string): string {
  return `lc_${createHash('sha256').update(`${inboxId}\n${visitorUserId}`).digest('base64url').slice(0, 32)}`;
}

const MAX_DETAIL = 300;

function cleanDetails(d: VisitorDetails | undefined): VisitorDetails {
  const out: VisitorDetails = {};
  if (!d) return out;
  for (const k of ['name', 'email', 'pageUrl', 'userAgent'] as const) {
    const v = d[k];
    if (typeof v === 'string' && v.trim()) out[k] = v.trim().slice(0, MAX_DETAIL);
  }
  return out;
}

const changed = (before: VisitorDetails, add: VisitorDetails) => Object.entries(add).some(([k, v]) => before[k as keyof VisitorDetails] !== v);

/**
 * Live chat: inboxes (server API), the widget's visitor sessions and sends, and what agents do on the inbox page.
 * Conversations are chat channels of type `livechat` (the visitor and the agents who opened them are members); their
 * state (status, assignee, visitor details) is live chat's own table. Visitor sends go through here (not the socket)
 * so that a conversation's status follows them: pending outside business hours, open again when a resolved one gets
 * a message.
 */
export class LivechatService {
  readonly store: LivechatStore;
  private readonly limits: WidgetLimits;

  constructor(
    private readonly o: {
      db: Db;
      chat: () => LivechatChat;
      secrets: LivechatSecrets;
      throttle: Throttle;
      limits?: Partial<WidgetLimits>;
      clock?: () => number;
    },
  ) {
    this.store = new LivechatStore(o.db);
    this.limits = { ...DEFAULT_WIDGET_LIMITS, ...o.limits };
  }

  get chat(): LivechatChat {
    return this.o.chat();
  }

  private now(): Date {
    return new Date((this.o.clock ?? Date.now)());
  }

  // Inboxes (server API)

  identitySecret(inbox: InboxRow): string {
    return this.o.secrets.identitySecret(inbox.accountId, inbox.id, inbox.identityGeneration);
  }

  async createInbox(accountId: string, input: InboxInput & { name: string }): Promise<{ inbox: Inbox; identitySecret: string }> {
    checkBusinessHours(input.businessHours);
    const row = await this.store.createInbox(accountId, input);
    return { inbox: inboxView(row), identitySecret: this.identitySecret(row) };
  }

  async getInbox(accountId: string, inboxId: string): Promise<InboxRow> {
    const row = await this.store.getInbox(accountId, inboxId);
    if (!row) throw new ApiError('CHAT_INBOX_NOT_FOUND');
    return row;
  }

  async updateInbox(accountId: string, inboxId: string, input: InboxInput): Promise<Inbox> {
    checkBusinessHours(input.businessHours);
    const row = await this.store.updateInbox(accountId, inboxId, input);
    if (!row) throw new ApiError('CHAT_INBOX_NOT_FOUND');
    return inboxView(row);
  }

  async deleteInbox(accountId: string, inboxId: string): Promise<void> {
    if (!(await this.store.deleteInbox(accountId, inboxId))) throw new ApiError('CHAT_INBOX_NOT_FOUND');
  }

  async rotateIdentitySecret(accountId: string, inboxId: string): Promise<{ inbox: Inbox; identitySecret: string }> {
    const row = await this.store.rotateIdentity(accountId, inboxId);
    if (!row) throw new ApiError('CHAT_INBOX_NOT_FOUND');
    return { inbox: inboxView(row), identitySecret: this.identitySecret(row) };
  }

  // Widget (public, by widget key)

  /** Counts one widget request against the caller's and the widget key's budgets; RATE_LIMIT_EXCEEDED past either. */
  async limit(widgetKey: string, caller: WidgetCaller): Promise<void> {
    const l = this.limits;
    if (caller && 'visitor' in caller) {
      const r = await this.o.throttle.take(`chat-widget:visitor:${widgetKey}:${caller.visitor}`, l.perVisitorPerSecond, l.perVisitorBurst);
      if (!r.allowed) throw rateLimitedWidget(r.retryAfterMs, 'visitor');
    } else if (caller) {
      const r = await this.o.throttle.take(`chat-widget:address:${widgetKey}:${caller.address}`, l.perAddressPerSecond, l.perAddressBurst);
      if (!r.allowed) throw rateLimitedWidget(r.retryAfterMs, 'address');
    }
    const perKey = await this.o.throttle.take(`chat-widget:key:${widgetKey}`, l.perKeyPerSecond, l.perKeyBurst);
    if (!perKey.allowed) throw rateLimitedWidget(perKey.retryAfterMs, 'widgetKey');
  }

  /** chat.messagesPerSecond per end user, as every other send of chat counts it. */
  private async allowSend(accountId: string, userId: string): Promise<void> {
    const r = await this.chat.allowSend(accountId, userId);
    if (r && !r.allowed) throw rateLimited('RATE_LIMIT_EXCEEDED', r.retryAfterMs);
  }

  private async inboxOfKey(widgetKey: string): Promise<InboxRow> {
    const inbox = await this.store.inboxByWidgetKey(widgetKey);
    if (!inbox) throw new ApiError('CHAT_WIDGET_KEY_UNKNOWN');
    return inbox;
  }

  private widgetView(inbox: InboxRow): WidgetInboxView {
    return {
      name: inbox.name,
      greeting: inbox.greeting,
      online: isOpen(inbox.businessHours, this.now()),
      offlineMode: inbox.offlineMode,
      preChatForm: inbox.preChatForm,
      requireIdentity: inbox.requireIdentity,
    };
  }

  async widgetConfig(widgetKey: string): Promise<WidgetInboxView> {
    return this.widgetView(await this.inboxOfKey(widgetKey));
  }

  /**
   * A visitor's session: an identified visitor (identity.hmac checked in constant time) or an anonymous one (their
   * key, or a new one), a chat user token for them, and their conversation if they have one (made at the first send).
   */
  async session(input: SessionInput, client: { userAgent?: string }): Promise<SessionResult> {
    const inbox = await this.inboxOfKey(input.widgetKey);
    let userId: string;
    let visitorKey: string | null = null;
    let newKey = false;
    if (input.identity) {
      // The prefixes of anonymous visitors and agents are live chat's own: no HMAC makes a visitor one of them.
      if (input.identity.userId.startsWith(VISITOR_USER_PREFIX) || input.identity.userId.startsWith(AGENT_USER_PREFIX)) {
        throw invalidField('identity.userId', `${VISITOR_USER_PREFIX}… and ${AGENT_USER_PREFIX}… are live chat's own user ids`);
      }
      if (!this.o.secrets.identityValid(this.identitySecret(inbox), input.identity.userId, input.identity.hmac)) throw new ApiError('CHAT_IDENTITY_INVALID');
      userId = input.identity.userId;
    } else {
      if (inbox.requireIdentity) throw new ApiError('CHAT_IDENTITY_REQUIRED');
      newKey = !isVisitorKey(input.visitorId);
      visitorKey = newKey ? newVisitorKey() : (input.visitorId as string);
      userId = this.o.secrets.visitorUserId(inbox.accountId, visitorKey);
    }
    const details = cleanDetails({ name: input.visitorName, email: input.email, pageUrl: input.pageUrl, userAgent: client.userAgent });
    const { token, expiresAt } = await this.chat.mintToken(inbox.accountId, { userId, ...(details.name ? { name: details.name } : {}) });
    let conversation = await this.store.conversationOfVisitor(inbox.accountId, inbox.id, userId);
    if (conversation && changed(conversation.visitor, details)) conversation = (await this.store.mergeVisitor(inbox.accountId, conversation.channelId, details, input.identity !== undefined)) ?? conversation;
    return {
      token,
      expiresAt,
      userId,
      // Returned only when made here (the widget makes its own): a key that travels less is logged nowhere.
      visitorId: newKey ? visitorKey : null,
      identified: input.identity !== undefined,
      conversation: conversation && { channelId: conversation.channelId, status: conversation.status },
      inbox: this.widgetView(inbox),
    };
  }

  /** The inbox of a widget key that a visitor's token may speak to (same account; identified when the inbox requires it). */
  private async visitorInbox(claims: ChatTokenClaims, widgetKey: string): Promise<InboxRow> {
    const inbox = await this.inboxOfKey(widgetKey);
    if (inbox.accountId !== claims.accountId) throw new ApiError('CHAT_WIDGET_KEY_UNKNOWN');
    if (claims.userId.startsWith(AGENT_USER_PREFIX)) throw new ApiError('CHAT_NOT_ALLOWED', { message: "An agent's token does not speak as a visitor" });
    if (inbox.requireIdentity && claims.userId.startsWith(VISITOR_USER_PREFIX)) throw new ApiError('CHAT_IDENTITY_REQUIRED');
    return inbox;
  }

  /**
   * A visitor's message: the conversation is made at the first one (its channel, then its row), the pre-chat form's
   * required fields are checked (and an email outside business hours, so that the message can be answered), and the
   * conversation is pending (offline) or open after it.
   */
  async visitorSend(claims: ChatTokenClaims, input: VisitorSendInput, client: { userAgent?: string } = {}): Promise<{ message: ChatMessage; created: boolean; conversation: Conversation }> {
    const inbox = await this.visitorInbox(claims, input.widgetKey);
    const online = isOpen(inbox.businessHours, this.now());
    if (!online && inbox.offlineMode === 'hide') throw new ApiError('CHAT_INBOX_OFFLINE');
    const identified = !claims.userId.startsWith(VISITOR_USER_PREFIX);
    let conversation = await this.store.conversationOfVisitor(inbox.accountId, inbox.id, claims.userId);
    const given = cleanDetails({ ...input.visitor, ...(client.userAgent ? { userAgent: client.userAgent } : {}) });
    const details = { ...conversation?.visitor, ...given };
    const missing: string[] = [];
    if (inbox.preChatForm?.name?.required && !details.name) missing.push('name');
    if ((inbox.preChatForm?.email?.required || !online) && !details.email) missing.push('email');
    if (missing.length) throw new ApiError('CHAT_PRECHAT_REQUIRED', { data: { fields: missing } });

    if (!conversation) {
      const channelId = conversationChannelId(inbox.id, claims.userId);
      try {
        await this.chat.createChannel(inbox.accountId, {
          type: 'livechat',
          id: channelId,
          members: [claims.userId],
          name: `${inbox.name}: ${details.name ?? details.email ?? 'visitor'}`.slice(0, 200),
          data: { livechat: { inboxId: inbox.id } },
          // No owner: the visitor is a plain member (an owner could remove the agents or rename the channel).
        });
      } catch (err) {
        // A concurrent first message made it: the visitor is its member already.
        if (!(err instanceof ApiError && err.code === 'CHAT_CHANNEL_EXISTS')) throw err;
        await this.chat.addMembers(inbox.accountId, channelId, [claims.userId]);
      }
      conversation = await this.store.insertConversation(inbox.accountId, { channelId, inboxId: inbox.id, visitorId: claims.userId, status: online ? 'open' : 'pending', visitor: details, identified });
    } else if (changed(conversation.visitor, given)) {
      conversation = (await this.store.mergeVisitor(inbox.accountId, conversation.channelId, given, identified)) ?? conversation;
    }
    await this.allowSend(inbox.accountId, claims.userId);
    const sent = await this.chat.sendMessage({ accountId: inbox.accountId, channelId: conversation.channelId, userId: claims.userId, text: input.text, clientMsgId: input.clientMsgId });
    if (sent.created) conversation = (await this.store.visitorWrote(inbox.accountId, conversation.channelId, online ? 'open' : 'pending')) ?? conversation;
    return { ...sent, conversation };
  }

  /** The visitor's conversation history (oldest first) and the agents' read marks; empty before the first message. */
  async visitorMessages(
    claims: ChatTokenClaims,
    widgetKey: string,
    page: { afterSeq?: number; beforeSeq?: number; limit: number },
  ): Promise<{ conversation: { channelId: string; status: ConversationStatus } | null; messages: ChatMessage[]; hasMore: boolean; agentReadSeq: number }> {
    const inbox = await this.visitorInbox(claims, widgetKey);
    const conversation = await this.store.conversationOfVisitor(inbox.accountId, inbox.id, claims.userId);
    if (!conversation) return { conversation: null, messages: [], hasMore: false, agentReadSeq: 0 };
    const [p, agentReadSeq] = await Promise.all([
      this.chat.listMessages(inbox.accountId, conversation.channelId, page),
      this.store.othersReadSeq(inbox.accountId, conversation.channelId, claims.userId),
    ]);
    return { conversation: { channelId: conversation.channelId, status: conversation.status }, ...p, agentReadSeq };
  }

  // Agents (the inbox page, and the server API's conversation routes)

  async listConversations(
    accountId: string,
    f: { status?: ConversationStatus; inboxId?: string; assignee?: string | null; agentId?: string; cursor?: string; limit: number },
  ): Promise<{ items: ConversationSummary[]; nextCursor: string | null }> {
    return this.store.listConversations(accountId, f);
  }

  async conversation(accountId: string, channelId: string): Promise<Conversation> {
    const c = await this.store.getConversation(accountId, channelId);
    if (!c) throw new ApiError('CHAT_CONVERSATION_NOT_FOUND');
    return c;
  }

  /** Whether the user is a member of the conversation's channel now. */
  private async isMember(accountId: string, channelId: string, userId: string): Promise<{ lastReadSeq: number } | null> {
    try {
      return await this.chat.requireMember(accountId, channelId, userId);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'CHAT_CHANNEL_NOT_FOUND') return null;
      throw err;
    }
  }

  /** A conversation with its newest messages (oldest first), whether the agent has joined it and the visitor's read mark. */
  async openConversation(
    agent: Agent,
    channelId: string,
    page: { beforeSeq?: number; limit: number },
  ): Promise<{ conversation: Conversation; messages: ChatMessage[]; hasMore: boolean; joined: boolean; agentReadSeq: number; visitorReadSeq: number }> {
    const conversation = await this.conversation(agent.accountId, channelId);
    const [p, me, visitor] = await Promise.all([
      this.chat.listMessages(agent.accountId, channelId, page),
      this.isMember(agent.accountId, channelId, agent.agentId),
      this.isMember(agent.accountId, channelId, conversation.visitorId),
    ]);
    return { conversation, ...p, joined: me !== null, agentReadSeq: me?.lastReadSeq ?? 0, visitorReadSeq: visitor?.lastReadSeq ?? 0 };
  }

  /** The agent becomes a member of the conversation's channel (its socket then gets the channel's events). */
  async join(agent: Agent, channelId: string): Promise<Conversation> {
    const conversation = await this.conversation(agent.accountId, channelId);
    if (!(await this.isMember(agent.accountId, channelId, agent.agentId))) await this.chat.addMembers(agent.accountId, channelId, [agent.agentId]);
    return conversation;
  }

  /** Status and/or assignment. An assignee must be an agent who signed in to the inbox of this account; they join. */
  async updateConversation(accountId: string, channelId: string, change: { status?: ConversationStatus; assignee?: string | null }): Promise<Conversation> {
    await this.conversation(accountId, channelId);
    if (change.assignee) {
      const user = change.assignee.startsWith(AGENT_USER_PREFIX) ? await this.chat.getUser(accountId, change.assignee) : null;
      if (!user || user.banned) throw new ApiError('CHAT_AGENT_NOT_FOUND');
      if (!(await this.isMember(accountId, channelId, change.assignee))) await this.chat.addMembers(accountId, channelId, [change.assignee]);
    }
    const updated = await this.store.updateConversation(accountId, channelId, change);
    if (!updated) throw new ApiError('CHAT_CONVERSATION_NOT_FOUND');
    return updated;
  }

  /** An agent's reply (the agent joins first if need be); a pending conversation is open again. */
  async reply(agent: Agent, channelId: string, input: { text: string; clientMsgId?: string }): Promise<{ message: ChatMessage; created: boolean }> {
    await this.join(agent, channelId);
    await this.allowSend(agent.accountId, agent.agentId);
    const sent = await this.chat.sendMessage({
      accountId: agent.accountId,
      channelId,
      userId: agent.agentId,
      text: input.text,
      clientMsgId: input.clientMsgId,
      data: agent.agentName ? { agentName: agent.agentName } : {},
    });
    if (sent.created) await this.store.agentWrote(agent.accountId, channelId);
    return sent;
  }

  async markRead(agent: Agent, channelId: string, seq: number): Promise<number> {
    await this.conversation(agent.accountId, channelId);
    return (await this.chat.markRead(agent.accountId, channelId, agent.agentId, seq)).lastReadSeq;
  }

  /** The account's agents: chat users who signed in to the inbox page (for assignment). */
  async agents(accountId: string): Promise<Array<{ id: string; name: string | null }>> {
    const { rows } = await this.o.db.query<{ id: string; name: string | null }>(
      `SELECT id, name FROM chat_users WHERE account_id = $1 AND id LIKE 'agent:%' AND banned_at IS NULL ORDER BY id LIMIT 500`,
      [accountId],
    );
    return rows;
  }

  /** A fresh chat token for the agent (its socket), no longer than the page session. */
  async agentToken(agent: Agent, untilMs: number): Promise<{ token: string; expiresAt: string }> {
    const seconds = Math.max(60, Math.floor((untilMs - Date.now()) / 1000));
    return this.chat.mintToken(agent.accountId, { userId: agent.agentId, ...(agent.agentName ? { name: agent.agentName } : {}), expiresInSeconds: seconds });
  }
}

function rateLimitedWidget(retryAfterMs: number, limit: 'visitor' | 'address' | 'widgetKey'): ApiError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new ApiError('RATE_LIMIT_EXCEEDED', { data: { retryAfter: seconds, limit }, headers: { 'retry-after': String(seconds) } });
}
