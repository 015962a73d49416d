import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../store/types.js';

export interface LogSession {
  accountId: string;
  keyId: string;
  expiresAt: number;
  /** The CSRF token of this session (an HMAC of the session token; nothing more to store). */
  csrfToken: string;
}

const hash = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Sessions of the /logs page in SQL, so that any instance serves them: a random token in an HttpOnly cookie, only its
 * SHA-256 stored. The API key that opened the session is never kept, in the browser or here (only its id).
 */
export class LogSessions {
  constructor(
    private readonly o: { db: Db; csrfKey: Buffer; ttlMs: number; now?: () => number },
  ) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  csrfFor(token: string): string {
    return createHmac('sha256', this.o.csrfKey).update(token).digest('base64url');
  }

  /** Whether a presented CSRF token belongs to the session token (constant time). */
  csrfValid(token: string, presented: string | undefined): boolean {
    if (!presented) return false;
    const want = Buffer.from(this.csrfFor(token));
    const got = Buffer.from(presented);
    return want.length === got.length && timingSafeEqual(want, got);
  }

  async open(accountId: string, keyId: string): Promise<{ token: string; session: LogSession }> {
    const token = randomBytes(32).toString('base64url');
    const now = this.now();
    const expiresAt = now + this.o.ttlMs;
    await this.o.db.query(`INSERT INTO log_sessions (token_hash, account_id, key_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`, [hash(token), accountId, keyId, now, expiresAt]);
    return { token, session: { accountId, keyId, expiresAt, csrfToken: this.csrfFor(token) } };
  }

  /** The live session of a token; null when unknown, ended or expired. */
  async find(token: string | undefined): Promise<LogSession | null> {
    if (!token || token.length > 100) return null;
    const { rows } = await this.o.db.query<{ account_id: string; key_id: string; expires_at: string }>(
      `SELECT account_id, key_id, expires_at FROM log_sessions WHERE token_hash = $1 AND expires_at > $2`,
      [hash(token), this.now()],
    );
    if (!rows.length) return null;
    return { accountId: rows[0].account_id, keyId: rows[0].key_id, expiresAt: Number(rows[0].expires_at), csrfToken: this.csrfFor(token) };
  }

  async close(token: string): Promise<void> {
    await this.o.db.query(`DELETE FROM log_sessions WHERE token_hash = $1`, [hash(token)]);
  }

  /** Deletes expired sessions; returns how many. */
  async purgeExpired(): Promise<number> {
    const { rowCount } = await this.o.db.query(`DELETE FROM log_sessions WHERE expires_at <= $1`, [this.now()]);
    return rowCount;
  }
}
