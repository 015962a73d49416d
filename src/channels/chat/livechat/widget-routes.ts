import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerJwt } from '../../../http/auth.js';
import { envelopeSchema, ok, withErrors } from '../../../http/envelope.js';
import { ApiError } from '../../../http/errors.js';
import type { ChatTokenClaims } from '../chat-types.js';
import type { LivechatService, SessionInput, VisitorSendInput } from './livechat-service.js';
import { TAG, messageSchema, sessionBodySchema, sessionSchema, widgetInboxSchema, widgetKeyField, widgetSendSchema } from './livechat-schemas.js';
import { scopedSocketIoClient } from './socket-client.js';
import { WIDGET_JS } from './widget-script.js';

/** Any site may call the widget's routes: it carries no cookie, its credentials are its widget key and token. */
const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type',
  'access-control-max-age': '600',
} as const;

const PUBLIC = [] as const;

/**
 * The widget: GET /chat-widget.js (the script a website embeds, Socket.IO's client inside, scoped) and its public API
 * under /v1/chat-sdk/widget, keyed by an inbox's widget key, called cross-origin from customers' pages (CORS for any
 * origin, no cookies). A visitor's later calls carry the chat token their session gave. Each request counts against the
 * visitor's and the widget key's budgets in the shared throttle.
 */
