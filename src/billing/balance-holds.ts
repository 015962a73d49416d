import { newId } from '../util/ids.js';
import type { Queryable } from '../store/types.js';

export interface Hold {
  id: string;
  accountId: string;
  reference: string;
  heldMicros: number;
  chargedMicros: number | null;
  status: 'held' | 'settled';
}

export type HoldResult =
  | { ok: true; hold: Hold; /** false: the reference already had this hold (nothing new was debited). */ created: boolean }
  | { ok: false; /** What the account could hold now: balance plus credit limit, never below zero. */ availableMicros: number };

export interface SettleResult {
  hold: Hold;
  /** Credited back: held minus charged. */
  releasedMicros: number;
}

/**
 * A module's credit holds (src/store/sql/migrations/0048_balance_holds.sql), scoped to it by name. Every method takes
 * the caller's transaction, so a hold commits with the row it pays for and a settlement with the final state.
 */
export interface ModuleHolds {
  /** Debits `micros` for `reference` when the balance (with the credit limit) allows; refuses and changes nothing otherwise. */
  hold(q: Queryable, input: { accountId: string; reference: string; micros: number }): Promise<HoldResult>;
  /**
   * Charges `chargedMicros` (capped at what was held) and credits back the rest, once: null when the hold was already
   * settled (a second settlement, or a concurrent one that won) or does not exist.
   */
  settle(q: Queryable, reference: string, chargedMicros: number): Promise<SettleResult | null>;
  get(q: Queryable, reference: string): Promise<Hold | null>;
  /** Holds still open that were made before `before` (for a module's recovery after a crash). */
  open(q: Queryable, before: Date, limit: number): Promise<Hold[]>;
}

interface HoldRow {
  id: string;
  account_id: string;
  reference: string;
  held_micros: string | number;
  charged_micros: string | number | null;
  status: 'held' | 'settled';
}

const COLUMNS = 'id, account_id, reference, held_micros, charged_micros, status';

function toHold(r: HoldRow): Hold {
  return {
    id: r.id,
    accountId: r.account_id,
    reference: r.reference,
    heldMicros: Number(r.held_micros),
    chargedMicros: r.charged_micros === null ? null : Number(r.charged_micros),
    status: r.status,
  };
}

/**
 * Holds for one module. The account row is locked for a hold as every balance movement locks it (admin movements,
 * SMS debit batches), so concurrent holds are decided one after another against the balance the one before left.
 */
export class BalanceHolds implements ModuleHolds {
  constructor(private readonly module: string) {
    if (!/^[a-z][a-z0-9-]*$/.test(module)) throw new Error(`not a module name: ${module}`);
  }

  async hold(q: Queryable, input: { accountId: string; reference: string; micros: number }): Promise<HoldResult> {
    const micros = input.micros;
    if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`hold of ${micros} micros: a non-negative integer is needed`);
    const account = await q.query<{ balance_micros: string | number; credit_limit_micros: string | number }>(
      `SELECT balance_micros, credit_limit_micros FROM accounts WHERE id = $1 FOR UPDATE`,
      [input.accountId],
    );
    const row = account.rows[0];
    if (!row) throw new Error(`account ${input.accountId} does not exist`);
    // Under the account's lock: a concurrent hold of the same reference has committed or waits behind us.
    const existing = await this.get(q, input.reference);
    if (existing) return { ok: true, hold: existing, created: false };
    const available = Number(row.balance_micros) + Number(row.credit_limit_micros);
    if (micros > available) return { ok: false, availableMicros: Math.max(0, available) };
    const id = newId('hld_');
    const { rows } = await q.query<HoldRow>(
      `WITH a AS (
         UPDATE accounts SET balance_micros = balance_micros - $3, updated_at = now() WHERE id = $2 RETURNING balance_micros
       ), t AS (
         INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference, actor)
         SELECT $2, -$3::bigint, a.balance_micros, $5, $4, 'system' FROM a
       )
       INSERT INTO balance_holds (id, account_id, module, reference, held_micros) VALUES ($1, $2, $6, $4, $3)
       RETURNING ${COLUMNS}`,
      [id, input.accountId, micros, input.reference, `${this.module}_hold`, this.module],
    );
    return { ok: true, hold: toHold(rows[0]), created: true };
  }

  async settle(q: Queryable, reference: string, chargedMicros: number): Promise<SettleResult | null> {
    if (!Number.isSafeInteger(chargedMicros) || chargedMicros < 0) throw new RangeError(`charge of ${chargedMicros} micros: a non-negative integer is needed`);
    // The status guard makes the settlement happen once, whoever asks twice.
    const settled = await q.query<HoldRow>(
      `UPDATE balance_holds SET status = 'settled', charged_micros = LEAST($3::bigint, held_micros), settled_at = now()
       WHERE module = $1 AND reference = $2 AND status = 'held' RETURNING ${COLUMNS}`,
      [this.module, reference, chargedMicros],
    );
    const row = settled.rows[0];
    if (!row) return null;
    const hold = toHold(row);
    const released = hold.heldMicros - (hold.chargedMicros ?? 0);
    if (released > 0) {
      await q.query(
        `WITH a AS (
           UPDATE accounts SET balance_micros = balance_micros + $2, updated_at = now() WHERE id = $1 RETURNING balance_micros
         )
         INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference, actor)
         SELECT $1, $2::bigint, a.balance_micros, $4, $3, 'system' FROM a`,
        [hold.accountId, released, reference, `${this.module}_release`],
      );
    }
    return { hold, releasedMicros: released };
  }

  async get(q: Queryable, reference: string): Promise<Hold | null> {
    const { rows } = await q.query<HoldRow>(`SELECT ${COLUMNS} FROM balance_holds WHERE module = $1 AND reference = $2`, [this.module, reference]);
    return rows[0] ? toHold(rows[0]) : null;
  }

  async open(q: Queryable, before: Date, limit: number): Promise<Hold[]> {
    const { rows } = await q.query<HoldRow>(
      `SELECT ${COLUMNS} FROM balance_holds WHERE module = $1 AND status = 'held' AND created_at < $2 ORDER BY created_at LIMIT $3`,
      [this.module, before, limit],
    );
    return rows.map(toHold);
  }
}
