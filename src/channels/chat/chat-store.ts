import type { Queryable } from '../../store/types.js';
import type { ChannelType, ChatChannel, ChatMember, ChatMessage, ChatUser, MemberRole } from './chat-types.js';

/**
 * The SQL of chat's tables (migrations/0045_chat.sql). Every statement names the account first: another account's
 * user, channel or message is simply not there.
 */

type Time = Date | string;
const iso = (t: Time): string => new Date(t).toISOString();
const isoOrNull = (t: Time | null): string | null => (t === null ? null : iso(t));
const json = <T>(v: unknown, fallback: T): T => (v === null || v === undefined ? fallback : typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

interface UserRow {
  id: string;
  name: string | null;
  image: string | null;
  data: unknown;
  banned_at: Time | null;
  created_at: Time;
  updated_at: Time;
}

interface ChannelRow {
  id: string;
  type: ChannelType;
  name: string | null;
  data: unknown;
  created_by: string | null;
  last_seq: number | string;
  last_message_at: Time | null;
  member_count: number | string;
  created_at: Time;
  updated_at: Time;
}

interface MemberRow {
  channel_id: string;
  user_id: string;
  role: MemberRole;
  muted: boolean;
  last_read_seq: number | string;
  joined_at: Time;
}

interface MessageRow {
  id: string;
  channel_id: string;
  seq: number | string;
  user_id: string | null;
  type: 'regular' | 'system';
  text: string;
  attachments: unknown;
  data: unknown;
  client_msg_id: string | null;
  created_at: Time;
  updated_at: Time;
  deleted_at: Time | null;
}

export function toUser(r: UserRow): ChatUser {
  return { id: r.id, name: r.name, image: r.image, data: json(r.data, {}), banned: r.banned_at !== null, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at) };
}

export function toChannel(r: ChannelRow): ChatChannel {
  return {
    id: r.id,
    type: r.type,
    name: r.name,
    data: json(r.data, {}),
    createdBy: r.created_by,
    lastSeq: Number(r.last_seq),
    lastMessageAt: isoOrNull(r.last_message_at),
    memberCount: Number(r.member_count),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

export function toMember(r: MemberRow): ChatMember {
  return { channelId: r.channel_id, userId: r.user_id, role: r.role, muted: r.muted, lastReadSeq: Number(r.last_read_seq), joinedAt: iso(r.joined_at) };
}

export function toMessage(r: MessageRow): ChatMessage {
  return {
    id: r.id,
    channelId: r.channel_id,
    seq: Number(r.seq),
    userId: r.user_id,
    type: r.type,
    text: r.text,
    attachments: json(r.attachments, []),
    data: json(r.data, {}),
    clientMsgId: r.client_msg_id,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    deletedAt: isoOrNull(r.deleted_at),
  };
}

const USER_COLUMNS = 'id, name, image, data, banned_at, created_at, updated_at';
const CHANNEL_COLUMNS = 'id, type, name, data, created_by, last_seq, last_message_at, member_count, created_at, updated_at';
const MEMBER_COLUMNS = 'channel_id, user_id, role, muted, last_read_seq, joined_at';
const MESSAGE_COLUMNS = 'id, channel_id, seq, user_id, type, text, attachments, data, client_msg_id, created_at, updated_at, deleted_at';
const prefixed = (columns: string, alias: string) =>
  columns
    .split(', ')
    .map((c) => `${alias}.${c}`)
    .join(', ');

/** Optional fields of a change: whether each was given, and its value (a CASE keeps the stored one otherwise). */
export interface UserFields {
  name?: string | null;
  image?: string | null;
  data?: Record<string, unknown>;
}

/** A channel in a user's list: the member's read mark and what is unread (counted by seq, so deletions do not skew it). */
export interface ChannelWithReadState {
  channel: ChatChannel;
  /** Set when the list is a member's. */
  lastReadSeq: number | null;
  unreadCount: number | null;
  /** The position of the row in the list, for the next page's cursor. */
  cursor: string;
}

/** A list cursor: the last row's activity time (Postgres text, exact to the microsecond) and id. */
function encodeCursor(lastMessageAt: string | null, id: string): string {
  return Buffer.from(JSON.stringify([lastMessageAt, id])).toString('base64url');
}

export function decodeCursor(cursor: string): [string | null, string] | null {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && (v[0] === null || typeof v[0] === 'string') && typeof v[1] === 'string') return [v[0], v[1]];
  } catch {
    // not ours: refused by the caller
  }
  return null;
}

