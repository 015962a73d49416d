import { prepared } from '../sql/prepared.js';
import type { Db, OtpCreateResult, OtpRecord, OtpResendResult, OtpStore, OtpVerifyResult } from '../types.js';

interface OtpRow {
  id: string;
  account_id: string;
  phone: string;
  code_cipher: string;
  code_hash: string;
  created_at: number;
  expires_at: number;
  last_sent_at: number;
  max_attempts: number;
  attempts_left: number;
  meta: string;
  retain_until: number;
}

const COLUMNS = 'id, account_id, phone, code_cipher, code_hash, created_at, expires_at, last_sent_at, max_attempts, attempts_left, meta, retain_until';
const PURGE_EVERY_MS = 60_000;

// The statements of every request and verify, prepared (parsed once per connection or embedded database).
// Upsert-as-lock: the no-op update takes the row lock even when the row already exists.
const LOCK_PHONE_SQL = prepared(`INSERT INTO otp_phones (account_id, phone) VALUES ($1, $2)
  ON CONFLICT (account_id, phone) DO UPDATE SET account_id = EXCLUDED.account_id
  RETURNING hits`);
const ACTIVE_ID_SQL = prepared(`SELECT id, expires_at FROM otp_codes
  WHERE account_id = $1 AND phone = $2 AND expires_at > $3 AND attempts_left > 0
  ORDER BY expires_at DESC LIMIT 1`);
const SET_HITS_SQL = prepared(`UPDATE otp_phones SET hits = $3::bigint[], idle_after = $4 WHERE account_id = $1 AND phone = $2`);
const INSERT_SQL = prepared(`INSERT INTO otp_codes (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`);
const LOCK_SQL = prepared(`SELECT ${COLUMNS} FROM otp_codes WHERE id = $1 AND account_id = $2 FOR UPDATE`);
const DELETE_SQL = prepared(`DELETE FROM otp_codes WHERE id = $1`);
const SET_ATTEMPTS_SQL = prepared(`UPDATE otp_codes SET attempts_left = $2 WHERE id = $1`);

/**
 * OTPs in SQL. Creates for one (account, phone) are serialised by a row lock on its otp_phones row,
 * which also holds the recent create times for the rate limit; verify and resend lock the OTP row.
 * The same statements run on Postgres and PGlite.
 */
export class SqlOtpStore implements OtpStore {
  private readonly clock: () => number;
  private nextPurge = 0;

  constructor(
    private readonly db: Db,
    opts: { clock?: () => number } = {},
  ) {
    this.clock = opts.clock ?? Date.now;
  }

  async create(rec: OtpRecord, opts: { rateLimit: number; rateWindowMs: number; retainMs: number; now: number }): Promise<OtpCreateResult> {
    const { now, rateLimit, rateWindowMs } = opts;
    const result = await this.db.tx(async (q): Promise<OtpCreateResult> => {
      const phone = await q.query<{ hits: (number | string)[] }>(LOCK_PHONE_SQL, [rec.accountId, rec.phone]);
      const active = await q.query<{ id: string; expires_at: number }>(ACTIVE_ID_SQL, [rec.accountId, rec.phone, now]);
      if (active.rows.length) {
        const a = active.rows[0];
        return { ok: false, reason: 'ACTIVE_OTP_EXISTS', retryAfterMs: a.expires_at - now, activeId: a.id };
      }
      // int8[] arrives as strings from pg, as numbers from PGlite.
      const cutoff = now - rateWindowMs;
      const hits: number[] = [];
      for (const h of phone.rows[0].hits) {
        const t = Number(h);
        if (t > cutoff) hits.push(t);
      }
      if (hits.length >= rateLimit) {
        const oldest = Math.min(...hits);
        return { ok: false, reason: 'RATE_LIMIT_EXCEEDED', retryAfterMs: Math.max(1, oldest + rateWindowMs - now) };
      }
      hits.push(now);
      await q.query(SET_HITS_SQL, [rec.accountId, rec.phone, hits, now + rateWindowMs]);
      await q.query(
        INSERT_SQL,
        [
          rec.id,
          rec.accountId,
          rec.phone,
          rec.codeCipher,
          rec.codeHash,
          rec.createdAt,
          rec.expiresAt,
          rec.lastSentAt,
          rec.maxAttempts,
          rec.attemptsLeft,
          JSON.stringify(rec.meta ?? {}),
          rec.expiresAt + opts.retainMs,
        ],
      );
      return { ok: true };
    });
    if (now >= this.nextPurge) {
      this.nextPurge = now + PURGE_EVERY_MS;
      await this.purge(now);
    }
    return result;
  }

