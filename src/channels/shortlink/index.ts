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
  scopes: ['shortlink:manage', 'shortlink:read'],
  configKey: 'shortlink',
  dependsOn: ['webhooks'],
  events: {
    'shortlink.click':
      'a short link was visited with GET (data.outcome redirected or expired; data.bot for bots and link previews; country, device, browser, os, referrer host); written with the click batch, about a second after the visit',
  },
  async create(ctx) {
    const cfg = ctx.config.shortlink;
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
    const service = new ShortlinkService(ctx.db, store, cache, limiter, recorder, cfg.denyHosts);
    const addresses = new ClientAddress(cfg.trustedProxies);
    let server: FastifyInstance | null = null;
    return {
      service,
      mcpTools: SHORTLINK_MCP_TOOLS,
      async routes(app) {
        await app.register(shortlinkRoutes, { service });
      },
      async start() {
        loadGeo();
        await redis?.connect();
        await cache.start();
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
      },
      async stop() {
        // The listener first (no new clicks), then the clicks it recorded.
        await server?.close();
        await recorder.stop();
      },
      async health() {
        if (redis && redis.status !== 'ready') throw new Error(`short link Redis connection is ${redis.status}`);
      },
    };
  },
};
