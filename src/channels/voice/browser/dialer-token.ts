import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';

/** Who a dialer token speaks for: the account, the key that minted it, the browser's SIP identity and its caller ID. */
export interface DialerClaims {
  accountId: string;
  keyId: string;
  /** The browser's name on SIP (`sip:<identity>@…`), for the call log and for calls to it. */
  identity: string;
  /** The caller ID its calls go out with (E.164 digits, a number the account owns). */
  from: string;
  expiresAt: Date;
}

const AUDIENCE = 'ferry-dialer';
const ISSUER = 'ferry-voice';
export const DIALER_TOKEN_DEFAULT_SECONDS = 900;
export const DIALER_TOKEN_MAX_SECONDS = 12 * 3600;

/**
 * Short-lived signed tokens for the browser dialer (HS256 with a key derived for it alone): browsers cannot send an
 * Authorization header on a WebSocket, so the token travels in the connection's query string, and no API key ever
 * reaches the page's storage. Nothing is stored: the signature and expiry are the whole check.
 */
export class DialerTokens {
  constructor(private readonly key: Uint8Array) {}

  async mint(c: Omit<DialerClaims, 'expiresAt'>, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }> {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + ttlSeconds;
    const token = await new SignJWT({ kid: c.keyId, idn: c.identity, frm: c.from })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(c.accountId)
      .setAudience(AUDIENCE)
      .setIssuer(ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** The claims of a valid, unexpired token; null for anything else (a forged, expired or malformed one). */
  async verify(token: string | null | undefined): Promise<DialerClaims | null> {
    if (!token || token.length > 2048) return null;
    try {
      const { payload } = await jwtVerify(token, this.key, { audience: AUDIENCE, issuer: ISSUER, algorithms: ['HS256'] });
      const { sub, kid, idn, frm, exp } = payload as Record<string, unknown>;
      if (typeof sub !== 'string' || typeof kid !== 'string' || typeof idn !== 'string' || typeof frm !== 'string' || typeof exp !== 'number') return null;
      return { accountId: sub, keyId: kid, identity: idn, from: frm, expiresAt: new Date(exp * 1000) };
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) return null;
      throw err;
    }
  }
}
