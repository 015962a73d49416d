import { plannedPerBatch, prepared } from '../store/sql/prepared.js';
import type { Db, Queryable, QueryResult, Transaction } from '../store/types.js';
import type { AccountMessageMetrics } from './account-metrics.js';
import { GroupCommit, type GroupCommitOptions, type GroupCommitStats } from './group-commit.js';
import { decide, isFinal } from './transitions.js';
import type {
  MessageEvent,
  MessageRecord,
  MessageStatus,
  PartSummary,
  PartUpdate,
  SubmittedPart,
  TransitionInput,
  TransitionOutcome,
  TransitionResult,
} from './types.js';

/** A status change the batch applied, as handed to the effects. */
export interface AppliedChange {
  id: string;
  accountId: string;
  from: MessageStatus;
  to: MessageStatus;
  errorCode: string | null;
}

/** Runs once the batch's transaction committed (never after a rollback): hands what an effect wrote on. Must not throw. */
export type AfterCommit = () => void;

/** The statement an effect adds to a batch, and what it hands on once the batch committed. */
export interface EffectStatement {
  text: string;
  params: readonly unknown[];
  /** Runs after the commit (never after a rollback) with the statement's rows. Must not throw. */
  afterCommit?: (rows: readonly Record<string, unknown>[]) => void;
}

/**
 * Work that must commit together with status changes (customer receipts, webhook events, refunds: the outbox rows).
 * Called with a batch's changes before its write is issued; returns the one statement it adds, or null. That
 * statement runs after the write (so it sees it) and, on Postgres, travels with it and the COMMIT in one round trip.
 * Being plain data, it is either all there before anything is sent or the effect threw: a throw, or the statement
 * failing, rolls the whole batch back, and the commit can never go out without an effect's rows.
 */
export type TransitionEffect = (changes: readonly AppliedChange[]) => EffectStatement | null;

export interface LedgerOptions {
  /** Batching of transitions (receipts arrive at submit rates). */
  transitions?: GroupCommitOptions;
  effects?: TransitionEffect[];
  /** Counts the messages reaching a final status per account, once their batch committed. */
  accountMetrics?: AccountMessageMetrics;
  /** Epoch ms; the "now" of the recovery sweep. */
  clock?: () => number;
}

export type MarkSubmittedOutcome = 'changed' | 'late' | 'not_found';

const FINAL_PART = new Set(['delivered', 'undelivered', 'expired', 'rejected', 'failed']);

// What toRecord reads, named (a registered statement lists its columns; see prepared.ts).
const RECORD_COLUMNS = `id, account_id, channel, ingress, batch_id, reference, source, source_ton, source_npi, destination, body, body_bytes,
  body_sealed, data_coding, esm_class, udh_ref, udh_total, udh_seq, segments, encoding, priority, registered_delivery, scheduled_at,
  expires_at, status, error_code, attempts, route_rule, upstream_id, upstream_message_id, parts_total, parts_done, cost_micros, currency,
  customer_system_id, resend_of, created_at, updated_at, final_at`;

// The dispatcher reads every leased batch with this (planned per batch: see plannedPerBatch).
const GET_MANY_SQL = plannedPerBatch(`SELECT ${RECORD_COLUMNS} FROM messages WHERE id = ANY($1::text[])`);
const GET_SQL = prepared(`SELECT ${RECORD_COLUMNS} FROM messages WHERE id = $1`);
const GET_OF_ACCOUNT_SQL = prepared(`SELECT ${RECORD_COLUMNS} FROM messages WHERE id = $1 AND account_id = $2`);

// A batch's status changes and their events in one statement (one round trip): the UPDATE runs as a data-modifying
// CTE, which Postgres executes to completion although nothing reads it. A batch of only late events updates nothing.
// The events' details travel as one JSON array (null for none), not as a text[] of JSON texts: that array's literal
// escaped every quote of every detail, in the daemon and again in Postgres's array parser.
const APPLY_TRANSITIONS_SQL = plannedPerBatch(`WITH upd AS (
  UPDATE messages m
  SET status = u.status, error_code = COALESCE(u.error_code, m.error_code), updated_at = now(),
      final_at = CASE WHEN u.final THEN now() ELSE m.final_at END
  FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[]) AS u(id, status, error_code, final)
  WHERE m.id = u.id AND m.id = ANY($1::text[])
)
INSERT INTO message_events (message_id, status, detail)
  SELECT e.id, e.status, NULLIF(e.detail, 'null'::jsonb)
  FROM ROWS FROM (unnest($5::text[]), unnest($6::text[]), jsonb_array_elements($7::jsonb)) WITH ORDINALITY AS e(id, status, detail, n)
  ORDER BY e.n`);

