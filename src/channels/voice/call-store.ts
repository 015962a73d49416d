import type { Queryable, Db } from '../../store/types.js';
import type { Call, CallChange, CallDirection } from './call.js';
import type { CallStep } from './call-script.js';
import { LIVE_STATUSES, type CallStatus } from './call-status.js';

const COLUMNS = `id, account_id, to_number, from_number, status, script, status_callback, callback_events, ring_timeout_s,
  time_limit_s, machine_detection, reference, owner, hangup_requested, trunk, trunks_tried, sip_call_id, sip_code, sip_reason,
  error_code, error_reason, digits, answered_by, price_per_minute_micros, held_seconds, billable_s, cost_micros, created_at,
  initiated_at, ringing_at, answered_at, ended_at, agent_id, agent_version, agent_variables, direction`;

interface CallRow {
  id: string;
  account_id: string;
  to_number: string;
  from_number: string;
  status: CallStatus;
  script: CallStep[] | string;
  status_callback: string | null;
  callback_events: string[];
  ring_timeout_s: number;
  time_limit_s: number;
  machine_detection: 'off' | 'detect';
  reference: string | null;
  owner: string | null;
  hangup_requested: boolean;
  trunk: string | null;
  trunks_tried: string[];
  sip_call_id: string | null;
  sip_code: number | null;
  sip_reason: string | null;
  error_code: string | null;
  error_reason: string | null;
  digits: string;
  answered_by: string | null;
  price_per_minute_micros: string | number;
  held_seconds: number;
  billable_s: number | null;
  cost_micros: string | number | null;
  created_at: Date | string;
  initiated_at: Date | string | null;
  ringing_at: Date | string | null;
  answered_at: Date | string | null;
  ended_at: Date | string | null;
  agent_id: string | null;
  agent_version: number | null;
  agent_variables: Record<string, string> | string | null;
  direction: CallDirection;
}

const date = (v: Date | string | null): Date | null => (v === null ? null : v instanceof Date ? v : new Date(v));

function toCall(r: CallRow): Call {
  return {
    id: r.id,
    accountId: r.account_id,
    to: r.to_number,
    from: r.from_number,
    status: r.status,
    steps: typeof r.script === 'string' ? (JSON.parse(r.script) as CallStep[]) : r.script,
    statusCallback: r.status_callback,
    statusCallbackEvents: r.callback_events,
    ringTimeoutSeconds: r.ring_timeout_s,
    timeLimitSeconds: r.time_limit_s,
    machineDetection: r.machine_detection,
    reference: r.reference,
    owner: r.owner,
    hangupRequested: r.hangup_requested,
    trunk: r.trunk,
    trunksTried: r.trunks_tried,
    sipCallId: r.sip_call_id,
    sipCode: r.sip_code,
    sipReason: r.sip_reason,
    errorCode: r.error_code,
    errorReason: r.error_reason,
    digits: r.digits,
    answeredBy: r.answered_by,
    pricePerMinuteMicros: Number(r.price_per_minute_micros),
    heldSeconds: r.held_seconds,
    billableSeconds: r.billable_s,
    costMicros: r.cost_micros === null ? null : Number(r.cost_micros),
    createdAt: date(r.created_at)!,
    initiatedAt: date(r.initiated_at),
    ringingAt: date(r.ringing_at),
    answeredAt: date(r.answered_at),
    endedAt: date(r.ended_at),
    agent: r.agent_id === null ? null : {
      id: r.agent_id,
      version: r.agent_version!,
      variables: typeof r.agent_variables === 'string' ? (JSON.parse(r.agent_variables) as Record<string, string>) : (r.agent_variables ?? {}),
    },
    direction: r.direction,
  };
}

export interface NewCall {
  id: string;
  accountId: string;
  to: string;
  from: string;
  steps: CallStep[];
  statusCallback: string | null;
  statusCallbackEvents: string[];
  ringTimeoutSeconds: number;
  timeLimitSeconds: number;
  machineDetection: 'off' | 'detect';
  reference: string | null;
  pricePerMinuteMicros: number;
  heldSeconds: number;
  agent?: Call['agent'];
  /** Default outbound (a call the API or the dialer places). */
  direction?: CallDirection;
  /** Claimed for this long by the instance storing it (a browser's call, dialled there at once): no other claims it. */
  claimMs?: number;
}

const LIVE = `(${LIVE_STATUSES.map((s) => `'${s}'`).join(', ')})`;

/** Calls and their history in Postgres (or PGlite). Every write goes through the caller's transaction where it has one. */
export class CallStore {
  constructor(private readonly db: Db) {}

