import { GroupCommit } from '../ledger/group-commit.js';
import type { AppliedChange, EffectStatement } from '../ledger/ledger.js';
import { prepared } from '../store/sql/prepared.js';
import type { Db, Queryable } from '../store/types.js';

// A debit batch locks its accounts (in id order, so two batches never deadlock), decides each debit in arrival order
// against the running balance and the account's credit limit, then writes every account's new balance and one
// transaction row per debit.
const LOCK_ACCOUNTS_SQL = prepared(`SELECT id, balance_micros, credit_limit_micros FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`);
const APPLY_DEBITS_SQL = prepared(`WITH u AS (
    UPDATE accounts a SET balance_micros = v.balance, updated_at = now()
    FROM unnest($1::text[], $2::bigint[]) AS v(id, balance)
    WHERE a.id = v.id AND a.id = ANY($1::text[])
  )
  INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference)
  SELECT t.account_id, -t.micros, t.after, 'sms', t.reference
  FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::text[]) WITH ORDINALITY AS t(account_id, micros, after, reference, n)
  ORDER BY t.n`);

const CREDIT_SQL = `WITH u AS (
    UPDATE accounts SET balance_micros = balance_micros + $2, updated_at = now() WHERE id = $1 RETURNING balance_micros
  )
  INSERT INTO account_transactions (account_id, amount_micros, balance_after_micros, kind, reference)
  SELECT $1, $2::bigint, balance_micros, $4, $3 FROM u`;

// Refunds of messages that ended failed or rejected (never delivered by an upstream), inside the transition's
// transaction: one UPDATE per account, one transaction row per message. The accounts are locked in id order first,
// as debit batches lock them, so a refund and a debit batch holding several accounts never deadlock.
const REFUND_FAILED_SQL = `WITH r AS (
    SELECT m.id, m.account_id, m.cost_micros FROM messages m WHERE m.id = ANY($1::text[]) AND m.cost_micros > 0
  ), s AS (
    SELECT account_id, sum(cost_micros)::bigint AS total FROM r GROUP BY account_id
  ), l AS (
    SELECT id FROM accounts WHERE id IN (SELECT account_id FROM s) ORDER BY id FOR UPDATE
  ), a AS (
    UPDATE accounts SET balance_micros = balance_micros + s.total, updated_at = now() FROM s JOIN l ON l.id = s.account_id
    WHERE accounts.id = s.account_id
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
 * Debits at accept time, decided against the locked balance (decideDebits), so concurrent sends can never take it
 * below zero, or below −creditLimit for an account given one (a postpaid account sends on credit). A single message's debit is written by the ledger writer in the transaction of its row. A bulk's debit
 * (`debit`) comes before its ledger write; if that write fails the debit is voided at once, and a crash in between is
 * repaired by `voidOrphans` (a debit whose message or batch never appeared is credited back).
 */
export class Billing {
  /**
   * Concurrent debits share one transaction: an account's row is locked and written once per batch instead of once
   * per debit (one after the other, each its own commit), which had capped priced traffic at a fraction of unpriced
   * (see docs/performance.md).
   */
  private readonly debits: GroupCommit<Debit, boolean>;

  constructor(
    private readonly db: Db,
    private readonly opts: { refundOnFailure: boolean },
  ) {
    this.debits = new GroupCommit<Debit, boolean>((items) => this.applyDebits(items), { lingerMs: 1, maxInFlight: 1, maxBatch: 1000 });
  }

  /**
   * False when the balance is short (nothing changed). `reference`: the message id, or the batch id of a bulk. Debits
   * are decided in the order they were asked for: each takes the balance the ones before it left, so the balance never
   * goes below −creditLimit (zero without one), and a debit that does not fit leaves it to the smaller ones after it.
   */
  async debit(accountId: string, micros: number, reference: string): Promise<boolean> {
    if (micros <= 0) return true;
    return this.debits.submit({ accountId, micros, reference });
  }

  /** Writes the debits asked for so far, then refuses new ones (LedgerClosedError). */
  close(): Promise<void> {
    return this.debits.close();
  }

  private applyDebits(items: Debit[]): Promise<boolean[]> {
    return this.db.tx(async (q) => {
      const { ok, write } = await decideDebits(q, items);
      if (write) {
        const written = q.query(write.text, write.params);
        q.commitNow();
        await written;
      }
      return ok;
    });
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

export interface Debit {
  accountId: string;
  micros: number;
  /** The message id, or the batch id of a bulk. */
  reference: string;
}

/**
 * Inside the caller's transaction: locks the debits' accounts (in id order, so two batches never deadlock) and
 * decides each debit in order against the balance the ones before it left: it fits when the balance after it is at
 * least −creditLimit. Returns which fit and the statement that
 * writes them (each balance once, one transaction row per debit), for the caller to issue with its own writes; null
 * when none fits.
 */
export async function decideDebits(q: Queryable, debits: readonly Debit[]): Promise<{ ok: boolean[]; write: { text: string; params: unknown[] } | null }> {
  const ids = [...new Set(debits.map((d) => d.accountId))];
  const { rows } = await q.query<{ id: string; balance_micros: number; credit_limit_micros: number }>(LOCK_ACCOUNTS_SQL, [ids]);
  const balance = new Map<string, number>();
  // What each account may still spend: its balance plus its credit limit.
  const floor = new Map<string, number>();
  for (const r of rows) {
    balance.set(r.id, Number(r.balance_micros));
    floor.set(r.id, -Number(r.credit_limit_micros));
  }
  const ok: boolean[] = new Array(debits.length);
  const tAccount: string[] = [];
  const tMicros: number[] = [];
  const tAfter: number[] = [];
  const tReference: string[] = [];
  for (let i = 0; i < debits.length; i++) {
    const d = debits[i];
    const b = balance.get(d.accountId);
    if (b === undefined || b - d.micros < floor.get(d.accountId)!) {
      ok[i] = false;
      continue;
    }
    balance.set(d.accountId, b - d.micros);
    tAccount.push(d.accountId);
    tMicros.push(d.micros);
    tAfter.push(b - d.micros);
    tReference.push(d.reference);
    ok[i] = true;
  }
  if (!tAccount.length) return { ok, write: null };
  const touched = [...new Set(tAccount)];
  return { ok, write: { text: APPLY_DEBITS_SQL, params: [touched, touched.map((id) => balance.get(id)!), tAccount, tMicros, tAfter, tReference] } };
}
