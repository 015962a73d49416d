import type { AppliedChange, EffectStatement } from '../ledger/ledger.js';
import { FINAL_STATUSES, type MessageStatus } from '../ledger/types.js';
import { prepared } from '../store/sql/prepared.js';
import type { Db, Queryable } from '../store/types.js';

/** A claimed outbox row, with what the deliver_sm is rendered from. */
export interface OutboxEntry {
  id: number;
  accountId: string;
  kind: 'receipt' | 'mo';
  attempts: number;
  createdAt: number;
  /** Receipt: the message and the status to report. */
  messageId: string | null;
  status: MessageStatus | null;
  errorCode: string | null;
  message: {
    source: string;
    destination: string;
    body: string | null;
    createdAt: number;
    finalAt: number | null;
    customerSystemId: string | null;
  } | null;
  /** MO: the message as received. */
  source: string | null;
  destination: string | null;
  dataCoding: number | null;
  esmClass: number | null;
  payload: Buffer | null;
}

const RECEIPT_STATUSES: readonly MessageStatus[] = FINAL_STATUSES.filter((s) => s !== 'cancelled');

/**
 * Who takes receipts straight from their commit: the delivery worker of an instance with customer receiver binds.
 * Rows of its accounts are written already leased to it and handed over after the commit, so they need no claim.
 */
export interface ReceiptTaker {
  /** The lease written on rows handed over (as a claim's). */
  readonly leaseMs: number;
  /** Accounts whose receipts it takes now: a receiver of the account is bound here and the hand-off has room. */
  takingFor(): readonly string[];
  /** Rows leased at insert, once their transaction committed. */
  take(entries: OutboxEntry[]): void;
  /** Rows of these accounts were written that nobody took: a claim round should look for them if one is bound here. */
  owed(accountIds: readonly string[]): void;
}

// What a receipt's deliver_sm is rendered from (toEntry reads these m_ columns), one primary-key probe of messages
// per outbox row `c` (OFFSET 0 keeps it per row), for the rows `when` allows.
const MESSAGE_FIELDS = `m.source AS m_source, m.destination AS m_destination, m.body AS m_body, m.created_at AS m_created_at,
    m.final_at AS m_final_at, m.customer_system_id AS m_customer_system_id`;
const MESSAGE_OF = (when: string) => `LEFT JOIN LATERAL (
    SELECT source, destination, body, created_at, final_at, customer_system_id FROM messages WHERE messages.id = c.message_id${when} OFFSET 0
  ) m ON true`;

// Receipts for SMPP messages whose registered_delivery asks for one: 1 = any final state, 2 = failures only. Rows of
// the accounts in $4 are leased at once ($5 ms) and come back with what the deliver_sm is rendered from. Both reads of
// messages are one primary-key probe per row (OFFSET 0 keeps them per row): joined to the unnest, the filter on
// ingress and registered_delivery made the planner expect one row and rescan the whole batch for every message.
const INSERT_RECEIPTS_SQL = prepared(`WITH ins AS (
    INSERT INTO smpp_outbox (account_id, kind, message_id, status, error_code, leased_until, attempts)
    SELECT m.account_id, 'receipt', m.id, u.status, u.error_code,
      CASE WHEN m.account_id = ANY($4::text[]) THEN now() + make_interval(secs => $5::float8 / 1000.0) END,
      CASE WHEN m.account_id = ANY($4::text[]) THEN 1 ELSE 0 END
    FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(id, status, error_code, n)
    CROSS JOIN LATERAL (SELECT messages.id, messages.account_id, messages.ingress, messages.registered_delivery FROM messages WHERE messages.id = u.id OFFSET 0) m
    WHERE m.ingress = 'smpp' AND ((m.registered_delivery & 3) = 1 OR ((m.registered_delivery & 3) = 2 AND u.status <> 'delivered'))
    ORDER BY u.n
    RETURNING id, account_id, kind, message_id, status, error_code, attempts, created_at, leased_until IS NOT NULL AS leased
  )
  SELECT c.id, c.account_id, c.kind, c.message_id, c.status, c.error_code, c.attempts, c.created_at, c.leased, ${MESSAGE_FIELDS}
  FROM ins c ${MESSAGE_OF(' AND c.leased')}
  ORDER BY c.id`);