export class ChatStore {
  // Users

  /** Creates the user or changes the fields given. */
  async upsertUser(q: Queryable, accountId: string, userId: string, f: UserFields): Promise<ChatUser & { tokensValidAfter: Date | null }> {
    const { rows } = await q.query<UserRow & { tokens_valid_after: Time | null }>(
      `INSERT INTO chat_users (account_id, id, name, image, data) VALUES ($1, $2, $4, $6, COALESCE($8::jsonb, '{}'))
       ON CONFLICT (account_id, id) DO UPDATE SET
         name = CASE WHEN $3::boolean THEN EXCLUDED.name ELSE chat_users.name END,
         image = CASE WHEN $5::boolean THEN EXCLUDED.image ELSE chat_users.image END,
         data = CASE WHEN $7::boolean THEN EXCLUDED.data ELSE chat_users.data END,
         updated_at = CASE WHEN $3::boolean OR $5::boolean OR $7::boolean THEN now() ELSE chat_users.updated_at END
       RETURNING ${USER_COLUMNS}, tokens_valid_after`,
      [accountId, userId, f.name !== undefined, f.name ?? null, f.image !== undefined, f.image ?? null, f.data !== undefined, f.data === undefined ? null : JSON.stringify(f.data)],
    );
    const r = rows[0];
    return { ...toUser(r), tokensValidAfter: r.tokens_valid_after === null ? null : new Date(r.tokens_valid_after) };
  }

  /** Users that do not exist yet are created bare (id only), as a channel's members may be named before their first token. */
  async ensureUsers(q: Queryable, accountId: string, userIds: readonly string[]): Promise<void> {
    if (!userIds.length) return;
    await q.query(`INSERT INTO chat_users (account_id, id) SELECT $1, u FROM unnest($2::text[]) AS u ORDER BY u ON CONFLICT (account_id, id) DO NOTHING`, [accountId, userIds]);
  }

  async getUser(q: Queryable, accountId: string, userId: string): Promise<ChatUser | null> {
    const { rows } = await q.query<UserRow>(`SELECT ${USER_COLUMNS} FROM chat_users WHERE account_id = $1 AND id = $2`, [accountId, userId]);
    return rows.length ? toUser(rows[0]) : null;
  }

  async updateUser(q: Queryable, accountId: string, userId: string, f: UserFields): Promise<ChatUser | null> {
    const { rows } = await q.query<UserRow>(
      `UPDATE chat_users SET
         name = CASE WHEN $3::boolean THEN $4 ELSE name END,
         image = CASE WHEN $5::boolean THEN $6 ELSE image END,
         data = CASE WHEN $7::boolean THEN $8::jsonb ELSE data END,
         updated_at = now()
       WHERE account_id = $1 AND id = $2 RETURNING ${USER_COLUMNS}`,
      [accountId, userId, f.name !== undefined, f.name ?? null, f.image !== undefined, f.image ?? null, f.data !== undefined, f.data === undefined ? null : JSON.stringify(f.data)],
    );
    return rows.length ? toUser(rows[0]) : null;
  }

  async setBanned(q: Queryable, accountId: string, userId: string, banned: boolean): Promise<ChatUser | null> {
    const { rows } = await q.query<UserRow>(
      `UPDATE chat_users SET banned_at = CASE WHEN $3::boolean THEN COALESCE(banned_at, now()) ELSE NULL END, updated_at = now()
       WHERE account_id = $1 AND id = $2 RETURNING ${USER_COLUMNS}`,
      [accountId, userId, banned],
    );
    return rows.length ? toUser(rows[0]) : null;
  }

