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
/** The columns of the `otp` record a function returns (verify, resend), as the row's own columns. */
const OTP_COLUMNS = COLUMNS.split(', ')
  .map((c) => `(f.otp).${c} AS ${c}`)
  .join(', ');
const PURGE_EVERY_MS = 60_000;

// Create, verify and resend are functions of their own (migration 0017; verify as 0022 replaced it): one statement each, so a request is one
// round trip on Postgres and one call into the embedded database. Prepared, as the hot path's statements are.
const CREATE_SQL = prepared(`SELECT f.outcome, f.retry_after, f.active_id
  FROM ferry_otp_create($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) AS f`);
const VERIFY_SQL = prepared(`SELECT f.outcome, ${OTP_COLUMNS} FROM ferry_otp_verify($1, $2, $3, $4) AS f`);
const RESEND_SQL = prepared(`SELECT f.outcome, f.retry_after, ${OTP_COLUMNS} FROM ferry_otp_resend($1, $2, $3, $4) AS f`);

/**
 * OTPs in SQL. Creates for one (account, phone) are serialised by a row lock on its otp_phones row,
 * which also holds the recent create times for the rate limit; verify and resend lock the OTP row (inside the
 * functions of migration 0017). The same statements run on Postgres and PGlite.
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
    const { now } = opts;
    const { rows } = await this.db.query<{ outcome: 'OK' | 'ACTIVE' | 'RATE'; retry_after: number | null; active_id: string | null }>(CREATE_SQL, [
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
      now,
      opts.rateLimit,
      opts.rateWindowMs,
    ]);
    const r = rows[0];
    if (now >= this.nextPurge) {
      this.nextPurge = now + PURGE_EVERY_MS;
      await this.purge(now);
    }
    switch (r.outcome) {
      case 'OK':
        return { ok: true };
      case 'ACTIVE':
        return { ok: false, reason: 'ACTIVE_OTP_EXISTS', retryAfterMs: Number(r.retry_after), activeId: r.active_id! };
      default:
        return { ok: false, reason: 'RATE_LIMIT_EXCEEDED', retryAfterMs: Number(r.retry_after) };
    }
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

  async verify(accountId: string, id: string, codeHash: string, now: number): Promise<OtpVerifyResult> {
    const { rows } = await this.db.query<OtpRow & { outcome: 'verified' | 'invalid' | 'locked' | 'expired' | 'not_found' }>(VERIFY_SQL, [accountId, id, codeHash, now]);
    const r = rows[0];
    switch (r.outcome) {
      case 'verified':
      case 'locked':
        return { status: r.outcome, record: toRecord(r) };
      case 'invalid':
        return { status: 'invalid', attemptsRemaining: r.attempts_left, record: toRecord(r) };
      default:
        return { status: r.outcome };
    }
  }

  async resend(accountId: string, id: string, cooldownMs: number, now: number): Promise<OtpResendResult> {
    const { rows } = await this.db.query<OtpRow & { outcome: 'ok' | 'cooldown' | 'locked' | 'expired' | 'not_found'; retry_after: number | null }>(RESEND_SQL, [
      accountId,
      id,
      cooldownMs,
      now,
    ]);
    const r = rows[0];
    switch (r.outcome) {
      case 'ok':
        return { status: 'ok', record: toRecord(r) };
      case 'cooldown':
        return { status: 'cooldown', retryAfterMs: Number(r.retry_after) };
      default:
        return { status: r.outcome };
    }
  }

  /** Deletes OTPs past retention and phone rows with no hit left in their window. */
  async purge(now: number): Promise<void> {
    await this.db.query(`DELETE FROM otp_codes WHERE retain_until <= $1`, [now]);
    await this.db.query(`DELETE FROM otp_phones WHERE idle_after <= $1`, [now]);
  }
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
