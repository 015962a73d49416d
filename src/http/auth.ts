import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { KeyService } from '../accounts/key-service.js';
import type { Metrics } from '../metrics.js';
import type { Throttle } from '../store/types.js';
import { AuthFailureCache } from './auth-failure-cache.js';
import { ApiError, rateLimited } from './errors.js';
import './types.js';

export interface AuthOptions {
  keys: KeyService;
  throttle: Throttle;
  metrics: Metrics;
  failureLimit: number;
  failureWindowMs: number;
  perKeyPerSecond: number;
  burst: number;
}

/** How long a read of an address's failure count may stand in for the next ones (see AuthFailureCache). */
const FAILURE_READING_MAX_AGE_MS = 1000;

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
  const colon = pair.indexOf(':');
  if (colon <= 0 || colon === pair.length - 1) return 'malformed';
  return { keyId: pair.slice(0, colon), secret: pair.slice(colon + 1) };
}

/**
 * Authenticates every route of the encapsulating context unless the route says `config.auth: false`,
 * then checks its scope and the per-key rate limit. Failures from one client address are throttled.
 */
async function authPlugin(app: FastifyInstance, opts: AuthOptions): Promise<void> {
  app.decorateRequest('auth', null as never);

  const failureKey = (req: FastifyRequest) => `authfail:${req.ip}`;
  // Most requests come from addresses with no failures: a recent reading of the count spares them a store round trip.
  const recentFailures = new AuthFailureCache(opts.failureLimit, FAILURE_READING_MAX_AGE_MS);

  /** A wrong guess: counted (at most failureLimit entries are kept per address) and refused. */
  const fail = async (req: FastifyRequest, code: 'AUTH_HEADER_MALFORMED' | 'INVALID_CREDENTIALS') => {
    opts.metrics.authFailures.inc({ reason: code });
    const r = await opts.throttle.hit(failureKey(req), opts.failureLimit, opts.failureWindowMs);
    recentFailures.record(req.ip, r.count, Date.now());
    return new ApiError(code);
  };

  const failuresOf = (req: FastifyRequest): Promise<number> =>
    recentFailures.countOf(req.ip, () => opts.throttle.count(failureKey(req), opts.failureWindowMs), Date.now);

  app.addHook('onRequest', async (req) => {
    const cfg = req.routeOptions.config;
    // Public routes, and paths no route answers (404 / 405 whatever the credentials).
    if (cfg.auth === false || req.is404) return;
    const parsed = parseAuthorization(req.headers.authorization);
    // No header is no guess: refused, but not counted against the address.
    if (parsed === 'missing') {
      opts.metrics.authFailures.inc({ reason: 'AUTH_HEADER_MISSING' });
      throw new ApiError('AUTH_HEADER_MISSING');
    }

    // Checked before the credentials, so a throttled address learns nothing, even from a right guess.
    const failures = await failuresOf(req);
    if (failures >= opts.failureLimit) {
      opts.metrics.rateLimited.inc({ limit: 'auth_failures' });
      throw rateLimited('TOO_MANY_AUTH_FAILURES', opts.failureWindowMs);
    }
    if (parsed === 'malformed') throw await fail(req, 'AUTH_HEADER_MALFORMED');

    const outcome = await opts.keys.authenticate(parsed.keyId, parsed.secret);
    if (!outcome.ok) {
      if (outcome.reason === 'suspended') {
        opts.metrics.authFailures.inc({ reason: 'ACCOUNT_SUSPENDED' });
        throw new ApiError('ACCOUNT_SUSPENDED');
      }
      throw await fail(req, 'INVALID_CREDENTIALS');
    }
    const auth = outcome.auth;
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
    req.auth = auth;
  });
}

export default fp(authPlugin, { name: 'ferry-auth' });
