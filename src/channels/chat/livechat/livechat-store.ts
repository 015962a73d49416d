import type { Db, Queryable } from '../../../store/types.js';
import { newId } from '../../../util/ids.js';
import type { BusinessHours } from './business-hours.js';
import { newWidgetKey } from './identity.js';

export type OfflineMode = 'form' | 'hide';
export type ConversationStatus = 'open' | 'pending' | 'resolved';
export const CONVERSATION_STATUSES: readonly ConversationStatus[] = ['open', 'pending', 'resolved'];

/** Which of the visitor's details the pre-chat form asks for; a field left out is not asked. */
export interface PreChatForm {
  name?: { required: boolean };
  email?: { required: boolean };
}

export interface Inbox {
  id: string;
  name: string;
  /** Public: the customer's page carries it (data-widget-key). */
  widgetKey: string;
  requireIdentity: boolean;
  preChatForm: PreChatForm | null;
  businessHours: BusinessHours | null;
  offlineMode: OfflineMode;
  greeting: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface InboxRow extends Inbox {
  accountId: string;
  /** The identity secret's generation (the secret is derived from it, never stored). */
  identityGeneration: number;
}

export interface InboxInput {
  name?: string;
  requireIdentity?: boolean;
  preChatForm?: PreChatForm | null;
  businessHours?: BusinessHours | null;
  offlineMode?: OfflineMode;
  greeting?: string | null;
}

/** What the visitor or the customer's page told about the visitor, shown to agents. */
export interface VisitorDetails {
  name?: string;
  email?: string;
  pageUrl?: string;
  userAgent?: string;
}

export interface Conversation {
  channelId: string;
  inboxId: string;
  /** The visitor's chat user id. */
  visitorId: string;
  status: ConversationStatus;
  /** The assigned agent's chat user id; null: unassigned. */
  assignee: string | null;
  visitor: VisitorDetails;
  /** The customer's server vouched for the visitor's id (identity HMAC). */
  identified: boolean;
  lastVisitorMessageAt: string | null;
  resolvedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A conversation as the inbox page lists it: with its inbox's name, its channel's last message and the agent's unread count. */
export interface ConversationSummary extends Conversation {
  inboxName: string;
  lastSeq: number;
  lastMessageAt: string | null;
  lastMessageText: string | null;
  lastMessageUserId: string | null;
  /** Messages after the asking agent's read mark (all of them when the agent is not a member). */
  unread: number;
}

const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();
const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : iso(v));
const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

type Row = Record<string, unknown>;

function inboxOf(r: Row): InboxRow {
  return {
    accountId: String(r.account_id),
    id: String(r.id),
    name: String(r.name),
    widgetKey: String(r.widget_key),
    requireIdentity: Boolean(r.require_identity),
    preChatForm: r.pre_chat_form === null ? null : json<PreChatForm>(r.pre_chat_form),
    businessHours: r.business_hours === null ? null : json<BusinessHours>(r.business_hours),
    offlineMode: r.offline_mode as OfflineMode,
    greeting: (r.greeting as string | null) ?? null,
    identityGeneration: Number(r.identity_generation),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

function conversationOf(r: Row): Conversation {
  return {
    channelId: String(r.channel_id),
    inboxId: String(r.inbox_id),
    visitorId: String(r.visitor_id),
    status: r.status as ConversationStatus,
    assignee: (r.assignee as string | null) ?? null,
    visitor: json<VisitorDetails>(r.visitor ?? {}),
    identified: Boolean(r.identified),
    lastVisitorMessageAt: isoOrNull(r.last_visitor_message_at),
    resolvedAt: isoOrNull(r.resolved_at),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

/** The public part of an inbox (what the API shows; the generation is internal). */
export function inboxView(r: InboxRow): Inbox {
  const { accountId: _a, identityGeneration: _g, ...view } = r;
  return view;
}

const CONVERSATION_COLUMNS = `c.channel_id, c.inbox_id, c.visitor_id, c.status, c.assignee, c.visitor, c.identified, c.last_visitor_message_at, c.resolved_at, c.created_at, c.updated_at`;

/** Live chat's rows: inboxes and conversations (SQL, shared by every instance). */
export class LivechatStore {
  constructor(private readonly db: Db) {}

  async createInbox(accountId: string, input: InboxInput & { name: string }): Promise<InboxRow> {
    const { rows } = await this.db.query(
      `INSERT INTO chat_livechat_inboxes (account_id, id, name, widget_key, require_identity, pre_chat_form, business_hours, offline_mode, greeting)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
      [
        accountId,
        newId('inb_'),
        input.name,
        newWidgetKey(),
        input.requireIdentity ?? false,
        input.preChatForm ? JSON.stringify(input.preChatForm) : null,
        input.businessHours ? JSON.stringify(input.businessHours) : null,
        input.offlineMode ?? 'form',
        input.greeting ?? null,
      ],
    );
    return inboxOf(rows[0]);
  }

  async getInbox(accountId: string, id: string): Promise<InboxRow | null> {
    const { rows } = await this.db.query(`SELECT * FROM chat_livechat_inboxes WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return rows.length ? inboxOf(rows[0]) : null;
  }

  async inboxByWidgetKey(widgetKey: string): Promise<InboxRow | null> {
    const { rows } = await this.db.query(`SELECT * FROM chat_livechat_inboxes WHERE widget_key = $1`, [widgetKey]);
    return rows.length ? inboxOf(rows[0]) : null;
  }

  /** The account's inboxes, oldest first (an account has a handful). */
  async listInboxes(accountId: string, limit = 200): Promise<InboxRow[]> {
    const { rows } = await this.db.query(`SELECT * FROM chat_livechat_inboxes WHERE account_id = $1 ORDER BY created_at, id LIMIT $2`, [accountId, limit]);
    return rows.map(inboxOf);
  }

  async updateInbox(accountId: string, id: string, input: InboxInput): Promise<InboxRow | null> {
    const sets: string[] = [];
    const params: unknown[] = [accountId, id];
    const set = (column: string, value: unknown) => {
      params.push(value);
      sets.push(`${column} = $${params.length}`);
    };
    if (input.name !== undefined) set('name', input.name);
    if (input.requireIdentity !== undefined) set('require_identity', input.requireIdentity);
    if (input.preChatForm !== undefined) set('pre_chat_form', input.preChatForm === null ? null : JSON.stringify(input.preChatForm));
    if (input.businessHours !== undefined) set('business_hours', input.businessHours === null ? null : JSON.stringify(input.businessHours));
    if (input.offlineMode !== undefined) set('offline_mode', input.offlineMode);
    if (input.greeting !== undefined) set('greeting', input.greeting);
    const { rows } = await this.db.query(
      `UPDATE chat_livechat_inboxes SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE account_id = $1 AND id = $2 RETURNING *`,
      params,
    );
    return rows.length ? inboxOf(rows[0]) : null;
  }

  /** Moves the identity secret's generation: the previous secret stops verifying at once. */
  async rotateIdentity(accountId: string, id: string): Promise<InboxRow | null> {
    const { rows } = await this.db.query(
      `UPDATE chat_livechat_inboxes SET identity_generation = identity_generation + 1, updated_at = now() WHERE account_id = $1 AND id = $2 RETURNING *`,
      [accountId, id],
    );
    return rows.length ? inboxOf(rows[0]) : null;
  }

  /** Deletes the inbox and its conversations' state (their channels and history stay, type livechat). */
  async deleteInbox(accountId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.query(`DELETE FROM chat_livechat_inboxes WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return rowCount > 0;
  }

  async conversationOfVisitor(accountId: string, inboxId: string, visitorId: string): Promise<Conversation | null> {
    const { rows } = await this.db.query(`SELECT ${CONVERSATION_COLUMNS} FROM chat_livechat_conversations c WHERE account_id = $1 AND inbox_id = $2 AND visitor_id = $3`, [
      accountId,
      inboxId,
      visitorId,
    ]);
    return rows.length ? conversationOf(rows[0]) : null;
  }

  async getConversation(accountId: string, channelId: string, q: Queryable = this.db): Promise<Conversation | null> {
    const { rows } = await q.query(`SELECT ${CONVERSATION_COLUMNS} FROM chat_livechat_conversations c WHERE account_id = $1 AND channel_id = $2`, [accountId, channelId]);
    return rows.length ? conversationOf(rows[0]) : null;
  }

  /** Stores the conversation of a channel just made; a concurrent first message of the same visitor keeps the first row. */
  async insertConversation(
    accountId: string,
    c: { channelId: string; inboxId: string; visitorId: string; status: ConversationStatus; visitor: VisitorDetails; identified: boolean },
  ): Promise<Conversation> {
    await this.db.query(
      `INSERT INTO chat_livechat_conversations (account_id, channel_id, inbox_id, visitor_id, status, visitor, identified)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
      [accountId, c.channelId, c.inboxId, c.visitorId, c.status, JSON.stringify(c.visitor), c.identified],
    );
    const stored = await this.conversationOfVisitor(accountId, c.inboxId, c.visitorId);
    if (!stored) throw new Error(`livechat conversation ${c.channelId} vanished after its insert`);
    return stored;
  }

  /** Merges what the visitor told (later values win) into the conversation's details. */
  async mergeVisitor(accountId: string, channelId: string, details: VisitorDetails, identified: boolean): Promise<Conversation | null> {
    const { rows } = await this.db.query(
      `UPDATE chat_livechat_conversations SET visitor = visitor || $3::jsonb, identified = identified OR $4, updated_at = now()
       WHERE account_id = $1 AND channel_id = $2 RETURNING ${CONVERSATION_COLUMNS.replace(/c\./g, '')}`,
      [accountId, channelId, JSON.stringify(details), identified],
    );
    return rows.length ? conversationOf(rows[0]) : null;
  }

  /** A visitor wrote: the conversation is pending (outside business hours) or open, and moves up the lists. */
  async visitorWrote(accountId: string, channelId: string, status: 'open' | 'pending'): Promise<Conversation | null> {
    const { rows } = await this.db.query(
      `UPDATE chat_livechat_conversations SET status = $3, resolved_at = NULL, last_visitor_message_at = now(), updated_at = now()
       WHERE account_id = $1 AND channel_id = $2 RETURNING ${CONVERSATION_COLUMNS.replace(/c\./g, '')}`,
      [accountId, channelId, status],
    );
    return rows.length ? conversationOf(rows[0]) : null;
  }

  /** Status and/or assignee; `undefined` leaves one as it is. */
  async updateConversation(accountId: string, channelId: string, change: { status?: ConversationStatus; assignee?: string | null }): Promise<Conversation | null> {
    const sets = ['updated_at = now()'];
    const params: unknown[] = [accountId, channelId];
    if (change.status !== undefined) {
      params.push(change.status);
      sets.push(`status = $${params.length}`, `resolved_at = CASE WHEN $${params.length} = 'resolved' THEN now() ELSE NULL END`);
    }
    if (change.assignee !== undefined) {
      params.push(change.assignee);
      sets.push(`assignee = $${params.length}`);
    }
    const { rows } = await this.db.query(
      `UPDATE chat_livechat_conversations SET ${sets.join(', ')} WHERE account_id = $1 AND channel_id = $2 RETURNING ${CONVERSATION_COLUMNS.replace(/c\./g, '')}`,
      params,
    );
    return rows.length ? conversationOf(rows[0]) : null;
  }

  /** The agent replied: the conversation moves up the lists (a pending one is open again). */
  async agentWrote(accountId: string, channelId: string): Promise<void> {
    await this.db.query(
      `UPDATE chat_livechat_conversations SET updated_at = now(), status = CASE WHEN status = 'pending' THEN 'open' ELSE status END
       WHERE account_id = $1 AND channel_id = $2`,
      [accountId, channelId],
    );
  }

  /** The furthest any member but `userId` has read in the channel (the agents, seen from the visitor). */
  async othersReadSeq(accountId: string, channelId: string, userId: string): Promise<number> {
    const { rows } = await this.db.query<{ seq: string | number | null }>(
      `SELECT max(last_read_seq) AS seq FROM chat_members WHERE account_id = $1 AND channel_id = $2 AND user_id <> $3`,
      [accountId, channelId, userId],
    );
    return Number(rows[0]?.seq ?? 0);
  }

  /**
   * Conversations for the inbox page or the server API, most recently active first, with their last message and the
   * unread count of `agentId` (when given). `cursor` is the previous page's nextCursor.
   */
  async listConversations(
    accountId: string,
    f: { status?: ConversationStatus; inboxId?: string; assignee?: string | null; agentId?: string; cursor?: string; limit: number },
  ): Promise<{ items: ConversationSummary[]; nextCursor: string | null }> {
    const where = ['c.account_id = $1'];
    const params: unknown[] = [accountId, f.agentId ?? null];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (f.status) add('c.status = ?', f.status);
    if (f.inboxId) add('c.inbox_id = ?', f.inboxId);
    if (f.assignee === null) where.push('c.assignee IS NULL');
    else if (f.assignee !== undefined) add('c.assignee = ?', f.assignee);
    if (f.cursor) {
      const [at, id] = Buffer.from(f.cursor, 'base64url').toString('utf8').split('|');
      if (at && id) {
        params.push(at, id);
        where.push(`(c.updated_at, c.channel_id) < ($${params.length - 1}::timestamptz, $${params.length})`);
      }
    }
    params.push(f.limit + 1);
    const { rows } = await this.db.query(
      `SELECT ${CONVERSATION_COLUMNS}, c.updated_at::text AS cursor_at, i.name AS inbox_name, ch.last_seq, ch.last_message_at,
              m.text AS last_text, m.user_id AS last_user_id, am.last_read_seq AS agent_read_seq
       FROM chat_livechat_conversations c
       JOIN chat_livechat_inboxes i ON i.account_id = c.account_id AND i.id = c.inbox_id
       JOIN chat_channels ch ON ch.account_id = c.account_id AND ch.id = c.channel_id
       LEFT JOIN chat_messages m ON m.account_id = c.account_id AND m.channel_id = c.channel_id AND m.seq = ch.last_seq
       LEFT JOIN chat_members am ON am.account_id = c.account_id AND am.channel_id = c.channel_id AND am.user_id = $2
       WHERE ${where.join(' AND ')}
       ORDER BY c.updated_at DESC, c.channel_id DESC
       LIMIT $${params.length}`,
      params,
    );
    const page = rows.slice(0, f.limit);
    const last = page.at(-1);
    return {
      items: page.map((r) => ({
        ...conversationOf(r),
        inboxName: String(r.inbox_name),
        lastSeq: Number(r.last_seq),
        lastMessageAt: isoOrNull(r.last_message_at),
        lastMessageText: (r.last_text as string | null) ?? null,
        lastMessageUserId: (r.last_user_id as string | null) ?? null,
        unread: Math.max(0, Number(r.last_seq) - Number(r.agent_read_seq ?? 0)),
      })),
      nextCursor: rows.length > f.limit && last ? Buffer.from(`${String(last.cursor_at)}|${String(last.channel_id)}`).toString('base64url') : null,
    };
  }
}
