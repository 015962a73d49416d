import { readFileSync } from 'node:fs';
import { CREDENTIALS_KEY_PURPOSE, credentialsCipherOf, unseal } from './sealed-credentials.js';
import { MESSENGER_MCP_TOOLS } from './messenger-mcp-tools.js';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { IdempotencyStore } from '../../http/idempotency.js';
import type { ChannelModule } from '../../platform/channel-module.js';
import { MessengerSimulator } from '../../sim/messenger/messenger-simulator.js';
import { BusinessNumbers } from './business-numbers.js';
import { MediaChecker } from './media-check.js';
import { messengerAdminRoutes } from './messenger-admin-routes.js';
import { MESSENGER_MACHINE } from './messenger-machine.js';
import { messengerRoutes } from './messenger-routes.js';
import { MessengerService } from './messenger-service.js';
import { messengerWebhookRoutes } from './messenger-webhook-routes.js';
import { MetaCloudAdapter, type MessengerJobPayload } from './providers/meta-cloud.js';
import { MetaGraphClient } from './providers/meta-graph.js';
import { messengerStorage } from './storage.js';
import { messengerConfigSchema, type MessengerConfig } from './config.js';
import { MESSENGER_ERRORS } from './errors.js';
import { MESSENGER_SCOPES } from './scopes.js';
import { messengerSimulatorCli } from '../../sim/messenger/cli.js';
import { registerInspectListing } from '../../admin/inspect-routes.js';
import { messengerCli } from './cli.js';
import { messengerListing } from './messenger-inspect.js';

/** What the module exposes (tests, the CLI, the bench): the service and the embedded simulator when it runs. */
export interface MessengerModuleService {
  messenger: MessengerService;
  simulator: MessengerSimulator | null;
}

export const SIMULATOR_WARNING = 'messenger: the embedded messenger platform simulator stands in for the Cloud API (set messenger.baseUrl for the real one)';

