/* eslint-disable @typescript-eslint/no-restricted-imports -- TODO(i43): removed when i43-cli / i43-store (admin routes declared by modules) lands */
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import type { EmailModuleService } from '../channels/email/index.js';
import type { LogsService } from '../channels/logs/logs-service.js';
import type { MessengerModuleService } from '../channels/messenger/index.js';
import type { ShortlinkService } from '../channels/shortlink/shortlink-service.js';
import type { UssdService } from '../channels/ussd/index.js';
import { displayCode } from '../channels/ussd/service-code.js';
import type { WebhookService } from '../channels/webhooks/webhook-service.js';
import { ApiError, type ErrorCode } from '../http/errors.js';
import { ok } from '../http/envelope.js';
import type { Queryable } from '../store/types.js';
import { registerSimMailRoutes } from './sim-mail-routes.js';

/** What the operator's read-only views need: the database, the accounts, and the running products' services. */
export interface InspectAdminDeps {
  db: Queryable;
  accounts: AccountService;
  modules: { has(name: string): boolean; service<T>(name: string): T };
}

/** One product's list: a read-only query over its table, across accounts, newest first. */
interface Listing {
  /** The admin path of the list; `show` is `{path}/:id`. */
  path: string;
  /** The module that must run for the routes to exist (null: the core's SMS ledger). */
  module: string | null;
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

function listings(deps: InspectAdminDeps): Listing[] {
  const { modules } = deps;
  const eq = (column: string) => (p: string) => `${column} = ${p}`;
  return [
    {
      // `ferry messages show` is the gateway's /admin/messages/:id (ledger row, history, parts, route).
      path: '/admin/messages',
      module: null,
      code: 'MESSAGES',
      table: 'messages',
      select: `id, account_id AS "accountId", status, ingress, source AS "from", destination AS "to", segments, error_code AS "errorCode", upstream_id AS "upstream", created_at AS "createdAt"`,
      time: { column: 'created_at', kind: 'tz' },
      id: 'id',
      status: eq('status'),
      statusPattern: '^[a-z]+$',
    },
    {
      path: '/admin/email/messages',
      module: 'email',
      code: 'EMAIL_MESSAGES',
      table: 'email_messages',
      select: `id, account_id AS "accountId", status, stream, from_address AS "from", recipient AS "to", subject, created_at AS "createdAt"`,
      time: { column: 'created_at', kind: 'ms' },
      id: 'id',
      status: eq('status'),
      statusPattern: '^[a-z_]+$',
      show: { notFound: 'EMAIL_NOT_FOUND', get: (accountId, id) => modules.service<EmailModuleService>('email').email.message(accountId, id) },
    },
    {
      path: '/admin/messenger/messages',
      module: 'messenger',
      code: 'MESSENGER_MESSAGES',
      table: 'messenger_messages',
      select: `id, account_id AS "accountId", status, type, business_number AS "from", recipient AS "to", ferry_error AS "error", created_at AS "createdAt"`,
      time: { column: 'created_at', kind: 'ms' },
      id: 'id',
      status: eq('status'),
      statusPattern: '^[a-z_]+$',
      show: { notFound: 'MESSAGE_NOT_FOUND', get: (accountId, id) => modules.service<MessengerModuleService>('messenger').messenger.status(accountId, id) },
    },
    {
      path: '/admin/ussd/sessions',
      module: 'ussd',
      code: 'USSD_SESSIONS',
      table: 'ussd_sessions',
      select: `id, account_id AS "accountId", status, end_status AS "endStatus", service_code AS "serviceCode", phone, channel, hops, started_at AS "createdAt"`,
      time: { column: 'started_at', kind: 'ms' },
      id: 'id',
      // active or ended, or how a session ended (Success, Incomplete, Failed).
      status: (p) => `(status = ${p} OR end_status = ${p})`,
      statusPattern: '^[A-Za-z]+$',
      // Codes are stored without * and #; shown as dialled, as the API shows them.
      shape: (r) => ({ ...r, serviceCode: displayCode(String(r.serviceCode)) }),
      show: {
        notFound: 'USSD_SESSION_NOT_FOUND',
        async get(accountId, id) {
          const s = await modules.service<UssdService>('ussd').sessions.get(accountId, id);
          return s && { ...s, serviceCode: displayCode(s.serviceCode) };
        },
      },
    },
    {
      path: '/admin/shortlinks',
      module: 'shortlink',
      code: 'SHORTLINKS',
      table: 'shortlink_links',
      select: `id, account_id AS "accountId", slug, url, used_clicks AS "clicks", max_clicks AS "maxClicks", expires_at AS "expiresAt", created_at AS "createdAt"`,
      time: { column: 'created_at', kind: 'tz' },
      id: 'id',
      status: null,
      statusPattern: '',
      show: {
        notFound: 'SHORTLINK_NOT_FOUND',
        async get(accountId, id) {
          const svc = modules.service<ShortlinkService>('shortlink');
          const link = await svc.get(accountId, id);
          return link && { ...link, recentClicks: await svc.clicks(accountId, id, undefined, 20) };
        },
      },
    },
    {
      path: '/admin/webhooks',
      module: 'webhooks',
      code: 'WEBHOOKS',
      table: 'webhook_endpoints',
      select: `id, account_id AS "accountId", url, events, enabled, disabled_reason AS "disabledReason", created_at AS "createdAt"`,
      time: { column: 'created_at', kind: 'tz' },
      id: 'id',
      status: (p) => `(CASE WHEN enabled THEN 'enabled' ELSE 'disabled' END) = ${p}`,
      statusPattern: '^(?:enabled|disabled)$',
      show: {
        notFound: 'WEBHOOK_NOT_FOUND',
        async get(accountId, id) {
          const store = modules.service<WebhookService>('webhooks').store;
          const endpoint = await store.get(accountId, id);
          return endpoint && { ...endpoint, deliveries: await store.deliveries(id, { limit: 20 }) };
        },
      },
    },
    {
      path: '/admin/logs',
      module: 'logs',
      code: 'LOGS',
      table: 'request_logs',
      select: `request_id AS "id", account_id AS "accountId", status, method, path, error_code AS "errorCode", latency_ms AS "latencyMs", key_id AS "keyId", at AS "createdAt"`,
      time: { column: 'at', kind: 'ms' },
      id: 'request_id',
      // One status (404) or a class (4xx).
      status: (p) => `(status::text = ${p} OR (status / 100)::text || 'xx' = ${p})`,
      statusPattern: '^[1-5](?:[0-9]{2}|xx)$',
      show: {
        notFound: 'LOG_NOT_FOUND',
        get: (accountId, id) => modules.service<LogsService>('logs').get(accountId, id),
      },
    },
  ];
}

/** Times as ISO strings whatever the storage (epoch milliseconds come back as strings from pg's bigint). */
function iso(v: unknown, kind: 'ms' | 'tz'): unknown {
  if (v === null || v === undefined) return v;
  if (v instanceof Date) return v.toISOString();
  return kind === 'ms' ? new Date(Number(v)).toISOString() : v;
}

/** Read-only operator views across accounts (`ferry <product> list|show`) and the embedded mail simulator's mailbox. */
export function registerInspectRoutes(app: FastifyInstance, deps: InspectAdminDeps): void {
  registerSimMailRoutes(app, () => (deps.modules.has('email') ? deps.modules.service<EmailModuleService>('email').simulator : null));
  for (const l of listings(deps)) {
    // A product that does not run has no routes (NOT_FOUND), as on the API listener.
    if (l.module && !deps.modules.has(l.module)) continue;
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
    if (!show) continue;
    app.get<{ Params: { id: string } }>(`${l.path}/:id`, { schema: { params: idParam } }, async (req) => {
      // The product's services read one account's items: find the account first, then read as the account would.
      const found = await deps.db.query<{ account_id: string | null }>(`SELECT account_id FROM ${l.table} WHERE ${l.id} = $1 AND account_id IS NOT NULL LIMIT 1`, [req.params.id]);
      const accountId = found.rows[0]?.account_id;
      const item = accountId ? await show.get(accountId, req.params.id) : null;
      if (!item) throw new ApiError(show.notFound);
      return ok(req, l.code.replace(/S$/, ''), { accountId, ...(item as object) });
    });
  }
}