// Batches lock their rows in id order, so two batches never deadlock.
const LOCK_SQL = plannedPerBatch(`SELECT id, account_id, status FROM messages WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`);

// Keep a part's final state when its receipt came before this record.
const UPSERT_SUBMITTED_PARTS_SQL = plannedPerBatch(`INSERT INTO message_parts (message_id, part_index, upstream_id, upstream_message_id, status)
  SELECT u.id, u.i, u.up, u.m, 'submitted' FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) AS u(id, i, up, m)
  WHERE EXISTS (SELECT 1 FROM messages WHERE messages.id = u.id AND messages.id = ANY($1::text[]))
  ON CONFLICT (message_id, part_index) DO UPDATE
    SET upstream_id = EXCLUDED.upstream_id, upstream_message_id = EXCLUDED.upstream_message_id,
        status = CASE WHEN message_parts.status = 'submitted' OR message_parts.status = 'queued' THEN 'submitted' ELSE message_parts.status END,
        updated_at = now()`);

// The submit records and their events in one statement, like APPLY_TRANSITIONS_SQL. parts_done counts the parts
// upserted by the batch's earlier statement (a resumed or late record of a split message).
const RECORD_SUBMITS_SQL = plannedPerBatch(`WITH upd AS (
  UPDATE messages m SET status = CASE WHEN u.late THEN m.status ELSE 'submitted' END, upstream_id = u.up,
    route_rule = COALESCE(u.rule, m.route_rule), parts_total = GREATEST(u.total, m.parts_total),
    parts_done = COALESCE(u.known, (SELECT count(*) FROM message_parts p WHERE p.message_id = m.id)),
    upstream_message_id = COALESCE(u.umid, m.upstream_message_id), attempts = m.attempts + u.n, updated_at = now()
  FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::bool[], $7::int[], $8::text[]) AS u(id, up, rule, total, n, late, known, umid)
  WHERE m.id = u.id AND m.id = ANY($1::text[])
)
INSERT INTO message_events (message_id, status, detail)
  SELECT e.id, 'submitted', e.d FROM ROWS FROM (unnest($1::text[]), jsonb_array_elements($9::jsonb)) WITH ORDINALITY AS e(id, d, n) ORDER BY e.n`);

// Guarded like every ledger write of history: no part row without its message (there is no foreign key to check).
// One row per (message, part) in a batch: an upsert may not touch a row twice (recordParts merges repeats first).
const RECORD_PARTS_SQL = plannedPerBatch(`INSERT INTO message_parts (message_id, part_index, upstream_id, upstream_message_id, status, error_code)
  SELECT u.id, u.i, u.up, u.m, u.s, u.e FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(id, i, up, m, s, e)
  WHERE EXISTS (SELECT 1 FROM messages WHERE messages.id = u.id AND messages.id = ANY($1::text[]))
  ON CONFLICT (message_id, part_index) DO UPDATE
    SET status = EXCLUDED.status, error_code = COALESCE(EXCLUDED.error_code, message_parts.error_code),
        upstream_id = COALESCE(EXCLUDED.upstream_id, message_parts.upstream_id),
        upstream_message_id = COALESCE(EXCLUDED.upstream_message_id, message_parts.upstream_message_id), updated_at = now()`);

// One index probe per message: the planner may not flatten the LATERAL (OFFSET 0), so it cannot pick a scan of the whole
// table, which it does for `message_id = ANY($1)` while the table is young (then every row is compared with every id).
const PART_COUNTS_SQL = prepared(`SELECT p.message_id, p.status, count(*)::int AS n
  FROM unnest($1::text[]) AS u(id) CROSS JOIN LATERAL (SELECT message_id, status FROM message_parts WHERE message_id = u.id OFFSET 0) p
  GROUP BY p.message_id, p.status`);

/**
 * Reads and state changes of the message ledger. Status changes follow the rule in transitions.ts and append to
 * message_events in the same transaction. `transition`/`transitionMany` share one group-commit path, so receipts at
 * high rate cost one locking SELECT and one statement that updates the rows and appends their events per batch.
 */