/** The chat-app business channel (spec §2.5, §3.2, §7.2, §8), shaped like the WhatsApp Business Cloud API. */
export const messengerModule: ChannelModule<MessengerModuleService> = {
  name: 'messenger',
  maturity: 'beta',
  tag: { name: 'messenger', description: 'Chat-app messages (Cloud API shaped): text, media, interactive, templates; statuses, number checks, quality' },
  scopes: MESSENGER_SCOPES,
  config: { key: 'messenger', schema: messengerConfigSchema },
  errors: MESSENGER_ERRORS,
  dependsOn: ['webhooks'],
  // Storage (issue 43): its migrations and its tables' retention and vacuuming.
  ...messengerStorage,
  async create(ctx) {
    const c = ctx.section<MessengerConfig>();
    const embedded = c.simulator === 'on' || (c.simulator === 'auto' && !c.baseUrl);
    // Without configured credentials the embedded simulator and Ferry share secrets derived from the master key.
    const derived = (purpose: string) => ctx.deriveKey(`messenger-${purpose}`).toString('hex');
    // A credential may be sealed in the config (`ferry messenger seal` → sealed:…): opened here, never written anywhere.
    const cipher = credentialsCipherOf(ctx.deriveKey(CREDENTIALS_KEY_PURPOSE));
    const opened = (setting: 'accessToken' | 'appSecret' | 'verifyToken') => (c[setting] === null ? null : unseal(cipher, setting, c[setting]));
    const accessToken = opened('accessToken') ?? (embedded ? derived('access-token') : null);
    const appSecret = opened('appSecret') ?? (embedded ? derived('app-secret') : null);
    const verifyToken = opened('verifyToken') ?? derived('verify-token');
    if (!accessToken || !appSecret) throw new Error('messenger: messenger.accessToken and messenger.appSecret are required with messenger.baseUrl');

    const media = new MediaChecker({ guard: ctx.http, ca: c.mediaCaFile ? readFileSync(c.mediaCaFile, 'utf8') : null });

    let api: FastifyInstance | null = null;
    const webhookUrl = () => {
      const a = api?.server.address() as AddressInfo | null | undefined;
      return a && typeof a === 'object' ? `http://127.0.0.1:${a.port}/v1/messenger/webhook` : null;
    };
    const numbers = new BusinessNumbers({
      db: ctx.db,
      accounts: ctx.accounts,
      cipher,
      credentials: ctx.credentials,
      config: { phoneNumberId: c.phoneNumberId, displayNumber: null, wabaId: c.businessAccountId, accessToken, appSecret, verifyToken },
      configAccount: c.account,
    });
    let simulator: MessengerSimulator | null = null;
    if (embedded) {
      simulator = new MessengerSimulator({
        accessToken,
        appSecret,
        phoneNumberId: c.phoneNumberId,
        businessAccountId: c.businessAccountId,
        // The numbers the operator adds are served by the embedded platform too, each with its own credentials.
        numberOf: async (id) => {
          const n = (await numbers.byId(id)) ?? (await numbers.byWaba(id));
          return n && { phoneNumberId: n.phoneNumberId, businessAccountId: n.wabaId, accessToken: n.accessToken, appSecret: n.appSecret, displayPhoneNumber: n.displayNumber };
        },
        webhookUrl,
        statusDelayMs: c.simulatorStatusDelayMs,
        mediaReachable: (url) => media.reachable(url),
      });
    }
    const baseUrl = () => c.baseUrl?.replace(/\/+$/, '') ?? simulator!.url;
    const adapter = new MetaCloudAdapter({ baseUrl, apiVersion: c.apiVersion, phoneNumberId: c.phoneNumberId, accessToken: async (id) => (await numbers.byId(id))?.accessToken ?? null });
    const graph = new MetaGraphClient({ baseUrl, apiVersion: c.apiVersion });
    const service = new MessengerService({
      db: ctx.db,
      log: ctx.log,
      events: ctx.events,
      pipeline: () => ctx.outbound.pipeline,
      media,
      graph,
      numbers,
      phoneNumberId: c.phoneNumberId,
      configWaba: c.businessAccountId,
      inlineAttemptMs: c.inlineAttemptMs,
    });

    ctx.outbound.product('messenger', {
      machine: MESSENGER_MACHINE,
      deadlineMs: 24 * 3_600_000,
      backoff: { baseMs: 500, maxMs: 60_000 },
      eventData: (job: { payload: MessengerJobPayload }) => ({ to: job.payload.to, type: job.payload.type }),
      onChange: service.onChange,
    });
    ctx.outbound.provider({ adapter, maxConcurrency: 32, sendTimeoutMs: 15_000 });
    const idempotency = new IdempotencyStore(ctx.db);

    return {
      service: { messenger: service, simulator },
      mcpTools: MESSENGER_MCP_TOOLS,
      async routes(app) {
        api = app;
        await app.register(messengerRoutes, { service, rateWindows: ctx.backends.rateWindows, idempotency });
        await app.register(messengerWebhookRoutes, { service });
      },
      async adminRoutes(app) {
        await app.register(messengerAdminRoutes, { numbers, simulator: () => simulator });
        registerInspectListing(app, { db: ctx.db, accounts: ctx.accounts }, messengerListing(service));
      },
      // The embedded platform listens from here on: before the outbound pipeline's workers send (they start after the modules).
      async start() {
        if (!simulator) return;
        await simulator.start();
        ctx.warn(SIMULATOR_WARNING);
        ctx.log.info({ simulator: simulator.url }, 'embedded messenger simulator started');
      },
      async stop() {
        await service.drain();
        await simulator?.stop();
        if (simulator) ctx.unwarn(SIMULATOR_WARNING);
      },
    };
  },
  // CLI, simulators and admin paths (issue 43).
  cli: messengerCli,
  simulators: [{ name: 'messenger', description: 'messenger platform simulator: run one standalone, or play the user who replies', cli: messengerSimulatorCli }],
};