  /** Tokens issued before `validAfter` (a whole second) are refused from now on. */
  async revokeTokens(q: Queryable, accountId: string, userId: string, validAfter: Date): Promise<ChatUser | null> {
    const { rows } = await q.query<UserRow>(
      `UPDATE chat_users SET tokens_valid_after = GREATEST(COALESCE(tokens_valid_after, $3::timestamptz), $3::timestamptz), updated_at = now()
       WHERE account_id = $1 AND id = $2 RETURNING ${USER_COLUMNS}`,
      [accountId, userId, validAfter.toISOString()],
    );
    return rows.length ? toUser(rows[0]) : null;
  }

  /** Deletes the user and their memberships (member counts follow); answers the channels they left, or null when unknown. */
  async deleteUser(q: Queryable, accountId: string, userId: string): Promise<string[] | null> {
    // Channels first (by id), members after: the order a send takes its locks, so the two cannot deadlock.
    await q.query(
      `SELECT c.id FROM chat_channels c JOIN chat_members m ON m.account_id = c.account_id AND m.channel_id = c.id
       WHERE c.account_id = $1 AND m.user_id = $2 ORDER BY c.id FOR UPDATE OF c`,
      [accountId, userId],
    );
    const left = await q.query<{ id: string }>(
      `WITH gone AS (DELETE FROM chat_members WHERE account_id = $1 AND user_id = $2 RETURNING channel_id)
       UPDATE chat_channels c SET member_count = c.member_count - 1 FROM gone WHERE c.account_id = $1 AND c.id = gone.channel_id RETURNING c.id`,
      [accountId, userId],
    );
    const deleted = await q.query(`DELETE FROM chat_users WHERE account_id = $1 AND id = $2`, [accountId, userId]);
    return deleted.rowCount ? left.rows.map((r) => r.id).sort() : null;
  }

  // Channels

  /** Inserts the channel; null when the account has one with this id. */
  async insertChannel(
    q: Queryable,
    accountId: string,
    c: { id: string; type: ChannelType; name: string | null; data: Record<string, unknown>; createdBy: string | null; memberCount: number },
  ): Promise<ChatChannel | null> {
    const { rows } = await q.query<ChannelRow>(
      `INSERT INTO chat_channels (account_id, id, type, name, data, created_by, member_count) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
       ON CONFLICT (account_id, id) DO NOTHING RETURNING ${CHANNEL_COLUMNS}`,
      [accountId, c.id, c.type, c.name, JSON.stringify(c.data), c.createdBy, c.memberCount],
    );
    return rows.length ? toChannel(rows[0]) : null;
  }