  async insert(q: Queryable, c: NewCall): Promise<Call> {
    const { rows } = await q.query<CallRow>(
      `INSERT INTO voice_calls (id, account_id, to_number, from_number, script, status_callback, callback_events, ring_timeout_s,
         time_limit_s, machine_detection, reference, price_per_minute_micros, held_seconds, agent_id, agent_version, agent_variables, dial_after, direction)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::text[], $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb,
         now() + make_interval(secs => $17::float8 / 1000.0), $18) RETURNING ${COLUMNS}`,
      [
        c.id, c.accountId, c.to, c.from, JSON.stringify(c.steps), c.statusCallback, c.statusCallbackEvents, c.ringTimeoutSeconds, c.timeLimitSeconds,
        c.machineDetection, c.reference, c.pricePerMinuteMicros, c.heldSeconds,
        c.agent?.id ?? null, c.agent?.version ?? null, c.agent ? JSON.stringify(c.agent.variables) : null, c.claimMs ?? 0,
        c.direction ?? 'outbound',
      ],
    );
    await q.query(`INSERT INTO voice_call_history (call_id, status, detail) VALUES ($1, 'queued', '{}'::jsonb)`, [c.id]);
    return toCall(rows[0]);
  }

  async get(id: string, accountId?: string, q: Queryable = this.db): Promise<Call | null> {
    const { rows } = await q.query<CallRow>(`SELECT ${COLUMNS} FROM voice_calls WHERE id = $1 AND ($2::text IS NULL OR account_id = $2)`, [id, accountId ?? null]);
    return rows[0] ? toCall(rows[0]) : null;
  }

  /** The call locked for a change (the owner's writes, a hangup request, the orphan sweep). */
  async lock(q: Queryable, id: string): Promise<Call | null> {
    const { rows } = await q.query<CallRow>(`SELECT ${COLUMNS} FROM voice_calls WHERE id = $1 FOR UPDATE`, [id]);
    return rows[0] ? toCall(rows[0]) : null;
  }

  /** Newest first, by id (ids are time-ordered): `before` is the last id of the previous page. */
  async list(accountId: string, f: { status?: CallStatus; to?: string; from?: string; before?: string }, limit: number): Promise<Call[]> {
    const { rows } = await this.db.query<CallRow>(
      `SELECT ${COLUMNS} FROM voice_calls WHERE account_id = $1
         AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR to_number = $3) AND ($4::text IS NULL OR from_number = $4)
         AND ($5::text IS NULL OR id < $5)
       ORDER BY id DESC LIMIT $6`,
      [accountId, f.status ?? null, f.to ?? null, f.from ?? null, f.before ?? null, limit],
    );
    return rows.map(toCall);
  }

  async history(id: string): Promise<Array<{ status: CallStatus; detail: Record<string, unknown>; at: Date }>> {
    const { rows } = await this.db.query<{ status: CallStatus; detail: Record<string, unknown> | string; at: Date | string }>(
      `SELECT status, detail, at FROM voice_call_history WHERE call_id = $1 ORDER BY id`,
      [id],
    );
    return rows.map((r) => ({ status: r.status, detail: typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail, at: date(r.at)! }));
  }

  /**
   * Queued calls due now, each claimed for `leaseMs` (not due again before then: a crash between this claim and the
   * call's `initiated` leaves it to be dialled after the lease). Other instances skip rows being claimed.
   */
  async claimDue(limit: number, leaseMs: number): Promise<Call[]> {
    const { rows } = await this.db.query<CallRow>(
      `UPDATE voice_calls j SET dial_after = now() + make_interval(secs => $2::float8 / 1000.0)
       FROM (SELECT id FROM voice_calls o WHERE o.status = 'queued' AND o.dial_after <= now() ORDER BY o.dial_after LIMIT $1 FOR UPDATE SKIP LOCKED) c
       WHERE j.id = c.id RETURNING ${COLUMNS.replace(/(^|,\s*)([a-z_]+)/g, '$1j.$2')}`,
      [limit, leaseMs],
    );
    return rows.map(toCall);
  }

  /** A claimed call put back to wait (a limit was reached): due again in `delayMs`. */
  async postpone(id: string, delayMs: number): Promise<void> {
    await this.db.query(`UPDATE voice_calls SET dial_after = now() + make_interval(secs => $2::float8 / 1000.0) WHERE id = $1 AND status = 'queued'`, [id, delayMs]);
  }

