import type { ChannelModule } from '../../platform/channel-module.js';
import type { PushModuleService } from '../push/index.js';
import { CHAT_EVENTS } from './chat-events.js';
import { CHAT_MCP_TOOLS } from './chat-mcp-tools.js';
import { ChatService } from './chat-service.js';
import { chatConfigSchema, type ChatConfig } from './config.js';
import { CHAT_ERRORS } from './errors.js';
import { LIVECHAT_ERRORS, livechatParts } from './livechat/index.js';
import { ChatRealtime } from './realtime/chat-realtime.js';
import { CHAT_SCOPES } from './scopes.js';
import { chatStorage } from './storage.js';

/** What the module exposes (tests, the bench, the widget and inbox). */
export interface ChatModuleService {
  chat: ChatService;
  realtime: ChatRealtime;
}

/**
 * In-app chat (Beta): user tokens, channels, members and history under /v1/chat-sdk (server side with an API key,
 * client side with a user token), real time on Socket.IO's `/chat-sdk` namespace in the realtime role (a Redis adapter
 * between instances), read state, typing and presence, and pushes to offline members through the push module.
 */
export const chatModule: ChannelModule<ChatModuleService> = {
  name: 'chat',
  maturity: 'beta',
  tag: { name: 'chat', description: 'In-app chat (Beta): user tokens, channels, members, message history; real time on Socket.IO (/chat-sdk)' },
  scopes: CHAT_SCOPES,
  config: { key: 'chat', schema: chatConfigSchema },
  errors: { ...CHAT_ERRORS, ...LIVECHAT_ERRORS },
  events: CHAT_EVENTS,
  dependsOn: ['webhooks', 'push'],
  apiPaths: ['/v1/chat-sdk', '/chat-widget.js', '/inbox'],
  ...chatStorage,
  async create(ctx) {
    const c = ctx.section<ChatConfig>();
    const push = ctx.use<PushModuleService>('push');
    let service: ChatService | null = null;
    const realtime = new ChatRealtime({
      config: c,
      service: () => service!,
      push: push.sends,
      db: ctx.db,
      redis: ctx.redis,
      roles: ctx.roles,
      log: ctx.log,
      metrics: ctx.metrics,
    });
    service = new ChatService({
      db: ctx.db,
      events: ctx.events,
      config: c,
      signingKey: ctx.deriveKey('chat-tokens'),
      sink: realtime,
      throttle: ctx.backends.throttle,
      log: ctx.log,
    });
    const livechat = livechatParts({ db: ctx.db, chat: () => service!, key: ctx.deriveKey('chat-widget'), throttle: ctx.backends.throttle });
    return {
      service: { chat: service, realtime },
      realtime,
      mcpTools: CHAT_MCP_TOOLS,
      async routes(app) {
        const { chatRoutes } = await import('./chat-routes.js');
        await app.register(chatRoutes, { service: service!, config: c });
        await livechat.routes(app);
      },
      jobs: [
        ...livechat.jobs,
        // Offline pushes whose process did not finish them (a crash, a full queue): durable through the outbox.
        { name: 'chat.push-outbox', everyMs: 2000, scope: 'cluster', roles: ['workers'], run: (signal) => realtime.runPushOutbox(signal) },
      ],
      start: () => realtime.start(),
      stop: () => realtime.stop(),
    };
  },
};
