/**
 * A WHATWG `fetch` over GuardedHttp, for SDKs that take one (the openai SDK's `fetch` option): every request resolves
 * the name, checks each address against the SSRF policy and connects only to a checked one, so a name that points
 * inside the network by the time of the request (DNS rebinding, after the URL was checked before dialling) cannot lead
 * the SDK there. The answer's body streams as it arrives (server-sent events are read token by token), bounded in
 * time and size; no redirect is followed (a 3xx is the answer). A refusal or a broken connection rejects with a
 * TypeError, as fetch does, saying why: SDKs report it as a connection error.
 */
import { GuardedHttpError, type GuardedHttp, type GuardedHttpErrorKind, type GuardedStream } from './guarded-http.js';

export interface GuardedFetchOptions {
  /** The whole exchange, the answer's last byte included. Default 120 s: callers keep shorter deadlines of their own. */
  timeoutMs?: number;
  /** Establishing a new connection (TCP, and TLS for https). Default 10 s. */
  connectTimeoutMs?: number;
  /** Bytes of one answer's body read at most. Default 16 MiB. */
  maxBytes?: number;
}

/** fetch's "fetch failed", with the guarded client's reason in the message and its kind as `code`. */
export class GuardedFetchError extends TypeError {
  readonly code: GuardedHttpErrorKind;

  constructor(cause: GuardedHttpError) {
    super(`fetch failed: ${cause.message}`, { cause });
    this.code = cause.kind;
  }
}

/** Headers the client sets itself (from the body it sends and the connection it makes), never the caller's. */
const CLIENT_HEADERS = new Set(['content-length', 'host', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade']);
/** Statuses whose answer has no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** A `fetch` whose every request goes through `http` (its policy, its checked addresses, its agents). */
export function guardedFetch(http: GuardedHttp, o: GuardedFetchOptions = {}): typeof fetch {
  const timeoutMs = o.timeoutMs ?? 120_000;
  const connectTimeoutMs = o.connectTimeoutMs ?? 10_000;
  const maxBytes = o.maxBytes ?? 16 * 1024 * 1024;
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined) ?? undefined;
    signal?.throwIfAborted();
    // Request reads any body fetch takes (string, bytes, Blob, URLSearchParams, FormData as multipart, a stream) and
    // sets its content type; the bytes are sent with a Content-Length.
    const request = new Request(input, { ...init, signal: null });
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      if (!CLIENT_HEADERS.has(name)) headers[name] = value;
    });
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    let stream: GuardedStream;
    try {
      stream = await http.open(request.url, { method: request.method, headers, body, timeoutMs, connectTimeoutMs, maxBytes, ...(signal ? { signal } : {}) });
    } catch (err) {
      throw fetchFailure(err);
    }
    if (stream.status < 200 || stream.status > 599) {
      stream.close();
      throw new TypeError(`fetch failed: the server answered with status ${stream.status}`);
    }
    const answer = new Headers();
    for (const [name, value] of Object.entries(stream.headers)) {
      for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) answer.append(name, v);
    }
    const empty = request.method === 'HEAD' || NULL_BODY_STATUSES.has(stream.status);
    if (empty) stream.close();
    const response = new Response(empty ? null : bodyStream(stream), { status: stream.status, headers: answer });
    Object.defineProperty(response, 'url', { value: request.url });
    return response;
  };
}

/** The answer's body as it arrives: one read, one chunk off the socket (no buffering ahead of the reader). */
function bodyStream(stream: GuardedStream): ReadableStream<Uint8Array> {
  const chunks = stream.chunks();
  let cancelled = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (cancelled) return;
          if (next.done) controller.close();
          else controller.enqueue(new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.byteLength));
        } catch (err) {
          if (!cancelled) controller.error(fetchFailure(err));
        }
      },
      cancel() {
        cancelled = true;
        stream.close();
      },
    },
    { highWaterMark: 0 },
  );
}

/** The guarded client's refusals and failures as fetch's TypeError; an abort stays the signal's reason. */
function fetchFailure(err: unknown): unknown {
  return err instanceof GuardedHttpError ? new GuardedFetchError(err) : err;
}
