import { readFile } from 'node:fs/promises';
import type { ChannelModule } from '../../platform/channel-module.js';
import { registerInspectListing } from '../../admin/inspect-routes.js';
import { RetryPolicy } from '../../delivery/retry-policy.js';
import { IdempotencyStore } from '../../http/idempotency.js';
import { PushBatchAdapter } from './batch-adapter.js';
import { BatchOutcomes } from './batch-outcomes.js';
import { pushCli } from './cli.js';
import { clientFactory } from './client-factory.js';
import { pushConfigSchema, type PushConfig } from './config.js';
import { PUSH_ERRORS } from './errors.js';
import { FanOut } from './fan-out.js';
import { PausedApps } from './paused-apps.js';
import { PUSH_BATCH_MACHINE, PUSH_EVENTS } from './push-events.js';
import { pushAppListing, pushDeviceListing } from './push-inspect.js';
import { PUSH_MCP_TOOLS } from './push-mcp-tools.js';
import { pushRoutes } from './push-routes.js';
import { PushSends } from './push-sends.js';
import { PushService } from './push-service.js';
import { ProviderClients } from './provider-clients.js';
import { PUSH_SCOPES } from './scopes.js';
import { SendRecorder } from './send-recorder.js';
import { SendsPurge } from './sends-purge.js';
import { pushSimAdminRoutes, pushSimulatorCli } from './sim-cli.js';
import { PushSimulators } from './simulators.js';
import { pushStorage } from './storage.js';

export type { PushService } from './push-service.js';

/** What the module exposes (tests, the bench): apps, devices and topics, sends, and the embedded simulators when they run. */
export interface PushModuleService {
  push: PushService;
  sends: PushSends;
  simulators: PushSimulators | null;
}

export const SIMULATOR_WARNING = 'push: the embedded FCM and APNs simulators stand in for Google and Apple for apps that name no endpoints (push.simulator)';

/**
 * Mobile push (Beta): apps with their FCM and APNs credentials (sealed in the platform's credential store), devices
 * upserted by app and token, topics kept in Ferry, and sends to a device, a user or a topic under /v1/push: batches
 * of devices through the outbound pipeline (providers push-fcm and push-apns), a topic expanded a page per transaction.
 */
