import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AuthContext, KeyService } from '../accounts/key-service.js';
import type { Metrics } from '../metrics.js';
import type { Throttle } from '../store/types.js';
import { ApiError, rateLimited } from './errors.js';
import { SharedAddressWarning } from './shared-address.js';
import './types.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Runs before authentication: a refusal here (the MCP Host/Origin guard) is no failed attempt of the address. */
    preAuth?: (req: FastifyRequest) => void | Promise<void>;
    /**
     * The route also takes an end-user token (a JWT a product minted for one of an account's users, e.g. chat): a
     * `Bearer <jwt>` is handed to this verifier, which resolves the user or throws its own refusal; any other header goes
     * through API-key authentication as usual. On a route without it, an end-user token is refused with
     * END_USER_TOKEN_NOT_ACCEPTED: a user token never reaches an API-key route.
     */
    endUser?: (token: string, req: FastifyRequest) => Promise<EndUser>;
  }
  interface FastifyRequest {
    /** The end user a route's `endUser` verifier resolved; null when the caller used an API key. */
    endUser: EndUser | null;
  }
  interface FastifyInstance {
    /** Calls the app makes to itself for an authenticated request (MCP tool calls), see InternalCalls. */
    ferryInternalCalls: InternalCalls;
  }
}

/** An end user of an account, authenticated by a token its product minted (not an API key). */
export interface EndUser {
  readonly accountId: string;
  readonly userId: string;
}

