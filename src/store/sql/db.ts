import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import pg from 'pg';
import type { Db, QueryResult, Transaction } from '../types.js';
import { arrayLiteral } from './array-literal.js';
import { PgliteStatements } from './pglite-statements.js';
import { preparedName } from './prepared.js';
import { utcTimestampParser } from './timestamp-parser.js';

// int8 as a JS number in both drivers (PGlite already does this): counts and money in micro-units stay well under 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
// timestamptz: the common UTC form read by position, anything else by the driver's parser (see timestamp-parser.ts).
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, utcTimestampParser(pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ)));

export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Errors that mean "the database is not there" rather than "this statement is wrong". */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (e instanceof StorageUnavailableError) return true;
  const code = e.code ?? '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004'].includes(code)) return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(e.message ?? '');
}

/**
 * A Postgres data exception (SQLSTATE class 22: a value the statement cannot take, such as a NUL character 22021, an
 * untranslatable character 22P05, an invalid text representation 22P02). It is about the value, never the server being
 * down: callers that turn storage failures into "unavailable" must let it through.
 */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

// The driver's own conversion of a parameter to its wire form (what it applies when it sends a statement).
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue(value: unknown): unknown };

/** A statement's values converted as the driver would send them; throws where the driver would fail to. */
function sendable(cfg: pg.QueryConfig): pg.QueryConfig {
  if (!cfg.values?.length) return cfg;
  return { ...cfg, values: cfg.values.map((v) => prepareValue(v)) };
}

type CorkableStream = { cork?: () => void; uncork?: () => void };
/** Clients whose socket is held for the current turn of the event loop. */
const corkedThisTurn = new WeakSet<object>();

/**
 * Holds a client's writes until the current turn of the event loop ends, so the statements a pipelined transaction
 * issues in one turn (BEGIN and the first statements; later, the statements after an awaited answer and the COMMIT)
 * leave in one write. Idempotent within a turn.
 */
function corkForThisTurn(client: pg.PoolClient): void {
  if (corkedThisTurn.has(client)) return;
  const stream = (client as unknown as { connection?: { stream?: CorkableStream } }).connection?.stream;
  if (!stream?.cork || !stream.uncork) return;
  corkedThisTurn.add(client);
  stream.cork();
  process.nextTick(() => {
    corkedThisTurn.delete(client);
    stream.uncork!();
  });
}

/**
 * Settings of every session of the daemon, after any `options` the URL gives. JIT off: the server compiles a query
 * whose estimated cost passes jit_above_cost on every execution, and estimates grow with the tables, not with the
 * work: with 10 million events in the log, a cursor's batch (a few rows read through an index) was compiled each
 * time, about 80 ms of server CPU per batch, and Postgres CPU per message rose fivefold. Every query here is short.
 */
export function sessionOptions(url: string): string {
  let given = '';
  try {
    given = new URL(url).searchParams.get('options') ?? '';
  } catch {
    // Not a URL (a bare connection string): nothing given.
  }
  return `${given} -c jit=off`.trim();
}

class PgDb implements Db {
  readonly kind = 'postgres' as const;
  private readonly pool: pg.Pool;

