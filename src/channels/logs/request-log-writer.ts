import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { storedRequestBody, storedResponseBody, type RedactSchema } from './redact.js';
import type { RequestLogInsert, RequestLogStore } from './request-log-store.js';

/** A request as observed, before its bodies are redacted (that happens at the flush, off the request path). */
interface PendingEntry extends Omit<RequestLogInsert, 'requestBody' | 'responseBody'> {
  body: unknown;
  /** The route's body schema, whose marks say what the stored body leaves out (null: none, an allow-list applies). */
  bodySchema: RedactSchema | null;
  payload: unknown;
  /** About what the entry holds in memory (its bodies), for the byte bound. */
  bytes: number;
}

export interface RequestLogWriterOptions {
  store: RequestLogStore;
  log: Logger;
  registry: Registry;
  bodyLimitBytes: number;
  /** Entries waiting at most; past it new ones are dropped and counted. */
  bufferSize: number;
  /** How long an entry waits for its batch at most. */
  flushMs: number;
  /** The bodies waiting may hold about this many bytes at most (default 64 MiB); past it entries are dropped. */
  bufferBytes?: number;
  /** Rows per INSERT. */
  batchSize?: number;
  now?: () => number;
}

const HEADER_LIMIT = 256;

function header(req: FastifyRequest, name: string): string | null {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s ? s.slice(0, HEADER_LIMIT) : null;
}

/** The product a /v1 path belongs to: its first segment (/v1/sms/send → sms). */
export function productOf(path: string): string {
  return path.split('/')[2] || 'v1';
}

/**
 * Records every answered /v1 request in batches: the response hook only queues (bounded; a full buffer drops the entry
 * and counts it rather than hold memory or the request), and a timer writes a batch at a time with one INSERT.
 */
export class RequestLogWriter {
  private buffer: PendingEntry[] = [];
  private bufferedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;
  private closed = false;
  private readonly written: Counter;
  private readonly dropped: Counter<'reason'>;
  private readonly batchSize: number;
  private readonly now: () => number;

  constructor(private readonly o: RequestLogWriterOptions) {
    this.batchSize = o.batchSize ?? 500;
    this.now = o.now ?? Date.now;
    this.written = new Counter({ name: 'ferry_request_logs_written_total', help: 'requests recorded in the request logs', registers: [o.registry] });
    this.dropped = new Counter({
      name: 'ferry_request_logs_dropped_total',
      help: 'requests not recorded: buffer_full (the writer fell behind), write_failed (the database refused a batch twice)',
      labelNames: ['reason'] as const,
      registers: [o.registry],
    });
  }

  /** The response observer (src/http/app.ts): queues a /v1 request, never waits. */
  readonly observe = (req: FastifyRequest, status: number, durationMs: number, route: string): void => {
    const path = req.url.split('?')[0];
    if (path !== '/v1' && !path.startsWith('/v1/')) return;
    if (this.closed) return;
    const payload = req.sentPayload;
    const payloadBytes = typeof payload === 'string' ? payload.length : Buffer.isBuffer(payload) ? payload.length : 0;
    const bytes = payloadBytes + (Number(req.headers['content-length']) || 0) + 512;
    if (this.buffer.length >= this.o.bufferSize || this.bufferedBytes + bytes > (this.o.bufferBytes ?? 64 * 1024 * 1024)) {
      this.dropped.inc({ reason: 'buffer_full' });
      return;
    }
    this.bufferedBytes += bytes;
    const auth = (req as { auth?: { keyId: string; accountId: string } | null }).auth ?? null;
    this.buffer.push({
      requestId: req.id,
      // When the request arrived (it is observed once answered).
      at: Math.round(this.now() - durationMs),
      method: req.method,
      route,
      path: path.slice(0, 1024),
      product: productOf(path).slice(0, 64),
      status,
      latencyMs: durationMs,
      keyId: auth?.keyId ?? null,
      accountId: auth?.accountId ?? null,
      clientIp: req.clientIp || null,
      userAgent: header(req, 'user-agent'),
      idempotencyKey: header(req, 'idempotency-key'),
      errorCode: req.errorCode ?? null,
      body: req.body,
      bodySchema: (req.routeOptions?.schema?.body as RedactSchema | undefined) ?? null,
      payload,
      bytes,
    });
    if (this.buffer.length >= this.batchSize) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.o.flushMs);
  };

  /** Entries waiting to be written. */
  get pending(): number {
    return this.buffer.length;
  }

  /** Writes what is queued, a batch at a time; resolves when the buffer (as of the call) is written. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.flushing) await this.flushing;
    if (!this.buffer.length) return;
    this.flushing = this.writeAll().finally(() => (this.flushing = null));
    await this.flushing;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private async writeAll(): Promise<void> {
    while (this.buffer.length) {
      const batch = this.buffer.splice(0, this.batchSize);
      for (const e of batch) this.bufferedBytes -= e.bytes;
      const rows: RequestLogInsert[] = batch.map(({ body, bodySchema, payload, bytes: _bytes, ...e }) => ({
        ...e,
        requestBody: storedRequestBody(body, this.o.bodyLimitBytes, bodySchema),
        responseBody: storedResponseBody(payload, this.o.bodyLimitBytes),
      }));
      try {
        await this.o.store.insert(rows);
      } catch (err) {
        // Once more, then given up: the request logs never hold back the API.
        try {
          await this.o.store.insert(rows);
        } catch {
          this.dropped.inc({ reason: 'write_failed' }, rows.length);
          this.o.log.warn({ err: (err as Error).message, rows: rows.length }, 'request logs: a batch could not be written and was dropped');
          continue;
        }
      }
      this.written.inc(rows.length);
    }
  }
}