/** A compact JWS (header.payload.signature, base64url): what an end-user token looks like, and no API key does. */
const JWT_SHAPE = /^[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+$/;

/** The token of `Authorization: Bearer <jwt>`, or null when the header is anything else. */
export function bearerJwt(header: string | undefined): string | null {
  if (!header || header.length > 4096 || !/^bearer /i.test(header)) return null;
  const token = header.slice(7).trim();
  return JWT_SHAPE.test(token) ? token : null;
}

/** The header an internal call carries its one-time token in. */
export const INTERNAL_CALL_HEADER = 'x-ferry-internal-call';

/**
 * Requests the app makes to itself (app.inject) on behalf of a request it has already authenticated, such as an MCP
 * tool call reaching its REST route: they carry a one-time random token (192 bits, valid only while the call runs)
 * instead of the caller's credentials, so the key is verified and counted against its rate limit once, by the
 * outer request. A token cannot be guessed from outside, and one that is not pending is ignored.
 */
export class InternalCalls {
  private readonly pending = new Map<string, AuthContext>();

  /** A token standing for `auth` until `end(token)`. */
  begin(auth: AuthContext): string {
    const token = randomBytes(24).toString('base64url');
    this.pending.set(token, auth);
    return token;
  }

  end(token: string): void {
    this.pending.delete(token);
  }

  /** The caller an internal call stands for; taken once. */
  take(token: string | string[] | undefined): AuthContext | null {
    if (typeof token !== 'string') return null;
    const auth = this.pending.get(token);
    if (!auth) return null;
    this.pending.delete(token);
    return auth;
  }

  get size(): number {
    return this.pending.size;
  }
}

export interface AuthOptions {
  keys: KeyService;
  throttle: Throttle;
  metrics: Metrics;
  failureLimit: number;
  failureWindowMs: number;
  perKeyPerSecond: number;
  burst: number;
}

/** Parses `Basic base64(key:secret)`, `Bearer base64(key:secret)` or `Bearer key:secret`. */
export function parseAuthorization(header: string | undefined): { keyId: string; secret: string } | 'missing' | 'malformed' {
  if (!header) return 'missing';
  const space = header.indexOf(' ');
  if (space < 0) return 'malformed';
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if ((scheme !== 'basic' && scheme !== 'bearer') || !value || value.length > 1024) return 'malformed';
  let pair = value;
  if (!value.includes(':')) {
    if (!/^[A-Za-z0-9+/_-]+=*$/.test(value)) return 'malformed';
    pair = Buffer.from(value, 'base64').toString('utf8');
  } else if (scheme === 'basic') {
    return 'malformed';
  }
  // A NUL (Postgres cannot take it in a key id) is no credential anyone was given.
  if (pair.includes('\0')) return 'malformed';
  const colon = pair.indexOf(':');
  if (colon <= 0 || colon === pair.length - 1) return 'malformed';
  return { keyId: pair.slice(0, colon), secret: pair.slice(colon + 1) };
}

/**
 * Authenticates every route of the encapsulating context unless the route says `config.auth: false`, then checks its
 * scope and the per-key rate limit.
 *
 * Failed attempts (a malformed header, a wrong key or secret) are counted per client address over a sliding window;
 * past `failureLimit` of them the address's failed attempts are answered TOO_MANY_AUTH_FAILURES (429, Retry-After)
 * instead of 401 until the window frees up. A request whose credentials verify is always served, even from a
 * throttled address: API secrets are random and long, so guessing is no threat a lockout needs to answer, and behind a
 * proxy (http.trustProxy off) one address is every client's, which a lockout would shut out all together. Verifying
 * costs a keyed SHA-256 of at most 200 characters and the key's row (cached), and the header is bounded (1024
 * characters), so refusing before verifying would save nothing worth a denial of service.
 */
async function authPlugin(app: FastifyInstance, opts: AuthOptions): Promise<void> {
  app.decorateRequest('auth', null as never);
  app.decorateRequest('endUser', null);
  const internal = new InternalCalls();
  app.decorate('ferryInternalCalls', internal);

  const failureKey = (req: FastifyRequest) => `authfail:${req.clientIp}`;
  const windowSeconds = Math.round(opts.failureWindowMs / 1000);
  const proxied = app.ferryTrustProxy ? null : new SharedAddressWarning(app.log);

  /**
   * A failed attempt: counted (the window keeps at most failureLimit per address; refused ones are not added) and
   * answered with its code, or TOO_MANY_AUTH_FAILURES once the address is past the limit. The address reaching the
   * limit is logged once per window; every attempt is in the metrics and the access log (with the address).
   */
  const fail = async (req: FastifyRequest, code: 'AUTH_HEADER_MALFORMED' | 'INVALID_CREDENTIALS'): Promise<ApiError> => {
    opts.metrics.authFailures.inc({ reason: code });
    const r = await opts.throttle.hit(failureKey(req), opts.failureLimit, opts.failureWindowMs);
    if (!r.allowed) {
      opts.metrics.rateLimited.inc({ limit: 'auth_failures' });
      return rateLimited('TOO_MANY_AUTH_FAILURES', r.retryAfterMs);
    }
    if (r.count === opts.failureLimit) {
      app.log.warn(
        { address: req.clientIp, failures: r.count, windowSeconds, reqId: req.id },
        `${r.count} failed authentications from ${req.clientIp} within ${windowSeconds} s: its further failed attempts get ` +
          `TOO_MANY_AUTH_FAILURES until the window frees up (requests with valid credentials are still served)`,
      );
    }
    return new ApiError(code);
  };

  app.addHook('onRequest', async (req) => {
    proxied?.check(req.socket.remoteAddress, req.headers);
    const cfg = req.routeOptions.config;
    if (cfg.preAuth) await cfg.preAuth(req);
    // Public routes, and paths no route answers (404 / 405 whatever the credentials).
    if (cfg.auth === false || req.is404) return;
    const inner = req.headers[INTERNAL_CALL_HEADER] === undefined ? null : internal.take(req.headers[INTERNAL_CALL_HEADER]);
    if (inner) {
      // Verified and counted by the request that made this call; the route's scope is still checked.
      req.auth = inner;
      if (cfg.scope && !inner.scopes.has(cfg.scope)) {
        throw new ApiError('INSUFFICIENT_SCOPE', { message: `This API key lacks the scope ${cfg.scope}`, data: { requiredScope: cfg.scope } });
      }
      return;
    }
    const jwt = bearerJwt(req.headers.authorization);
    if (jwt !== null) {
      if (!cfg.endUser) {
        opts.metrics.authFailures.inc({ reason: 'END_USER_TOKEN_NOT_ACCEPTED' });
        throw new ApiError('END_USER_TOKEN_NOT_ACCEPTED');
      }
      const user = await cfg.endUser(jwt, req);
      req.endUser = user;
      if (opts.perKeyPerSecond > 0) {
        const r = await opts.throttle.take(`rate:user:${user.accountId}:${user.userId}`, opts.perKeyPerSecond, opts.burst);
        if (!r.allowed) {
          opts.metrics.rateLimited.inc({ limit: 'end_user' });
          throw rateLimited('RATE_LIMIT_EXCEEDED', r.retryAfterMs);
        }
      }
      return;
    }
    const parsed = parseAuthorization(req.headers.authorization);
    // No header is no guess: refused, but not counted against the address.
    if (parsed === 'missing') {
      opts.metrics.authFailures.inc({ reason: 'AUTH_HEADER_MISSING' });
      throw new ApiError('AUTH_HEADER_MISSING');
    }
    if (parsed === 'malformed') throw await fail(req, 'AUTH_HEADER_MALFORMED');

    const outcome = await opts.keys.authenticate(parsed.keyId, parsed.secret);
    if (!outcome.ok) {
      // Only a right secret learns of the suspension; it is not a failed guess.
      if (outcome.reason === 'suspended') {
        opts.metrics.authFailures.inc({ reason: 'ACCOUNT_SUSPENDED' });
        throw new ApiError('ACCOUNT_SUSPENDED');
      }
      throw await fail(req, 'INVALID_CREDENTIALS');
    }
    const auth = outcome.auth;
    // Set before the scope and rate checks, so that their refusals are logged with the key and account.
    req.auth = auth;
    if (cfg.scope && !auth.scopes.has(cfg.scope)) {
      opts.metrics.authFailures.inc({ reason: 'INSUFFICIENT_SCOPE' });
      throw new ApiError('INSUFFICIENT_SCOPE', { message: `This API key lacks the scope ${cfg.scope}`, data: { requiredScope: cfg.scope } });
    }
    if (opts.perKeyPerSecond > 0) {
      const r = await opts.throttle.take(`rate:key:${auth.keyId}`, opts.perKeyPerSecond, opts.burst);
      if (!r.allowed) {
        opts.metrics.rateLimited.inc({ limit: 'api_key' });
        throw rateLimited('RATE_LIMIT_EXCEEDED', r.retryAfterMs);
      }
    }
  });
}

export default fp(authPlugin, { name: 'ferry-auth' });
