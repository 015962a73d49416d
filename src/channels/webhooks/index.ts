import type { ChannelModule } from '../../platform/channel-module.js';
import { webhookRoutes } from './webhook-routes.js';
import { WebhookService } from './webhook-service.js';
import { WEBHOOK_MCP_TOOLS } from './webhook-mcp-tools.js';
import { webhooksConfigSchema, type WebhooksConfig } from './config.js';
import { WEBHOOKS_ERRORS } from './errors.js';
import { WEBHOOKS_SCOPES } from './scopes.js';
import { registerInspectListing } from '../../admin/inspect-routes.js';
import { webhooksCli } from './cli.js';
import { webhookListing } from './webhook-inspect.js';

// The service other products reach through ctx.use('webhooks') (import type only: rule in eslint.config.js).
export type { WebhookService } from './webhook-service.js';
export type { TargetGuard } from './target-guard.js';

/** Webhooks: endpoints under /v1/webhooks, and the event stream and retry sender that deliver every product's events. */
export const webhooksModule: ChannelModule<WebhookService> = {
  name: 'webhooks',
  maturity: 'stable',
  tag: { name: 'webhooks', description: 'Webhook endpoints, signing secrets, deliveries and replay' },
  scopes: WEBHOOKS_SCOPES,
  config: { key: 'webhooks', schema: webhooksConfigSchema },
  errors: WEBHOOKS_ERRORS,
  async create(ctx) {
    const section = ctx.section<WebhooksConfig>();
    const webhooks = new WebhookService({
      db: ctx.db,
      secretKey: ctx.deriveKey('webhook-secret'),
      guard: ctx.http,
      // allowPrivateTargets is the core's: ctx.http was built with it.
      config: section,
      log: ctx.log,
      registry: ctx.metrics.registry,
      dataDir: ctx.config.dataDir,
    });
    // Every module's ctx.events writes into the event log and wakes its ticker.
    ctx.events.provide(webhooks.sink);
    return {
      service: webhooks,
      mcpTools: WEBHOOK_MCP_TOOLS,
      async adminRoutes(app) {
        registerInspectListing(app, { db: ctx.db, accounts: ctx.accounts }, webhookListing(webhooks.store));
      },
      async routes(app) {
        await app.register(webhookRoutes, { webhooks });
      },
      // The ticker, stream and sender are workers; other roles write events and manage endpoints, and still stop (OTP events flush).
      start: async () => (ctx.roles.has('workers') ? webhooks.start() : undefined),
      stop: () => webhooks.stop(),
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: webhooksCli,
};
