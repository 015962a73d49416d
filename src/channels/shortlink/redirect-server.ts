import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { verifyPassword } from '../../security/secrets.js';
import type { RateWindows } from '../../store/types.js';
import { describeClient, type ClientAddress } from './click-info.js';
import type { ClickLimiter } from './click-limiter.js';
import type { ClickRecorder } from './click-recorder.js';
import { isGuarded, withUtm, type Link } from './link.js';
import type { LinkCache } from './link-cache.js';
import { messagePage, passwordPage } from './pages.js';

export interface RedirectDeps {
  cache: LinkCache;
  limiter: ClickLimiter;
  recorder: ClickRecorder;
  addresses: ClientAddress;
  rateWindows: RateWindows;
  /** Signs the password cookies and CSRF tokens. */
  cookieKey: Buffer;
  passwordAttemptsPerMinute: number;
  /** Cookies get Secure when the public address is https. */
  secureCookies: boolean;
  clock: () => number;
}

const NO_STORE = 'no-store';
const GUARDED_CACHE = 'private, max-age=0';
const PASSWORD_COOKIE_SECONDS = 24 * 3600;
const SLUG_PARAM = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

function sign(key: Buffer, ...parts: string[]): string {
  return createHmac('sha256', key).update(parts.join('\u0000')).digest('base64url');
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The public redirect listener: GET and HEAD /{slug} answer 302 (never 301: a browser would cache a permanent
 * redirect and skip Ferry, breaking limits, expiry, passwords and counting), from the in-process link cache; the
 * click is handed to the recorder, never awaited. POST /{slug} takes the password form.
 */
export async function buildRedirectServer(d: RedirectDeps): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, trustProxy: false, return503OnClosing: true, exposeHeadRoutes: true });
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: 4096 });

  const pwCookie = (slug: string) => `slpw_${slug}`;
  const csrfCookie = 'slcsrf';
  const pwValue = (link: Link, exp: number) => `${exp}.${sign(d.cookieKey, 'pw', link.id, link.slug, link.passwordHash ?? '', String(exp))}`;
  const hasPasswordCookie = (req: FastifyRequest, link: Link) => {
    const v = req.cookies[pwCookie(link.slug)];
    if (!v) return false;
    const exp = Number(v.split('.')[0]);
    return Number.isFinite(exp) && exp * 1000 > d.clock() && same(v, pwValue(link, exp));
  };
  const csrfFor = (slug: string, token: string) => sign(d.cookieKey, 'csrf', slug, token);

  function showPasswordPage(req: FastifyRequest, reply: FastifyReply, link: Link, status: number, error: string | null) {
    let token = req.cookies[csrfCookie];
    if (!token || !/^[A-Za-z0-9_-]{22,64}$/.test(token)) {
      token = randomBytes(18).toString('base64url');
      reply.setCookie(csrfCookie, token, { path: `/${link.slug}`, httpOnly: true, sameSite: 'strict', secure: d.secureCookies });
    }
    return reply
      .code(status)
      .header('cache-control', NO_STORE)
      .header('x-frame-options', 'DENY')
      // No form-action: Chrome applies it to the redirects after the POST too, and the destination is another origin.
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'")
      .type('text/html; charset=utf-8')
      .send(passwordPage({ slug: link.slug, title: link.title, csrf: csrfFor(link.slug, token), error }));
  }

  function notFound(reply: FastifyReply) {
    return reply.code(404).header('cache-control', NO_STORE).type('text/html; charset=utf-8').send(messagePage('Link not found', 'There is no link at this address.'));
  }

  function clientOf(req: FastifyRequest) {
    const ip = d.addresses.of(req.socket.remoteAddress, req.headers['x-forwarded-for']);
    return describeClient(ip, req.headers['user-agent'], req.headers.referer);
  }

  async function lookup(slug: string): Promise<Link | null> {
    if (!SLUG_PARAM.test(slug)) return null;
    const hit = d.cache.get(slug);
    return hit instanceof Promise ? await hit : hit;
  }

  app.get<{ Params: { slug: string } }>('/:slug', async (req, reply) => {
    const link = await lookup(req.params.slug);
    if (!link) return notFound(reply);
    const head = req.method === 'HEAD';
    const now = d.clock();
    const client = clientOf(req);
    const record = (outcome: 'redirected' | 'expired', used: number | null) =>
      d.recorder.record({ linkId: link.id, accountId: link.accountId, slug: link.slug, at: now, method: head ? 'HEAD' : 'GET', outcome, used, ...client });

    const expired = () => {
      record('expired', null);
      if (link.expiredUrl) return reply.code(302).header('cache-control', GUARDED_CACHE).header('location', link.expiredUrl).send();
      return reply.code(410).header('cache-control', GUARDED_CACHE).type('text/html; charset=utf-8').send(messagePage('Link expired', 'This link is no longer active.'));
    };
    if (link.expiresAt && link.expiresAt.getTime() <= now) return expired();
    if (link.passwordHash && !hasPasswordCookie(req, link)) return showPasswordPage(req, reply, link, 401, null);
    let used: number | null = null;
    if (link.maxClicks !== null) {
      if (head) {
        if (!(await d.limiter.peek(link))) return expired();
      } else {
        used = await d.limiter.take(link);
        if (used === null) return expired();
      }
    }
    const target = (client.platform === 'ios' && link.ios) || (client.platform === 'android' && link.android) || link.url;
    record('redirected', used);
    if (isGuarded(link)) reply.header('cache-control', GUARDED_CACHE);
    return reply.code(302).header('location', withUtm(target, link.utm)).send();
  });

  app.post<{ Params: { slug: string }; Body: { password?: string; csrf?: string } }>('/:slug', async (req, reply) => {
    const link = await lookup(req.params.slug);
    if (!link) return notFound(reply);
    if (!link.passwordHash) return reply.code(303).header('location', `/${link.slug}`).send();
    const body = (req.body ?? {}) as { password?: unknown; csrf?: unknown };
    const token = req.cookies[csrfCookie];
    if (!token || typeof body.csrf !== 'string' || !same(body.csrf, csrfFor(link.slug, token))) {
      return showPasswordPage(req, reply, link, 403, 'The form expired; please enter the password again.');
    }
    const ip = d.addresses.of(req.socket.remoteAddress, req.headers['x-forwarded-for']) ?? 'unknown';
    const allowed = await d.rateWindows.take(`shortlink-pw:{${link.slug}}:${ip}`, { minute: d.passwordAttemptsPerMinute });
    if (!allowed.allowed) {
      reply.header('retry-after', String(Math.max(1, Math.ceil(allowed.retryAfterMs / 1000))));
      return showPasswordPage(req, reply, link, 429, 'Too many attempts; wait a minute and try again.');
    }
    const password = typeof body.password === 'string' ? body.password.slice(0, 1024) : '';
    if (!(await verifyPassword(password, link.passwordHash))) return showPasswordPage(req, reply, link, 401, 'Wrong password.');
    const exp = Math.floor(d.clock() / 1000) + PASSWORD_COOKIE_SECONDS;
    reply.setCookie(pwCookie(link.slug), pwValue(link, exp), { path: `/${link.slug}`, httpOnly: true, sameSite: 'lax', secure: d.secureCookies, maxAge: PASSWORD_COOKIE_SECONDS });
    return reply.code(303).header('cache-control', NO_STORE).header('location', `/${link.slug}`).send();
  });

  app.setNotFoundHandler((_req, reply) => notFound(reply));
  app.setErrorHandler((err: { statusCode?: number }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 503;
    return reply.code(status).header('cache-control', NO_STORE).type('text/html; charset=utf-8').send(messagePage('Unavailable', 'This link cannot be opened right now; try again shortly.'));
  });
  return app;
}
