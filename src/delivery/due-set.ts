import { prepared } from '../store/sql/prepared.js';
import type { Db } from '../store/types.js';

/**
 * Which rows of a table are a due set, and how their times are kept. Every delivery engine but SMPP dispatch keeps its
 * work as such rows (the webhook retry set, outbound jobs) and claims them with the statements built from this.
 */
export interface DueSetDeclaration {
  table: string;
  /** The primary key (text). */
  id: string;
  /** When the row is due. */
  due: string;
  /**
   * Whose clock the times are. `database`: timestamptz columns read against the database's now(), so instances agree
   * whatever their own clocks say; the caller's times count only as distances from its `now`. `caller`: bigint epoch
   * ms as the caller passes them (its clock, which tests can drive).
   */
  clock: 'database' | 'caller';
  /**
   * The column holding a claim's end (caller clock only): a claim is told apart from the due time, a claim that ran
   * out is handed back with the row (an earlier holder's outcome is unknown), and only a claim still ours is ended.
   * Absent: the claim moves the due time past the lease, so a claimed row is simply not due until then.
   */
  claimedUntil?: string;
  /** The row is open (still to be delivered), as SQL over a row alias. */
  open: (row: string) => string;
  /** A column a claim is limited to one value of (e.g. the provider); the value is claimDue's `scope`. */
  scope?: string;
  /** Lanes claimed in order: a later lane only fills what the earlier ones left (e.g. priority, then bulk). */
  lanes?: { column: string; values: readonly number[] };
  /** What a claim returns of each row, as SQL over `j` (the claimed row); by default its id. */
  returning?: string;
}

/** A claim that ends without an outcome: the row is due again at `dueAt`. */
export interface ClaimEnd {
  id: string;
  /** The claim as it was made (a set with a claim column ends only a claim still so). */
  until?: number;
  dueAt: number;
}

/** A claimed row as returned: the declaration's columns, and with a claim column the claim that ran out, if any. */
export type Claimed<R> = R & { prev_claim?: number | string | null };

interface Statements {
  claimDue: string;
  claimIds: string;
  endClaims: string;
}

const built = new WeakMap<DueSetDeclaration, Statements>();

/** The statements of a declaration, built once per declaration (and registered as prepared statements). */
function statementsOf(d: DueSetDeclaration): Statements {
  let s = built.get(d);
  if (!s) {
    s = build(d);
    built.set(d, s);
  }
  return s;
}

function build(d: DueSetDeclaration): Statements {
  if (d.claimedUntil && d.clock !== 'caller') throw new Error(`${d.table}: a claim column is kept in caller-clock time only`);
  const database = d.clock === 'database';
  const c = d.claimedUntil;
  // The claim's times from parameter $first on: now and the claim's end as the caller gives them, or (database clock)
  // the database's now() and the lease in ms from it.
  const times = (first: number) =>
    database ? { now: 'now()', until: `now() + make_interval(secs => $${first}::float8 / 1000.0)` } : { now: `$${first}`, until: `$${first + 1}` };
  const claimable = (now: string) => `${d.open('o')} AND o.${d.due} <= ${now}${c ? ` AND (o.${c} IS NULL OR o.${c} <= ${now})` : ''}`;
  // The claim: the claim column, or the due time moved past the lease.
  const claimTo = (until: string) => `${c ?? d.due} = ${until}`;
  // With a claim column the subquery keeps the claim as it was: one that ran out is handed back as prev_claim.
  const picked = `o.${d.id}${c ? `, o.${c}` : ''}`;
  const returning = `${d.returning ?? `j.${d.id}`}${c ? `, c.${c} AS prev_claim` : ''}`;

  // $1 the limit, $2 the scope (if any), then the times.
  const due = times(d.scope ? 3 : 2);
  const scoped = d.scope ? `o.${d.scope} = $2 AND ` : '';
  const pick = (filter: string) =>
    `SELECT ${picked} FROM ${d.table} o WHERE ${filter}${claimable(due.now)} ORDER BY o.${d.due} LIMIT $1 FOR UPDATE SKIP LOCKED`;
  // Each lane is one range of the due index; rows another claimer is locking at this moment are skipped, not waited for.
  const lanes = d.lanes
    ? d.lanes.values.map((v, i) => `SELECT * FROM (${pick(`${scoped}o.${d.lanes!.column} = ${v} AND `)}) lane${i}`).join('\n    UNION ALL\n    ') + '\n    LIMIT $1'
    : pick(scoped);
  const claimDue = `UPDATE ${d.table} j SET ${claimTo(due.until)}
  FROM (
    ${lanes}
  ) c
  WHERE j.${d.id} = c.${d.id}
  RETURNING ${returning}`;

  // The same claim for given rows ($1), then the times. `j.id = ANY($1)` beside the join keeps a generic plan on the
  // primary key.
  const ids = times(2);
  const claimIds = `UPDATE ${d.table} j SET ${claimTo(ids.until)}
  FROM (SELECT ${picked} FROM ${d.table} o WHERE o.${d.id} = ANY($1::text[]) AND ${claimable(ids.now)} FOR UPDATE SKIP LOCKED) c
  WHERE j.${d.id} = c.${d.id} AND j.${d.id} = ANY($1::text[])
  RETURNING ${returning}`;

  // With a claim column only claims still ours (as we made them) end: one that ran out may be another claimer's now.
  // Without one the claim is the due time: an open row is due again when it says.
  const endClaims = c
    ? `UPDATE ${d.table} j SET ${c} = NULL, ${d.due} = u.due
  FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(id, until, due)
  WHERE j.${d.id} = u.id AND j.${d.id} = ANY($1::text[]) AND j.${c} = u.until`
    : `UPDATE ${d.table} j SET ${d.due} = ${database ? 'now() + make_interval(secs => u.due / 1000.0)' : 'u.due'}
  FROM unnest($1::text[], $2::${database ? 'float8' : 'bigint'}[]) AS u(id, due)
  WHERE j.${d.id} = u.id AND j.${d.id} = ANY($1::text[]) AND ${d.open('j')}`;

  return { claimDue: prepared(claimDue), claimIds: prepared(claimIds), endClaims: prepared(endClaims) };
}

