import { createHmac } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { ApiError } from '../../http/errors.js';
import type { Queryable } from '../../store/types.js';
import { USER_ID_RE } from './chat-schemas.js';
import type { ChatTokenClaims } from './chat-types.js';

/**
 * End-user tokens: HS256 JWTs (`jose`) signed with a key per account and generation, derived from the daemon's key
 * (HMAC-SHA256 of `<account>:<generation>`), so nothing secret is stored. The header's `kid` names the generation;
 * POST /secret/rotate moves it on and keeps the previous one for a grace period.
 */

export const TOKEN_ISSUER = 'ferry';
export const TOKEN_AUDIENCE = 'chat-sdk';

interface KeyState {
  generation: number;
  previous_generation: number | null;
  previous_valid_until: Date | string | null;
}

/** What a verification reads with the key state: the user's ban and revocation. */
interface VerifyRow extends KeyState {
  account_status: string;
  user_exists: boolean;
  banned: boolean | null;
  tokens_valid_after: Date | string | null;
}

export interface RotateResult {
  generation: number;
  /** Tokens of the previous generation are accepted until then (null: not at all). */
  previousValidUntil: string | null;
}

/** An account id as the core makes them; anything else in a token is no account of ours (and never reaches SQL). */
const ACCOUNT_ID_RE = /^[A-Za-z0-9_-]{1,100}$/;

const refused = (code: 'CHAT_TOKEN_INVALID' | 'CHAT_TOKEN_EXPIRED' | 'CHAT_TOKEN_REVOKED' | 'CHAT_USER_BANNED') => new ApiError(code);

export class ChatTokens {
  constructor(private readonly o: { signingKey: Buffer; clock: () => number }) {}

  private key(accountId: string, generation: number): Uint8Array {
    return createHmac('sha256', this.o.signingKey).update(`${accountId}:${generation}`).digest();
  }

  /** The account's current generation; the first mint creates its row (generation 1). */
  async currentGeneration(q: Queryable, accountId: string): Promise<number> {
    await q.query(`INSERT INTO chat_token_keys (account_id) VALUES ($1) ON CONFLICT (account_id) DO NOTHING`, [accountId]);
    const { rows } = await q.query<{ generation: number }>(`SELECT generation FROM chat_token_keys WHERE account_id = $1`, [accountId]);
    return Number(rows[0].generation);
  }

  /** Signs a token for the user; times in seconds. */
  async sign(accountId: string, userId: string, generation: number, issuedAt: number, expiresAt: number): Promise<string> {
    return new SignJWT({ acc: accountId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: String(generation) })
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(userId)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(this.key(accountId, generation));
  }

  /** A new generation; the current one stays valid for `graceSeconds` (0: refused at once). */
  async rotate(q: Queryable, accountId: string, graceSeconds: number): Promise<RotateResult> {
    const until = graceSeconds > 0 ? new Date(this.o.clock() + graceSeconds * 1000).toISOString() : null;
    const { rows } = await q.query<{ generation: number; previous_valid_until: Date | string | null }>(
      `INSERT INTO chat_token_keys (account_id, generation, previous_generation, previous_valid_until, rotated_at)
       VALUES ($1, 2, CASE WHEN $2::timestamptz IS NULL THEN NULL ELSE 1 END, $2::timestamptz, now())
       ON CONFLICT (account_id) DO UPDATE SET
         previous_generation = CASE WHEN $2::timestamptz IS NULL THEN NULL ELSE chat_token_keys.generation END,
         previous_valid_until = $2::timestamptz,
         generation = chat_token_keys.generation + 1,
         rotated_at = now()
       RETURNING generation, previous_valid_until`,
      [accountId, until],
    );
    const r = rows[0];
    return { generation: Number(r.generation), previousValidUntil: r.previous_valid_until === null ? null : new Date(r.previous_valid_until).toISOString() };
  }

  /**
   * Verifies a token: its account and generation from the unverified header and claims pick the key (one read, with
   * the user's state), then `jose` checks the signature, algorithm, issuer, audience and expiry. Refusals:
   * CHAT_TOKEN_INVALID (malformed, wrong signature, unknown or retired key), CHAT_TOKEN_EXPIRED, CHAT_TOKEN_REVOKED
   * (user deleted, or tokens revoked after it was issued), CHAT_USER_BANNED, ACCOUNT_SUSPENDED.
   */
  async verify(q: Queryable, token: string): Promise<ChatTokenClaims> {
    let accountId: string;
    let generation: number;
    let subject: string;
    try {
      const header = decodeProtectedHeader(token);
      const claims = decodeJwt(token);
      if (header.alg !== 'HS256' || typeof header.kid !== 'string' || !/^[1-9][0-9]{0,8}$/.test(header.kid) || typeof claims.acc !== 'string' || !ACCOUNT_ID_RE.test(claims.acc) || typeof claims.sub !== 'string' || !USER_ID_RE.test(claims.sub)) {
        throw refused('CHAT_TOKEN_INVALID');
      }
      accountId = claims.acc;
      subject = claims.sub;
      generation = Number(header.kid);
    } catch {
      throw refused('CHAT_TOKEN_INVALID');
    }
    // The claims are not verified yet: the user named is read only to answer after the signature holds.
    const { rows } = await q.query<VerifyRow>(
      `SELECT k.generation, k.previous_generation, k.previous_valid_until, a.status AS account_status,
              u.id IS NOT NULL AS user_exists, u.banned_at IS NOT NULL AS banned, u.tokens_valid_after
       FROM chat_token_keys k JOIN accounts a ON a.id = k.account_id LEFT JOIN chat_users u ON u.account_id = k.account_id AND u.id = $2
       WHERE k.account_id = $1`,
      [accountId, subject],
    );
    const row = rows[0];
    const now = this.o.clock();
    const usable =
      row !== undefined &&
      (Number(row.generation) === generation ||
        (row.previous_generation !== null && Number(row.previous_generation) === generation && row.previous_valid_until !== null && new Date(row.previous_valid_until).getTime() > now));
    if (!usable) throw refused('CHAT_TOKEN_INVALID');

    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.key(accountId, generation), { algorithms: ['HS256'], issuer: TOKEN_ISSUER, audience: TOKEN_AUDIENCE, currentDate: new Date(now) }));
    } catch (err) {
      throw refused(err instanceof joseErrors.JWTExpired ? 'CHAT_TOKEN_EXPIRED' : 'CHAT_TOKEN_INVALID');
    }
    if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number' || payload.sub !== subject) throw refused('CHAT_TOKEN_INVALID');
    // A suspended account's users are refused as its keys are.
    if (row.account_status !== 'active') throw new ApiError('ACCOUNT_SUSPENDED');
    if (!row.user_exists) throw refused('CHAT_TOKEN_REVOKED');
    if (row.tokens_valid_after !== null && payload.iat * 1000 < new Date(row.tokens_valid_after).getTime()) throw refused('CHAT_TOKEN_REVOKED');
    if (row.banned) throw refused('CHAT_USER_BANNED');
    return { accountId, userId: payload.sub, issuedAt: payload.iat, expiresAt: payload.exp };
  }
}