export class Ledger {
  private readonly gc: GroupCommit<TransitionInput, TransitionResult>;
  private readonly clock: () => number;
  private readonly effects: TransitionEffect[];
  private readonly accountMetrics: AccountMessageMetrics | undefined;
  private readonly submits: GroupCommit<SubmitRecord, MarkSubmittedOutcome>;
  private readonly partRecords: GroupCommit<PartUpdate, PartSummary>;

  constructor(
    private readonly db: Db,
    opts: LedgerOptions = {},
  ) {
    this.clock = opts.clock ?? Date.now;
    this.effects = [...(opts.effects ?? [])];
    this.accountMetrics = opts.accountMetrics;
    this.gc = new GroupCommit<TransitionInput, TransitionResult>(
      (items) => this.inTx((q, after) => applyTransitions(q, items, this.effects, after, this.accountMetrics)),
      opts.transitions,
    );
    this.submits = new GroupCommit<SubmitRecord, MarkSubmittedOutcome>((items) => this.inTx((q, after) => applySubmits(q, items, this.effects, after)), opts.transitions);
    this.partRecords = new GroupCommit<PartUpdate, PartSummary>((items) => applyPartRecords(this.db, items), opts.transitions);
  }

  /** One batch's transaction; the effects' after-commit work runs once it committed. */
  private async inTx<T>(fn: (q: Transaction, after: AfterCommit[]) => Promise<T>): Promise<T> {
    const after: AfterCommit[] = [];
    const out = await this.db.tx((q) => fn(q, after));
    for (const f of after) f();
    return out;
  }

  /** Adds an effect for later batches (wiring order: the outbox owners register after the ledger exists). */
  addEffect(effect: TransitionEffect): void {
    this.effects.push(effect);
  }

  get transitionStats(): Readonly<GroupCommitStats> {
    return this.gc.stats;
  }

  get partRecordStats(): Readonly<GroupCommitStats> {
    return this.partRecords.stats;
  }

  async get(id: string, accountId?: string): Promise<MessageRecord | null> {
    const { rows } = accountId ? await this.db.query(GET_OF_ACCOUNT_SQL, [id, accountId]) : await this.db.query(GET_SQL, [id]);
    return rows.length ? toRecord(rows[0]) : null;
  }

  /** Several rows at once (the dispatcher reads a leased batch in one query); unknown ids are absent. */
  async getMany(ids: readonly string[]): Promise<Map<string, MessageRecord>> {
    const out = new Map<string, MessageRecord>();
    if (!ids.length) return out;
    const { rows } = await this.db.query(GET_MANY_SQL, [ids]);
    for (const r of rows) {
      const rec = toRecord(r);
      out.set(rec.id, rec);
    }
    return out;
  }

  /**
   * Per-part state by part index: the parts of a message Ferry split, or the one part of a message sent whole (its
   * state is the message's own, read from its row).
   */
  async parts(id: string): Promise<Array<{ partIndex: number; status: string; upstreamId: string | null; upstreamMessageId: string | null; errorCode: string | null }>> {
    const { rows } = await this.db.query<{ part_index: number; status: string; upstream_id: string | null; upstream_message_id: string | null; error_code: string | null }>(
      `SELECT part_index, status, upstream_id, upstream_message_id, error_code FROM message_parts WHERE message_id = $1
       UNION ALL
       SELECT 0, status, upstream_id, upstream_message_id, error_code FROM messages
         WHERE id = $1 AND upstream_message_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM message_parts WHERE message_id = $1)
       ORDER BY part_index`,
      [id],
    );
    return rows.map((r) => ({ partIndex: r.part_index, status: r.status, upstreamId: r.upstream_id, upstreamMessageId: r.upstream_message_id, errorCode: r.error_code }));
  }

  /** Status history, oldest first. */
  async history(id: string): Promise<MessageEvent[]> {
    const { rows } = await this.db.query<{ id: number; message_id: string; status: MessageStatus; at: Date | string; detail: Record<string, unknown> | null }>(
      `SELECT id, message_id, status, at, detail FROM message_events WHERE message_id = $1 ORDER BY id`,
      [id],
    );
    return rows.map((r) => ({ id: Number(r.id), messageId: r.message_id, status: r.status, at: ms(r.at)!, detail: r.detail }));
  }

  transition(id: string, to: MessageStatus, detail?: Record<string, unknown> | null, errorCode?: string | null): Promise<TransitionResult> {
    return this.gc.submit({ id, to, detail, errorCode });
  }