export async function widgetRoutes(app: FastifyInstance, deps: { livechat: LivechatService }): Promise<void> {
  const { livechat } = deps;
  let script: { body: string; etag: string } | null = null;
  const widgetScript = () => {
    if (!script) {
      // A function, not a string: the client's text holds `$&`-like sequences a replacement string would expand.
      const body = WIDGET_JS.replace('/*SOCKET_IO_CLIENT*/ null', () => scopedSocketIoClient());
      script = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    }
    return script;
  };

  app.get('/chat-widget.js', { config: { auth: false }, schema: { hide: true } }, async (req, reply) => {
    const s = widgetScript();
    reply.headers({
      'cache-control': 'public, max-age=300',
      etag: s.etag,
      'x-content-type-options': 'nosniff',
      // Loaded by other sites' pages (a script tag needs no CORS, but a page with COEP asks for this).
      'cross-origin-resource-policy': 'cross-origin',
    });
    if (req.headers['if-none-match'] === s.etag) return reply.code(304).send();
    return reply.type('text/javascript; charset=utf-8').send(s.body);
  });

  // The widget's API in a scope of its own, so that every answer (errors of the platform's hooks too) has CORS headers.
  await app.register(async (scope) => {
    scope.addHook('onSend', async (_req, reply, payload) => {
      reply.headers(CORS);
      return payload;
    });

    scope.options('/v1/chat-sdk/widget/*', { config: { auth: false }, schema: { hide: true } }, async (_req, reply) => reply.code(204).send());

    /** The visitor a token names; the chat token errors otherwise (CHAT_TOKEN_INVALID…). */
    const visitor = async (req: FastifyRequest): Promise<ChatTokenClaims> => {
      const token = bearerJwt(req.headers.authorization);
      if (!token) throw new ApiError('CHAT_TOKEN_INVALID', { message: "Send the visitor's session token: Authorization: Bearer <token>" });
      return livechat.chat.verifyToken(token);
    };

    scope.get<{ Querystring: { widgetKey: string } }>(
      '/v1/chat-sdk/widget/config',
      {
        config: { auth: false },
        schema: {
          tags: TAG,
          security: PUBLIC,
          summary: "A widget's inbox as visitors see it (public, by widget key)",
          description: 'Name, greeting, whether it is inside business hours, its offline mode and pre-chat form: what the widget shows before a session.',
          querystring: { type: 'object', additionalProperties: false, required: ['widgetKey'], properties: { widgetKey: widgetKeyField } },
          response: withErrors({ 200: envelopeSchema(widgetInboxSchema) }),
        },
      },
      async (req, reply) => {
        // Read-only and cheap: counted against the widget key only (every page view of the site asks it).
        await livechat.limit(req.query.widgetKey, null);
        reply.header('cache-control', 'no-store');
        return ok(req, 'CHAT_WIDGET_CONFIG', await livechat.widgetConfig(req.query.widgetKey));
      },
    );

    scope.post<{ Body: SessionInput }>(
      '/v1/chat-sdk/widget/session',
      {
        config: { auth: false },
        schema: {
          tags: TAG,
          security: PUBLIC,
          summary: "A visitor's session (public, by widget key)",
          description:
            "An anonymous visitor (their visitorId from an earlier session, or a new one) or an identified one (identity.userId with HMAC-SHA256(the inbox's " +
            'identity secret, userId) in hex, made by your server; required when the inbox has requireIdentity). The answer is a chat user token for the ' +
            "visitor (Socket.IO /chat-sdk, the client routes), their conversation if they have one, and the inbox's state. Limited per visitor and per widget key.",
          body: sessionBodySchema,
          response: withErrors({ 200: envelopeSchema(sessionSchema, 'A session (code CHAT_WIDGET_SESSION)') }),
        },
      },
      async (req, reply) => {
        const b = req.body;
        await livechat.limit(b.widgetKey, b.identity ? { visitor: `user:${b.identity.userId}` } : b.visitorId ? { visitor: `key:${b.visitorId}` } : { address: req.clientIp });
        const userAgent = typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined;
        reply.header('cache-control', 'no-store');
        return ok(req, 'CHAT_WIDGET_SESSION', await livechat.session(b, { userAgent }));
      },
    );

    scope.post<{ Body: VisitorSendInput }>(
      '/v1/chat-sdk/widget/messages',
      {
        config: { auth: false },
        schema: {
          tags: TAG,
          security: [{ endUserToken: [] }],
          summary: "A visitor's message (the session's token)",
          description:
            'The first message makes the conversation (a channel of type livechat). The pre-chat form\'s required fields must have been given (here in ' +
            "`visitor`, or in the session), and outside business hours an email (CHAT_PRECHAT_REQUIRED, data.fields); with offlineMode hide nothing is taken " +
            '(CHAT_INBOX_OFFLINE). Outside business hours the conversation is pending, else open (a resolved one reopens). A retry with the same clientMsgId ' +
            'returns the stored message.',
          body: widgetSendSchema,
          response: withErrors({
            200: envelopeSchema(
              {
                type: 'object',
                properties: {
                  message: messageSchema,
                  created: { type: 'boolean' },
                  conversation: { type: 'object', properties: { channelId: { type: 'string' }, status: { type: 'string', enum: ['open', 'pending', 'resolved'] } } },
                },
              },
              'Stored (code CHAT_WIDGET_MESSAGE_SENT)',
            ),
          }),
        },
      },
      async (req) => {
        const claims = await visitor(req);
        await livechat.limit(req.body.widgetKey, { visitor: `user:${claims.userId}` });
        const userAgent = typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined;
        const r = await livechat.visitorSend(claims, req.body, { userAgent });
        return ok(req, 'CHAT_WIDGET_MESSAGE_SENT', { message: r.message, created: r.created, conversation: { channelId: r.conversation.channelId, status: r.conversation.status } });
      },
    );

    scope.get<{ Querystring: { widgetKey: string; afterSeq?: string; beforeSeq?: string; limit?: string } }>(
      '/v1/chat-sdk/widget/messages',
      {
        config: { auth: false },
        schema: {
          tags: TAG,
          security: [{ endUserToken: [] }],
          summary: "The visitor's conversation history (the session's token)",
          description: "Oldest first: after `afterSeq`, or the newest before `beforeSeq` (or the newest). `agentReadSeq`: the furthest an agent has read.",
          querystring: {
            type: 'object',
            additionalProperties: false,
            required: ['widgetKey'],
            properties: {
              widgetKey: widgetKeyField,
              afterSeq: { type: 'string', pattern: '^[0-9]{1,15}$' },
              beforeSeq: { type: 'string', pattern: '^[0-9]{1,15}$' },
              limit: { type: 'string', pattern: '^([1-9]|[1-9][0-9]|1[0-9][0-9]|200)$', description: '1–200 (default 50)' },
            },
          },
          response: withErrors({
            200: envelopeSchema({
              type: 'object',
              properties: {
                conversation: { type: ['object', 'null'], properties: { channelId: { type: 'string' }, status: { type: 'string' } } },
                messages: { type: 'array', items: messageSchema },
                hasMore: { type: 'boolean' },
                agentReadSeq: { type: 'integer' },
              },
            }),
          }),
        },
      },
      async (req, reply: FastifyReply) => {
        const claims = await visitor(req);
        await livechat.limit(req.query.widgetKey, { visitor: `user:${claims.userId}` });
        const q = req.query;
        const r = await livechat.visitorMessages(claims, q.widgetKey, {
          ...(q.afterSeq !== undefined ? { afterSeq: Number(q.afterSeq) } : {}),
          ...(q.beforeSeq !== undefined ? { beforeSeq: Number(q.beforeSeq) } : {}),
          limit: Number(q.limit ?? 50),
        });
        reply.header('cache-control', 'no-store');
        return ok(req, 'CHAT_WIDGET_MESSAGES', r);
      },
    );
  });
}
