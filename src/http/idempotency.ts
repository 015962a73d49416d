import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../store/types.js';
import { ApiError, invalidField } from './errors.js';

export interface IdempotencyOptions {
  /** How long a key is remembered (default 24 h). */
  ttlMs?: number;
  /**
   * A key still pending after this long (default 5 min) belongs to a request that died with its process; a retry
   * may then run again rather than being refused until the key expires.
   */
  pendingTimeoutMs?: number;
}

/** What `begin` found for a key. */
export type IdempotencyBegin =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'pending' };

/** Header the client sends; printable ASCII, 1–255 characters. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

/** JSON schema of the header, for the routes that honour it (documentation and validation). */
export const idempotencyHeaderSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x20-\\x7e]+$',
  description:
    'Optional. Retrying with the same key and body within 24 hours returns the first response (header Idempotent-Replayed: true) ' +
    'and sends nothing again; the same key with a different body is refused with IDEMPOTENCY_KEY_REUSED.',
} as const;

/**
 * Idempotency keys per account in SQL (same table on Postgres and PGlite). One upsert claims a key, so two
 * concurrent requests with the same key cannot both run: the loser sees it pending.
 */
export class IdempotencyStore {
  private readonly ttlMs: number;
  private readonly pendingTimeoutMs: number;

  constructor(
    private readonly db: Db,
    opts: IdempotencyOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? 24 * 3_600_000;
    this.pendingTimeoutMs = opts.pendingTimeoutMs ?? 5 * 60_000;
  }

  /** Claims the key for this request, or says why not (a stored response, another request, a different body). */
  async begin(accountId: string, key: string, requestHash: string): Promise<IdempotencyBegin> {
    // The row can vanish between the two statements (its request failed and released it): then claim again.
    for (let round = 0; ; round++) {
      const found = await this.tryBegin(accountId, key, requestHash);
      if (found || round >= 2) return found ?? { kind: 'pending' };
    }
  }

  private async tryBegin(accountId: string, key: string, requestHash: string): Promise<IdempotencyBegin | null> {
    // An expired row, or a pending one abandoned by a crashed process, is taken over in the same statement.
    const claimed = await this.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status) VALUES ($1, $2, $3, 'pending')
       ON CONFLICT (account_id, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, status = 'pending', response_status = NULL, response = NULL, created_at = now()
         WHERE idempotency_keys.created_at < now() - $4::double precision * interval '1 millisecond'
            OR (idempotency_keys.status = 'pending' AND idempotency_keys.created_at < now() - $5::double precision * interval '1 millisecond')
       RETURNING 1 AS claimed`,
      [accountId, key, requestHash, this.ttlMs, this.pendingTimeoutMs],
    );
    if (claimed.rows.length) return { kind: 'new' };
    const { rows } = await this.db.query<{ request_hash: string; status: string; response_status: number | null; response: unknown }>(
      `SELECT request_hash, status, response_status, response FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
      [accountId, key],
    );
    if (!rows.length) return null;
    const row = rows[0];
    if (row.request_hash !== requestHash) return { kind: 'mismatch' };
    if (row.status !== 'done') return { kind: 'pending' };
    const body = typeof row.response === 'string' ? (JSON.parse(row.response) as unknown) : row.response;
    return { kind: 'replay', status: row.response_status ?? 200, body };
  }

  /** Stores the response that retries will get. */
  async complete(accountId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET status = 'done', response_status = $3, response = $4::jsonb WHERE account_id = $1 AND key = $2`,
      [accountId, key, status, JSON.stringify(body)],
    );
  }

  /** Forgets a pending key whose request wrote nothing, so the client may retry with it. */
  async release(accountId: string, key: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND status = 'pending'`, [accountId, key]);
  }

  /** Deletes keys older than the retention; returns how many. */
  async purge(): Promise<number> {
    const r = await this.db.query(`DELETE FROM idempotency_keys WHERE created_at < now() - $1::double precision * interval '1 millisecond'`, [this.ttlMs]);
    return r.rowCount;
  }
}

/** JSON with object keys sorted at every level, so the same body always hashes the same. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(method).update('\n').update(path).update('\n').update(canonicalJson(body ?? null)).digest('hex');
}

/** The request's Idempotency-Key, null when absent; VALIDATION_ERROR when malformed. */
export function idempotencyKeyOf(req: FastifyRequest): string | null {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || !KEY_PATTERN.test(raw) || !raw.trim()) {
    throw invalidField(`headers.${IDEMPOTENCY_HEADER}`, 'must be 1–255 printable ASCII characters');
  }
  return raw;
}

/** Errors that certainly wrote nothing: refusals (4xx) and an unavailable backend. */
function wroteNothing(err: unknown): boolean {
  return err instanceof ApiError && (err.status < 500 || err.code === 'SERVICE_UNAVAILABLE');
}

/**
 * Runs a write at most once per Idempotency-Key: the first request runs and its response is kept; a retry with the
 * same body gets that response again (same status, header Idempotent-Replayed: true). Without the header, just runs.
 * `run` must throw only before it writes anything, or after with an error that is not a refusal.
 */
export async function idempotent<T>(
  req: FastifyRequest,
  reply: FastifyReply,
  store: IdempotencyStore,
  run: () => Promise<T>,
  status = 200,
): Promise<T | unknown> {
  const key = idempotencyKeyOf(req);
  if (key === null) return run();
  const accountId = req.auth.accountId;
  const hash = requestHash(req.method, req.routeOptions.url ?? req.url.split('?')[0], req.body);
  const found = await store.begin(accountId, key, hash);
  switch (found.kind) {
    case 'mismatch':
      throw new ApiError('IDEMPOTENCY_KEY_REUSED');
    case 'pending':
      throw new ApiError('IDEMPOTENCY_IN_PROGRESS', { data: { retryAfter: 1 }, headers: { 'retry-after': '1' } });
    case 'replay':
      reply.code(found.status).header('idempotent-replayed', 'true');
      return found.body;
  }
  let body: T;
  try {
    body = await run();
  } catch (err) {
    if (wroteNothing(err)) await store.release(accountId, key).catch(() => undefined);
    throw err;
  }
  // The write happened: answer it even if the response cannot be stored (a retry then waits out the pending key).
  await store.complete(accountId, key, status, body).catch((err: unknown) => {
    req.log.warn({ err: (err as Error).message }, 'idempotent response not stored');
  });
  reply.code(status);
  return body;
}