  /** Results in input order; several changes of one id apply in order. */
  transitionMany(items: readonly TransitionInput[]): Promise<TransitionResult[]> {
    return this.gc.submitMany(items);
  }

  /**
   * The upstream accepted (some) parts: status submitted, upstream and route recorded, parts upserted, parts_done =
   * parts known. A message already final (a receipt overtook this record, or it was cancelled while being sent)
   * keeps its status; the submit is recorded as a late event and the row still names its upstream and route.
   * A message sent in one part keeps its upstream message id on its row; only split messages get part rows.
   * Calls are batched (group commit): one transaction of two or three statements serves every message in the batch.
   */
  markSubmitted(id: string, upstreamId: string, routeRule: string | null, parts: readonly SubmittedPart[], totalParts = parts.length): Promise<MarkSubmittedOutcome> {
    return this.submits.submit({ id, upstreamId, routeRule, parts, totalParts });
  }

  /**
   * Records one part's state (a per-part receipt) and returns the counts the receipt handler decides the message
   * from. Batched like the other writes: receipts for the parts of long messages share one upsert and one count.
   */
  recordPart(u: PartUpdate): Promise<PartSummary> {
    return this.partRecords.submit(u);
  }

  /**
   * Cancels a queued or scheduled message of the account that nothing was sent for yet. False when it is unknown,
   * another account's, or already submitted/final. (A dispatcher holding it must check markSubmitted's outcome.)
   */
  async cancel(id: string, accountId: string): Promise<boolean> {
    const r = await this.db.query(
      `WITH c AS (
         UPDATE messages SET status = 'cancelled', updated_at = now(), final_at = now()
         WHERE id = $1 AND account_id = $2 AND status IN ('queued', 'scheduled') RETURNING id
       )
       INSERT INTO message_events (message_id, status) SELECT id, 'cancelled' FROM c`,
      [id, accountId],
    );
    if (r.rowCount > 0) this.accountMetrics?.finalOf(accountId, 'cancelled');
    return r.rowCount > 0;
  }

  /**
   * The start-up sweep: messages accepted but not yet submitted (queued, or scheduled whose time has come), in id
   * order after `afterId`. Page with the last id returned until fewer than `limit` come back.
   */
  async recoverable(limit: number, afterId = '', now = this.clock()): Promise<MessageRecord[]> {
    const { rows } = await this.db.query(
      `SELECT ${RECORD_COLUMNS} FROM messages
       WHERE final_at IS NULL AND status IN ('queued', 'scheduled') AND (status = 'queued' OR scheduled_at <= to_timestamp($3::float8 / 1000.0)) AND id > $2
       ORDER BY id LIMIT $1`,
      [limit, afterId, now],
    );
    return rows.map(toRecord);
  }

  /** Ids of messages submitted upstream and silent (no receipt, no change) since before `before` (epoch ms). */
  async staleSubmitted(limit: number, before: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      `SELECT id FROM messages WHERE final_at IS NULL AND status = 'submitted' AND updated_at < to_timestamp($2::float8 / 1000.0) ORDER BY id LIMIT $1`,
      [limit, before],
    );
    return rows.map((r) => r.id);
  }

  /** Writes pending transitions and submit records, then refuses new ones. */
  async close(): Promise<void> {
    await Promise.all([this.gc.close(), this.submits.close(), this.partRecords.close()]);
  }
}

interface SubmitRecord {
  id: string;
  upstreamId: string;
  routeRule: string | null;
  parts: readonly SubmittedPart[];
  totalParts: number;
}

