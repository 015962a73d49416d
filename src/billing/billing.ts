import type { AppliedChange, EffectStatement } from '../ledger/ledger.js';
import type { Db } from '../store/types.js';

const DEBIT_SQL = `WITH u AS (
    UPDATE accounts SET balance_micros = balance_micros - $2, updated_at = now()
    WHERE id = $1 AND balance_micros >= $2 RETURNING balance_micros
  )
  INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference)
  SELECT $1, -$2::bigint, balance_micros, 'sms', $3 FROM u RETURNING balance_after_micros`;

const CREDIT_SQL = `WITH u AS (
    UPDATE accounts SET balance_micros = balance_micros + $2, updated_at = now() WHERE id = $1 RETURNING balance_micros
  )
  INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference)
  SELECT $1, $2::bigint, balance_micros, $4, $3 FROM u`;

// Refunds of messages that ended failed or rejected (never delivered by an upstream), inside the transition's
// transaction: one UPDATE per account, one transaction row per message.
const REFUND_FAILED_SQL = `WITH r AS (
    SELECT m.id, m.account_id, m.cost_micros FROM messages m WHERE m.id = ANY($1::text[]) AND m.cost_micros > 0
  ), s AS (
    SELECT account_id, sum(cost_micros)::bigint AS total FROM r GROUP BY account_id
  ), a AS (
    UPDATE accounts SET balance_micros = balance_micros + s.total, updated_at = now() FROM s WHERE accounts.id = s.account_id
    RETURNING accounts.id, accounts.balance_micros
  )
  INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference)
  SELECT r.account_id, r.cost_micros, a.balance_micros, 'sms_refund', r.id FROM r JOIN a ON a.id = r.account_id`;

// A debit whose messages never reached the ledger (a crash between the two writes): refunded by the sweep.
const ORPHANS_SQL = `SELECT t.id, t.account_id, -t.amount_micros AS micros, t.reference FROM account_transactions t
  WHERE t.kind = 'sms' AND t.created_at < now() - make_interval(secs => $1::float8 / 1000.0) AND t.created_at > now() - interval '7 days'
    AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.reference)
    AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.batch_id = t.reference)
    AND NOT EXISTS (SELECT 1 FROM account_transactions x WHERE x.kind = 'sms_void' AND x.reference = t.reference AND x.account_id = t.account_id)
  ORDER BY t.id LIMIT 500`;

/**
 * Debits at accept time, atomically: one conditional UPDATE, so concurrent sends can never take the balance below
 * zero. The debit comes before the ledger write; if that write fails the debit is voided at once, and a crash in
 * between is repaired by `voidOrphans` (a debit whose message or batch never appeared is credited back).
 */
export class Billing {
  constructor(
    private readonly db: Db,
    private readonly opts: { refundOnFailure: boolean },
  ) {}

  /** False when the balance is short (nothing changed). `reference`: the message id, or the batch id of a bulk. */
  async debit(accountId: string, micros: number, reference: string): Promise<boolean> {
    if (micros <= 0) return true;
    const r = await this.db.query(DEBIT_SQL, [accountId, micros, reference]);
    return r.rowCount > 0;
  }

  /** Gives back a debit whose messages were not accepted. */
  async void(accountId: string, micros: number, reference: string): Promise<void> {
    if (micros <= 0) return;
    await this.db.query(CREDIT_SQL, [accountId, micros, reference, 'sms_void']);
  }

  /** The ledger effect: a message that ends failed or rejected is refunded (when configured). */
  readonly effect = (changes: readonly AppliedChange[]): EffectStatement | null => {
    if (!this.opts.refundOnFailure) return null;
    const ids: string[] = [];
    for (const c of changes) if (c.to === 'failed' || c.to === 'rejected') ids.push(c.id);
    return ids.length ? { text: REFUND_FAILED_SQL, params: [ids] } : null;
  };

  /** Credits back debits older than `graceMs` whose message or batch is not in the ledger. Returns how many. */
  async voidOrphans(graceMs = 300_000): Promise<number> {
    const { rows } = await this.db.query<{ account_id: string; micros: number; reference: string }>(ORPHANS_SQL, [graceMs]);
    for (const r of rows) await this.void(r.account_id, Number(r.micros), r.reference);
    return rows.length;
  }
}
