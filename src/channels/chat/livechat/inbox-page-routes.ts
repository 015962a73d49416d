import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ok } from '../../../http/envelope.js';
import { ApiError } from '../../../http/errors.js';
import { CHANNEL_ID_PATTERN } from '../chat-schemas.js';
import type { AgentSession, AgentSessions } from './agent-sessions.js';
import { INBOX_PAGE_CSS, INBOX_PAGE_HTML, INBOX_PAGE_ICON, INBOX_PAGE_JS } from './inbox-page-assets.js';
import type { Agent, LivechatService } from './livechat-service.js';
import type { ConversationStatus } from './livechat-store.js';
import { conversationChangeSchema, conversationListQuery } from './livechat-schemas.js';
import { socketIoClientSource } from './socket-client.js';

export const INBOX_SESSION_COOKIE = 'ferry_inbox_session';

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
    if (eq > 0 && part.slice(0, eq).trim() === INBOX_SESSION_COOKIE) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

function sessionCookie(req: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = req.protocol === 'https' ? '; Secure' : '';
  return `${INBOX_SESSION_COOKIE}=${encodeURIComponent(value)}; Path=/inbox; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

const channelParams = { type: 'object', properties: { channelId: { type: 'string', pattern: CHANNEL_ID_PATTERN } } } as const;

/**
 * The /inbox page of agents: sign in with an API key holding chat:manage (through the API's own authentication, once)
 * into a session cookie (HttpOnly, SameSite=Strict, in SQL so any instance serves it); every state-changing call needs
 * the session's CSRF token. The page lists conversations by status, shows one with the visitor's details, assigns,
 * changes status and replies; it gets a chat token for the agent (agent:<keyId>) and receives over Socket.IO.
 */
export async function inboxPageRoutes(app: FastifyInstance, o: { livechat: LivechatService; sessions: AgentSessions }): Promise<void> {
  const { livechat, sessions } = o;
  const page = { config: { auth: false }, schema: { hide: true } } as const;

  const session = async (req: FastifyRequest): Promise<{ token: string; session: AgentSession }> => {
    const token = cookieToken(req);
    const s = token ? await sessions.find(token) : null;
    if (!token || !s) throw new ApiError('CHAT_INBOX_SESSION_REQUIRED');
    return { token, session: s };
  };
  /** The agent of a state-changing call: a live session and its CSRF token. */
  const changing = async (req: FastifyRequest): Promise<Agent> => {
    const { token, session: s } = await session(req);
    if (!sessions.csrfValid(token, req.headers['x-csrf-token'] as string | undefined)) throw new ApiError('CHAT_CSRF_TOKEN_INVALID');
    return s;
  };
  const reading = async (req: FastifyRequest): Promise<Agent> => (await session(req)).session;

  const sessionView = async (s: AgentSession) => {
    const chat = await livechat.agentToken(s, s.expiresAt);
    return {
      signedIn: true,
      keyId: s.keyId,
      accountId: s.accountId,
      agentId: s.agentId,
      agentName: s.agentName,
      csrfToken: s.csrfToken,
      expiresAt: new Date(s.expiresAt).toISOString(),
      // The agent's chat token, for the page's socket (kept in the page's memory only).
      chatToken: chat.token,
      chatTokenExpiresAt: chat.expiresAt,
    };
  };

  const asset = (type: string, body: () => string, cache = 'no-cache') => async (_req: FastifyRequest, reply: import('fastify').FastifyReply) =>
    reply.headers({ ...PAGE_HEADERS, 'cache-control': cache }).type(type).send(body());

  app.get('/inbox', page, asset('text/html; charset=utf-8', () => INBOX_PAGE_HTML, 'no-store'));
  app.get('/inbox/assets/inbox.js', page, asset('text/javascript; charset=utf-8', () => INBOX_PAGE_JS));
  app.get('/inbox/assets/inbox.css', page, asset('text/css; charset=utf-8', () => INBOX_PAGE_CSS));
  app.get('/inbox/assets/favicon.svg', page, asset('image/svg+xml', () => INBOX_PAGE_ICON, 'max-age=86400'));
  app.get('/inbox/assets/socket.io.min.js', page, asset('text/javascript; charset=utf-8', socketIoClientSource, 'max-age=3600'));

  // Authenticated by the API's auth plugin (the Authorization header, once), like any /v1 call with chat:manage.
  app.post<{ Body: { agentName?: string } | undefined }>(
    '/inbox/session',
    {
      config: { scope: 'chat:manage' },
      schema: {
        hide: true,
        body: { type: ['object', 'null'], additionalProperties: false, properties: { agentName: { type: 'string', maxLength: 100 } } },
      },
    },
    async (req, reply) => {
      const name = req.body?.agentName?.trim() || null;
      const { token, session: s } = await sessions.open(req.auth.accountId, req.auth.keyId, name);
      reply.header('set-cookie', sessionCookie(req, token, Math.floor((s.expiresAt - Date.now()) / 1000)));
      reply.header('cache-control', 'no-store');
      return ok(req, 'CHAT_INBOX_SESSION_OPENED', await sessionView(s));
    },
  );

  // Whether the browser is signed in: "no" is an answer (200), not an error, so a fresh visit logs no failed request.
  app.get('/inbox/api/session', page, async (req, reply) => {
    reply.header('cache-control', 'no-store');
    const token = cookieToken(req);
    const s = token ? await sessions.find(token) : null;
    if (!s) return ok(req, 'CHAT_INBOX_NO_SESSION', { signedIn: false });
    return ok(req, 'CHAT_INBOX_SESSION', await sessionView(s));
  });

  app.post('/inbox/session/end', page, async (req, reply) => {
    const { token } = await session(req);
    if (!sessions.csrfValid(token, req.headers['x-csrf-token'] as string | undefined)) throw new ApiError('CHAT_CSRF_TOKEN_INVALID');
    await sessions.close(token);
    reply.header('set-cookie', sessionCookie(req, '', 0));
    return ok(req, 'CHAT_INBOX_SESSION_ENDED', {});
  });

  app.get('/inbox/api/inboxes', page, async (req, reply) => {
    const agent = await reading(req);
    reply.header('cache-control', 'no-store');
    const inboxes = await livechat.store.listInboxes(agent.accountId);
    return ok(req, 'CHAT_INBOXES', { inboxes: inboxes.map((i) => ({ id: i.id, name: i.name })) });
  });

  app.get('/inbox/api/agents', page, async (req, reply) => {
    const agent = await reading(req);
    reply.header('cache-control', 'no-store');
    return ok(req, 'CHAT_AGENTS', { agents: await livechat.agents(agent.accountId) });
  });

  app.get<{ Querystring: { status?: ConversationStatus; assignee?: string; inboxId?: string; cursor?: string; limit?: string } }>(
    '/inbox/api/conversations',
    {
      ...page,
      schema: {
        hide: true,
        querystring: {
          ...conversationListQuery,
          properties: { ...conversationListQuery.properties, inboxId: { type: 'string', minLength: 1, maxLength: 100 }, assignee: { type: 'string', maxLength: 200, description: 'me, none, or an agent id' } },
        },
      },
    },
    async (req, reply) => {
      const agent = await reading(req);
      const q = req.query;
      const assignee = q.assignee === undefined ? undefined : q.assignee === 'none' ? null : q.assignee === 'me' ? agent.agentId : q.assignee;
      reply.header('cache-control', 'no-store');
      const list = await livechat.listConversations(agent.accountId, {
        status: q.status,
        inboxId: q.inboxId,
        assignee,
        agentId: agent.agentId,
        cursor: q.cursor,
        limit: Number(q.limit ?? 50),
      });
      return ok(req, 'CHAT_CONVERSATIONS', list);
    },
  );

  app.get<{ Params: { channelId: string }; Querystring: { beforeSeq?: string } }>(
    '/inbox/api/conversations/:channelId',
    {
      ...page,
      schema: { hide: true, params: channelParams, querystring: { type: 'object', additionalProperties: false, properties: { beforeSeq: { type: 'string', pattern: '^[0-9]{1,15}$' } } } },
    },
    async (req, reply) => {
      const agent = await reading(req);
      reply.header('cache-control', 'no-store');
      const beforeSeq = req.query.beforeSeq === undefined ? {} : { beforeSeq: Number(req.query.beforeSeq) };
      return ok(req, 'CHAT_CONVERSATION', await livechat.openConversation(agent, req.params.channelId, { ...beforeSeq, limit: 50 }));
    },
  );

  app.post<{ Params: { channelId: string } }>('/inbox/api/conversations/:channelId/join', { ...page, schema: { hide: true, params: channelParams } }, async (req) => {
    const agent = await changing(req);
    return ok(req, 'CHAT_CONVERSATION_JOINED', await livechat.join(agent, req.params.channelId));
  });

  app.patch<{ Params: { channelId: string }; Body: { status?: ConversationStatus; assignee?: string | null } }>(
    '/inbox/api/conversations/:channelId',
    { ...page, schema: { hide: true, params: channelParams, body: conversationChangeSchema } },
    async (req) => {
      const agent = await changing(req);
      return ok(req, 'CHAT_CONVERSATION_UPDATED', await livechat.updateConversation(agent.accountId, req.params.channelId, req.body));
    },
  );

  app.post<{ Params: { channelId: string }; Body: { text: string; clientMsgId?: string } }>(
    '/inbox/api/conversations/:channelId/messages',
    {
      ...page,
      schema: {
        hide: true,
        params: channelParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['text'],
          properties: { text: { type: 'string', minLength: 1, maxLength: 65_536, 'x-ferry-redact': 'personal' }, clientMsgId: { type: 'string', minLength: 1, maxLength: 100 } },
        },
      },
    },
    async (req) => {
      const agent = await changing(req);
      return ok(req, 'CHAT_MESSAGE_SENT', await livechat.reply(agent, req.params.channelId, req.body));
    },
  );

  app.post<{ Params: { channelId: string }; Body: { seq: number } }>(
    '/inbox/api/conversations/:channelId/read',
    {
      ...page,
      schema: {
        hide: true,
        params: channelParams,
        body: { type: 'object', additionalProperties: false, required: ['seq'], properties: { seq: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } } },
      },
    },
    async (req) => {
      const agent = await changing(req);
      return ok(req, 'CHAT_READ', { lastReadSeq: await livechat.markRead(agent, req.params.channelId, req.body.seq) });
    },
  );
}
