import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import { ApiError, type ErrorCode } from '../http/errors.js';
import { ok } from '../http/envelope.js';
import type { Queryable } from '../store/types.js';

/** What the operator's read-only views need from the core: the database and the accounts. */
export interface InspectAdminDeps {
  db: Queryable;
  accounts: AccountService;
}

/**
 * One product's list for `ferry <product> list|show`: a read-only query over its table, across accounts, newest
 * first. Each product registers its own (registerInspectListing, from its adminRoutes), under its admin prefix.
 */
export interface InspectListing {
  /** The admin path of the list; `show` is `{path}/:id`. */
  path: string;
  code: string;
  table: string;
  /** The columns shown, aliased to the JSON names. */
  select: string;
  /** The row's time (creation or start) and how it is stored: epoch milliseconds or timestamptz. */
  time: { column: string; kind: 'ms' | 'tz' };
  /** The id column (what `show` looks the item up by). */
  id: string;
  /** The status filter, with `$n` the value; null: the list has no status. */
  status: ((p: string) => string) | null;
  statusPattern: string;
  /** Shapes a listed row as the product's API shows it. */
  shape?: (row: Record<string, unknown>) => Record<string, unknown>;
  /** The item with its history, through the product's own service (null: not found). */
  show?: { notFound: ErrorCode; get(accountId: string, id: string): Promise<unknown | null> };
}

const MAX_LIMIT = 500;

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    account: { type: 'string', minLength: 1, maxLength: 64, description: 'an account name or id' },
    status: { type: 'string', minLength: 1, maxLength: 32 },
    since: { type: 'string', format: 'date-time', description: 'created (or started) at or after this time' },
    limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$', description: `at most this many, 1-${MAX_LIMIT} (default 50)` },
  },
} as const;
const idParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

/** Times as ISO strings whatever the storage (epoch milliseconds come back as strings from pg's bigint). */
function iso(v: unknown, kind: 'ms' | 'tz'): unknown {
  if (v === null || v === undefined) return v;
  if (v instanceof Date) return v.toISOString();
  return kind === 'ms' ? new Date(Number(v)).toISOString() : v;
}

/** `GET {path}` and `GET {path}/:id`: one product's read-only operator view across accounts (`ferry <product> list|show`). */
export function registerInspectListing(app: FastifyInstance, deps: InspectAdminDeps, l: InspectListing): void {
  app.get<{ Querystring: { account?: string; status?: string; since?: string; limit?: string } }>(l.path, { schema: { querystring: listQuery } }, async (req) => {
    const q = req.query;
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.account !== undefined) {
      params.push((await deps.accounts.get(q.account)).id);
      where.push(`account_id = $${params.length}`);
    }
    if (q.status !== undefined) {
      if (!l.status || !new RegExp(l.statusPattern).test(q.status)) {
        const message = l.status ? `must match ${l.statusPattern}` : 'this list has no status';
        throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'status', message }] } });
      }
      params.push(q.status);
      where.push(l.status(`$${params.length}`));
    }
    if (q.since !== undefined) {
      const ms = Date.parse(q.since);
      params.push(l.time.kind === 'ms' ? ms : new Date(ms));
      where.push(`${l.time.column} >= $${params.length}`);
    }
    params.push(q.limit ? Number(q.limit) : 50);
    const rows = await deps.db.query<Record<string, unknown>>(
      `SELECT ${l.select} FROM ${l.table} ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY ${l.time.column} DESC, ${l.id} DESC LIMIT $${params.length}`,
      params,
    );
    const items = rows.rows.map((r) => {
      const out: Record<string, unknown> = { ...r, createdAt: iso(r.createdAt, l.time.kind) };
      if ('expiresAt' in out) out.expiresAt = iso(out.expiresAt, 'tz');
      return l.shape ? l.shape(out) : out;
    });
    return ok(req, l.code, { items });
  });
  const show = l.show;
  if (!show) return;
  app.get<{ Params: { id: string } }>(`${l.path}/:id`, { schema: { params: idParam } }, async (req) => {
    // The product's services read one account's items: find the account first, then read as the account would.
    const found = await deps.db.query<{ account_id: string | null }>(`SELECT account_id FROM ${l.table} WHERE ${l.id} = $1 AND account_id IS NOT NULL LIMIT 1`, [req.params.id]);
    const accountId = found.rows[0]?.account_id;
    const item = accountId ? await show.get(accountId, req.params.id) : null;
    if (!item) throw new ApiError(show.notFound);
    return ok(req, l.code.replace(/S$/, ''), { accountId, ...(item as object) });
  });
}
