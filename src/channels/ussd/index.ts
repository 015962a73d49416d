import type { ChannelModule } from '../../platform/channel-module.js';
import { USSD_MCP_TOOLS } from './ussd-mcp-tools.js';
import type { SmsGatewayService } from '../../messaging/sms-gateway-service.js';
import type { OtpService } from '../otp/index.js';
import { aggregatorRoutes } from './dialects/aggregators.js';
import { SmppUssdDialect } from './dialects/smpp-binds.js';
import { RedisLiveSessions, SqlLiveSessions, type LiveSessions } from './live-sessions.js';
import { displayCode } from './service-code.js';
import type { ReservedCodes } from './reserved-codes.js';
import { UssdCore } from './session-core.js';
import { SessionStore } from './session-store.js';
import { USSD_EVENTS } from './ussd-events.js';
import { UssdMetrics } from './ussd-metrics.js';
import { ussdRoutes } from './ussd-routes.js';
import { UssdStore } from './ussd-store.js';
import { ussdConfigSchema, type UssdConfig } from './config.js';
import { USSD_ERRORS } from './errors.js';
import { USSD_SCOPES } from './scopes.js';
import { appSigningSecret, WebhookAppClient } from './webhook-app.js';
import { ussdStorage } from './storage.js';
import { dialCommand, ussdCli } from './cli.js';
import { ussdAdminRoutes } from './ussd-admin-routes.js';

/** What other parts (tests, bench, CLI) reach: the core and its stores. */
export interface UssdService {
  core: UssdCore;
  store: UssdStore;
  sessions: SessionStore;
  live: LiveSessions;
  /** Codes the platform answers itself on every ingress (the OTP fallback registers here). */
  reserved: ReservedCodes;
  /** Sets the clock (tests). */
  setClock(clock: () => number): void;
}

/**
 * USSD: menu trees and webhook apps behind claimed service codes; sessions from the carrier's SMPP binds and from
 * aggregators (Africa's Talking, Hubtel); reserved codes (the OTP fallback) answered first on each; transcripts and events.
 */