  /** Live calls of an account, or on a trunk, across every instance (under the caller's lock for that account or trunk). */
  async liveCount(q: Queryable, by: { accountId: string } | { trunk: string }): Promise<number> {
    const { rows } =
      'accountId' in by
        ? await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM voice_calls WHERE account_id = $1 AND status IN ${LIVE}`, [by.accountId])
        : await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM voice_calls WHERE trunk = $1 AND status IN ${LIVE}`, [by.trunk]);
    return rows[0].n;
  }

  /**
   * Records a change in the caller's transaction: the row (times stamped by status), and a history row. The caller
   * has checked the move (canMove) on the locked row.
   */
  async record(q: Queryable, id: string, change: CallChange, owner: { id: string; leaseMs: number } | null): Promise<Call> {
    const s = change.status;
    const { rows } = await q.query<CallRow>(
      `UPDATE voice_calls SET status = $2,
         owner = COALESCE($3, owner),
         owner_until = CASE WHEN $3::text IS NULL THEN owner_until ELSE now() + make_interval(secs => $4::float8 / 1000.0) END,
         trunk = COALESCE($5, trunk), trunks_tried = COALESCE($6::text[], trunks_tried), sip_call_id = COALESCE($7, sip_call_id),
         sip_code = CASE WHEN $8::boolean THEN $9 ELSE sip_code END, sip_reason = CASE WHEN $8::boolean THEN $10 ELSE sip_reason END,
         error_code = COALESCE($11, error_code), error_reason = COALESCE($12, error_reason), digits = COALESCE($13, digits),
         answered_by = COALESCE($14, answered_by), billable_s = COALESCE($15, billable_s), cost_micros = COALESCE($16, cost_micros),
         initiated_at = CASE WHEN $2 = 'initiated' THEN now() ELSE initiated_at END,
         ringing_at = CASE WHEN $2 = 'ringing' THEN now() ELSE ringing_at END,
         answered_at = CASE WHEN $2 = 'in-progress' THEN now() ELSE answered_at END,
         ended_at = CASE WHEN $2 IN ('completed', 'busy', 'no-answer', 'failed', 'canceled') THEN GREATEST(COALESCE($17::timestamptz, now()), answered_at) ELSE ended_at END
       WHERE id = $1 RETURNING ${COLUMNS}`,
      [
        id,
        s,
        owner?.id ?? null,
        owner?.leaseMs ?? 0,
        change.trunk ?? null,
        change.trunksTried ?? null,
        change.sipCallId ?? null,
        change.sipCode !== undefined,
        change.sipCode ?? null,
        change.sipReason ?? null,
        change.errorCode ?? null,
        change.errorReason ?? null,
        change.digits ?? null,
        change.answeredBy ?? null,
        change.billableSeconds ?? null,
        change.costMicros ?? null,
        change.endedAt ?? null,
      ],
    );
    await q.query(`INSERT INTO voice_call_history (call_id, status, detail) VALUES ($1, $2, $3::jsonb)`, [id, s, JSON.stringify(change.detail ?? {})]);
    return toCall(rows[0]);
  }

  /** The owner's claim on its live calls, renewed; returns the ids of those with a hangup asked by another instance. */
  async renew(owner: string, ids: readonly string[], leaseMs: number): Promise<string[]> {
    if (!ids.length) return [];
    const { rows } = await this.db.query<{ id: string; hangup_requested: boolean }>(
      `UPDATE voice_calls SET owner_until = now() + make_interval(secs => $3::float8 / 1000.0)
       WHERE id = ANY($2::text[]) AND owner = $1 AND status IN ${LIVE} RETURNING id, hangup_requested`,
      [owner, ids, leaseMs],
    );
    return rows.filter((r) => r.hangup_requested).map((r) => r.id);
  }

  /** The digits gathered so far, while the call lasts. */
  async saveDigits(id: string, digits: string): Promise<void> {
    await this.db.query(`UPDATE voice_calls SET digits = $2 WHERE id = $1`, [id, digits]);
  }

  /** Marks a hangup asked for (any instance); the owner acts on it. False when the call is already final. */
  async requestHangup(q: Queryable, id: string): Promise<void> {
    await q.query(`UPDATE voice_calls SET hangup_requested = true WHERE id = $1`, [id]);
  }

  /**
   * Live calls whose owner stopped renewing (crashed or cut off), or every live call of `stoppedOwner` (known dead, its
   * claim not yet lapsed): their ids, owners and last renewal.
   */
  async orphans(limit: number, leaseMs: number, stoppedOwner: string | null = null): Promise<Array<{ id: string; owner: string | null; lastRenewal: Date }>> {
    const { rows } = await this.db.query<{ id: string; owner: string | null; last: Date | string }>(
      `SELECT id, owner, owner_until - make_interval(secs => $2::float8 / 1000.0) AS last FROM voice_calls
       WHERE status IN ${LIVE} AND (CASE WHEN $3::text IS NULL THEN owner_until < now() ELSE owner = $3 END) ORDER BY owner_until LIMIT $1`,
      [limit, leaseMs, stoppedOwner],
    );
    return rows.map((r) => ({ id: r.id, owner: r.owner, lastRenewal: date(r.last)! }));
  }

  /** Under the call's lock: whether its owner's claim has lapsed (it was not renewed meanwhile). */
  async lapsed(q: Queryable, id: string): Promise<boolean> {
    const { rows } = await q.query<{ lapsed: boolean }>(`SELECT owner_until < now() AS lapsed FROM voice_calls WHERE id = $1`, [id]);
    return rows[0]?.lapsed === true;
  }
}
