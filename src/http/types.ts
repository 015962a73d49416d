import type { AuthContext } from '../accounts/key-service.js';
import type { Scope } from '../accounts/scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth plugin on every authenticated /v1 route. */
    auth: AuthContext;
  }
  interface FastifyContextConfig {
    /** Scope the route needs (spec §5.5); absent = any valid key. */
    scope?: Scope;
    /** false = public route (no Authorization needed). */
    auth?: boolean;
  }
}

/** The authenticated caller; routes behind the auth plugin always have it. */
export function caller(req: { auth: AuthContext }): AuthContext {
  return req.auth;
}
