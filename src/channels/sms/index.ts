import type { ChannelModule, ModuleListener } from '../../platform/channel-module.js';
import type { JobSpec } from '../../platform/scheduler.js';
import { IdempotencyStore } from '../../http/idempotency.js';
import { SMS_MCP_TOOLS } from './sms-mcp-tools.js';
import { smsRoutes } from './sms-routes.js';
import { startSmsGateway, type SmsGateway } from './sms-gateway.js';

/**
 * SMS: the SMPP gateway (customer binds, the upstream pool, routing, receipts) and its REST face under /v1/sms.
 * Its service is the gateway; OTP sends through it.
 */
export const smsModule: ChannelModule<SmsGateway> = {
  name: 'sms',
  maturity: 'stable',
  tag: { name: 'sms', description: 'SMS over REST: send, bulk, status, resend, inbound' },
  scopes: ['sms:send', 'sms:read'],
  configKey: 'sms',
  async create(ctx) {
    const closers: { name: string; close: () => Promise<unknown> }[] = [];
    const jobs: JobSpec[] = [];
    const sms = await startSmsGateway(ctx, (name, close) => closers.unshift({ name, close }), (job) => jobs.push(job));
    const { gateway, pricing, routeSwitches } = sms;
    const idempotency = new IdempotencyStore(ctx.db);
    jobs.push({ name: 'sms.idempotency-purge', everyMs: 3_600_000, scope: 'cluster', run: () => idempotency.purge() });
    // A price table saved through another instance's admin API reaches this one within 5 s (every role prices or refunds).
    jobs.push({ name: 'sms.pricing-refresh', everyMs: 5000, scope: 'instance', roles: ['api', 'smpp', 'workers'], run: () => pricing.restore() });
    // The customer SMPP server: plain and TLS ports are one server, opened with the first (smpp role).
    const { host, port, tls } = ctx.config.smpp;
    const listeners: ModuleListener[] = [
      { name: 'smpp', kind: 'tcp', role: 'smpp', host, port, open: async () => `${host}:${(await gateway.openServer()).ports.plain}`, close: () => gateway.closeServer() },
    ];
    if (tls.enabled && tls.cert && tls.key) {
      listeners.push({ name: 'smppTls', kind: 'tcp', role: 'smpp', host, port: tls.port, open: async () => `${host}:${(await gateway.openServer()).ports.tls}`, close: async () => undefined });
    }
    return {
      service: sms,
      mcpTools: SMS_MCP_TOOLS,
      jobs,
      listeners,
      async routes(app) {
        await app.register(smsRoutes, {
          sms: gateway.sms,
          ledger: gateway.ledger,
          idempotency,
          db: ctx.db,
          showUpstreams: ctx.config.sms.showUpstreams,
          scheduleHorizonDays: ctx.config.sms.scheduleHorizonDays,
        });
      },
      async start() {
        await gateway.startWorkers();
        routeSwitches.start();
      },
      async stop() {
        await routeSwitches.stop();
        await gateway.stop(ctx.config.shutdown.drainTimeoutMs);
        for (const c of closers) await c.close();
      },
    };
  },
};
