import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { verifyPassword } from '../../security/secrets.js';
import type { RateWindows } from '../../store/types.js';
import { describeAgent, type ClientAddress } from './click-info.js';
import type { ClickLimiter } from './click-limiter.js';
import type { ClickRecorder } from './click-recorder.js';
import { isGuarded, withUtm, type Link } from './link.js';
import type { LinkCache } from './link-cache.js';
import { messagePage, passwordPage } from './pages.js';
import type { PasswordChecks } from './password-checks.js';

export interface RedirectDeps {
  cache: LinkCache;
  limiter: ClickLimiter;
  recorder: ClickRecorder;
  addresses: ClientAddress;
  rateWindows: RateWindows;
  /** Signs the password cookies and CSRF tokens. */
  cookieKey: Buffer;
  passwordAttemptsPerMinute: number;
  /** Password tries per slug per minute, all addresses together (a guesser with many addresses). */
  passwordAttemptsPerLinkPerMinute: number;
  /** Bounds the scrypt checks (the shared threadpool); a full queue answers 429. */
  passwordChecks: PasswordChecks;
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

/** The request's cookies; parsed only on the password paths, not on every redirect (a plugin hook would). */
function cookiesOf(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  const header = req.headers.cookie;
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!(name in out)) out[name] = value;
  }
  return out;
}

