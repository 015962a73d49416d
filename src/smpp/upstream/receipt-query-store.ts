import type { Db } from '../../store/types.js';

/** One page of the discovery walk over open messages. */
export interface DiscoveryPage {
  /** The last open message id the page read ('' when it read none): the next page starts after it. */
  lastId: string;
  /** Open messages read (a page shorter than asked for ended the walk). */
  scanned: number;
  /** Overdue messages newly given a query row. */
  added: number;
}

/** A claimed row: its query is this instance's to make now. */
export interface ClaimedQuery {
  messageId: string;
  /** Queries made including this one. */
  attempts: number;
}

/** What a query needs of a message's ledger row and its open parts. */
export interface QueryTarget {
  messageId: string;
  /** The message is no longer waiting for a receipt (or is gone). */
  closed: boolean;
  source: string;
  sourceTon: number;
  sourceNpi: number;
  partsTotal: number;
  /** Parts still waiting for their receipt, each with the upstream and the id it was submitted under. */
  parts: Array<{ partIndex: number; upstreamId: string; upstreamMessageId: string }>;
}

// The walk reads open rows through messages_open (id WHERE final_at IS NULL) in id order, a bounded page at a time,
// so its cost is a page of index entries per call whatever the table's size or the backlog of queued rows. Overdue
// submitted rows of upstreams that answer query_sm get a row; ON CONFLICT keeps a message's first row (and its
// attempts), so a message is discovered once whichever instance walks it.
const DISCOVER_SQL = `WITH page AS MATERIALIZED (
  SELECT id, status, upstream_id, updated_at FROM messages WHERE final_at IS NULL AND id > $1 ORDER BY id LIMIT $2
), added AS (
  INSERT INTO receipt_queries (message_id, upstream_id, attempts, next_at, created_at)
  SELECT p.id, p.upstream_id, 0, $5::int8, $5::int8
  FROM page p JOIN unnest($3::text[], $4::float8[]) AS u(up, before) ON p.upstream_id = u.up
  WHERE p.status = 'submitted' AND p.updated_at < to_timestamp(u.before / 1000.0)
  ON CONFLICT (message_id) DO NOTHING
  RETURNING 1
)
SELECT (SELECT max(id) FROM page) AS last_id, (SELECT count(*) FROM page)::int AS scanned, (SELECT count(*) FROM added)::int AS added`;

// Due rows of one upstream, pushed ahead by the lease in the statement that picks them: an instance that dies
// mid-query leaves them to be claimed again once the lease ends. SKIP LOCKED lets instances claim side by side.
const CLAIM_SQL = `UPDATE receipt_queries q SET next_at = $3::int8, attempts = q.attempts + 1
  FROM (SELECT message_id FROM receipt_queries WHERE upstream_id = $1 AND next_at IS NOT NULL AND next_at <= $2::int8
        ORDER BY next_at LIMIT $4 FOR UPDATE SKIP LOCKED) c
  WHERE q.message_id = c.message_id
  RETURNING q.message_id, q.attempts`;

const TARGETS_SQL = `SELECT id, final_at IS NOT NULL OR status <> 'submitted' AS closed, source, source_ton, source_npi, upstream_id,
    upstream_message_id, parts_total
  FROM messages WHERE id = ANY($1::text[])`;

// One index probe per message (as the ledger's part counts do), and only parts still waiting for a receipt.
const PARTS_SQL = `SELECT p.message_id, p.part_index, p.upstream_id, p.upstream_message_id, p.status
  FROM unnest($1::text[]) AS u(id) CROSS JOIN LATERAL (
    SELECT message_id, part_index, upstream_id, upstream_message_id, status FROM message_parts WHERE message_id = u.id OFFSET 0
  ) p`;

const SCHEDULE_SQL = `UPDATE receipt_queries q SET next_at = u.next_at
  FROM unnest($1::text[], $2::int8[]) AS u(id, next_at) WHERE q.message_id = u.id`;

const RELEASE_SQL = `UPDATE receipt_queries SET next_at = $2::int8, attempts = GREATEST(attempts - 1, 0) WHERE message_id = ANY($1::text[])`;

/**
 * The rows of receipt_queries (migration 0023): which overdue messages are asked about, when next, and how often
 * already. Every write is one statement; the claim is what makes instances sharing the database never ask twice.
 */
