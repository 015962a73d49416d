import type { ChannelModule } from '../../platform/channel-module.js';
import type { DeliveryJob } from './webhook-fan-out.js';
import { webhookRoutes } from './webhook-routes.js';
import { WebhookService } from './webhook-service.js';
import { privateTargetsAllowed } from './target-guard.js';
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

/** Webhooks: endpoints under /v1/webhooks, and the fan-out and sender that deliver every product's events. */
export const webhooksModule: ChannelModule<WebhookService> = {
  name: 'webhooks',
  maturity: 'stable',
  tag: { name: 'webhooks', description: 'Webhook endpoints, signing secrets, deliveries and replay' },
  scopes: WEBHOOKS_SCOPES,
  config: { key: 'webhooks', schema: webhooksConfigSchema },
  errors: WEBHOOKS_ERRORS,
  async create(ctx) {
    const { config } = ctx;
    const section = ctx.section<WebhooksConfig>();
    const privateTargets = privateTargetsAllowed(section.allowPrivateTargets, {
      httpHost: config.http.host,
      embeddedDatabase: ctx.db.kind !== 'postgres',
      trustProxy: Boolean(config.http.trustProxy),
      publicUrl: config.http.publicUrl,
    });
    ctx.log.info(
      { allowed: privateTargets.allowed, reason: privateTargets.reason },
      privateTargets.allowed ? 'webhook targets: private and loopback addresses allowed' : 'webhook targets: public https only (SSRF guard on)',
    );
    const webhooks = new WebhookService({
      db: ctx.db,
      queue: ctx.backends.queue<DeliveryJob>('webhooks'),
      masterKey: ctx.masterKey,
      config: { ...section, allowPrivateTargets: privateTargets.allowed },
      log: ctx.log,
      registry: ctx.metrics.registry,
    });
    return {
      service: webhooks,
      mcpTools: WEBHOOK_MCP_TOOLS,
      async adminRoutes(app) {
        registerInspectListing(app, { db: ctx.db, accounts: ctx.accounts }, webhookListing(webhooks.store));
      },
      async routes(app) {
        await app.register(webhookRoutes, { webhooks });
      },
      // The fan-out and sender are workers; other roles write events and manage endpoints, and still stop (OTP events flush).
      start: async () => (ctx.roles.has('workers') ? webhooks.start() : undefined),
      stop: () => webhooks.stop(),
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: webhooksCli,
};