  async getChannel(q: Queryable, accountId: string, channelId: string, lock = false): Promise<ChatChannel | null> {
    const { rows } = await q.query<ChannelRow>(`SELECT ${CHANNEL_COLUMNS} FROM chat_channels WHERE account_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [accountId, channelId]);
    return rows.length ? toChannel(rows[0]) : null;
  }

  /**
   * Channels by latest activity (newest first, never-used ones last, then by id); a member's with their read mark
   * and unread count. The cursor is the last row's position; a channel that gets a message while someone pages moves
   * to the front (it is on the first page again, as a chat list shows it).
   */
  async listChannels(
    q: Queryable,
    accountId: string,
    o: { member?: string; type?: ChannelType; after?: [string | null, string] | null; limit: number },
  ): Promise<ChannelWithReadState[]> {
    const params: unknown[] = [accountId];
    const where: string[] = ['c.account_id = $1'];
    let from = 'chat_channels c';
    let readCols = 'NULL::bigint AS last_read_seq';
    if (o.member !== undefined) {
      params.push(o.member);
      from = 'chat_members m JOIN chat_channels c ON c.account_id = m.account_id AND c.id = m.channel_id';
      where.push(`m.account_id = $1 AND m.user_id = $${params.length}`);
      readCols = 'm.last_read_seq';
    }
    if (o.type !== undefined) {
      params.push(o.type);
      where.push(`c.type = $${params.length}`);
    }
    if (o.after) {
      const [at, id] = o.after;
      params.push(id);
      const idParam = `$${params.length}`;
      if (at === null) {
        where.push(`c.last_message_at IS NULL AND c.id > ${idParam}`);
      } else {
        params.push(at);
        const atParam = `$${params.length}::timestamptz`;
        where.push(`(c.last_message_at < ${atParam} OR (c.last_message_at = ${atParam} AND c.id > ${idParam}) OR c.last_message_at IS NULL)`);
      }
    }
    params.push(o.limit);
    const { rows } = await q.query<ChannelRow & { last_read_seq: number | string | null; at_text: string | null }>(
      `SELECT ${prefixed(CHANNEL_COLUMNS, 'c')}, ${readCols}, c.last_message_at::text AS at_text
       FROM ${from} WHERE ${where.join(' AND ')}
       ORDER BY c.last_message_at DESC NULLS LAST, c.id LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => {
      const channel = toChannel(r);
      const lastReadSeq = r.last_read_seq === null ? null : Number(r.last_read_seq);
      return {
        channel,
        lastReadSeq,
        unreadCount: lastReadSeq === null ? null : Math.max(0, channel.lastSeq - lastReadSeq),
        cursor: encodeCursor(r.at_text, r.id),
      };
    });
  }

  async updateChannel(q: Queryable, accountId: string, channelId: string, f: { name?: string | null; data?: Record<string, unknown> }): Promise<ChatChannel | null> {
    const { rows } = await q.query<ChannelRow>(
      `UPDATE chat_channels SET
         name = CASE WHEN $3::boolean THEN $4 ELSE name END,
         data = CASE WHEN $5::boolean THEN $6::jsonb ELSE data END,
         updated_at = now()
       WHERE account_id = $1 AND id = $2 RETURNING ${CHANNEL_COLUMNS}`,
      [accountId, channelId, f.name !== undefined, f.name ?? null, f.data !== undefined, f.data === undefined ? null : JSON.stringify(f.data)],
    );
    return rows.length ? toChannel(rows[0]) : null;
  }

  /** Deletes the channel with its members and messages (foreign keys cascade). */
  async deleteChannel(q: Queryable, accountId: string, channelId: string): Promise<boolean> {
    const r = await q.query(`DELETE FROM chat_channels WHERE account_id = $1 AND id = $2`, [accountId, channelId]);
    return r.rowCount > 0;
  }

  /**
   * Takes the channel's next seq for a message from `userId` (null: the system): one statement that also checks the
   * sender is an unmuted, unbanned member, and locks the channel's row until the commit, so seqs are given in commit
   * order without gaps. Null when a check failed (the caller finds out which).
   */
  async nextSeq(
    q: Queryable,
    accountId: string,
    channelId: string,
    userId: string | null,
  ): Promise<{ seq: number; channelName: string | null; senderName: string | null; memberCount: number } | null> {
    if (userId === null) {
      const { rows } = await q.query<{ last_seq: number | string; name: string | null; member_count: number | string }>(
        `UPDATE chat_channels SET last_seq = last_seq + 1, last_message_at = now() WHERE account_id = $1 AND id = $2 RETURNING last_seq, name, member_count`,
        [accountId, channelId],
      );
      return rows.length ? { seq: Number(rows[0].last_seq), channelName: rows[0].name, senderName: null, memberCount: Number(rows[0].member_count) } : null;
    }
    const { rows } = await q.query<{ last_seq: number | string; name: string | null; sender_name: string | null; member_count: number | string }>(
      `UPDATE chat_channels c SET last_seq = c.last_seq + 1, last_message_at = now()
       FROM chat_members m JOIN chat_users u ON u.account_id = m.account_id AND u.id = m.user_id
       WHERE c.account_id = $1 AND c.id = $2 AND m.account_id = $1 AND m.channel_id = $2 AND m.user_id = $3 AND NOT m.muted AND u.banned_at IS NULL
       RETURNING c.last_seq, c.name, u.name AS sender_name, c.member_count`,
      [accountId, channelId, userId],
    );
    return rows.length ? { seq: Number(rows[0].last_seq), channelName: rows[0].name, senderName: rows[0].sender_name, memberCount: Number(rows[0].member_count) } : null;
  }

