import { prepared } from '../../store/sql/prepared.js';
import type { Db, Queryable } from '../../store/types.js';
import { idTime } from '../../util/ids.js';

/** One request as the logs keep it. */
export interface RequestLogRow {
  /** The position in the log (a cursor for paging and the live tail). */
  seq: string;
  requestId: string;
  at: string;
  method: string;
  route: string;
  path: string;
  product: string;
  status: number;
  latencyMs: number;
  keyId: string | null;
  clientIp: string | null;
  userAgent: string | null;
  idempotencyKey: string | null;
  errorCode: string | null;
}

export interface RequestLogDetail extends RequestLogRow {
  requestBody: string | null;
  responseBody: string | null;
}

/** What a writer hands over: one request, its bodies already redacted and truncated. */
export interface RequestLogInsert {
  requestId: string;
  at: number;
  method: string;
  route: string;
  path: string;
  product: string;
  status: number;
  latencyMs: number;
  keyId: string | null;
  accountId: string | null;
  clientIp: string | null;
  userAgent: string | null;
  idempotencyKey: string | null;
  errorCode: string | null;
  requestBody: string | null;
  responseBody: string | null;
}

export interface LogFilter {
  /** A class (2xx, 4xx) or one status (404). */
  status?: string;
  method?: string;
  /** A path prefix (/v1/sms matches /v1/sms/send). */
  path?: string;
  keyId?: string;
  requestId?: string;
  from?: number;
  to?: number;
  /** Rows older than this position (paging, newest first). */
  before?: string;
}

interface DbRow {
  id: string;
  request_id: string;
  at: string;
  method: string;
  route: string;
  path: string;
  product: string;
  status: number;
  latency_ms: number;
  key_id: string | null;
  client_ip: string | null;
  user_agent: string | null;
  idempotency_key: string | null;
  error_code: string | null;
  request_body?: string | null;
  response_body?: string | null;
}

const COLUMNS = 'id, request_id, at, method, route, path, product, status, latency_ms, key_id, client_ip, user_agent, idempotency_key, error_code';
const INSERT_COLUMNS = [
  'request_id',
  'at',
  'method',
  'route',
  'path',
  'product',
  'status',
  'latency_ms',
  'key_id',
  'account_id',
  'client_ip',
  'user_agent',
  'idempotency_key',
  'error_code',
  'request_body',
  'response_body',
] as const;

const INSERT_TYPES = ['text', 'int8', 'text', 'text', 'text', 'text', 'int2', 'float4', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'text'];
// created_at, the partition key, is the request's time: a row lands in the partition of its day, and retention drops it
// with the requests of that day.
const INSERT_SQL = prepared(
  `INSERT INTO request_logs (${INSERT_COLUMNS.join(', ')}, created_at)
   SELECT u.*, to_timestamp(u.at / 1000.0) FROM unnest(${INSERT_TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) AS u(${INSERT_COLUMNS.join(', ')})`,
);

/** How far a row's `at` (the request's start) may precede the time in its id. */
const ID_SLACK_MS = 3_600_000;

/** The time a request id carries (epoch ms), or null for an id not made by newId('req_'). */
export function requestIdTime(requestId: string): number | null {
  return idTime('req_', requestId);
}

/**
 * A lower bound on created_at for rows at or after `ms` (epoch ms), so a read prunes the partitions before it: a row's
 * created_at is its `at` (the writer sets it so), or later for rows from before the table was partitioned (they took
 * the migration's time) or written by an older daemon (now() when inserted).
 */
function createdSince(ms: number): string {
  return new Date(Math.max(0, ms)).toISOString();
}

function toRow(r: DbRow): RequestLogRow {
  return {
    seq: String(r.id),
    requestId: r.request_id,
    at: new Date(Number(r.at)).toISOString(),
    method: r.method,
    route: r.route,
    path: r.path,
    product: r.product,
    status: Number(r.status),
    latencyMs: Math.round(Number(r.latency_ms) * 10) / 10,
    keyId: r.key_id,
    clientIp: r.client_ip,
    userAgent: r.user_agent,
    idempotencyKey: r.idempotency_key,
    errorCode: r.error_code,
  };
}