export class ReceiptQueryStore {
  constructor(private readonly db: Db) {}

  /**
   * Reads up to `limit` open messages after `afterId` and gives each one that is overdue a query row, due at `now`.
   * `before` holds, per upstream, the submit time (epoch ms) before which its messages are overdue.
   */
  async discover(afterId: string, limit: number, before: ReadonlyMap<string, number>, now: number): Promise<DiscoveryPage> {
    const { rows } = await this.db.query<{ last_id: string | null; scanned: number; added: number }>(DISCOVER_SQL, [
      afterId,
      limit,
      [...before.keys()],
      [...before.values()],
      now,
    ]);
    const r = rows[0];
    return { lastId: r?.last_id ?? '', scanned: Number(r?.scanned ?? 0), added: Number(r?.added ?? 0) };
  }

  /** Claims up to `limit` due rows of an upstream; each is not due again before `leaseUntil`. */
  async claim(upstreamId: string, now: number, leaseUntil: number, limit: number): Promise<ClaimedQuery[]> {
    if (limit <= 0) return [];
    const { rows } = await this.db.query<{ message_id: string; attempts: number }>(CLAIM_SQL, [upstreamId, now, leaseUntil, limit]);
    return rows.map((r) => ({ messageId: r.message_id, attempts: Number(r.attempts) }));
  }

  /** The ledger side of claimed messages: their source, and the parts still waiting for a receipt. */
  async targets(messageIds: readonly string[]): Promise<Map<string, QueryTarget>> {
    const out = new Map<string, QueryTarget>();
    if (!messageIds.length) return out;
    const [messages, parts] = await Promise.all([
      this.db.query<{
        id: string;
        closed: boolean;
        source: string;
        source_ton: number;
        source_npi: number;
        upstream_id: string | null;
        upstream_message_id: string | null;
        parts_total: number;
      }>(TARGETS_SQL, [messageIds]),
      this.db.query<{ message_id: string; part_index: number; upstream_id: string | null; upstream_message_id: string | null; status: string }>(PARTS_SQL, [messageIds]),
    ]);
    const partRows = new Map<string, typeof parts.rows>();
    for (const p of parts.rows) {
      const list = partRows.get(p.message_id);
      if (list) list.push(p);
      else partRows.set(p.message_id, [p]);
    }
    for (const id of messageIds) out.set(id, { messageId: id, closed: true, source: '', sourceTon: 0, sourceNpi: 0, partsTotal: 0, parts: [] });
    for (const m of messages.rows) {
      const target: QueryTarget = {
        messageId: m.id,
        closed: m.closed,
        source: m.source,
        sourceTon: Number(m.source_ton),
        sourceNpi: Number(m.source_npi),
        partsTotal: Number(m.parts_total),
        parts: [],
      };
      const own = partRows.get(m.id);
      if (own) {
        // A message Ferry split (or one recorded before 0013): each part has its own upstream id.
        for (const p of own) {
          if (p.status !== 'submitted' || !p.upstream_id || !p.upstream_message_id) continue;
          target.parts.push({ partIndex: Number(p.part_index), upstreamId: p.upstream_id, upstreamMessageId: p.upstream_message_id });
        }
      } else if (m.upstream_id && m.upstream_message_id) {
        target.parts.push({ partIndex: 0, upstreamId: m.upstream_id, upstreamMessageId: m.upstream_message_id });
      }
      target.parts.sort((a, b) => a.partIndex - b.partIndex);
      out.set(m.id, target);
    }
    return out;
  }

  /** Sets when each message is asked next (null: never again). */
  async schedule(next: ReadonlyMap<string, number | null>): Promise<void> {
    if (!next.size) return;
    await this.db.query(SCHEDULE_SQL, [[...next.keys()], [...next.values()]]);
  }

  /** Hands claimed rows back unasked (no bind, over the rate): due at `at`, the claim not counted. */
  async release(messageIds: readonly string[], at: number): Promise<void> {
    if (!messageIds.length) return;
    await this.db.query(RELEASE_SQL, [messageIds, at]);
  }

  /** Drops rows created before `before` (epoch ms); returns how many. */
  async purge(before: number): Promise<number> {
    const r = await this.db.query('DELETE FROM receipt_queries WHERE created_at < $1', [before]);
    return r.rowCount;
  }
}