  constructor(
    url: string,
    poolSize: number,
    private readonly prepare: boolean,
    private readonly pipeline: boolean,
  ) {
    // Pipelined: a statement is written as soon as it is issued, not after the answer to the one before. A checked-out
    // client still serves one caller, so this only changes what a transaction issues back to back (see tx).
    this.pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30000, pipeline, options: sessionOptions(url) });
    // A dropped idle connection must not crash the process; the pool replaces it.
    this.pool.on('error', () => {});
  }

  async query<T>(text: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
    const r = await this.pool.query(this.config(text, params));
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  }

  /** A registered hot-path statement (prepared.ts) runs named: parsed once per connection. */
  private config(text: string, params: readonly unknown[] | undefined): pg.QueryConfig {
    let values = params as unknown[] | undefined;
    if (values) {
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (!Array.isArray(v)) continue;
        const literal = arrayLiteral(v);
        if (literal === undefined) continue;
        if (values === params) values = values.slice();
        values[i] = literal;
      }
    }
    const name = this.prepare ? preparedName(text) : undefined;
    return name ? { name, text, values } : { text, values };
  }

  async tx<T>(fn: (q: Transaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const config = this.config.bind(this);
    let broken: unknown;
    // The pool listens for errors of idle clients only: a connection dropped while checked out (pg_terminate_backend,
    // a server restart) emits 'error' on the client, which would crash the process without a listener. The next
    // query fails with it anyway; the client is then discarded on release.
    const onError = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', onError);
    // commit: sent by commitNow, ahead of fn's return; refused: a statement failed before it was sent; failed: one
    // failed on the server (known in time only when not pipelined). A holder: closures assign it.
    const ending: { commit: Promise<pg.QueryResult> | null; refused: boolean; failed: boolean } = { commit: null, refused: false, failed: false };
    try {
      // Pipelined, what the transaction issues in one turn leaves in one write: the driver writes each statement on
      // its own, and each write to Postgres is a syscall that wakes its backend.
      if (this.pipeline) corkForThisTurn(client);
      // Pipelined, BEGIN goes out with the first statement (one round trip). On an idle pooled connection it fails
      // only with the connection itself, and every statement after it then fails too; it is awaited before COMMIT.
      const begun = client.query('BEGIN');
      begun.catch(() => {});
      if (!this.pipeline) await begun;
      // Not pipelined, statements issued back to back wait for the one before (the driver would queue them anyway,
      // with a deprecation warning).
      let last: Promise<unknown> = Promise.resolve();
      const pipeline = this.pipeline;
      const q: Transaction = {
        query<R>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
          if (ending.commit) return Promise.reject(new Error('statement issued after commitNow: the transaction is already committing'));
          let sent: Promise<pg.QueryResult>;
          try {
            // The values in the driver's wire form now: a value it cannot send fails here, before anything of this
            // statement goes out, and not in the driver after its COMMIT was queued behind it (see commitNow).
            const cfg = sendable(config(text, params));
            if (pipeline) corkForThisTurn(client);
            const send = () => client.query(cfg);
            sent = pipeline ? send() : last.then(send, send);
          } catch (err) {
            ending.refused = true;
            return Promise.reject(err);
          }
          last = sent.catch(() => {
            ending.failed = true;
          });
          return sent.then((r) => ({ rows: r.rows as R[], rowCount: r.rowCount ?? 0 }));
        },
        commitNow() {
          // After a refused statement the transaction must roll back: the COMMIT waits for fn's end, which throws.
          if (ending.commit || ending.refused) return;
          // Pipelined, a statement that fails on the server turns this COMMIT into a rollback; not pipelined, every
          // statement has answered before it is sent.
          const send = () => client.query(ending.failed ? 'ROLLBACK' : 'COMMIT');
          if (pipeline) corkForThisTurn(client);
          ending.commit = pipeline ? send() : last.then(send, send);
          ending.commit.catch(() => {});
        },
      };
      const out = await fn(q);
      await begun;
      // Postgres answers COMMIT of a failed transaction with ROLLBACK, not with an error.
      const done = await (ending.commit ?? client.query('COMMIT'));
      if (done.command !== 'COMMIT') throw new Error(`transaction not committed (the server answered ${done.command})`);
      return out;
    } catch (err) {
      if (ending.commit) {
        // That COMMIT ended the transaction either way (committed, or answered ROLLBACK after a failed statement);
        // a connection lost on the way discards the client.
        await ending.commit.catch((commitErr: unknown) => {
          broken ??= commitErr;
        });
      } else {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = rollbackErr;
        }
      }
      throw err;
    } finally {
      client.off('error', onError);
      client.release(broken as Error | undefined);
    }
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  private readonly statements: PgliteStatements | null;

  constructor(
    private readonly lite: import('@electric-sql/pglite').PGlite,
    mod: typeof import('@electric-sql/pglite'),
    prepare: boolean,
  ) {
    this.statements = prepare ? new PgliteStatements(lite, mod) : null;
  }

  async query<T>(text: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
    const name = this.statements ? preparedName(text) : undefined;
    const r = name ? await this.statements!.run<T>(name, text, params) : await this.lite.query<T>(text, params as unknown[] | undefined);
    return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
  }

  tx<T>(fn: (q: Transaction) => Promise<T>): Promise<T> {
    const statements = this.statements;
    // In process there is no round trip to save: the commit stays where it was, when fn returns. Statements after
    // commitNow are refused all the same, so a misuse fails here as it would on Postgres.
    let committing = false;
    return this.lite.transaction(async (t) =>
      fn({
        async query<R>(text: string, params?: readonly unknown[]) {
          if (committing) throw new Error('statement issued after commitNow: the transaction is already committing');
          const name = statements ? preparedName(text) : undefined;
          const r = name ? await statements!.runInTransaction<R>(name, text, params) : await t.query<R>(text, params as unknown[] | undefined);
          return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
        },
        commitNow() {
          committing = true;
        },
      }),
    );
  }

  async ping(): Promise<void> {
    if (this.lite.closed) throw new StorageUnavailableError('embedded database is closed');
    await this.lite.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (!this.lite.closed) await this.lite.close();
  }
}

export interface DbOptions {
  /** Postgres connection string; when absent, embedded PGlite in `dataDir/pg`. */
  url?: string | null;
  dataDir: string;
  poolSize?: number;
  /** Run the hot path's statements as named prepared statements, on Postgres and PGlite (default true); off behind a transaction pooler. */
  preparedStatements?: boolean;
  /** Send a transaction's statements back to back (default true); off behind a proxy that cannot take them. */
  pipeline?: boolean;
}

export async function openDb(opts: DbOptions): Promise<Db> {
  if (opts.url) {
    const db = new PgDb(opts.url, opts.poolSize ?? 10, opts.preparedStatements ?? true, opts.pipeline ?? true);
    try {
      await db.ping();
    } catch (err) {
      await db.close().catch(() => {});
      throw new StorageUnavailableError(`database unreachable at ${redactUrl(opts.url)}: ${(err as Error).message}`, { cause: err });
    }
    return db;
  }
  const mod = await import('@electric-sql/pglite');
  const dir = `${opts.dataDir}/pg`;
  mkdirSync(dir, { recursive: true });
  const lite = await mod.PGlite.create(dir);
  return new PgliteDb(lite, mod, opts.preparedStatements ?? true);
}

/** postgres://user:pass@host/db → postgres://user:***@host/db, for messages and logs. */
export function redactUrl(url: string): string {
  // A Redis Cluster's seed list: each seed on its own (`host:port` without a scheme carries no password).
  if (url.includes(',')) return url.split(',').map((seed) => (seed.includes('://') ? redactUrl(seed.trim()) : seed.includes('@') ? '(unparseable url)' : seed.trim())).join(',');
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable url)';
  }
}
