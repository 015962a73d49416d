import { SHORTLINK_MCP_TOOLS } from './shortlink-mcp-tools.js';
import type { FastifyInstance } from 'fastify';
import type { ChannelModule } from '../../platform/channel-module.js';
import { ClientAddress, loadGeo } from './click-info.js';
import { RedisClickLimiter, SqlClickLimiter, type ClickLimiter } from './click-limiter.js';
import { PasswordChecks } from './password-checks.js';
import { ClickRecorder } from './click-recorder.js';
import { LinkCache } from './link-cache.js';
import { LinkStore } from './link-store.js';
import { buildRedirectServer } from './redirect-server.js';
import { shortlinkRoutes } from './shortlink-routes.js';
import { ShortlinkService } from './shortlink-service.js';
import { shortlinkStorage } from './storage.js';
import { shortlinkConfigSchema, type ShortlinkConfig } from './config.js';
import { SHORTLINK_ERRORS } from './errors.js';
import { SHORTLINK_SCOPES } from './scopes.js';
import { registerInspectListing } from '../../admin/inspect-routes.js';
import { shortlinkCli } from './cli.js';
import { SHORTLINK_HISTORIC_ADMIN_PATHS, shortlinkListing } from './shortlink-inspect.js';

declare module '../../events/catalogue.js' {
  interface ProductEventTypes {
    'shortlink.click': true;
  }
}

/**
 * Short links (Beta): CRUD, QR codes and analytics under /v1/shortlink; the public redirect on its own listener
 * (shortlink.host:port), answering from an in-process cache and recording clicks in batches.
 */
export const shortlinkModule: ChannelModule<ShortlinkService> = {
  name: 'shortlink',
  maturity: 'beta',
  tag: { name: 'shortlink', description: 'Short links (Beta): UTM parameters, password, expiry, click limits, QR codes and click analytics' },
  scopes: SHORTLINK_SCOPES,
  config: { key: 'shortlink', schema: shortlinkConfigSchema },
  errors: SHORTLINK_ERRORS,
  dependsOn: ['webhooks'],
  events: {
    'shortlink.click':
      'a short link was visited with GET (data.outcome redirected or expired; data.bot for bots and link previews; country, device, browser, os, referrer host); written with the click batch, about a second after the visit',
  },
  // Storage (issue 43): its migrations and its tables' retention and vacuuming.
  ...shortlinkStorage,
  async create(ctx) {
    const cfg = ctx.section<ShortlinkConfig>();
    const store = new LinkStore(ctx.db);
    const prefix = `${ctx.redis.keyPrefix}shortlink:`;
    // Commands wait for the connection, as the limiter always did (a short outage delays a click count, not a redirect).
    const redis = ctx.redis.client('click-limits', { offlineQueue: true });
    const limiter: ClickLimiter = redis ? new RedisClickLimiter(redis, prefix) : new SqlClickLimiter(store);
    const cache = new LinkCache(store, cfg.cacheTtlSeconds * 1000, ctx.pubsub, ctx.log);
    const recorder = new ClickRecorder({
      db: ctx.db,
      store,
      events: { insertMany: (q, events) => ctx.events.emit(q, events), subscribed: (q, accounts) => ctx.events.subscribed(q, accounts, 'shortlink.click') },
      onEvents: () => ctx.events.wake(),
      batchMs: cfg.clickBatchMs,
      batchMax: cfg.clickBatchMax,
      log: ctx.log,
    });
    // Click analytics tolerate replica lag (clicks are written in batches anyway); links are read on the primary.
    const service = new ShortlinkService(ctx.readDb, store, cache, limiter, recorder, cfg.denyHosts);
    const addresses = new ClientAddress(cfg.trustedProxies);
    let server: FastifyInstance | null = null;
    return {
      service,
      mcpTools: SHORTLINK_MCP_TOOLS,
      async adminRoutes(app) {
        registerInspectListing(app, { db: ctx.db, accounts: ctx.accounts }, shortlinkListing(service));
      },
      async routes(app) {
        await app.register(shortlinkRoutes, { service });
      },
      // The public redirect, on its own listener (shortlink.host:port), with the API.
      listeners: [
        {
          name: 'shortlink',
          kind: 'http',
          role: 'api',
          host: cfg.host,
          port: cfg.port,
          open: async () => {
            server = await buildRedirectServer({
              cache,
              limiter,
              recorder,
              addresses,
              rateWindows: ctx.backends.rateWindows,
              cookieKey: ctx.deriveKey('shortlink-cookie'),
              passwordAttemptsPerMinute: cfg.passwordAttemptsPerMinute,
              passwordAttemptsPerLinkPerMinute: cfg.passwordAttemptsPerLinkPerMinute,
              passwordChecks: new PasswordChecks(cfg.passwordChecksAtOnce, cfg.passwordChecksQueued),
              secureCookies: (cfg.baseUrl ?? '').startsWith('https:'),
              clock: Date.now,
            });
            const address = await server.listen({ host: cfg.host, port: cfg.port });
            service.redirectAddress = address;
            service.baseUrl = (cfg.baseUrl ?? address).replace(/\/+$/, '');
            if (!cfg.baseUrl) ctx.warn(`shortlink.baseUrl is not set: short links point at the redirect listener's own address ${address}`);
            ctx.log.info({ address, baseUrl: service.baseUrl }, 'short link redirects listening');
            return address;
          },
          // Closed by the host before stop(): no new clicks, then stop() flushes the clicks it recorded.
          close: async () => {
            await server?.close();
            server = null;
          },
        },
      ],
      async start() {
        loadGeo();
        await redis?.connect();
        await cache.start();
      },
      async stop() {
        await recorder.stop();
      },
      async health() {
        if (redis && redis.status !== 'ready') throw new Error(`short link Redis connection is ${redis.status}`);
      },
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: shortlinkCli,
  historicAdminPaths: SHORTLINK_HISTORIC_ADMIN_PATHS,
};
