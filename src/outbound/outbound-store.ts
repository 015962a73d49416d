import { prepared } from '../store/sql/prepared.js';
import type { Db, Queryable } from '../store/types.js';
import type { OutboundJob } from './types.js';

/** A row of outbound_jobs with its lane (what the store reads and writes whole). */
export interface JobRow<P = unknown> extends OutboundJob<P> {
  lane: 'priority' | 'bulk';
  pending: boolean;
  claimedUntil: number | null;
}

export interface HistoryRow {
  jobId: string;
  kind: 'state' | 'late' | 'attempt';
  state: string;
  at: number;
  detail: Record<string, unknown> | null;
}

export interface ClaimResult<P = unknown> {
  /** Claimed for this worker; `prevClaim` set when an earlier claim ran out unfinished (a crash mid-send). */
  claimed: Array<JobRow<P> & { prevClaim: number | null }>;
  /** Not pending any more (sent, failed) or gone: off the queue. */
  done: string[];
  /** Claimed by another worker until `until`, or not due before `until`: back to the queue until then. */
  later: Array<{ id: string; until: number }>;
}

export interface PendingRow {
  id: string;
  provider: string;
  lane: 'priority' | 'bulk';
  nextAttemptAt: number;
  updatedAt: number;
}

const CHUNK = 5000;
const COLUMNS = `j.id, j.product, j.provider, j.account_id, j.message_id, j.lane, j.payload, j.state, j.pending, j.attempts, j.next_attempt_at,
  j.deadline_at, j.claimed_until, j.provider_id, j.ferry_error, j.provider_error, j.error_message, j.created_at, j.updated_at`;

const INSERT_SQL = prepared(`INSERT INTO outbound_jobs (id, product, provider, account_id, message_id, lane, payload, state, next_attempt_at, deadline_at, created_at, updated_at)
  SELECT u.id, u.product, u.provider, u.account_id, u.message_id, u.lane, u.payload::jsonb, u.state, u.next_attempt_at, u.deadline_at, $11, $11
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::text[], $8::text[], $9::bigint[], $10::bigint[])
    AS u(id, product, provider, account_id, message_id, lane, payload, state, next_attempt_at, deadline_at)`);

const HISTORY_SQL = prepared(`INSERT INTO outbound_history (job_id, kind, state, at, detail)
  SELECT u.job_id, u.kind, u.state, u.at, u.detail::jsonb
  FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) WITH ORDINALITY AS u(job_id, kind, state, at, detail, n)
  ORDER BY u.n`);

// The claim: a pending job that is due and not claimed by a live worker gets claimed_until = the lease's end. The self
// join reads the claim as it was before (a claim that ran out unfinished: the earlier attempt's outcome is unknown).
const CLAIM_SQL = prepared(`UPDATE outbound_jobs j SET claimed_until = $3
  FROM outbound_jobs o
  WHERE j.id = ANY($1::text[]) AND o.id = j.id AND j.pending AND (j.claimed_until IS NULL OR j.claimed_until <= $2) AND j.next_attempt_at <= $2
  RETURNING ${COLUMNS}, o.claimed_until AS prev_claim`);

const UNCLAIMED_SQL = `SELECT id, pending, claimed_until, next_attempt_at FROM outbound_jobs WHERE id = ANY($1::text[])`;

// Locked in id order, so two transactions over overlapping jobs (a result batch and a provider callback) never deadlock.
const LOCK_SQL = prepared(`SELECT ${COLUMNS} FROM outbound_jobs j WHERE j.id = ANY($1::text[]) ORDER BY j.id FOR UPDATE`);
const LOCK_BY_PROVIDER_ID_SQL = `SELECT ${COLUMNS} FROM outbound_jobs j WHERE j.provider = $1 AND j.provider_id = ANY($2::text[]) ORDER BY j.id FOR UPDATE`;

// `j.id = ANY($1)` beside the join keeps the generic plan on the primary key whatever it guesses of the unnest (the
// ledger's batch statements learned this: a plain join hashed the whole table once it was large).
const WRITE_SQL = prepared(`UPDATE outbound_jobs j SET state = u.state, pending = u.pending, attempts = u.attempts, next_attempt_at = u.next_attempt_at,
    claimed_until = u.claimed_until, provider_id = u.provider_id, ferry_error = u.ferry_error, provider_error = u.provider_error,
    error_message = u.error_message, updated_at = u.updated_at
  FROM unnest($1::text[], $2::text[], $3::bool[], $4::int[], $5::bigint[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[])
    AS u(id, state, pending, attempts, next_attempt_at, claimed_until, provider_id, ferry_error, provider_error, error_message, updated_at)
  WHERE j.id = u.id AND j.id = ANY($1::text[])`);