/*
 * Due rows of each account in (next_at, id) order, one index scan per account that stops at the limit, then the oldest
 * of those across accounts. The lease is leased_until, a column outside every index, so a claim is a heap-only update
 * whenever the row's page has room (migration 0011). The messages join is one primary-key probe per claimed row
 * (OFFSET 0 keeps it per row): the planner cannot know how many rows the CTE returns, and with statistics of a small
 * ledger it hashed the whole table.
 */
const CLAIM_SQL = prepared(`WITH c AS (
    UPDATE smpp_outbox o SET leased_until = now() + make_interval(secs => $3::float8 / 1000.0), attempts = o.attempts + 1
    WHERE o.id = ANY(ARRAY(
      SELECT d.id FROM unnest($1::text[]) AS a(account_id)
      CROSS JOIN LATERAL (
        SELECT s.id, s.next_at FROM smpp_outbox s
        WHERE s.account_id = a.account_id AND s.next_at <= now() AND (s.leased_until IS NULL OR s.leased_until <= now())
        ORDER BY s.next_at, s.id LIMIT $2 FOR UPDATE SKIP LOCKED
      ) d
      ORDER BY d.next_at, d.id LIMIT $2))
    RETURNING o.id, o.account_id, o.kind, o.message_id, o.status, o.error_code, o.source, o.destination, o.data_coding,
      o.esm_class, o.payload, o.attempts, o.created_at, o.next_at
  )
  SELECT c.id, c.account_id, c.kind, c.message_id, c.status, c.error_code, c.source, c.destination, c.data_coding, c.esm_class,
    c.payload, c.attempts, c.created_at, ${MESSAGE_FIELDS}
  FROM c ${MESSAGE_OF('')}
  ORDER BY c.next_at, c.id`);

const REMOVE_SQL = prepared(`DELETE FROM smpp_outbox WHERE id = ANY($1::bigint[])`);

function ms(v: unknown): number {
  return v instanceof Date ? v.getTime() : new Date(v as string).getTime();
}

function toEntry(r: Record<string, unknown>): OutboxEntry {
  const payload = r.payload as Uint8Array | null;
  return {
    id: Number(r.id),
    accountId: r.account_id as string,
    kind: r.kind as 'receipt' | 'mo',
    attempts: r.attempts as number,
    createdAt: ms(r.created_at),
    messageId: (r.message_id as string | null) ?? null,
    status: (r.status as MessageStatus | null) ?? null,
    errorCode: (r.error_code as string | null) ?? null,
    message: r.m_source
      ? {
          source: r.m_source as string,
          destination: r.m_destination as string,
          body: (r.m_body as string | null) ?? null,
          createdAt: ms(r.m_created_at),
          finalAt: r.m_final_at ? ms(r.m_final_at) : null,
          customerSystemId: (r.m_customer_system_id as string | null) ?? null,
        }
      : null,
    source: (r.source as string | null) ?? null,
    destination: (r.destination as string | null) ?? null,
    dataCoding: (r.data_coding as number | null) ?? null,
    esmClass: (r.esm_class as number | null) ?? null,
    payload: payload ? Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength) : null,
  };
}

/**
 * What customers' SMPP binds are owed (receipts, MO), in SQL. Receipt rows are written by a ledger effect in the
 * same transaction as the status change, so a committed final state always has its receipt waiting; an instance
 * holding a receiver bind of the account leases rows (leased_until), so several instances never send one row at the
 * same time, and an unacknowledged row comes back when its lease ends. A receipt for an account bound here is leased
 * by its own insert and handed over after the commit; the claim finds the rest (no bind when written, released,
 * deferred, expired leases, other instances' rows).
 */
export class CustomerOutbox {
  private taker: ReceiptTaker | null = null;

  constructor(private readonly db: Db) {}

  /** Receipts of the taker's accounts go to it from now on, leased at insert (one taker per instance). */
  handOffTo(taker: ReceiptTaker | null): void {
    this.taker = taker;
  }

  /**
   * The ledger effect: receipts owed for these changes, inside the change's transaction. After the commit the rows
   * leased to the taker are handed to it, and it hears of the others (a claim round finds them).
   */
  readonly effect = (changes: readonly AppliedChange[]): EffectStatement | null => {
    const ids: string[] = [];
    const statuses: string[] = [];
    const errors: (string | null)[] = [];
    for (const c of changes) {
      if (!RECEIPT_STATUSES.includes(c.to)) continue;
      ids.push(c.id);
      statuses.push(c.to);
      errors.push(c.errorCode);
    }
    if (!ids.length) return null;
    const taker = this.taker;
    return {
      text: INSERT_RECEIPTS_SQL,
      params: [ids, statuses, errors, taker ? taker.takingFor() : [], taker?.leaseMs ?? 0],
      afterCommit: taker
        ? (rows) => {
            const taken: OutboxEntry[] = [];
            const owed = new Set<string>();
            for (const r of rows) {
              if (r.leased) taken.push(toEntry(r));
              else owed.add(r.account_id as string);
            }
            if (taken.length) taker.take(taken);
            if (owed.size) taker.owed([...owed]);
          }
        : undefined,
    };
  };

