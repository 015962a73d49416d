import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ok } from '../../http/envelope.js';
import { ApiError, rateLimited } from '../../http/errors.js';
import { LOG_PAGE_CSS, LOG_PAGE_HTML, LOG_PAGE_ICON, LOG_PAGE_JS } from './log-page-assets.js';
import type { LogSession, LogSessions } from './log-sessions.js';
import type { LogsService } from './logs-service.js';
import { logsQuerySchema, toFilter, type LogsQuery } from './logs-routes.js';

export const SESSION_COOKIE = 'ferry_logs_session';

/** How long after its time a row may still commit (a writer's linger plus its insert); the tail reads it again until then. */
const SETTLE_MS = 3000;
/** Rows a tail reads per poll. */
const TAIL_BATCH = 1000;
/** Open tails per instance (each polls the store twice a second); more are refused for a few seconds. */
const MAX_TAILS = 200;

export interface LogPageOptions {
  logs: LogsService;
  sessions: LogSessions;
  /** How often a live tail looks for new requests in the shared store (any instance's). */
  tailPollMs?: number;
  /** A tail stream ends after this; the browser reconnects and resumes after its last event (Last-Event-ID). */
  tailMaxMs?: number;
  /**
   * How often an open tail checks its session (and so its key and account) again in the shared store: a revoked key
   * ends the stream within this, on whichever instance holds it.
   */
  tailSessionCheckMs?: number;
}

const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

/** The session token from the Cookie header. */
function cookieToken(req: FastifyRequest): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

