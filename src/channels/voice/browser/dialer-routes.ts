import type { FastifyInstance } from 'fastify';
import { envelopeSchema, ok } from '../../../http/envelope.js';
import { ApiError } from '../../../http/errors.js';
import type { AccountService } from '../../../accounts/account-service.js';
import { normalizeNumber } from '../../../numbers/phone.js';
import { DIALER_SIP_PATH } from './browser-phone.js';
import { DIALER_CSS, DIALER_HTML, DIALER_SCRIPT } from './dialer-page.js';
import { DIALER_TOKEN_DEFAULT_SECONDS, type DialerTokens } from './dialer-token.js';
import { jssipBrowserBundle } from './jssip-bundle.js';

const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self' ws: wss:; media-src 'self' blob: mediastream:; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'permissions-policy': 'microphone=(self)',
};

const err = (description: string) => ({ description, $ref: 'ErrorEnvelope#' });

interface TokenBody {
  identity?: string;
  from?: string;
  ttlSeconds?: number;
}

/** POST /v1/voice/dialer/token, and the page: GET /dialer with its style, script and the JsSIP bundle. */
export async function dialerRoutes(
  app: FastifyInstance,
  deps: {
    tokens: DialerTokens;
    accounts: AccountService;
    maxTokenSeconds: number;
    /** Whether this instance carries browser calls (the api and media roles, the dialer enabled). */
    available: () => boolean;
  },
): Promise<void> {
  app.post<{ Body: TokenBody }>(
    '/v1/voice/dialer/token',
    {
      config: { scope: 'voice:calls' },
      schema: {
        tags: ['voice'],
        summary: 'Mint a token for the browser dialer',
        description:
          'A short-lived signed token with which a browser signs in to the dialer page (`/dialer#token=…`) or connects its own SIP-over-WebSocket client ' +
          `(RFC 7118, subprotocol sip) to \`${DIALER_SIP_PATH}?token=…\`. Calls placed with it are ordinary voice calls of the account (limits, billing, events, ` +
          'GET /v1/voice/calls), from the token\'s `from` number, with `reference` dialer:<identity>. Nothing is stored: the token is valid until it expires ' +
          '(`ttlSeconds`, default 900, at most voice.dialer.maxTokenSeconds); revoking the API key does not end tokens already minted, so keep them short.',
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            identity: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$', description: "the browser's SIP name (default: the API key's id)" },
            from: { type: 'string', minLength: 3, maxLength: 20, description: 'the caller ID of its calls: an E.164 number the account owns (default: its first number)' },
            ttlSeconds: { type: 'integer', minimum: 60, maximum: 43_200, description: 'lifetime in seconds (default 900)' },
          },
        },
        response: {
          201: envelopeSchema(
            {
              type: 'object',
              properties: {
                token: { type: 'string' },
                expiresAt: { type: 'string', format: 'date-time' },
                identity: { type: 'string' },
                from: { type: 'string' },
                webSocketUrl: { type: 'string', description: 'where a SIP-over-WebSocket client connects (the token in its query)' },
                dialerUrl: { type: 'string', description: 'the dialer page, signed in' },
              },
            },
            'Created (code DIALER_TOKEN_CREATED)',
          ),
          400: err('VALIDATION_ERROR'),
          403: err('CALLER_ID_NOT_ALLOWED'),
          503: err('DIALER_NOT_AVAILABLE'),
        },
      },
    },
    async (req, reply) => {
      if (!deps.available()) throw new ApiError('DIALER_NOT_AVAILABLE');
      const body = req.body ?? {};
      const owned = await deps.accounts.numbers(req.auth.accountId);
      let from: string | null;
      if (body.from !== undefined) {
        from = normalizeNumber(body.from, { international: true });
        if (!from) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'from', message: 'an E.164 number (+ and country code)' }] } });
        if (!owned.includes(from)) throw new ApiError('CALLER_ID_NOT_ALLOWED', { data: { from: '+' + from } });
      } else {
        from = owned[0] ?? null;
        if (!from) throw new ApiError('VALIDATION_ERROR', { data: { errors: [{ field: 'from', message: 'the account owns no number to call from (POST /admin/accounts/:id/numbers)' }] } });
      }
      const ttl = Math.min(body.ttlSeconds ?? DIALER_TOKEN_DEFAULT_SECONDS, deps.maxTokenSeconds);
      const identity = body.identity ?? req.auth.keyId.replace(/[^A-Za-z0-9._-]/g, '').slice(0, 64);
      const { token, expiresAt } = await deps.tokens.mint({ accountId: req.auth.accountId, keyId: req.auth.keyId, identity, from }, ttl);
      const secure = req.protocol === 'https';
      const host = req.headers.host ?? req.hostname;
      reply.code(201);
      return ok(req, 'DIALER_TOKEN_CREATED', {
        token,
        expiresAt: expiresAt.toISOString(),
        identity,
        from: '+' + from,
        webSocketUrl: `${secure ? 'wss' : 'ws'}://${host}${DIALER_SIP_PATH}?token=${token}`,
        dialerUrl: `${secure ? 'https' : 'http'}://${host}/dialer#token=${token}`,
      });
    },
  );

  const page = { config: { auth: false }, schema: { hide: true } } as const;
  app.get('/dialer', page, async (_req, reply) => reply.headers({ ...PAGE_HEADERS, 'cache-control': 'no-store' }).type('text/html; charset=utf-8').send(DIALER_HTML));
  app.get('/dialer/dialer.css', page, async (_req, reply) => reply.headers({ ...PAGE_HEADERS, 'cache-control': 'no-cache' }).type('text/css; charset=utf-8').send(DIALER_CSS));
  app.get('/dialer/dialer.js', page, async (_req, reply) => reply.headers({ ...PAGE_HEADERS, 'cache-control': 'no-cache' }).type('text/javascript; charset=utf-8').send(DIALER_SCRIPT));
  app.get('/dialer/jssip.js', page, async (_req, reply) =>
    reply.headers({ ...PAGE_HEADERS, 'cache-control': 'public, max-age=3600' }).type('text/javascript; charset=utf-8').send(await jssipBrowserBundle()),
  );
}