  /** A receipt for a message's current final state, whatever the customer asked for (operator replay). */
  async replay(messageId: string): Promise<'queued' | 'not_final' | 'not_found' | 'not_smpp'> {
    const { rows } = await this.db.query<{ account_id: string; status: MessageStatus; error_code: string | null; ingress: string }>(
      `SELECT account_id, status, error_code, ingress FROM messages WHERE id = $1`,
      [messageId],
    );
    const m = rows[0];
    if (!m) return 'not_found';
    if (m.ingress !== 'smpp') return 'not_smpp';
    if (!RECEIPT_STATUSES.includes(m.status)) return 'not_final';
    await this.db.query(`INSERT INTO smpp_outbox (account_id, kind, message_id, status, error_code) VALUES ($1, 'receipt', $2, $3, $4)`, [
      m.account_id,
      messageId,
      m.status,
      m.error_code,
    ]);
    return 'queued';
  }

  async insertMo(mo: { accountId: string; source: string; destination: string; dataCoding: number; esmClass: number; payload: Buffer }, q: Queryable = this.db): Promise<void> {
    await q.query(
      `INSERT INTO smpp_outbox (account_id, kind, source, destination, data_coding, esm_class, payload) VALUES ($1, 'mo', $2, $3, $4, $5, decode($6, 'hex'))`,
      [mo.accountId, mo.source, mo.destination, mo.dataCoding, mo.esmClass, mo.payload.toString('hex')],
    );
  }

  /** Claims due rows of these accounts for `leaseMs`, oldest first. */
  async claim(accountIds: readonly string[], limit: number, leaseMs: number): Promise<OutboxEntry[]> {
    if (!accountIds.length) return [];
    const { rows } = await this.db.query(CLAIM_SQL, [accountIds, limit, leaseMs]);
    return rows.map(toEntry);
  }

  /** Delivered: gone. */
  async remove(ids: readonly number[]): Promise<void> {
    if (ids.length) await this.db.query(REMOVE_SQL, [ids]);
  }

  /** Due again now (no bind was free to take it). */
  async release(ids: readonly number[]): Promise<void> {
    if (ids.length) await this.db.query(`UPDATE smpp_outbox SET leased_until = NULL WHERE id = ANY($1::bigint[])`, [ids]);
  }

  /** Put off for `delayMs` (the customer refused it, or did not answer): out of the claim scans until then. */
  async defer(ids: readonly number[], delayMs: number): Promise<void> {
    if (!ids.length) return;
    await this.db.query(
      `UPDATE smpp_outbox SET next_at = now() + make_interval(secs => $2::float8 / 1000.0), leased_until = NULL WHERE id = ANY($1::bigint[])`,
      [ids, delayMs],
    );
  }

  /** Drops rows older than the retention; returns how many of each kind. */
  async purge(retentionMs: number): Promise<{ receipt: number; mo: number }> {
    const { rows } = await this.db.query<{ kind: 'receipt' | 'mo'; n: number }>(
      `WITH d AS (DELETE FROM smpp_outbox WHERE created_at < now() - make_interval(secs => $1::float8 / 1000.0) RETURNING kind)
       SELECT kind, count(*)::int AS n FROM d GROUP BY kind`,
      [retentionMs],
    );
    const out = { receipt: 0, mo: 0 };
    for (const r of rows) out[r.kind] = r.n;
    return out;
  }

  /** Rows waiting per kind (metrics, `ferry status`). */
  async pending(): Promise<{ receipt: number; mo: number }> {
    const { rows } = await this.db.query<{ kind: 'receipt' | 'mo'; n: number }>(`SELECT kind, count(*)::int AS n FROM smpp_outbox GROUP BY kind`);
    const out = { receipt: 0, mo: 0 };
    for (const r of rows) out[r.kind] = r.n;
    return out;
  }
}
