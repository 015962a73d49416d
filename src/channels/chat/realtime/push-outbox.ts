import type { Logger } from 'pino';
import { DueSet } from '../../../delivery/due-set.js';
import type { Db } from '../../../store/types.js';
import type { PushCandidate } from './offline-push.js';

/** chat_push_outbox as a due set: a claim moves due_at past its lease (database clock: instances agree). */
const PUSH_OUTBOX = DueSet.declare({
  table: 'chat_push_outbox',
  id: 'message_id',
  due: 'due_at',
  clock: 'database',
  open: () => 'true',
  returning: 'j.message_id AS id',
});

/** Deletes are gathered for this long (or this many), then issued as one statement. */
const DELETE_EVERY_MS = 20;
const DELETE_BATCH = 500;

interface CandidateRow {
  id: string;
  account_id: string;
  channel_id: string;
  seq: number | string;
  user_id: string | null;
  text: string;
  channel_name: string | null;
  sender_name: string | null;
  members: string[] | null;
  skipped: string[] | null;
}

/**
 * The outbox of offline push evaluations (chat_push_outbox): a row per message that may push, written in the
 * message's transaction; deleted here once its pushes were handed to the push product or judged not needed (deletes
 * batched), or claimed when due by the chat.push-outbox job.
 */
export class PushOutbox {
  private readonly set: DueSet;
  private readonly toDelete = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly o: { db: Db; log: Logger }) {
    this.set = new DueSet(o.db, PUSH_OUTBOX);
  }

  /** The message's evaluation is over: its row goes with the next batch of deletes. */
  done(messageId: string): void {
    this.toDelete.add(messageId);
    if (this.toDelete.size >= DELETE_BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), DELETE_EVERY_MS);
  }

  /** Deletes the rows gathered so far; resolves when they (and any batch before) are deleted. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.toDelete.size) return this.flushing;
    const ids = [...this.toDelete];
    this.toDelete.clear();
    // A failed delete leaves the rows to the job: a push again (at least once), never none.
    this.flushing = this.flushing
      .then(() => this.o.db.query(`DELETE FROM chat_push_outbox WHERE message_id = ANY($1::text[])`, [ids]))
      .then(
        () => undefined,
        (err: Error) => this.o.log.warn({ err: err.message, rows: ids.length }, 'chat push outbox: deleting evaluated rows failed (the job evaluates them again)'),
      );
    return this.flushing;
  }

  /** Up to `limit` due rows, each claimed for `leaseMs` (not due again until then). */
  async claimDue(limit: number, leaseMs: number): Promise<string[]> {
    const now = Date.now();
    return (await this.set.claimDue(limit, now, now + leaseMs)).map((r) => (r as { id: string }).id);
  }

  /**
   * The messages' push evaluations as they stand now (their channel's members; those who muted it or read the message
   * since are left out); a message deleted, or gone with its channel, is absent (no push needed).
   */
  async load(ids: readonly string[]): Promise<PushCandidate[]> {
    if (!ids.length) return [];
    const { rows } = await this.o.db.query<CandidateRow>(
      `SELECT m.id, m.account_id, m.channel_id, m.seq, m.user_id, m.text, c.name AS channel_name, u.name AS sender_name,
              (SELECT array_agg(cm.user_id) FROM chat_members cm WHERE cm.account_id = m.account_id AND cm.channel_id = m.channel_id) AS members,
              (SELECT array_agg(cm.user_id) FROM chat_members cm
                WHERE cm.account_id = m.account_id AND cm.channel_id = m.channel_id AND (cm.muted OR cm.last_read_seq >= m.seq)) AS skipped
       FROM chat_messages m
       JOIN chat_channels c ON c.account_id = m.account_id AND c.id = m.channel_id
       LEFT JOIN chat_users u ON u.account_id = m.account_id AND u.id = m.user_id
       WHERE m.id = ANY($1::text[]) AND m.deleted_at IS NULL`,
      [ids],
    );
    return rows.map((r) => ({
      accountId: r.account_id,
      channelId: r.channel_id,
      message: { id: r.id, seq: Number(r.seq), userId: r.user_id, text: r.text },
      members: r.members ?? [],
      mutedMembers: r.skipped ?? [],
      channelName: r.channel_name,
      senderName: r.sender_name,
    }));
  }
}