function sessionCookie(req: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = req.protocol === 'https' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${encodeURIComponent(value)}; Path=/logs; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/**
 * The /logs page: sign in with an API key (logs:read) through the API's own authentication into a session cookie
 * (HttpOnly, SameSite=Strict, the key never kept), browse and filter the account's request logs, open one request, and
 * follow new ones live (server-sent events). The tail polls the shared store, so a request any instance served shows
 * up on a tail held by any other. State-changing calls (sign out) need the session's CSRF token.
 */
export async function logPageRoutes(app: FastifyInstance, o: LogPageOptions): Promise<void> {
  const { logs, sessions } = o;
  const pollMs = o.tailPollMs ?? 500;
  const tailMaxMs = o.tailMaxMs ?? 5 * 60_000;
  const sessionCheckMs = o.tailSessionCheckMs ?? 2000;
  const tails = new Set<ServerResponse>();
  const page = { config: { auth: false }, schema: { hide: true } } as const;

  const session = async (req: FastifyRequest): Promise<{ token: string; session: LogSession }> => {
    const token = cookieToken(req);
    const s = token ? await sessions.find(token) : null;
    if (!token || !s) throw new ApiError('LOGS_SESSION_REQUIRED');
    return { token, session: s };
  };

  app.addHook('preClose', (done) => {
    for (const res of tails) res.end();
    tails.clear();
    done();
  });

  app.get('/logs', page, async (_req, reply) => reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(LOG_PAGE_HTML));
  app.get('/logs/assets/logs.js', page, async (_req, reply) =>
    reply.headers({ ...PAGE_HEADERS, 'cache-control': 'no-cache' }).type('text/javascript; charset=utf-8').send(LOG_PAGE_JS),
  );
  app.get('/logs/assets/favicon.svg', page, async (_req, reply) =>
    reply.headers({ ...PAGE_HEADERS, 'cache-control': 'max-age=86400' }).type('image/svg+xml').send(LOG_PAGE_ICON),
  );
  app.get('/logs/assets/logs.css', page, async (_req, reply) =>
    reply.headers({ ...PAGE_HEADERS, 'cache-control': 'no-cache' }).type('text/css; charset=utf-8').send(LOG_PAGE_CSS),
  );

  // Authenticated by the API's auth plugin (the Authorization header, once), like any /v1 call with logs:read.
  app.post('/logs/session', { config: { scope: 'logs:read' }, schema: { hide: true } }, async (req, reply) => {
    const { token, session: s } = await sessions.open(req.auth.accountId, req.auth.keyId);
    reply.header('set-cookie', sessionCookie(req, token, Math.floor((s.expiresAt - Date.now()) / 1000)));
    reply.header('cache-control', 'no-store');
    return ok(req, 'LOGS_SESSION_OPENED', { keyId: s.keyId, accountId: s.accountId, csrfToken: s.csrfToken, expiresAt: new Date(s.expiresAt).toISOString() });
  });

  // Whether the browser is signed in: "no" is an answer (200, LOGS_NO_SESSION), not an error, so that the page's first
  // look on a fresh visit logs no failed request in the browser's console.
  app.get('/logs/api/session', page, async (req, reply) => {
    reply.header('cache-control', 'no-store');
    const token = cookieToken(req);
    const s = token ? await sessions.find(token) : null;
    if (!s) return ok(req, 'LOGS_NO_SESSION', { signedIn: false });
    return ok(req, 'LOGS_SESSION', { signedIn: true, keyId: s.keyId, accountId: s.accountId, csrfToken: s.csrfToken, expiresAt: new Date(s.expiresAt).toISOString() });
  });

  app.post('/logs/session/end', page, async (req, reply) => {
    const { token } = await session(req);
    if (!sessions.csrfValid(token, req.headers['x-csrf-token'] as string | undefined)) throw new ApiError('CSRF_TOKEN_INVALID');
    await sessions.close(token);
    reply.header('set-cookie', sessionCookie(req, '', 0));
    return ok(req, 'LOGS_SESSION_ENDED', {});
  });

  app.get<{ Querystring: LogsQuery }>('/logs/api/requests', { ...page, schema: { hide: true, querystring: logsQuerySchema } }, async (req, reply) => {
    const { session: s } = await session(req);
    reply.header('cache-control', 'no-store');
    return ok(req, 'LOGS_FOUND', await logs.search(s.accountId, toFilter(req.query), Number(req.query.limit ?? 50)));
  });

  app.get<{ Params: { requestId: string } }>('/logs/api/requests/:requestId', page, async (req, reply) => {
    const { session: s } = await session(req);
    const row = await logs.get(s.accountId, req.params.requestId);
    if (!row) throw new ApiError('LOG_NOT_FOUND');
    reply.header('cache-control', 'no-store');
    return ok(req, 'LOG_FOUND', row);
  });

  app.get<{ Querystring: { after?: string } }>('/logs/api/tail', page, async (req, reply: FastifyReply) => {
    const { token, session: s } = await session(req);
    if (tails.size >= MAX_TAILS) throw rateLimited('RATE_LIMIT_EXCEEDED', 5000);
    const last = req.headers['last-event-id'];
    // The position below which every row is final. Rows are numbered when a writer inserts its batch, and two
    // instances' batches may commit out of that order, so the cursor moves only over rows older than SETTLE_MS; newer
    // ones are read again on each poll and sent once (`sent`).
    let cursor = typeof last === 'string' && /^[0-9]{1,19}$/.test(last) ? last : await logs.latest(s.accountId);
    const sent = new Set<string>();
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no', 'x-request-id': req.id });
    res.write('retry: 2000\n\n');
    tails.add(res);
    const started = Date.now();
    let checkedSession = started;
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      stopped = true;
      clearTimeout(timer);
      tails.delete(res);
      if (!res.writableEnded) res.end();
    };
    res.on('close', stop);
    const tick = async () => {
      if (stopped) return;
      try {
        if (Date.now() - checkedSession >= sessionCheckMs) {
          checkedSession = Date.now();
          if (!(await sessions.find(token))) {
            res.write('event: end\ndata: {"reason":"session ended"}\n\n');
            return stop();
          }
        }
        const rows = await logs.after(s.accountId, cursor, TAIL_BATCH);
        const settled = Date.now() - SETTLE_MS;
        let settledTo = cursor;
        for (const item of rows) {
          if (Date.parse(item.at) >= settled) break;
          settledTo = item.seq;
        }
        for (const item of rows) {
          if (sent.has(item.seq)) continue;
          sent.add(item.seq);
          res.write(`id: ${settledTo}\nevent: request\ndata: ${JSON.stringify(item)}\n\n`);
        }
        if (settledTo !== cursor) {
          cursor = settledTo;
          for (const seq of sent) if (BigInt(seq) <= BigInt(cursor)) sent.delete(seq);
        }
        if (Date.now() - started > tailMaxMs) return stop();
        res.write(': keep-alive\n\n');
      } catch (err) {
        req.log.warn({ err: (err as Error).message, reqId: req.id }, 'logs tail: a poll failed; retried');
      }
      if (!stopped) timer = setTimeout(() => void tick(), pollMs);
    };
    void tick();
  });
}