/** A Set-Cookie value scoped to one slug's path; values here are base64url and digits, nothing to encode. */
function cookieHeader(name: string, value: string, o: { path: string; sameSite: 'Strict' | 'Lax'; secure: boolean; maxAge?: number }): string {
  return `${name}=${value}; Path=${o.path}; HttpOnly; SameSite=${o.sameSite}${o.maxAge !== undefined ? `; Max-Age=${o.maxAge}` : ''}${o.secure ? '; Secure' : ''}`;
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
  await app.register(formbody, { bodyLimit: 4096 });

  const pwCookie = (slug: string) => `slpw_${slug}`;
  const csrfCookie = 'slcsrf';
  const pwValue = (link: Link, exp: number) => `${exp}.${sign(d.cookieKey, 'pw', link.id, link.slug, link.passwordHash ?? '', String(exp))}`;
  const hasPasswordCookie = (req: FastifyRequest, link: Link) => {
    const v = cookiesOf(req)[pwCookie(link.slug)];
    if (!v) return false;
    const exp = Number(v.split('.')[0]);
    return Number.isFinite(exp) && exp * 1000 > d.clock() && same(v, pwValue(link, exp));
  };
  const csrfFor = (slug: string, token: string) => sign(d.cookieKey, 'csrf', slug, token);

  function showPasswordPage(req: FastifyRequest, reply: FastifyReply, link: Link, status: number, error: string | null) {
    let token = cookiesOf(req)[csrfCookie];
    if (!token || !/^[A-Za-z0-9_-]{22,64}$/.test(token)) {
      token = randomBytes(18).toString('base64url');
      reply.header('set-cookie', cookieHeader(csrfCookie, token, { path: `/${link.slug}`, sameSite: 'Strict', secure: d.secureCookies }));
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

  // The destination with its UTM fields, per link object (a changed link is a new object) and target.
  const destinations = new WeakMap<Link, Map<string, string>>();
  function destination(link: Link, target: string): string {
    let m = destinations.get(link);
    if (!m) destinations.set(link, (m = new Map()));
    let u = m.get(target);
    if (u === undefined) m.set(target, (u = withUtm(target, link.utm)));
    return u;
  }

  async function lookup(slug: string): Promise<Link | null> {
    if (!SLUG_PARAM.test(slug)) return null;
    const hit = d.cache.get(slug);
    return hit instanceof Promise ? await hit : hit;
  }

  /**
   * Answers a visit. Synchronous for a cached link without a click limit (the common case: no promise, no
   * microtask); a promise only when the limiter must be asked.
   */
  function serve(req: FastifyRequest, reply: FastifyReply, link: Link | null): void | Promise<void> {
    if (!link) return void notFound(reply);
    const head = req.method === 'HEAD';
    const now = d.clock();
    // Only the facts are taken here; user agent, country and referrer are analysed when the batch is written.
    const ip = d.addresses.of(req.socket.remoteAddress, req.headers['x-forwarded-for']);
    const userAgent = req.headers['user-agent'];
    const record = (outcome: 'redirected' | 'expired', used: number | null) =>
      d.recorder.record({ linkId: link.id, accountId: link.accountId, slug: link.slug, at: now, method: head ? 'HEAD' : 'GET', outcome, used, ip, userAgent, referer: req.headers.referer });

    const expired = () => {
      record('expired', null);
      if (link.expiredUrl) return void reply.code(302).header('cache-control', GUARDED_CACHE).header('location', link.expiredUrl).send();
      reply.code(410).header('cache-control', GUARDED_CACHE).type('text/html; charset=utf-8').send(messagePage('Link expired', 'This link is no longer active.'));
    };
    const redirect = (used: number | null) => {
      const platform = link.ios || link.android ? describeAgent(userAgent).platform : null;
      const target = (platform === 'ios' && link.ios) || (platform === 'android' && link.android) || link.url;
      record('redirected', used);
      if (isGuarded(link)) reply.header('cache-control', GUARDED_CACHE);
      reply.code(302).header('location', destination(link, target)).send();
    };
    if (link.expiresAt && link.expiresAt.getTime() <= now) return expired();
    if (link.passwordHash && !hasPasswordCookie(req, link)) return void showPasswordPage(req, reply, link, 401, null);
    if (link.maxClicks === null) return redirect(null);
    if (head) return d.limiter.peek(link).then((left) => (left ? redirect(null) : expired()));
    return d.limiter.take(link).then((used) => (used === null ? expired() : redirect(used)));
  }

  app.get<{ Params: { slug: string } }>('/:slug', (req, reply) => {
    const slug = req.params.slug;
    const hit = SLUG_PARAM.test(slug) ? d.cache.get(slug) : null;
    const done = hit instanceof Promise ? hit.then((link) => serve(req, reply, link)) : serve(req, reply, hit);
    // An async answer resolves to the reply (already sent); a synchronous one returns nothing, as Fastify expects.
    return done ? done.then(() => reply) : undefined;
  });

  app.post<{ Params: { slug: string }; Body: { password?: string; csrf?: string } }>('/:slug', async (req, reply) => {
    const link = await lookup(req.params.slug);
    if (!link) return notFound(reply);
    if (!link.passwordHash) return reply.code(303).header('location', `/${link.slug}`).send();
    const body = (req.body ?? {}) as { password?: unknown; csrf?: unknown };
    const token = cookiesOf(req)[csrfCookie];
    if (!token || typeof body.csrf !== 'string' || !same(body.csrf, csrfFor(link.slug, token))) {
      return showPasswordPage(req, reply, link, 403, 'The form expired; please enter the password again.');
    }
    const ip = d.addresses.of(req.socket.remoteAddress, req.headers['x-forwarded-for']) ?? 'unknown';
    // The address's budget and the link's (every address together), both or neither taken.
    const allowed = await d.rateWindows.takeAll([
      { key: `shortlink-pw:{${link.slug}}:${ip}`, limits: { minute: d.passwordAttemptsPerMinute } },
      { key: `shortlink-pw:{${link.slug}}`, limits: { minute: d.passwordAttemptsPerLinkPerMinute } },
    ]);
    if (!allowed.allowed) {
      reply.header('retry-after', String(Math.max(1, Math.ceil(allowed.retryAfterMs / 1000))));
      return showPasswordPage(req, reply, link, 429, 'Too many attempts; wait a minute and try again.');
    }
    const password = typeof body.password === 'string' ? body.password.slice(0, 1024) : '';
    const hash = link.passwordHash;
    const right = await d.passwordChecks.run(() => verifyPassword(password, hash));
    if (right === null) {
      reply.header('retry-after', '1');
      return showPasswordPage(req, reply, link, 429, 'Too many people are trying passwords right now; try again in a moment.');
    }
    if (!right) return showPasswordPage(req, reply, link, 401, 'Wrong password.');
    const exp = Math.floor(d.clock() / 1000) + PASSWORD_COOKIE_SECONDS;
    reply.header('set-cookie', cookieHeader(pwCookie(link.slug), pwValue(link, exp), { path: `/${link.slug}`, sameSite: 'Lax', secure: d.secureCookies, maxAge: PASSWORD_COOKIE_SECONDS }));
    return reply.code(303).header('cache-control', NO_STORE).header('location', `/${link.slug}`).send();
  });

  app.setNotFoundHandler((_req, reply) => notFound(reply));
  app.setErrorHandler((err: { statusCode?: number }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 503;
    return reply.code(status).header('cache-control', NO_STORE).type('text/html; charset=utf-8').send(messagePage('Unavailable', 'This link cannot be opened right now; try again shortly.'));
  });
  return app;
}