/** A status filter as a range: "4xx" → 400–499, "404" → 404–404; null when it is neither. */
export function statusRange(status: string): [number, number] | null {
  const cls = /^([1-5])xx$/i.exec(status);
  if (cls) return [Number(cls[1]) * 100, Number(cls[1]) * 100 + 99];
  if (/^[1-5][0-9]{2}$/.test(status)) return [Number(status), Number(status)];
  return null;
}

/** Per key: requests and errors by day and by product, the last use, and rate-limit refusals. */
export interface KeyUsage {
  keyId: string;
  requests: number;
  errors: number;
  rateLimited: number;
  lastUsedAt: string | null;
  lastUsedFrom: string | null;
  byDay: Array<{ day: string; requests: number; errors: number; rateLimited: number }>;
  byProduct: Array<{ product: string; requests: number; errors: number; rateLimited: number }>;
}

/** The codes that count as a rate-limit refusal in the key statistics. */
export const RATE_LIMIT_CODES = ['RATE_LIMIT_EXCEEDED', 'RESEND_COOLDOWN', 'TOO_MANY_AUTH_FAILURES'];

/**
 * SQL over request_logs: the batch insert, an account's search, one request, key statistics (retention drops whole
 * partitions: logs-service.ts). Searches and statistics read `readDb` (the read replica when database.readUrl is set):
 * rows are written in batches, so they already trail the requests by up to logs.flushMs, and may trail them by the
 * replica's lag besides.
 */
export class RequestLogStore {
  constructor(
    private readonly db: Db,
    private readonly readDb: Db = db,
  ) {}

  /** One statement per batch whatever its size: one array per column, so the text (and its plan) never changes. */
  async insert(rows: readonly RequestLogInsert[], q: Queryable = this.db): Promise<void> {
    if (!rows.length) return;
    const cols = INSERT_COLUMNS.map(() => [] as unknown[]);
    for (const r of rows) {
      const values = [r.requestId, r.at, r.method, r.route, r.path, r.product, r.status, r.latencyMs, r.keyId, r.accountId, r.clientIp, r.userAgent, r.idempotencyKey, r.errorCode, r.requestBody, r.responseBody];
      for (let i = 0; i < values.length; i++) cols[i].push(values[i]);
    }
    await q.query(INSERT_SQL, cols);
  }