  async get(id: string): Promise<OtpRecord | null> {
    const { rows } = await this.db.query<OtpRow>(`SELECT ${COLUMNS} FROM otp_codes WHERE id = $1 AND retain_until > $2`, [id, Math.floor(this.clock())]);
    return rows.length ? toRecord(rows[0]) : null;
  }

  async active(accountId: string, phone: string, now: number): Promise<OtpRecord | null> {
    const { rows } = await this.db.query<OtpRow>(
      `SELECT ${COLUMNS} FROM otp_codes
       WHERE account_id = $1 AND phone = $2 AND expires_at > $3 AND attempts_left > 0
       ORDER BY expires_at DESC LIMIT 1`,
      [accountId, phone, now],
    );
    return rows.length ? toRecord(rows[0]) : null;
  }

  // No index leads with phone (this runs once per USSD session); the table holds only live and retained OTPs.
  async activeForPhone(phone: string, now: number): Promise<OtpRecord[]> {
    const { rows } = await this.db.query<OtpRow>(
      `SELECT ${COLUMNS} FROM otp_codes
       WHERE phone = $1 AND expires_at > $2 AND attempts_left > 0
       ORDER BY created_at DESC, id DESC`,
      [phone, now],
    );
    return rows.map(toRecord);
  }

  verify(accountId: string, id: string, codeHash: string, now: number): Promise<OtpVerifyResult> {
    return this.db.tx(async (q): Promise<OtpVerifyResult> => {
      const row = await lockLive(q, accountId, id, now);
      if (!row) return { status: 'not_found' };
      if (row.attempts_left <= 0) return { status: 'locked', record: toRecord(row) };
      if (now >= row.expires_at) return { status: 'expired' };
      if (row.code_hash === codeHash) {
        await q.query(DELETE_SQL, [id]);
        return { status: 'verified', record: toRecord(row) };
      }
      const left = row.attempts_left - 1;
      await q.query(SET_ATTEMPTS_SQL, [id, left]);
      row.attempts_left = left;
      if (left === 0) return { status: 'locked', record: toRecord(row) };
      return { status: 'invalid', attemptsRemaining: left, record: toRecord(row) };
    });
  }

  resend(accountId: string, id: string, cooldownMs: number, now: number): Promise<OtpResendResult> {
    return this.db.tx(async (q): Promise<OtpResendResult> => {
      const row = await lockLive(q, accountId, id, now);
      if (!row) return { status: 'not_found' };
      if (row.attempts_left <= 0) return { status: 'locked' };
      if (now >= row.expires_at) return { status: 'expired' };
      const wait = row.last_sent_at + cooldownMs - now;
      if (wait > 0) return { status: 'cooldown', retryAfterMs: wait };
      await q.query(`UPDATE otp_codes SET last_sent_at = $2 WHERE id = $1`, [id, now]);
      row.last_sent_at = now;
      return { status: 'ok', record: toRecord(row) };
    });
  }

  /** Deletes OTPs past retention and phone rows with no hit left in their window. */
  async purge(now: number): Promise<void> {
    await this.db.query(`DELETE FROM otp_codes WHERE retain_until <= $1`, [now]);
    await this.db.query(`DELETE FROM otp_phones WHERE idle_after <= $1`, [now]);
  }
}

/**
 * The account's OTP row, locked for this transaction; a row past its retention is deleted and reported missing.
 * Another account's row is missing too, and neither locked nor touched.
 */
async function lockLive(q: Pick<Db, 'query'>, accountId: string, id: string, now: number): Promise<OtpRow | null> {
  const { rows } = await q.query<OtpRow>(LOCK_SQL, [id, accountId]);
  if (!rows.length) return null;
  if (now >= rows[0].retain_until) {
    await q.query(DELETE_SQL, [id]);
    return null;
  }
  return rows[0];
}

function toRecord(r: OtpRow): OtpRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    phone: r.phone,
    codeCipher: r.code_cipher,
    codeHash: r.code_hash,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    lastSentAt: r.last_sent_at,
    maxAttempts: r.max_attempts,
    attemptsLeft: r.attempts_left,
    meta: JSON.parse(r.meta) as Record<string, unknown>,
  };
}