  /** Why a sender may not send: the channel, the membership, the ban and the mute as they are. */
  async senderState(q: Queryable, accountId: string, channelId: string, userId: string): Promise<{ channel: boolean; member: boolean; muted: boolean; banned: boolean }> {
    const { rows } = await q.query<{ channel: boolean; muted: boolean | null; banned: boolean | null }>(
      `SELECT EXISTS (SELECT 1 FROM chat_channels WHERE account_id = $1 AND id = $2) AS channel,
              (SELECT muted FROM chat_members WHERE account_id = $1 AND channel_id = $2 AND user_id = $3) AS muted,
              (SELECT banned_at IS NOT NULL FROM chat_users WHERE account_id = $1 AND id = $3) AS banned`,
      [accountId, channelId, userId],
    );
    const r = rows[0];
    return { channel: r.channel, member: r.muted !== null, muted: r.muted === true, banned: r.banned === true };
  }

  // Members

  async getMember(q: Queryable, accountId: string, channelId: string, userId: string): Promise<ChatMember | null> {
    const { rows } = await q.query<MemberRow>(`SELECT ${MEMBER_COLUMNS} FROM chat_members WHERE account_id = $1 AND channel_id = $2 AND user_id = $3`, [accountId, channelId, userId]);
    return rows.length ? toMember(rows[0]) : null;
  }

  /** Members by user id, after `after`. */
  async listMembers(q: Queryable, accountId: string, channelId: string, after: string | undefined, limit: number): Promise<ChatMember[]> {
    const { rows } = await q.query<MemberRow>(
      `SELECT ${MEMBER_COLUMNS} FROM chat_members WHERE account_id = $1 AND channel_id = $2 AND ($3::text IS NULL OR user_id > $3) ORDER BY user_id LIMIT $4`,
      [accountId, channelId, after ?? null, limit],
    );
    return rows.map(toMember);
  }

  /** Every member's id and mute (what a new message's real-time event carries). */
  async memberIds(q: Queryable, accountId: string, channelId: string): Promise<{ members: string[]; muted: string[] }> {
    const { rows } = await q.query<{ user_id: string; muted: boolean }>(`SELECT user_id, muted FROM chat_members WHERE account_id = $1 AND channel_id = $2`, [accountId, channelId]);
    return { members: rows.map((r) => r.user_id), muted: rows.filter((r) => r.muted).map((r) => r.user_id) };
  }