/**
 * A due set: open rows of a table claimed by due time, each held for a lease (not due again until it ends), so a
 * crashed claimer's rows come back by themselves. Claimers (instances) skip each other's rows (FOR UPDATE SKIP LOCKED)
 * rather than wait; there is no queue beside the table. Times are the caller's epoch ms (see `clock`).
 */
export class DueSet<R extends object = { id: string }> {
  /** A declaration with its statements built now (at module load, like `prepared()`): `const X = DueSet.declare({…})`. */
  static declare(d: DueSetDeclaration): DueSetDeclaration {
    statementsOf(d);
    return d;
  }

  private readonly sql: Statements;

  constructor(
    private readonly db: Db,
    private readonly d: DueSetDeclaration,
  ) {
    this.sql = statementsOf(d);
  }

  /** Up to `limit` due rows (of `scope`, lanes in order, each by due time), each claimed until `until`. */
  async claimDue(limit: number, now: number, until: number, scope?: string): Promise<Claimed<R>[]> {
    const params: unknown[] = [limit];
    if (this.d.scope) params.push(scope);
    params.push(...this.times(now, until));
    return (await this.db.query<Claimed<R>>(this.sql.claimDue, params)).rows;
  }

  /** The given rows, claimed until `until`, those that are due and not claimed (others are left out). */
  async claim(ids: readonly string[], now: number, until: number): Promise<Claimed<R>[]> {
    if (!ids.length) return [];
    return (await this.db.query<Claimed<R>>(this.sql.claimIds, [ids, ...this.times(now, until)])).rows;
  }

  /**
   * Claims end without an outcome (handed back, deferred): each row due again at its `dueAt`. With a claim column only
   * claims still as made end; without one any open row given is due then (which also brings a row forward). `now`:
   * what the `dueAt` are measured from on a database clock.
   */
  async endClaims(ends: readonly ClaimEnd[], now = Date.now()): Promise<void> {
    if (!ends.length) return;
    const ids = ends.map((e) => e.id);
    if (this.d.claimedUntil) await this.db.query(this.sql.endClaims, [ids, ends.map((e) => e.until ?? null), ends.map((e) => e.dueAt)]);
    else await this.db.query(this.sql.endClaims, [ids, ends.map((e) => (this.d.clock === 'database' ? Math.max(0, e.dueAt - now) : e.dueAt))]);
  }

  private times(now: number, until: number): number[] {
    return this.d.clock === 'database' ? [Math.max(0, until - now)] : [now, until];
  }
}