  /** An account's requests, newest first; `limit + 1` are read to tell whether more follow. */
  async search(accountId: string, f: LogFilter, limit: number): Promise<{ rows: RequestLogRow[]; more: boolean }> {
    const where = ['account_id = $1'];
    const params: unknown[] = [accountId];
    const add = (sql: string, v: unknown) => {
      params.push(v);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (f.status) {
      const range = statusRange(f.status);
      if (range) {
        add('status >= ?', range[0]);
        add('status <= ?', range[1]);
      }
    }
    if (f.method) add('method = ?', f.method.toUpperCase());
    if (f.path) add("path LIKE ? ESCAPE '\\'", `${f.path.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    if (f.keyId) add('key_id = ?', f.keyId);
    if (f.requestId) add('request_id = ?', f.requestId);
    if (f.from !== undefined) {
      add('at >= ?', f.from);
      add('created_at >= ?::timestamptz', createdSince(f.from));
    }
    if (f.to !== undefined) add('at <= ?', f.to);
    if (f.before) add('id < ?', f.before);
    params.push(limit + 1);
    const { rows } = await this.readDb.query<DbRow>(
      `SELECT ${COLUMNS} FROM request_logs WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
      params,
    );
    return { rows: rows.slice(0, limit).map(toRow), more: rows.length > limit };
  }

  /** An account's rows after a position, oldest first (the live tail). */
  async after(accountId: string, seq: string, limit: number): Promise<RequestLogRow[]> {
    const { rows } = await this.readDb.query<DbRow>(
      `SELECT ${COLUMNS} FROM request_logs WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
      [accountId, seq, limit],
    );
    return rows.map(toRow);
  }

  /** The newest position of an account's rows ('0' when none). */
  async latest(accountId: string): Promise<string> {
    const { rows } = await this.readDb.query<{ id: string | null }>(`SELECT max(id) AS id FROM request_logs WHERE account_id = $1`, [accountId]);
    return rows[0]?.id ? String(rows[0].id) : '0';
  }

  /**
   * One request of an account, with its bodies; null when unknown or another account's. A request id carries its time:
   * the read then skips every partition older than it (an hour's slack), so a recent request costs one or two
   * partitions' index probes, an old one those from its day on.
   */
  async get(accountId: string, requestId: string): Promise<RequestLogDetail | null> {
    const made = requestIdTime(requestId);
    const since = made === null ? '' : ' AND created_at >= $3::timestamptz';
    const { rows } = await this.readDb.query<DbRow>(
      `SELECT ${COLUMNS}, request_body, response_body FROM request_logs WHERE request_id = $1 AND account_id = $2${since} ORDER BY id DESC LIMIT 1`,
      made === null ? [requestId, accountId] : [requestId, accountId, createdSince(made - ID_SLACK_MS)],
    );
    if (!rows.length) return null;
    return { ...toRow(rows[0]), requestBody: rows[0].request_body ?? null, responseBody: rows[0].response_body ?? null };
  }

  /** Usage of an account's keys since `since` (epoch ms), from the request logs. */
  async keyUsage(accountId: string, since: number): Promise<KeyUsage[]> {
    const limited = `(error_code = ANY($3::text[]))`;
    const [byDay, byProduct, last] = await Promise.all([
      this.readDb.query<{ key_id: string; day: string; requests: string; errors: string; limited: string }>(
        `SELECT key_id, (at / 86400000)::int8 AS day, count(*)::int8 AS requests, count(*) FILTER (WHERE status >= 400)::int8 AS errors,
                count(*) FILTER (WHERE ${limited})::int8 AS limited
         FROM request_logs WHERE account_id = $1 AND at >= $2 AND created_at >= $4::timestamptz AND key_id IS NOT NULL GROUP BY key_id, day ORDER BY key_id, day`,
        [accountId, since, RATE_LIMIT_CODES, createdSince(since)],
      ),
      this.readDb.query<{ key_id: string; product: string; requests: string; errors: string; limited: string }>(
        `SELECT key_id, product, count(*)::int8 AS requests, count(*) FILTER (WHERE status >= 400)::int8 AS errors,
                count(*) FILTER (WHERE ${limited})::int8 AS limited
         FROM request_logs WHERE account_id = $1 AND at >= $2 AND created_at >= $4::timestamptz AND key_id IS NOT NULL GROUP BY key_id, product ORDER BY key_id, product`,
        [accountId, since, RATE_LIMIT_CODES, createdSince(since)],
      ),
      // The last use of each of the account's keys: one index probe per key (request_logs_key), not a scan.
      this.readDb.query<{ key_id: string; at: string; client_ip: string | null }>(
        `SELECT k.id AS key_id, l.at, l.client_ip FROM api_keys k
         CROSS JOIN LATERAL (SELECT at, client_ip FROM request_logs r WHERE r.key_id = k.id ORDER BY at DESC LIMIT 1) l
         WHERE k.account_id = $1`,
        [accountId],
      ),
    ]);
    const out = new Map<string, KeyUsage>();
    const usage = (keyId: string): KeyUsage => {
      let u = out.get(keyId);
      if (!u) out.set(keyId, (u = { keyId, requests: 0, errors: 0, rateLimited: 0, lastUsedAt: null, lastUsedFrom: null, byDay: [], byProduct: [] }));
      return u;
    };
    for (const r of byDay.rows) {
      const u = usage(r.key_id);
      const counts = { requests: Number(r.requests), errors: Number(r.errors), rateLimited: Number(r.limited) };
      u.byDay.push({ day: new Date(Number(r.day) * 86_400_000).toISOString().slice(0, 10), ...counts });
      u.requests += counts.requests;
      u.errors += counts.errors;
      u.rateLimited += counts.rateLimited;
    }
    for (const r of byProduct.rows) usage(r.key_id).byProduct.push({ product: r.product, requests: Number(r.requests), errors: Number(r.errors), rateLimited: Number(r.limited) });
    for (const r of last.rows) {
      const u = usage(r.key_id);
      u.lastUsedAt = new Date(Number(r.at)).toISOString();
      u.lastUsedFrom = r.client_ip;
    }
    return [...out.values()];
  }
}