/** One batch of submit records: lock the rows in id order, upsert the parts of split messages, update every row, append events. */
async function applySubmits(q: Transaction, items: SubmitRecord[], effects: readonly TransitionEffect[], after: AfterCommit[]): Promise<MarkSubmittedOutcome[]> {
  // Several records of one message in a batch (a resumed long message) merge into one row update.
  const byId = new Map<string, { upstreamId: string; routeRule: string | null; total: number; count: number; parts: SubmittedPart[] }>();
  for (const it of items) {
    let m = byId.get(it.id);
    if (!m) byId.set(it.id, (m = { upstreamId: it.upstreamId, routeRule: it.routeRule, total: 0, count: 0, parts: [] }));
    m.upstreamId = it.upstreamId;
    m.routeRule = it.routeRule ?? m.routeRule;
    m.total = Math.max(m.total, it.totalParts);
    m.count++;
    for (const p of it.parts) m.parts.push(p);
  }
  const pId: string[] = [];
  const pIdx: number[] = [];
  const pUp: string[] = [];
  const pMsg: string[] = [];
  for (const [id, m] of byId) {
    if (m.total <= 1) continue;
    for (const p of m.parts) {
      pId.push(id);
      pIdx.push(p.partIndex);
      pUp.push(m.upstreamId);
      pMsg.push(p.upstreamMessageId);
    }
  }
  const ids = [...byId.keys()];
  const locked = q.query<{ id: string; account_id: string; status: MessageStatus }>(LOCK_SQL, [ids]);
  // Needs nothing from the locking read's answer, so it travels with it (one round trip); it still runs after it.
  const parts = pId.length ? [q.query(UPSERT_SUBMITTED_PARTS_SQL, [pId, pIdx, pUp, pMsg])] : [];
  const cur = await locked.catch(async (err: unknown) => {
    await Promise.allSettled(parts);
    throw err;
  });
  const lockedRows = new Map(cur.rows.map((r) => [r.id, r]));
  const uId: string[] = [];
  const uUp: string[] = [];
  const uRule: (string | null)[] = [];
  const uTotal: number[] = [];
  const uCount: number[] = [];
  const uLate: boolean[] = [];
  const uKnown: (number | null)[] = [];
  const uMsgId: (string | null)[] = [];
  const eDetail: object[] = [];
  for (const [id, m] of byId) {
    const from = lockedRows.get(id)?.status;
    if (from === undefined) continue;
    const late = isFinal(from);
    const single = m.total <= 1;
    const indexes = m.parts.map((p) => p.partIndex);
    uId.push(id);
    uUp.push(m.upstreamId);
    uRule.push(m.routeRule);
    uTotal.push(m.total);
    uCount.push(m.count);
    uLate.push(late);
    // A first submit knows its parts, and so does a message sent whole; a resumed or late record of a split message
    // counts what the table holds (earlier records too).
    uKnown.push(single ? Math.min(1, indexes.length) : from === 'queued' || from === 'scheduled' ? new Set(indexes).size : null);
    uMsgId.push(single && m.parts.length ? m.parts[m.parts.length - 1].upstreamMessageId : null);
    eDetail.push(late ? { upstream: m.upstreamId, parts: indexes, late: true, kept: from } : { upstream: m.upstreamId, parts: indexes });
  }
  if (uId.length) {
    // Effects see the first submit of a message (webhook sms.sent); a resumed or late record changes no status.
    const changes: AppliedChange[] = [];
    for (let i = 0; i < uId.length; i++) {
      const row = lockedRows.get(uId[i])!;
      if (!uLate[i] && row.status !== 'submitted') changes.push({ id: uId[i], accountId: row.account_id, from: row.status, to: 'submitted', errorCode: null });
    }
    await writeWithEffects(q, RECORD_SUBMITS_SQL, [uId, uUp, uRule, uTotal, uCount, uLate, uKnown, uMsgId, JSON.stringify(eDetail)], effects, changes, after, parts);
  } else {
    for (const r of await Promise.allSettled(parts)) if (r.status === 'rejected') throw r.reason;
  }
  return items.map((it) => {
    const from = lockedRows.get(it.id)?.status;
    if (from === undefined) return 'not_found';
    return isFinal(from) ? 'late' : 'changed';
  });
}

/**
 * One batch of part records. The upsert commits before the count is read (two statements, no transaction): of two
 * batches racing on the last parts of one message, the later count then sees both, so the message is never left
 * waiting with every part final. Within a batch the callers see what one-by-one writes would have shown them: a part
 * that a later item of the batch writes counts as pending for the earlier ones, so only the last receipt of a
 * message decides it. Repeats of a part merge in arrival order.
 */
