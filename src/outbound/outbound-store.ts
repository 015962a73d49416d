import { DueSet, type Claimed } from '../delivery/due-set.js';
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

/** A claimed job: `prevClaim` set when an earlier claim ran out unfinished (a crash mid-send: the outcome is unknown). */
export type ClaimedRow<P = unknown> = JobRow<P> & { prevClaim: number | null };

/** A claim that ends without an outcome (a deferral): the job is due again at `nextAttemptAt`. */
export interface ClaimEnd {
  id: string;
  /** The claim as it was made: only a claim still ours is ended. */
  until: number;
  nextAttemptAt: number;
}

/** Pending jobs of one provider by what they wait for, at one instant. */
export interface JobCounts {
  /** Due and not claimed: a worker takes them next. */
  due: number;
  /** Not due yet (a retry, a deferral, a scheduled send), not claimed. */
  scheduled: number;
  /** Claimed by a worker (of any instance) that is sending them. */
  claimed: number;
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

/**
 * The pending jobs as a due set: a provider's due jobs, priority lane first, then by due time, each lane one range of
 * outbound_jobs_due (provider, lane, next_attempt_at WHERE pending). A claim is kept in claimed_until (the caller's
 * clock), so one that ran out unfinished comes back as the previous claim (the earlier attempt's outcome is unknown).
 */
const DUE_JOBS = DueSet.declare({
  table: 'outbound_jobs',
  id: 'id',
  due: 'next_attempt_at',
  clock: 'caller',
  claimedUntil: 'claimed_until',
  open: (row) => `${row}.pending`,
  scope: 'provider',
  lanes: { column: 'lane', values: [1, 2] },
  returning: COLUMNS,
});

// Locked in id order, so two transactions over overlapping jobs (a result batch and a provider callback) never deadlock.
// Statements over a batch of job ids keep a generic plan, which probes each partition's key for each id (0056): fewer
// partitions than the ledger's and smaller batches, where planning each batch cost more (docs/scaling.md, measured).
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

// One pass over the pending rows (the partial index's share of the table), for the scrape.
const COUNTS_SQL = `SELECT provider,
    count(*) FILTER (WHERE claimed_until > $1)::int AS claimed,
    count(*) FILTER (WHERE (claimed_until IS NULL OR claimed_until <= $1) AND next_attempt_at <= $1)::int AS due,
    count(*) FILTER (WHERE (claimed_until IS NULL OR claimed_until <= $1) AND next_attempt_at > $1)::int AS scheduled
  FROM outbound_jobs WHERE pending GROUP BY provider`;

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

function claimedRow<P>(r: Claimed<Raw>): ClaimedRow<P> {
  return { ...toRow<P>(r), prevClaim: r.prev_claim === null || r.prev_claim === undefined ? null : Number(r.prev_claim) };
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
  private readonly due: DueSet<Raw>;

  constructor(private readonly db: Db) {
    this.due = new DueSet<Raw>(db, DUE_JOBS);
  }

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

  /**
   * Claims up to `limit` due jobs of a provider for sending until `until` (priority lane first, then by due time): the
   * worker's only way to work. Jobs another worker holds, or claims at this moment, are not returned.
   */
  async claimDue<P>(provider: string, limit: number, now: number, until: number): Promise<ClaimedRow<P>[]> {
    const rows = await this.due.claimDue(limit, now, until, provider);
    // In the claim's order (the join's output order is the planner's).
    return rows.map((r) => claimedRow<P>(r)).sort((x, y) => (x.lane === y.lane ? x.nextAttemptAt - y.nextAttemptAt : x.lane === 'priority' ? -1 : 1));
  }

  /** Claims the given jobs when they are claimable (a product's inline first attempt). */
  async claim<P>(ids: readonly string[], now: number, until: number): Promise<ClaimedRow<P>[]> {
    return (await this.due.claim(ids, now, until)).map((r) => claimedRow<P>(r));
  }

  /** Ends claims without an outcome (deferrals): each job is due again at its `nextAttemptAt`; claims not ours any more are left alone. */
  async endClaims(ends: readonly ClaimEnd[]): Promise<void> {
    await this.due.endClaims(ends.map((e) => ({ id: e.id, until: e.until, dueAt: e.nextAttemptAt })));
  }

  /** Pending jobs per provider: due, scheduled, claimed (providers without pending jobs are absent). */
  async counts(now: number): Promise<Map<string, JobCounts>> {
    const { rows } = await this.db.query<{ provider: string; due: number; scheduled: number; claimed: number }>(COUNTS_SQL, [now]);
    return new Map(rows.map((r) => [r.provider, { due: Number(r.due), scheduled: Number(r.scheduled), claimed: Number(r.claimed) }]));
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
