import type { Logger } from 'pino';
import type { Db, QueryResult, Transaction } from '../types.js';
import { isConnectionError, redactUrl } from './db.js';

/** How long reads stay on the primary after the replica failed before one of them tries it again. */
const RETRY_MS = 5000;

/**
 * The read URL with every session read-only (`default_transaction_read_only=on`, after any `options` it gives): a
 * replica refuses writes anyway, and a read URL that reaches a primary (a pooler in front of every node) must too.
 */
export function readOnlyUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`database.readUrl is not a URL (postgres://user@host:port/database): ${redactUrl(url)}`);
  }
  const given = u.searchParams.get('options') ?? '';
  u.searchParams.set('options', `${given} -c default_transaction_read_only=on`.trim());
  return u.toString();
}

/** A statement cancelled because the standby replayed over what it read: the primary answers it instead. */
function recoveryConflict(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '40001' && /conflict with recovery/i.test(e.message ?? '');
}

export interface ReadDbOptions {
  /** database.readUrl, as configured (for messages; `open` gets it read-only). */
  url: string;
  /** The daemon's database: it answers while the replica cannot, and stays open after close(). */
  primary: Db;
  /** Opens a pool on the (read-only) URL; throws when the server is unreachable. */
  open(url: string): Promise<Db>;
  log: Logger;
  /** The replica became reachable (true) or was lost (false); also once at start. */
  onChange?(up: boolean): void;
  now?: () => number;
}

/**
 * The replica-tolerant Db (database.readUrl): reads that may lag by the replica's delay go to a read-only pool on the
 * replica. While the replica cannot be reached they go to the primary instead, read-only there too, with one warn
 * line per loss and `onChange` (the gauge ferry_backend_up{backend="database-read"}): a lost replica never takes the
 * API down. A read after RETRY_MS (or a readiness probe) tries the replica again.
 */
export class ReadDb implements Db {
  readonly kind = 'postgres' as const;
  private replica: Db | null = null;
  private up = false;
  private retryAt = 0;
  private probing: Promise<boolean> | null = null;
  private closed = false;
  private readonly readOnlyUrl: string;

  /** Throws when the URL is not one. */
  constructor(private readonly o: ReadDbOptions) {
    this.readOnlyUrl = readOnlyUrl(o.url);
  }

  /** Whether reads go to the replica now. */
  get replicaUp(): boolean {
    return this.up;
  }

  /** Opens the replica's pool; an unreachable replica is reported, not fatal (reads go to the primary). */
  async start(): Promise<void> {
    const up = await this.probe();
    if (up) {
      this.o.log.info({ replica: redactUrl(this.o.url) }, 'lag-tolerant reads go to the read replica');
      return;
    }
    this.o.log.warn({ replica: redactUrl(this.o.url) }, 'read replica unreachable at start: lag-tolerant reads go to the primary until it answers');
    this.o.onChange?.(false);
  }

  /** Checks the replica (opening its pool when it has none); one check at a time. Resolves with whether it is up. */
  probe(): Promise<boolean> {
    this.probing ??= this.check().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }

  private async check(): Promise<boolean> {
    try {
      if (!this.replica) {
        const opened = await this.o.open(this.readOnlyUrl);
        // Closed while it was opening: nothing may hold the new pool.
        if (this.closed) {
          await opened.close().catch(() => {});
          return false;
        }
        this.replica = opened;
      } else {
        await this.replica.ping();
      }
      this.markUp();
      return true;
    } catch (err) {
      this.markDown(err);
      return false;
    }
  }

  private markUp(): void {
    if (this.up) return;
    const wasDown = this.retryAt > 0;
    this.up = true;
    this.retryAt = 0;
    if (wasDown) this.o.log.info({ replica: redactUrl(this.o.url) }, 'read replica reachable again: lag-tolerant reads go to it');
    this.o.onChange?.(true);
  }

  private markDown(err: unknown): void {
    this.retryAt = (this.o.now ?? Date.now)() + RETRY_MS;
    if (!this.up) return;
    this.up = false;
    this.o.log.warn({ replica: redactUrl(this.o.url), err: (err as Error).message }, 'read replica unreachable: lag-tolerant reads go to the primary');
    this.o.onChange?.(false);
  }

  /** The replica when it is up; else null, with a probe in the background once RETRY_MS passed. */
  private target(): Db | null {
    if (this.up && this.replica) return this.replica;
    if (!this.closed && (this.o.now ?? Date.now)() >= this.retryAt) void this.probe();
    return null;
  }

  async query<T>(text: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
    const replica = this.target();
    if (replica) {
      try {
        return await replica.query<T>(text, params);
      } catch (err) {
        if (!isConnectionError(err) && !recoveryConflict(err)) throw err;
        if (isConnectionError(err)) this.markDown(err);
      }
    }
    return this.o.primary.tx(async (q) => {
      const [readOnly, r] = await Promise.allSettled([q.query('SET TRANSACTION READ ONLY'), q.query<T>(text, params)]);
      if (readOnly.status === 'rejected') throw readOnly.reason;
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    });
  }

  /** A read-only transaction (a consistent snapshot of several reads): on the replica, else on the primary. */
  async tx<T>(fn: (q: Transaction) => Promise<T>): Promise<T> {
    const replica = this.target();
    if (replica) {
      try {
        return await replica.tx(fn);
      } catch (err) {
        // fn only reads (the session is read-only), so running it again on the primary repeats nothing.
        if (!isConnectionError(err) && !recoveryConflict(err)) throw err;
        if (isConnectionError(err)) this.markDown(err);
      }
    }
    return this.o.primary.tx(async (q) => {
      await q.query('SET TRANSACTION READ ONLY');
      return fn(q);
    });
  }

  /** The replica itself (readiness reports it); reads do not need it. */
  async ping(): Promise<void> {
    if (!(await this.probe())) throw new Error('read replica unreachable');
  }

  /** Closes the replica's pool only: the primary belongs to the daemon. */
  async close(): Promise<void> {
    this.closed = true;
    await this.probing?.catch(() => false);
    const replica = this.replica;
    this.replica = null;
    this.up = false;
    await replica?.close();
  }
}