async function applyPartRecords(db: Queryable, items: PartUpdate[]): Promise<PartSummary[]> {
  const merged = new Map<string, { u: PartUpdate; last: number }>();
  for (let k = 0; k < items.length; k++) {
    const u = items[k];
    const key = u.messageId + '\u0000' + u.partIndex;
    const m = merged.get(key);
    if (!m) {
      merged.set(key, { u: { ...u }, last: k });
      continue;
    }
    m.last = k;
    m.u.status = u.status;
    m.u.errorCode = u.errorCode ?? m.u.errorCode;
    m.u.upstreamId = u.upstreamId ?? m.u.upstreamId;
    m.u.upstreamMessageId = u.upstreamMessageId ?? m.u.upstreamMessageId;
  }
  const n = merged.size;
  const id: string[] = new Array(n);
  const idx: number[] = new Array(n);
  const up: (string | null)[] = new Array(n);
  const upMsg: (string | null)[] = new Array(n);
  const status: string[] = new Array(n);
  const err: (string | null)[] = new Array(n);
  const written = new Map<string, { last: number; status: string }[]>();
  let i = 0;
  for (const { u, last } of merged.values()) {
    id[i] = u.messageId;
    idx[i] = u.partIndex;
    up[i] = u.upstreamId ?? null;
    upMsg[i] = u.upstreamMessageId ?? null;
    status[i] = u.status;
    err[i] = u.errorCode ?? null;
    i++;
    const w = written.get(u.messageId);
    if (w) w.push({ last, status: u.status });
    else written.set(u.messageId, [{ last, status: u.status }]);
  }
  await db.query(RECORD_PARTS_SQL, [id, idx, up, upMsg, status, err]);
  const { rows } = await db.query<{ message_id: string; status: string; n: number }>(PART_COUNTS_SQL, [[...written.keys()]]);
  const summaries = new Map<string, PartSummary>();
  for (const r of rows) {
    let s = summaries.get(r.message_id);
    if (!s) summaries.set(r.message_id, (s = { total: 0, delivered: 0, failed: 0, pending: 0 }));
    s.total += r.n;
    s[partCategory(r.status)] += r.n;
  }
  return items.map((u, k) => {
    const s = summaries.get(u.messageId);
    if (!s) return { total: 0, delivered: 0, failed: 0, pending: 0 };
    const out = { ...s };
    for (const w of written.get(u.messageId)!) {
      const c = partCategory(w.status);
      if (w.last > k && c !== 'pending' && out[c] > 0) {
        out[c]--;
        out.pending++;
      }
    }
    return out;
  });
}

function partCategory(status: string): 'delivered' | 'failed' | 'pending' {
  return status === 'delivered' ? 'delivered' : FINAL_PART.has(status) ? 'failed' : 'pending';
}

interface Pending {
  accountId: string;
  from: MessageStatus;
  status: MessageStatus;
  errorCode: string | null;
  dirty: boolean;
}

/** One batch of transitions inside one transaction: lock (in id order, so batches never deadlock), decide, write. */
async function applyTransitions(
  q: Transaction,
  items: TransitionInput[],
  effects: readonly TransitionEffect[],
  after: AfterCommit[],
  accountMetrics?: AccountMessageMetrics,
): Promise<TransitionResult[]> {
  const ids = [...new Set(items.map((i) => i.id))];
  const cur = await q.query<{ id: string; account_id: string; status: MessageStatus }>(LOCK_SQL, [ids]);
  const state = new Map<string, Pending>();
  for (const r of cur.rows) state.set(r.id, { accountId: r.account_id, status: r.status, errorCode: null, dirty: false, from: r.status });
  const results: TransitionResult[] = new Array(items.length);
  const evId: string[] = [];
  const evStatus: string[] = [];
  const evDetail: (Record<string, unknown> | null)[] = [];
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    const s = state.get(it.id);
    if (!s) {
      results[i] = { id: it.id, outcome: 'not_found', status: null };
      continue;
    }
    const outcome: TransitionOutcome = decide(s.status, it.to);
    if (outcome === 'changed' || outcome === 'late') {
      let detail = it.detail ?? null;
      if (it.errorCode) detail = { ...detail, error: it.errorCode };
      if (outcome === 'late') detail = { ...detail, late: true, kept: s.status };
      evId.push(it.id);
      evStatus.push(it.to);
      evDetail.push(detail);
    }
    if (outcome === 'changed') {
      s.status = it.to;
      if (it.errorCode) s.errorCode = it.errorCode;
      s.dirty = true;
    }
    results[i] = { id: it.id, outcome, status: s.status };
  }
  const uId: string[] = [];
  const uStatus: string[] = [];
  const uErr: (string | null)[] = [];
  const uFinal: boolean[] = [];
  for (const [id, s] of state) {
    if (!s.dirty) continue;
    uId.push(id);
    uStatus.push(s.status);
    uErr.push(s.errorCode);
    uFinal.push(isFinal(s.status));
  }
  if (!uId.length && !evId.length) return results;
  const changes: AppliedChange[] = [];
  for (const [id, s] of state) if (s.dirty) changes.push({ id, accountId: s.accountId, from: s.from, to: s.status, errorCode: s.errorCode });
  await writeWithEffects(q, APPLY_TRANSITIONS_SQL, [uId, uStatus, uErr, uFinal, evId, evStatus, JSON.stringify(evDetail)], effects, changes, after);
  if (accountMetrics) {
    after.push(() => {
      for (const c of changes) if (isFinal(c.to)) accountMetrics.finalOf(c.accountId, c.to);
    });
  }
  return results;
}

