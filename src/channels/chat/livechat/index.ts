import type { FastifyInstance } from 'fastify';
import type { JobSpec } from '../../../platform/scheduler.js';
import type { Db, Throttle } from '../../../store/types.js';
import { AgentSessions } from './agent-sessions.js';
import { LivechatSecrets } from './identity.js';
import { inboxPageRoutes } from './inbox-page-routes.js';
import { inboxRoutes } from './inbox-routes.js';
import { type LivechatChat, LivechatService, type WidgetLimits } from './livechat-service.js';
import { widgetRoutes } from './widget-routes.js';

export { LIVECHAT_ERRORS } from './errors.js';
export type { LivechatService } from './livechat-service.js';

export interface LivechatOptions {
  db: Db;
  /** Chat's service (made after the module's other parts, hence a function). */
  chat: () => LivechatChat;
  /** ctx.deriveKey('chat-widget'): identity secrets, anonymous visitors' ids and the inbox page's CSRF tokens derive from it. */
  key: Buffer;
  /** ctx.backends.throttle: the widget's per-visitor and per-widget-key limits, shared by every instance. */
  throttle: Throttle;
  limits?: Partial<WidgetLimits>;
  /** How long an inbox page session lasts (default 12 hours). */
  sessionTtlMs?: number;
}

/**
 * Live chat: inboxes (/v1/chat-sdk/inboxes, API key), the widget (/chat-widget.js and /v1/chat-sdk/widget/*, public by
 * widget key) and the agents' page (/inbox). Conversations are chat channels of type livechat.
 */
export function livechatParts(o: LivechatOptions): { service: LivechatService; routes(app: FastifyInstance): Promise<void>; jobs: JobSpec[] } {
  const secrets = new LivechatSecrets(o.key);
  const service = new LivechatService({ db: o.db, chat: o.chat, secrets, throttle: o.throttle, limits: o.limits });
  const sessions = new AgentSessions({ db: o.db, csrfKey: secrets.csrfKey(), ttlMs: o.sessionTtlMs ?? 12 * 3_600_000 });
  return {
    service,
    async routes(app) {
      await inboxRoutes(app, { livechat: service });
      await widgetRoutes(app, { livechat: service });
      await inboxPageRoutes(app, { livechat: service, sessions });
    },
    jobs: [{ name: 'chat.livechat-sessions-purge', everyMs: 3_600_000, scope: 'cluster', run: () => sessions.purgeExpired() }],
  };
}
