import type { ChannelModule } from '../../platform/channel-module.js';
import type { DeliveryJob } from './webhook-fan-out.js';
import { webhookRoutes } from './webhook-routes.js';
import { WebhookService } from './webhook-service.js';
import { WEBHOOK_MCP_TOOLS } from './webhook-mcp-tools.js';

/** Webhooks: endpoints under /v1/webhooks, and the fan-out and sender that deliver every product's events. */
export const webhooksModule: ChannelModule<WebhookService> = {
  name: 'webhooks',
  maturity: 'stable',
  tag: { name: 'webhooks', description: 'Webhook endpoints, signing secrets, deliveries and replay' },
  scopes: ['webhooks:manage'],
  configKey: 'webhooks',
  async create(ctx) {
    const { config } = ctx;
    const webhooks = new WebhookService({
      db: ctx.db,
      queue: ctx.backends.queue<DeliveryJob>('webhooks'),
      secretKey: ctx.deriveKey('webhook-secret'),
      guard: ctx.http,
      // allowPrivateTargets is the core's: ctx.http was built with it.
      config: config.webhooks,
      log: ctx.log,
      registry: ctx.metrics.registry,
    });
    // Every module's ctx.events writes through this module's outbox and wakes its fan-out.
    ctx.events.provide(webhooks.sink);
    return {
      service: webhooks,
      mcpTools: WEBHOOK_MCP_TOOLS,
      async routes(app) {
        await app.register(webhookRoutes, { webhooks });
      },
      start: () => webhooks.start(),
      stop: () => webhooks.stop(),
    };
  },
};