/**
 * The batch's write, its effects' statements and the COMMIT, issued back to back so that on Postgres they travel in
 * one round trip; they still run in issue order, so each effect's statement sees the write, and a failed statement
 * turns the COMMIT into a rollback. The effects are asked first: one that throws does so before anything more is
 * issued. `prior` are statements the batch issued earlier and has not awaited. Everything settles before this
 * returns; the first failure, in issue order, is the one thrown.
 */
async function writeWithEffects(
  q: Transaction,
  text: string,
  params: readonly unknown[],
  effects: readonly TransitionEffect[],
  changes: readonly AppliedChange[],
  after: AfterCommit[],
  prior: readonly Promise<unknown>[] = [],
): Promise<void> {
  const extra: EffectStatement[] = [];
  try {
    if (changes.length) {
      for (const effect of effects) {
        const s = effect(changes);
        if (s) extra.push(s);
      }
    }
  } catch (err) {
    await Promise.allSettled(prior);
    throw err;
  }
  const pending: Promise<QueryResult<Record<string, unknown>>>[] = [q.query(text, params)];
  for (const s of extra) pending.push(q.query(s.text, s.params));
  q.commitNow();
  const [before, settled] = await Promise.all([Promise.allSettled(prior), Promise.allSettled(pending)]);
  for (const s of before) if (s.status === 'rejected') throw s.reason;
  for (const s of settled) if (s.status === 'rejected') throw s.reason;
  for (let i = 0; i < extra.length; i++) {
    const then = extra[i].afterCommit;
    if (!then) continue;
    const rows = (settled[i + 1] as PromiseFulfilledResult<QueryResult<Record<string, unknown>>>).value.rows;
    after.push(() => then(rows));
  }
}

function ms(v: unknown): number | null {
  if (v == null) return null;
  return v instanceof Date ? v.getTime() : new Date(v as string).getTime();
}

function toRecord(r: Record<string, unknown>): MessageRecord {
  const bytes = r.body_bytes as Uint8Array | null;
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    channel: r.channel as 'sms',
    ingress: r.ingress as MessageRecord['ingress'],
    batchId: (r.batch_id as string | null) ?? null,
    reference: (r.reference as string | null) ?? null,
    source: r.source as string,
    sourceTon: r.source_ton as number,
    sourceNpi: r.source_npi as number,
    destination: r.destination as string,
    body: (r.body as string | null) ?? null,
    bodyBytes: bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : null,
    bodySealed: (r.body_sealed as string | null) ?? null,
    dataCoding: (r.data_coding as number | null) ?? null,
    esmClass: r.esm_class as number,
    udhRef: (r.udh_ref as number | null) ?? null,
    udhTotal: (r.udh_total as number | null) ?? null,
    udhSeq: (r.udh_seq as number | null) ?? null,
    segments: r.segments as number,
    encoding: r.encoding as string,
    priority: r.priority as number,
    registeredDelivery: r.registered_delivery as number,
    scheduledAt: ms(r.scheduled_at),
    expiresAt: ms(r.expires_at),
    status: r.status as MessageStatus,
    errorCode: (r.error_code as string | null) ?? null,
    attempts: r.attempts as number,
    routeRule: (r.route_rule as string | null) ?? null,
    upstreamId: (r.upstream_id as string | null) ?? null,
    upstreamMessageId: (r.upstream_message_id as string | null) ?? null,
    partsTotal: r.parts_total as number,
    partsDone: r.parts_done as number,
    costMicros: Number(r.cost_micros),
    currency: r.currency as string,
    customerSystemId: (r.customer_system_id as string | null) ?? null,
    resendOf: (r.resend_of as string | null) ?? null,
    createdAt: ms(r.created_at)!,
    updatedAt: ms(r.updated_at)!,
    finalAt: ms(r.final_at),
  };
}