  async channelIdsOf(q: Queryable, accountId: string, userId: string, limit: number): Promise<string[]> {
    const { rows } = await q.query<{ id: string }>(
      `SELECT c.id FROM chat_members m JOIN chat_channels c ON c.account_id = m.account_id AND c.id = m.channel_id
       WHERE m.account_id = $1 AND m.user_id = $2 ORDER BY c.last_message_at DESC NULLS LAST, c.id LIMIT $3`,
      [accountId, userId, limit],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Adds the users not yet members (the others are left as they are); answers the members added. `count`: the
   * channel's member count follows (a new channel is inserted with its count).
   */
  async addMembers(q: Queryable, accountId: string, channelId: string, userIds: readonly string[], role: (userId: string) => MemberRole, count: boolean): Promise<ChatMember[]> {
    if (!userIds.length) return [];
    const { rows } = await q.query<MemberRow>(
      `INSERT INTO chat_members (account_id, channel_id, user_id, role)
       SELECT $1, $2, u.id, u.role FROM unnest($3::text[], $4::text[]) AS u(id, role) ORDER BY u.id
       ON CONFLICT (account_id, channel_id, user_id) DO NOTHING RETURNING ${MEMBER_COLUMNS}`,
      [accountId, channelId, userIds, userIds.map(role)],
    );
    if (rows.length && count) await q.query(`UPDATE chat_channels SET member_count = member_count + $3, updated_at = now() WHERE account_id = $1 AND id = $2`, [accountId, channelId, rows.length]);
    return rows.map(toMember).sort((a, b) => (a.userId < b.userId ? -1 : 1));
  }

  /** Removes a member; the channel's row is locked first, in the order a send takes its locks (channel, then member). */
  async removeMember(q: Queryable, accountId: string, channelId: string, userId: string): Promise<boolean> {
    await q.query(`SELECT 1 FROM chat_channels WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, channelId]);
    const r = await q.query(`DELETE FROM chat_members WHERE account_id = $1 AND channel_id = $2 AND user_id = $3`, [accountId, channelId, userId]);
    if (!r.rowCount) return false;
    await q.query(`UPDATE chat_channels SET member_count = member_count - 1, updated_at = now() WHERE account_id = $1 AND id = $2`, [accountId, channelId]);
    return true;
  }

  async updateMember(q: Queryable, accountId: string, channelId: string, userId: string, f: { role?: MemberRole; muted?: boolean }): Promise<ChatMember | null> {
    const { rows } = await q.query<MemberRow>(
      `UPDATE chat_members SET role = COALESCE($4, role), muted = COALESCE($5, muted)
       WHERE account_id = $1 AND channel_id = $2 AND user_id = $3 RETURNING ${MEMBER_COLUMNS}`,
      [accountId, channelId, userId, f.role ?? null, f.muted ?? null],
    );
    return rows.length ? toMember(rows[0]) : null;
  }

  /** Moves the read mark forward to `seq` (never back, never past the channel's last message). */
  async markRead(q: Queryable, accountId: string, channelId: string, userId: string, seq: number): Promise<{ member: ChatMember; moved: boolean } | null> {
    const { rows } = await q.query<MemberRow>(
      `UPDATE chat_members m SET last_read_seq = LEAST($4::bigint, c.last_seq)
       FROM chat_channels c
       WHERE m.account_id = $1 AND m.channel_id = $2 AND m.user_id = $3 AND c.account_id = $1 AND c.id = $2 AND m.last_read_seq < LEAST($4::bigint, c.last_seq)
       RETURNING ${prefixed(MEMBER_COLUMNS, 'm')}`,
      [accountId, channelId, userId, seq],
    );
    if (rows.length) return { member: toMember(rows[0]), moved: true };
    const member = await this.getMember(q, accountId, channelId, userId);
    return member && { member, moved: false };
  }

  // Messages

  /** Inserts the message; null when the sender already has one with its clientMsgId (a concurrent retry won). */
  /**
   * Stores a message (null: a concurrent send with its clientMsgId won). `pushDueInMs`: the message may push, so its
   * push evaluation goes into the outbox with it, due then (the offline push deletes it; the chat.push-outbox job takes
   * what is left): in the same statement, so durable offline push costs no statement of its own.
   */
  async insertMessage(q: Queryable, accountId: string, m: Omit<ChatMessage, 'createdAt' | 'updatedAt' | 'deletedAt'>, pushDueInMs: number | null = null): Promise<ChatMessage | null> {
    const params = [accountId, m.channelId, m.seq, m.id, m.userId, m.type, m.text, JSON.stringify(m.attachments), JSON.stringify(m.data), m.clientMsgId];
    const insert = `INSERT INTO chat_messages (account_id, channel_id, seq, id, user_id, type, text, attachments, data, client_msg_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10)
       ON CONFLICT DO NOTHING RETURNING ${MESSAGE_COLUMNS}`;
    const { rows } =
      pushDueInMs === null
        ? await q.query<MessageRow>(insert, params)
        : await q.query<MessageRow>(
            `WITH stored AS (${insert}),
             queued AS (INSERT INTO chat_push_outbox (message_id, due_at) SELECT id, now() + make_interval(secs => $11::float8 / 1000.0) FROM stored)
             SELECT * FROM stored`,
            [...params, pushDueInMs],
          );
    return rows.length ? toMessage(rows[0]) : null;
  }

  /** The sender's message with this clientMsgId (the system's when userId is null), in any channel. */
  async byClientMsgId(q: Queryable, accountId: string, userId: string | null, clientMsgId: string): Promise<ChatMessage | null> {
    const { rows } = await q.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM chat_messages WHERE account_id = $1 AND COALESCE(user_id, '') = $2 AND client_msg_id = $3`,
      [accountId, userId ?? '', clientMsgId],
    );
    return rows.length ? toMessage(rows[0]) : null;
  }

  /** The sender has read what they sent: their mark moves to it. */
  async readOwn(q: Queryable, accountId: string, channelId: string, userId: string, seq: number): Promise<void> {
    await q.query(`UPDATE chat_members SET last_read_seq = GREATEST(last_read_seq, $4) WHERE account_id = $1 AND channel_id = $2 AND user_id = $3`, [accountId, channelId, userId, seq]);
  }

  async getMessage(q: Queryable, accountId: string, channelId: string, messageId: string, lock = false): Promise<ChatMessage | null> {
    const { rows } = await q.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM chat_messages WHERE id = $3 AND account_id = $1 AND channel_id = $2${lock ? ' FOR UPDATE' : ''}`,
      [accountId, channelId, messageId],
    );
    return rows.length ? toMessage(rows[0]) : null;
  }

  /**
   * Up to `limit + 1` messages, ascending: after `afterSeq` from there on; else the newest before `beforeSeq` (or of
   * all). The extra one tells whether more exist in the direction asked.
   */
  async listMessages(q: Queryable, accountId: string, channelId: string, o: { afterSeq?: number; beforeSeq?: number; limit: number }): Promise<{ messages: ChatMessage[]; hasMore: boolean }> {
    const ascending = o.afterSeq !== undefined;
    const { rows } = await q.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM chat_messages
       WHERE account_id = $1 AND channel_id = $2 AND ($3::bigint IS NULL OR seq > $3) AND ($4::bigint IS NULL OR seq < $4)
       ORDER BY seq ${ascending ? 'ASC' : 'DESC'} LIMIT $5`,
      [accountId, channelId, o.afterSeq ?? null, o.beforeSeq ?? null, o.limit + 1],
    );
    const hasMore = rows.length > o.limit;
    const page = rows.slice(0, o.limit).map(toMessage);
    if (!ascending) page.reverse();
    return { messages: page, hasMore };
  }

  async updateMessage(q: Queryable, accountId: string, messageId: string, f: { text: string; attachments: unknown[]; data: Record<string, unknown> }): Promise<ChatMessage> {
    const { rows } = await q.query<MessageRow>(
      `UPDATE chat_messages SET text = $3, attachments = $4::jsonb, data = $5::jsonb, updated_at = now() WHERE id = $2 AND account_id = $1 RETURNING ${MESSAGE_COLUMNS}`,
      [accountId, messageId, f.text, JSON.stringify(f.attachments), JSON.stringify(f.data)],
    );
    return toMessage(rows[0]);
  }

  /** Soft delete: the seq stays (a client's resync has no hole), the content goes. */
  async deleteMessage(q: Queryable, accountId: string, messageId: string): Promise<ChatMessage> {
    const { rows } = await q.query<MessageRow>(
      `UPDATE chat_messages SET text = '', attachments = '[]', data = '{}', deleted_at = now(), updated_at = now() WHERE id = $2 AND account_id = $1 RETURNING ${MESSAGE_COLUMNS}`,
      [accountId, messageId],
    );
    return toMessage(rows[0]);
  }
}