export const ussdModule: ChannelModule<UssdService> = {
  name: 'ussd',
  maturity: 'beta',
  tag: { name: 'ussd', description: 'USSD: menu trees and webhook apps behind service codes, sessions over SMPP and aggregators, transcripts' },
  scopes: USSD_SCOPES,
  config: { key: 'ussd', schema: ussdConfigSchema },
  errors: USSD_ERRORS,
  events: USSD_EVENTS,
  dependsOn: ['sms', 'webhooks', 'otp'],
  // Storage (issue 43): its migrations and its tables' retention and vacuuming.
  ...ussdStorage,
  async create(ctx) {
    const cfg = ctx.section<UssdConfig>();
    let clock: () => number = Date.now;
    const now = () => clock();
    const sms = ctx.use<SmsGatewayService>('sms');
    const store = new UssdStore(ctx.db, now);
    const sessions = new SessionStore(ctx.db);
    const signingKey = ctx.deriveKey('ussd-app-signing');
    // Live sessions between hops: in Redis with a TTL when the daemon has Redis, else in their SQL rows.
    // Connected in start(), before this module takes SMPP sessions.
    const liveRedis = ctx.backends.kind === 'redis' ? ctx.redis.client('live-sessions') : null;
    const redisLive = liveRedis ? new RedisLiveSessions(liveRedis, ctx.redis.keyPrefix, sessions, cfg.sessionTimeoutSeconds * 2000 + 60_000) : null;
    const live: LiveSessions = redisLive ?? new SqlLiveSessions(ctx.db, sessions);
    const apps = new WebhookAppClient({ guard: ctx.http, timeoutMs: cfg.appTimeoutMs, signingKey, clock: now });
    const core = new UssdCore({
      db: ctx.db,
      store,
      sessions,
      live,
      ask: (accountId, url, dialect, hop) => apps.ask(accountId, url, dialect, hop),
      events: { insertMany: (q, events) => ctx.events.emit(q, events), wake: () => ctx.events.wake() },
      clock: now,
      apology: cfg.apology,
      unknownCodeText: cfg.unknownCodeText,
      sessionTimeoutMs: cfg.sessionTimeoutSeconds * 1000,
      resumeWindowMs: cfg.resumeMinutes * 60_000,
      log: ctx.log,
      metrics: new UssdMetrics(ctx.metrics.registry),
    });
    const smpp = new SmppUssdDialect({ core, pool: sms.gateway.pool, log: ctx.log });
    // The OTP fallback's code (published on the OTP service) is a reserved code of the core: answered before any claim
    // on every ingress (SMPP, aggregators, simulate). USSD then takes every SMPP session, the OTP code's too.
    const otpFallback = ctx.use<OtpService>('otp').ussdFallback;
    if (otpFallback) {
      try {
        core.reserved.register(otpFallback.reservedHandler());
      } catch (err) {
        ctx.log.warn({ err: (err as Error).message }, 'USSD: the OTP fallback code is not served (otp.ussdServiceCode is not a service code)');
      }
    }
    let unregisterUssd: (() => void) | null = null;

    return {
      service: {
        core,
        store,
        sessions,
        live,
        reserved: core.reserved,
        setClock(c) {
          clock = c;
        },
      },
      mcpTools: USSD_MCP_TOOLS,
      async adminRoutes(app) {
        await ussdAdminRoutes(app, { db: ctx.db, accounts: ctx.accounts, sessions, simulator: () => sms.embeddedUpstream?.simulator ?? null });
      },
      // Idle dialogues end with NETWORK_TIMEOUT; each instance sweeps where dialogues arrive (SMPP binds, the HTTP API).
      jobs: [
        {
          name: 'ussd.idle-sweep',
          everyMs: cfg.sweepSeconds * 1000,
          scope: 'instance',
          roles: ['api', 'smpp'],
          run: () => core.sweep(),
        },
      ],
      async routes(app) {
        await app.register(ussdRoutes, {
          store,
          sessions,
          live,
          core,
          guard: ctx.http,
          reserved: core.reserved,
          defaultCountry: sms.defaultCountry,
          signingSecret: (accountId) => appSigningSecret(signingKey, accountId),
        });
        await app.register(aggregatorRoutes, { core, store, db: ctx.db });
      },
      async start() {
        await redisLive?.connect();
        // From here on the SMPP sessions are this module's (before, OTP's fallback answers its code; others get no answer).
        unregisterUssd = sms.ussd.register({ name: 'ussd', handle: smpp.handle });
        // The SMS module started first: its embedded simulator runs by now, or not at all.
        if (sms.embeddedUpstream && !ctx.config.smpp.upstreams.length) {
          ctx.warn("USSD: carrier sessions come only from the embedded SMSC simulator (dial one with `ferry ussd dial '*384#' --phone …`); aggregators still reach /v1/ussd/in/{connector}");
        }
        // Overlapping claims of different accounts are refused now; any kept from before route to the older claim's
        // account (store.route). Name them so an operator can release one.
        const overlaps = await store.overlaps().catch((err: Error) => (ctx.log.warn({ err: err.message }, 'USSD: overlapping claims not checked'), []));
        for (const o of overlaps) {
          ctx.log.warn(
            { older: { code: displayCode(o.older.code), account: o.older.accountId, id: o.older.id }, newer: { code: displayCode(o.newer.code), account: o.newer.accountId, id: o.newer.id } },
            "USSD: overlapping service codes of two accounts (claimed before overlaps were refused); dials reach the older claim's account",
          );
        }
      },
      async stop() {
        unregisterUssd?.();
        await smpp.close();
        apps.close();
        await live.close();
      },
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: ussdCli,
  // The handset on the embedded SMSC simulator: `ferry sim ussd` is `ferry ussd dial`.
  simulators: [{ name: 'ussd', description: 'USSD handset on the embedded SMSC simulator (as ferry ussd dial)', cli: dialCommand }],
};