export const pushModule: ChannelModule<PushModuleService> = {
  name: 'push',
  maturity: 'beta',
  tag: { name: 'push', description: 'Mobile push (Beta): apps with their FCM and APNs credentials, devices by user and tag, topics; sends through FCM HTTP v1 and APNs' },
  scopes: PUSH_SCOPES,
  config: { key: 'push', schema: pushConfigSchema },
  errors: PUSH_ERRORS,
  dependsOn: ['webhooks'],
  events: PUSH_EVENTS,
  // Storage (issue 43): its migrations and the tables the core vacuums.
  ...pushStorage,
  async create(ctx) {
    const c = ctx.section<PushConfig>();
    const simulators = c.simulator === 'on' || (c.simulator === 'auto' && ctx.db.kind !== 'postgres') ? new PushSimulators() : null;
    const service = new PushService({ db: ctx.db, credentials: ctx.credentials, maxDevicesPerUser: c.maxDevicesPerUser, guard: ctx.http });
    const purge = new SendsPurge({ db: ctx.db, retentionDays: c.retentionDays });
    const outcomes = new BatchOutcomes();
    // Read at start (create does no I/O): the operator's CA for apps' own endpoints.
    let ca: string | undefined;
    const clients = new ProviderClients({ db: ctx.db, credentials: ctx.credentials, build: clientFactory({ simulators, guard: ctx.http, concurrency: c.concurrency, ca: () => ca }) });
    const pipeline = () => ctx.outbound.pipeline;
    const paused = new PausedApps({ db: ctx.db, metrics: ctx.metrics, warn: (m) => ctx.warn(m), unwarn: (m) => ctx.unwarn(m) });
    const recorder = new SendRecorder({
      outcomes,
      events: ctx.events,
      pipeline,
      retry: RetryPolicy.backoff({ baseMs: c.retryBaseMs, maxMs: 10 * 60_000 }),
      maxRounds: c.maxRounds,
      log: ctx.log,
      onPaused: () => void paused.refresh().catch(() => undefined),
    });
    const deadlineMs = c.deadlineSeconds * 1000;
    ctx.outbound.product('push', { machine: PUSH_BATCH_MACHINE, deadlineMs, backoff: { baseMs: 1000, maxMs: 5 * 60_000 }, onChange: recorder.onChange });
    for (const service of ['fcm', 'apns'] as const) {
      ctx.outbound.provider({
        adapter: new PushBatchAdapter(service, { clients, outcomes, concurrency: c.concurrency, pausedRecheckMs: c.pausedRecheckSeconds * 1000 }),
        maxConcurrency: c.batchesInFlight,
        // A batch of 500 devices at 64 in flight takes well under a second; a slow service gets a minute before the batch is tried again.
        sendTimeoutMs: 60_000,
        leaseMs: 120_000,
      });
    }
    const fanOut = new FanOut({ db: ctx.db, pipeline, events: ctx.events, log: ctx.log, pageSize: c.fanOutPageSize, batchSize: c.batchSize, simulatedApns: simulators !== null, pollMs: 250, deadlineMs });
    const sends = new PushSends({ db: ctx.db, pipeline, fanOut, batchSize: c.batchSize, maxDevicesPerUser: c.maxDevicesPerUser, simulatedApns: simulators !== null, deadlineMs, inlineWaitMs: c.inlineWaitMs });
    const idempotency = new IdempotencyStore(ctx.db);
    const workers = ctx.roles.has('workers');
    return {
      service: { push: service, sends, simulators },
      mcpTools: PUSH_MCP_TOOLS,
      async routes(app) {
        await app.register(pushRoutes, { service, sends, idempotency });
      },
      async adminRoutes(app) {
        registerInspectListing(app, { db: ctx.db, accounts: ctx.accounts }, pushAppListing(service));
        registerInspectListing(app, { db: ctx.db, accounts: ctx.accounts }, pushDeviceListing(service));
        await app.register(pushSimAdminRoutes, { simulators: () => simulators });
      },
      // The simulators listen before the outbound pipeline's workers send (they start after the modules).
      async start() {
        if (c.caFile) ca = await readFile(c.caFile, 'utf8');
        if (simulators) {
          await simulators.start();
          ctx.warn(SIMULATOR_WARNING);
          ctx.log.info({ fcm: simulators.fcm.url, apns: simulators.apns.production.url, apnsSandbox: simulators.apns.sandbox.url }, 'embedded FCM and APNs simulators started');
        }
        if (workers) fanOut.start();
      },
      async stop() {
        await fanOut.stop();
        await clients.close();
        if (simulators) {
          await simulators.stop();
          ctx.unwarn(SIMULATOR_WARNING);
        }
      },
      jobs: [
        {
          name: 'push.purge',
          everyMs: c.purgeIntervalSeconds * 1000,
          scope: 'cluster',
          run: async (signal) => {
            const n = await purge.runOnce(signal);
            if (n) ctx.log.info({ sends: n, retentionDays: c.retentionDays }, 'push sends past retention deleted');
          },
        },
        // Apps whose credentials a service refused: a metric and a /readyz warning on every instance, until they change.
        { name: 'push.paused-apps', everyMs: 5_000, scope: 'instance', roles: ['api', 'workers'], runAtStart: true, run: () => paused.refresh() },
      ],
    };
  },
  cli: pushCli,
  simulators: [{ name: 'push', description: 'FCM and APNs simulators: run them standalone with credentials to upload, or show what the embedded ones received', cli: pushSimulatorCli }],
};
