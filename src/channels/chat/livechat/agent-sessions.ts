import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { grantedScopes } from '../../../accounts/scopes.js';
import type { Db } from '../../../store/types.js';
import { agentUserId } from './identity.js';

export interface AgentSession {
  accountId: string;
  keyId: string;
  /** The agent's chat user id (agent:<keyId>). */
  agentId: string;
  /** The name visitors see (given at sign-in), or null. */
  agentName: string | null;
  expiresAt: number;
  /** The CSRF token of this session (an HMAC of the session token; nothing more to store). */
  csrfToken: string;
}

const hash = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Sessions of the /inbox page in SQL, so that any instance serves them: a random token in an HttpOnly cookie, only its
 * SHA-256 stored, never the API key that opened it (its id only). Each lookup reads the key and its account with the
 * session (one query, no cache): a key revoked or expired, its chat:manage scope removed or its account suspended
 * ends the session at the next request on any instance.
 */
export class AgentSessions {
  constructor(private readonly o: { db: Db; csrfKey: Buffer; ttlMs: number; now?: () => number }) {}

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

  async open(accountId: string, keyId: string, agentName: string | null): Promise<{ token: string; session: AgentSession }> {
    const token = randomBytes(32).toString('base64url');
    const now = this.now();
    const expiresAt = now + this.o.ttlMs;
    await this.o.db.query(
      `INSERT INTO chat_livechat_sessions (token_hash, account_id, key_id, agent_name, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [hash(token), accountId, keyId, agentName, now, expiresAt],
    );
    return { token, session: { accountId, keyId, agentId: agentUserId(keyId), agentName, expiresAt, csrfToken: this.csrfFor(token) } };
  }

  /** The live session of a token; null when unknown, ended or expired, or when its key may no longer open one (then deleted). */
  async find(token: string | undefined): Promise<AgentSession | null> {
    if (!token || token.length > 100) return null;
    const now = this.now();
    const { rows } = await this.o.db.query<{
      account_id: string;
      key_id: string;
      agent_name: string | null;
      expires_at: string;
      scopes: string[] | null;
      revoked_at: Date | null;
      key_expires_at: Date | null;
      account_status: string | null;
    }>(
      `SELECT s.account_id, s.key_id, s.agent_name, s.expires_at, k.scopes, k.revoked_at, k.expires_at AS key_expires_at, a.status AS account_status
       FROM chat_livechat_sessions s LEFT JOIN api_keys k ON k.id = s.key_id LEFT JOIN accounts a ON a.id = s.account_id
       WHERE s.token_hash = $1 AND s.expires_at > $2`,
      [hash(token), now],
    );
    if (!rows.length) return null;
    const r = rows[0];
    const keyValid =
      r.scopes !== null &&
      r.revoked_at === null &&
      (r.key_expires_at === null || new Date(r.key_expires_at).getTime() > now) &&
      r.account_status === 'active' &&
      grantedScopes(r.scopes).includes('chat:manage');
    if (!keyValid) {
      await this.close(token);
      return null;
    }
    return {
      accountId: r.account_id,
      keyId: r.key_id,
      agentId: agentUserId(r.key_id),
      agentName: r.agent_name,
      expiresAt: Number(r.expires_at),
      csrfToken: this.csrfFor(token),
    };
  }

  async close(token: string): Promise<void> {
    await this.o.db.query(`DELETE FROM chat_livechat_sessions WHERE token_hash = $1`, [hash(token)]);
  }

  /** Deletes expired sessions; returns how many. */
  async purgeExpired(): Promise<number> {
    const { rowCount } = await this.o.db.query(`DELETE FROM chat_livechat_sessions WHERE expires_at <= $1`, [this.now()]);
    return rowCount;
  }
}
