import type { FastifyRequest } from 'fastify';

/** The header a client of the admin API names itself with (the `ferry` CLI sends `cli:<os user>`). */
export const ACTOR_HEADER = 'x-ferry-actor';

const MAX_ACTOR_NAME = 64;

/**
 * What a client says it is, fit for a log line and a database column: characters outside letters, digits and
 * `_ . : @ / + = -` become `_`, at most 64 characters; null when nothing is left. The header is not authenticated (the
 * admin token is), so it only says which operator or tool used the token.
 */
export function sanitiseActorName(value: unknown): string | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (typeof raw !== 'string') return null;
  const clean = raw
    .slice(0, 4 * MAX_ACTOR_NAME)
    .replace(/[^A-Za-z0-9_.:@/+=-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_ACTOR_NAME);
  return clean || null;
}

/**
 * Who made an admin request: the admin token's holder ('admin'), what the client called itself and its address, as
 * `admin/cli:alice@127.0.0.1` (`admin@127.0.0.1` without the header). Kept with balance movements and logged with
 * every admin action.
 */
export function adminActor(req: FastifyRequest): string {
  const name = sanitiseActorName(req.headers[ACTOR_HEADER]);
  return `admin${name ? '/' + name : ''}@${req.ip}`;
}

/**
 * One info line for an admin action that changed something, with the request id (from the request's logger), the
 * actor and the action's own fields. Callers pass ids, names and amounts only: never a secret or a password.
 */
export function audit(req: FastifyRequest, event: string, fields: Record<string, unknown>, msg: string): void {
  req.log.info({ event, actor: adminActor(req), ...fields }, `admin: ${msg}`);
}
