import type { ChannelModule, ModuleListener } from '../../platform/channel-module.js';
import { ROLES } from '../../platform/roles.js';
import type { JobSpec } from '../../platform/scheduler.js';
import { IdempotencyStore } from '../../http/idempotency.js';
import { Ledger } from '../../ledger/ledger.js';
import { SMS_MCP_TOOLS } from './sms-mcp-tools.js';
import { smsRoutes } from './sms-routes.js';
import { buildSmsGateway, type SmsGateway } from './sms-gateway.js';
import { smsStorage } from './storage.js';
import { smsConfigSchema, type SmsConfig } from './config.js';
import { SMS_ERRORS } from './errors.js';
import { SMS_SCOPES } from './scopes.js';
import { smsCli } from './cli/index.js';
import { SMS_HISTORIC_ADMIN_PATHS, smsAdminRoutes } from './sms-admin-routes.js';
import { smscSimulatorCli } from '../../sim/smpp/cli.js';

/**
 * SMS: the SMPP gateway (customer binds, the upstream pool, routing, receipts) and its REST face under /v1/sms.
 * Its service is the gateway; OTP sends through it.
 */
export const smsModule: ChannelModule<SmsGateway> = {
  name: 'sms',
  maturity: 'stable',
  tag: { name: 'sms', description: 'SMS over REST: send, bulk, status, resend, inbound' },
  // Storage (issue 43): its migrations and its tables' retention and vacuuming.
  ...smsStorage,
  scopes: SMS_SCOPES,
  config: { key: 'sms', schema: smsConfigSchema },
  errors: SMS_ERRORS,
  // Builds without I/O; start() loads the upstreams and the stored state, starts the embedded simulator and binds.
  async create(ctx) {
    const closers: { name: string; close: () => Promise<unknown> }[] = [];
    const built = buildSmsGateway(ctx);
    const sms = built.service;
    const { gateway, pricing, routeSwitches } = sms;
    const jobs: JobSpec[] = [...built.jobs];
    const idempotency = new IdempotencyStore(ctx.db);
    // The gateway's: the reconciler's pass, receipt queries, correlation and customer outbox purges.
    jobs.push(...gateway.jobs());
    jobs.push({ name: 'sms.idempotency-purge', everyMs: 3_600_000, scope: 'cluster', run: () => idempotency.purge() });
    // A price table saved through another instance's admin API reaches this one within 5 s (every role prices or refunds).
    jobs.push({ name: 'sms.pricing-refresh', everyMs: 5000, scope: 'instance', roles: ['api', 'smpp', 'workers'], run: () => pricing.restore() });
    // Route switches made through another instance reach this one within 2 s, and a switch made here whose write
    // failed is stored again: in every role, as the admin API (which switches routes) runs in every role.
    jobs.push({ name: 'sms.route-switches', everyMs: routeSwitches.pollMs, scope: 'instance', roles: ROLES, run: () => routeSwitches.sync() });
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
      async adminRoutes(app) {
        const g = gateway;
        await smsAdminRoutes(app, {
          gateway: {
            router: g.router,
            pool: g.pool,
            ledger: g.ledger,
            outbox: g.outbox,
            upstreamStore: sms.upstreamStore,
            configUpstreamIds: new Set(sms.configUpstreams.keys()),
            configUpstream: (id) => sms.configUpstreams.get(id),
            onOwed: () => g.delivery?.wake(),
          },
          pricing: { prices: g.prices, store: pricing },
          sim: { simulator: () => sms.embeddedUpstream?.simulator ?? null },
          inspect: { db: ctx.db, accounts: ctx.accounts },
        });
      },
      jobs,
      listeners,
      async routes(app) {
        await app.register(smsRoutes, {
          sms: gateway.sms,
          ledger: gateway.ledger,
          idempotency,
          db: ctx.db,
          // Status and list reads tolerate replica lag (database.readUrl); a ledger on it only reads (no writes queued).
          replica: ctx.readDb === ctx.db ? null : { db: ctx.readDb, ledger: new Ledger(ctx.readDb) },
          showUpstreams: ctx.section<SmsConfig>().showUpstreams,
          scheduleHorizonDays: ctx.section<SmsConfig>().scheduleHorizonDays,
        });
      },
      async start() {
        // What opened before a failure is closed by stop() (the daemon stops every created module).
        await built.start((name, close) => closers.unshift({ name, close }));
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
  // CLI, simulators and admin paths (issue 43).
  cli: smsCli,
  simulators: [
    {
      name: 'smpp',
      description: 'SMSC simulator (SMPP v3.4): run one standalone, or read and script the daemon’s embedded one',
      atSimRoot: true,
      cli: smscSimulatorCli,
    },
  ],
  historicAdminPaths: SMS_HISTORIC_ADMIN_PATHS,
};