// Only claims still ours (claimed_until as we set it): one that ran out may belong to another worker by now.
const RELEASE_SQL = `UPDATE outbound_jobs j SET claimed_until = NULL
  FROM unnest($1::text[], $2::bigint[]) AS u(id, until) WHERE j.id = u.id AND j.id = ANY($1::text[]) AND j.claimed_until = u.until`;

interface Raw {
  id: string;
  product: string;
  provider: string;
  account_id: string;
  message_id: string;
  lane: number;
  payload: unknown;
  state: string;
  pending: boolean;
  attempts: number;
  next_attempt_at: number;
  deadline_at: number;
  claimed_until: number | null;
  provider_id: string | null;
  ferry_error: string | null;
  provider_error: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
}

function toRow<P>(r: Raw): JobRow<P> {
  return {
    id: r.id,
    product: r.product,
    provider: r.provider,
    accountId: r.account_id,
    messageId: r.message_id,
    lane: r.lane === 1 ? 'priority' : 'bulk',
    // pg parses jsonb; so does PGlite. A text payload (never written by the store) is parsed here.
    payload: (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as P,
    state: r.state,
    pending: r.pending,
    attempts: r.attempts,
    nextAttemptAt: Number(r.next_attempt_at),
    deadlineAt: Number(r.deadline_at),
    claimedUntil: r.claimed_until === null ? null : Number(r.claimed_until),
    providerId: r.provider_id,
    ferryError: r.ferry_error,
    providerError: r.provider_error,
    errorMessage: r.error_message,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** The SQL of outbound_jobs and outbound_history. Statements that belong to a transaction take its Queryable. */
export class OutboundStore {
  constructor(private readonly db: Db) {}

  /** Many jobs, a few thousand per statement. */
  async insertJobs(q: Queryable, rows: readonly JobRow[], now: number): Promise<void> {
    for (let start = 0; start < rows.length; start += CHUNK) {
      const part = rows.slice(start, start + CHUNK);
      await q.query(INSERT_SQL, [
        part.map((r) => r.id),
        part.map((r) => r.product),
        part.map((r) => r.provider),
        part.map((r) => r.accountId),
        part.map((r) => r.messageId),
        part.map((r) => (r.lane === 'priority' ? 1 : 2)),
        part.map((r) => JSON.stringify(r.payload) ?? 'null'),
        part.map((r) => r.state),
        part.map((r) => r.nextAttemptAt),
        part.map((r) => r.deadlineAt),
        now,
      ]);
    }
  }

  async insertHistory(q: Queryable, rows: readonly HistoryRow[]): Promise<void> {
    for (let start = 0; start < rows.length; start += CHUNK) {
      const part = rows.slice(start, start + CHUNK);
      await q.query(HISTORY_SQL, [
        part.map((r) => r.jobId),
        part.map((r) => r.kind),
        part.map((r) => r.state),
        part.map((r) => r.at),
        part.map((r) => (r.detail ? JSON.stringify(r.detail) : null)),
      ]);
    }
  }

  /** Claims leased jobs for sending until `until`; says what to do with the others. */
  async claim<P>(ids: readonly string[], now: number, until: number): Promise<ClaimResult<P>> {
    const { rows } = await this.db.query<Raw & { prev_claim: number | null }>(CLAIM_SQL, [ids, now, until]);
    const claimed = rows.map((r) => ({ ...toRow<P>(r), prevClaim: r.prev_claim === null ? null : Number(r.prev_claim) }));
    const result: ClaimResult<P> = { claimed, done: [], later: [] };
    if (claimed.length === ids.length) return result;
    const got = new Set(claimed.map((c) => c.id));
    const rest = ids.filter((id) => !got.has(id));
    const { rows: others } = await this.db.query<{ id: string; pending: boolean; claimed_until: number | null; next_attempt_at: number }>(UNCLAIMED_SQL, [rest]);
    const seen = new Set<string>();
    for (const o of others) {
      seen.add(o.id);
      if (!o.pending) result.done.push(o.id);
      else {
        const claimedUntil = o.claimed_until === null ? 0 : Number(o.claimed_until);
        result.later.push({ id: o.id, until: Math.max(claimedUntil > now ? claimedUntil : 0, Number(o.next_attempt_at)) });
      }
    }
    for (const id of rest) if (!seen.has(id)) result.done.push(id);
    return result;
  }

  /** Ends claims without an outcome (the jobs go back to the queue unsent); `until` is each claim as it was made. */
  async release(claims: ReadonlyArray<{ id: string; until: number }>): Promise<void> {
    if (claims.length) await this.db.query(RELEASE_SQL, [claims.map((c) => c.id), claims.map((c) => c.until)]);
  }

  /** The jobs, locked for the caller's transaction, in id order. */
  async lock<P>(q: Queryable, ids: readonly string[]): Promise<JobRow<P>[]> {
    if (!ids.length) return [];
    return (await q.query<Raw>(LOCK_SQL, [ids])).rows.map((r) => toRow<P>(r));
  }

  async lockByProviderIds<P>(q: Queryable, provider: string, providerIds: readonly string[]): Promise<JobRow<P>[]> {
    if (!providerIds.length) return [];
    return (await q.query<Raw>(LOCK_BY_PROVIDER_ID_SQL, [provider, providerIds])).rows.map((r) => toRow<P>(r));
  }

  /** Writes the rows' mutable columns back (state, attempts, schedule, claim, provider id, errors). */
  async write(q: Queryable, rows: readonly JobRow[]): Promise<void> {
    if (!rows.length) return;
    await q.query(WRITE_SQL, [
      rows.map((r) => r.id),
      rows.map((r) => r.state),
      rows.map((r) => r.pending),
      rows.map((r) => r.attempts),
      rows.map((r) => r.nextAttemptAt),
      rows.map((r) => r.claimedUntil),
      rows.map((r) => r.providerId),
      rows.map((r) => r.ferryError),
      rows.map((r) => r.providerError),
      rows.map((r) => r.errorMessage),
      rows.map((r) => r.updatedAt),
    ]);
  }

  async get<P = unknown>(id: string): Promise<JobRow<P> | null> {
    const { rows } = await this.db.query<Raw>(`SELECT ${COLUMNS} FROM outbound_jobs j WHERE j.id = $1`, [id]);
    return rows.length ? toRow<P>(rows[0]) : null;
  }

  async history(jobId: string): Promise<HistoryRow[]> {
    const { rows } = await this.db.query<{ job_id: string; kind: HistoryRow['kind']; state: string; at: number; detail: Record<string, unknown> | null }>(
      `SELECT job_id, kind, state, at, detail FROM outbound_history WHERE job_id = $1 ORDER BY seq`,
      [jobId],
    );
    return rows.map((r) => ({ jobId: r.job_id, kind: r.kind, state: r.state, at: Number(r.at), detail: r.detail }));
  }

  /** Pending jobs after `after` in id order (the reconciler's pages). */
  async pendingPage(after: string, limit: number): Promise<PendingRow[]> {
    const { rows } = await this.db.query<{ id: string; provider: string; lane: number; next_attempt_at: number; updated_at: number }>(
      `SELECT id, provider, lane, next_attempt_at, updated_at FROM outbound_jobs WHERE pending AND id > $1 ORDER BY id LIMIT $2`,
      [after, limit],
    );
    return rows.map((r) => ({ id: r.id, provider: r.provider, lane: r.lane === 1 ? 'priority' : 'bulk', nextAttemptAt: Number(r.next_attempt_at), updatedAt: Number(r.updated_at) }));
  }

  /** Pending jobs whose deadline passed and that nobody is sending now. */
  async overdue(now: number, limit: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      `SELECT id FROM outbound_jobs WHERE pending AND deadline_at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1) ORDER BY deadline_at LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => r.id);
  }

  /** Creation time of the oldest pending job of a provider, or null. */
  async oldestPending(provider: string): Promise<number | null> {
    const { rows } = await this.db.query<{ created_at: number }>(
      `SELECT created_at FROM outbound_jobs WHERE pending AND provider = $1 ORDER BY created_at LIMIT 1`,
      [provider],
    );
    return rows.length ? Number(rows[0].created_at) : null;
  }
}
