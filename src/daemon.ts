import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AccountService } from './accounts/account-service.js';
import { KeyService } from './accounts/key-service.js';
import { adminRoutes } from './admin/admin-routes.js';
import type { FerryConfig } from './config/schema.js';
import { createApp, errorCatalogueMarkdown } from './http/app.js';
import authPlugin from './http/auth.js';
import { registerOpenApiRoute } from './http/openapi.js';
import { accountRoutes } from './http/routes/account.js';
import { smsRoutes } from './channels/sms/sms-routes.js';
import type { DeliveryJob } from './channels/webhooks/webhook-fan-out.js';
import { webhookRoutes } from './channels/webhooks/webhook-routes.js';
import { WebhookService } from './channels/webhooks/webhook-service.js';
import { privateTargetsAllowed } from './channels/webhooks/target-guard.js';
import { OtpMetrics } from './channels/otp/otp-metrics.js';
import { otpRoutes } from './channels/otp/otp-routes.js';
import { OtpService } from './channels/otp/otp-service.js';
import { UssdOtpFallback } from './channels/otp/ussd-otp-fallback.js';
import { IdempotencyStore } from './http/idempotency.js';
import { healthRoutes } from './http/routes/health.js';
import { Metrics } from './metrics.js';
import { deriveKey, loadAdminToken, loadSecretKey } from './security/secrets.js';
import { openBackends } from './store/backends.js';
import { openDb, redactUrl } from './store/sql/db.js';
import { TableMaintenance } from './store/sql/table-maintenance.js';
import { migrate } from './store/sql/migrate.js';
import { EMBEDDED_UPSTREAM_WARNING, startEmbeddedUpstream, type EmbeddedUpstream } from './smpp/sim/embedded.js';
import { SIMULATOR_UPSTREAM_ID, SimulatorRecord, simulatorDecision } from './smpp/sim/simulator-record.js';
import { Gateway } from './gateway.js';
import type { UpstreamConfig } from './config/schema.js';
import { RouteSwitchStore } from './routing/route-switch-store.js';
import { PricingStore } from './billing/pricing-store.js';
import { SecretCipher } from './security/cipher.js';
import { UpstreamStore } from './smpp/upstream/upstream-store.js';
import type { Backends, Db } from './store/types.js';
import { lockDataDir } from './util/lock.js';
import { VERSION } from './version.js';

/** A start-up failure with one line that names the cause. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

export interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
  warnings: string[];
  /** Every upstream, real or the embedded simulator, and whether it takes new traffic. */
  upstreams: ReturnType<Gateway['upstreamKinds']>;
}

const API_DESCRIPTION = `Ferry's REST API: one base address and one authentication scheme for every channel.

Every response, success or error, is the envelope { success, code, message, data, requestId }; the request id
(prefix req_) is also in the X-Request-Id header. Authenticate with \`Authorization: Basic base64(keyId:secret)\`
(or \`Bearer\` with the same token). Rate limits answer 429 with a Retry-After header.

## Error codes

${errorCatalogueMarkdown()}
`;

async function listen(app: FastifyInstance, name: string, host: string, port: number): Promise<string> {
  try {
    return await app.listen({ host, port });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new StartupError(`${name} listener: ${host}:${port} is already in use`);
    if (code === 'EACCES') throw new StartupError(`${name} listener: no permission to listen on ${host}:${port}`);
    if (code === 'EADDRNOTAVAIL') throw new StartupError(`${name} listener: address ${host} is not available on this machine`);
    throw new StartupError(`${name} listener on ${host}:${port}: ${(err as Error).message}`);
  }
}

/** The embedded simulator as an upstream: a couple of binds with room for a real load test. */
function embeddedUpstreamConfig(e: EmbeddedUpstream): UpstreamConfig {
  return {
    id: SIMULATOR_UPSTREAM_ID,
    host: e.host,
    port: e.port,
    tls: false,
    systemId: e.systemId,
    password: e.password,
    systemType: '',
    bindMode: 'transceiver',
    binds: 2,
    window: 200,
    maxTps: 0,
    enquireLinkSeconds: 30,
    responseTimeoutMs: 10_000,
    reconnect: { initialMs: 200, maxMs: 5000 },
    destTon: 1,
    destNpi: 1,
    defaultDataCoding: 0,
    usePayloadTlv: false,
    receiptIdFormat: 'as-is',
  };
}

/** The whole process: storage, services, listeners, and the order they stop in. */
export class Daemon {
  readonly metrics = new Metrics();
  readonly warnings: string[] = [];
  db!: Db;
  backends!: Backends;
  accounts!: AccountService;
  keys!: KeyService;
  api!: FastifyInstance;
  admin!: FastifyInstance;
  gateway!: Gateway;
  upstreamStore!: UpstreamStore;
  routeSwitches!: RouteSwitchStore;
  pricing!: PricingStore;
  otp!: OtpService;
  webhooks!: WebhookService;
  ussdOtp!: UssdOtpFallback;
  addresses: { http: string; admin: string; smpp: string; smppTls: string | null } = { http: '', admin: '', smpp: '', smppTls: null };
  /** The simulated upstream started when no real upstream is configured (nothing leaves the machine). */
  embeddedUpstream: EmbeddedUpstream | null = null;
  private unlock: (() => void) | null = null;
  private stopping: Promise<void> | null = null;
  private readonly closers: { name: string; close: () => Promise<unknown> }[] = [];

  private constructor(
    readonly config: FerryConfig,
    readonly log: Logger,
  ) {}

  static async start(config: FerryConfig, log: Logger): Promise<Daemon> {
    const d = new Daemon(config, log);
    try {
      await d.boot();
    } catch (err) {
      await d.shutdown().catch(() => {});
      throw err;
    }
    return d;
  }

  private async boot(): Promise<void> {
    const { config, log } = this;
    this.unlock = lockDataDir(config.dataDir);
    const adminToken = loadAdminToken(config.dataDir, config.admin.token);
    const master = loadSecretKey(config.dataDir, config.security.secretKey);

    try {
      this.db = await openDb({
        url: config.database.url,
        dataDir: config.dataDir,
        poolSize: config.database.poolSize,
        preparedStatements: config.database.preparedStatements,
        pipeline: config.database.pipeline,
      });
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    this.closers.unshift({ name: 'database', close: () => this.db.close() });
    const applied = await migrate(this.db).catch((err: Error) => {
      throw new StartupError(`database migration failed: ${err.message}`);
    });
    if (applied.length) log.info({ versions: applied.map((m) => m.version) }, 'migrations applied');
    const maintenance = new TableMaintenance({
      db: this.db,
      log: log.child({ component: 'table-maintenance' }),
      intervalSeconds: config.database.maintenanceSeconds,
      onVacuum: (table, seconds, kind) => {
        this.metrics.vacuums.inc({ table, kind });
        this.metrics.vacuumSeconds.inc({ table, kind }, seconds);
      },
    });
    maintenance.start();
    this.closers.unshift({ name: 'table maintenance', close: () => maintenance.stop() });

    try {
      this.backends = await openBackends({ db: this.db, redisUrl: config.redis.url, keyPrefix: config.redis.keyPrefix });
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    this.closers.unshift({ name: 'backends', close: () => this.backends.close() });

    this.accounts = new AccountService(this.db);
    this.keys = new KeyService(this.db, this.accounts, deriveKey(master, 'api-secret'), {
      rotationGraceSeconds: config.auth.rotationGraceSeconds,
      cacheSeconds: config.auth.cacheSeconds,
    });
    this.closers.unshift({ name: 'key usage', close: () => this.keys.flushLastUsed() });

    this.metrics.info.set({ version: VERSION, database: this.db.kind, queue: this.backends.kind }, 1);

    // Upstreams added through the admin API live in the settings table, their passwords encrypted with a key
    // derived from the secret key; they override config-file entries of the same id.
    const upstreamKey = deriveKey(master, 'upstream-password');
    this.upstreamStore = new UpstreamStore(this.db, new SecretCipher({ current: { id: SecretCipher.keyIdOf(upstreamKey), key: upstreamKey } }), {
      onUnreadable: (id, reason) => this.warnings.push(`runtime upstream ${id} skipped: ${reason}`),
    });
    const upstreams: UpstreamConfig[] = UpstreamStore.merge(config.smpp.upstreams, await this.upstreamStore.load());
    const simulatorRecord = new SimulatorRecord(this.db);
    const real = upstreams.map((u) => u.id);
    if (real.includes(SIMULATOR_UPSTREAM_ID)) throw new StartupError(`upstream id ${SIMULATOR_UPSTREAM_ID} is reserved for the embedded SMSC simulator; rename that upstream`);
    let retired = await simulatorRecord.read();
    if (real.length && !retired) {
      await simulatorRecord.retire(real[0]);
      retired = await simulatorRecord.read();
    }
    const simMode = config.smpp.simulator.enabled;
    const decision = simulatorDecision(simMode, real, retired);
    if (decision.start) {
      this.embeddedUpstream = await startEmbeddedUpstream({
        logger: log.child({ component: 'embedded-upstream' }),
        behaviour: { receiptDelayMs: config.smpp.simulator.receiptDelayMs },
        warn: !real.length,
      });
      if (!real.length) this.warnings.push(this.embeddedUpstream.warning);
      this.closers.unshift({ name: 'embedded upstream', close: () => this.embeddedUpstream!.close() });
      upstreams.push(embeddedUpstreamConfig(this.embeddedUpstream));
    } else if (!real.length) {
      this.warnings.push(`NO UPSTREAM: the embedded simulator is not started (${decision.reason}); messages are refused with NO_ROUTE until an upstream is added`);
    }
    log.info({ simulator: decision.start ? 'running' : 'off', reason: decision.reason }, 'embedded SMSC simulator');
    try {
      this.gateway = await Gateway.start({
        config,
        log,
        metrics: this.metrics,
        backends: this.backends,
        accounts: this.accounts,
        upstreams,
        sealer: (() => {
          const key = deriveKey(master, 'message-body');
          return new SecretCipher({ current: { id: SecretCipher.keyIdOf(key), key } });
        })(),
        // Sessions arriving before the OTP service exists (start-up) get no answer.
        onUssd: (mo) => this.ussdOtp?.handle(mo),
        simulator: this.embeddedUpstream ? { id: SIMULATOR_UPSTREAM_ID, explicit: simMode === 'on' } : null,
        onSimulatorRetired: (upstreamId) => {
          const i = this.warnings.indexOf(EMBEDDED_UPSTREAM_WARNING);
          if (i >= 0) this.warnings.splice(i, 1);
          this.warnings.push(`the embedded simulator was retired when real upstream ${upstreamId} was added: it takes no new messages and is not started again`);
          void simulatorRecord.retire(upstreamId).catch((err: Error) => log.error({ err: err.message }, 'could not record that a real upstream exists; a restart may start the simulator again'));
        },
      }, (g) => this.restoreOperatorState(g));
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EADDRINUSE') throw new StartupError(`smpp listener: ${config.smpp.host}:${config.smpp.port} is already in use`);
      throw new StartupError(`SMPP gateway: ${e.message}`);
    }
    this.closers.unshift({ name: 'gateway', close: () => this.gateway.stop(config.shutdown.drainTimeoutMs) });
    const otpMetrics = new OtpMetrics(this.metrics.registry);
    this.otp = new OtpService({
      store: this.backends.otp,
      sms: this.gateway.sms,
      masterKey: master,
      metrics: otpMetrics,
      log: log.child({ component: 'otp' }),
      resendCooldownMs: config.otp.resendCooldownSeconds * 1000,
      requestsPerHour: config.otp.requestsPerHour,
      retainMs: config.otp.expiredRetentionMinutes * 60_000,
    });
    this.ussdOtp = new UssdOtpFallback({
      otp: this.otp,
      pool: this.gateway.pool,
      serviceCode: config.otp.ussdServiceCode,
      log: log.child({ component: 'ussd-otp' }),
      metrics: otpMetrics,
    });
    this.closers.unshift({ name: 'otp', close: async () => (await this.ussdOtp.close(), this.otp.close()) });
    const privateTargets = privateTargetsAllowed(config.webhooks.allowPrivateTargets, {
      httpHost: config.http.host,
      embeddedDatabase: this.db.kind !== 'postgres',
      trustProxy: config.http.trustProxy,
      publicUrl: config.http.publicUrl,
    });
    log.info({ allowed: privateTargets.allowed, reason: privateTargets.reason }, privateTargets.allowed ? 'webhook targets: private and loopback addresses allowed' : 'webhook targets: public https only (SSRF guard on)');
    this.webhooks = new WebhookService({
      db: this.db,
      queue: this.backends.queue<DeliveryJob>('webhooks'),
      masterKey: master,
      config: { ...config.webhooks, allowPrivateTargets: privateTargets.allowed },
      log: log.child({ component: 'webhooks' }),
      registry: this.metrics.registry,
    });
    this.otp.onEvent = this.webhooks.otpHook;
    await this.webhooks.start();
    this.closers.unshift({ name: 'webhooks', close: () => this.webhooks.stop() });
    this.pricing.start();
    this.closers.unshift({ name: 'pricing', close: async () => this.pricing.stop() });
    this.routeSwitches.start();
    this.closers.unshift({ name: 'route switches', close: () => this.routeSwitches.stop() });
    const ports = this.gateway.server.ports;
    this.addresses.smpp = `${config.smpp.host}:${ports.plain}`;
    this.addresses.smppTls = ports.tls ? `${config.smpp.host}:${ports.tls}` : null;

    this.api = await this.buildApi();
    this.admin = await this.buildAdmin(adminToken);
    this.addresses.admin = await listen(this.admin, 'admin', config.admin.host, config.admin.port);
    this.closers.unshift({ name: 'admin listener', close: () => this.admin.close() });
    this.addresses.http = await listen(this.api, 'http', config.http.host, config.http.port);
    this.closers.unshift({ name: 'http listener', close: () => this.api.close() });

    log.info(
      {
        version: VERSION,
        http: this.addresses.http,
        admin: this.addresses.admin,
        smpp: this.addresses.smpp,
        smppTls: this.addresses.smppTls,
        database: config.database.url ? redactUrl(config.database.url) : `embedded (${config.dataDir}/pg)`,
        redis: config.redis.url ? redactUrl(config.redis.url) : 'embedded',
        upstreams: this.gateway.upstreamKinds().map(({ id, kind, routable }) => ({ id, kind, routable })),
        simulator: this.embeddedUpstream ? `127.0.0.1:${this.embeddedUpstream.port}` : 'off',
      },
      'ferry started',
    );
  }

  /**
   * The stored price table and route switches, applied before the gateway takes its first message: a restart must
   * not price or route even one message by the config file's defaults.
   */
  private async restoreOperatorState(g: Gateway): Promise<void> {
    this.pricing = new PricingStore(this.db, g.prices, this.log.child({ component: 'pricing' }));
    await this.pricing.restore();
    // Route switches survive restarts and reach every instance sharing the database.
    this.routeSwitches = new RouteSwitchStore(this.db, g.router, this.log.child({ component: 'routing' }));
    await this.routeSwitches.restore();
    g.clearSimulatorSwitches('restore');
  }

  private async buildApi(): Promise<FastifyInstance> {
    const { config } = this;
    const app = await createApp({
      log: this.log,
      metrics: this.metrics,
      bodyLimitBytes: config.http.bodyLimitBytes,
      trustProxy: config.http.trustProxy,
      openapi: { version: VERSION, title: 'Ferry messaging API', description: API_DESCRIPTION, publicUrl: config.http.publicUrl },
    });
    registerOpenApiRoute(app);
    await app.register(authPlugin, {
      keys: this.keys,
      throttle: this.backends.throttle,
      metrics: this.metrics,
      failureLimit: config.auth.failureLimit,
      failureWindowMs: config.auth.failureWindowSeconds * 1000,
      perKeyPerSecond: config.http.rateLimit.perKeyPerSecond,
      burst: config.http.rateLimit.burst,
    });
    await app.register(healthRoutes);
    await app.register(accountRoutes, { accounts: this.accounts });
    const idempotency = new IdempotencyStore(this.db);
    const purge = setInterval(() => void idempotency.purge().catch(() => undefined), 3_600_000);
    purge.unref();
    this.closers.unshift({ name: 'idempotency purge', close: async () => clearInterval(purge) });
    await app.register(smsRoutes, {
      sms: this.gateway.sms,
      ledger: this.gateway.ledger,
      idempotency,
      db: this.db,
      showUpstreams: config.sms.showUpstreams,
      scheduleHorizonDays: config.sms.scheduleHorizonDays,
    });
    await app.register(webhookRoutes, { webhooks: this.webhooks });
    await app.register(otpRoutes, {
      otp: this.otp,
      defaultCountry: config.sms.defaultCountry,
      defaultSender: config.otp.defaultSender,
      resendCooldownSeconds: config.otp.resendCooldownSeconds,
      requestsPerHour: config.otp.requestsPerHour,
      ussdServiceCode: config.otp.ussdServiceCode,
    });
    return app;
  }

  private async buildAdmin(token: string): Promise<FastifyInstance> {
    const app = await createApp({ log: this.log, metrics: this.metrics, bodyLimitBytes: this.config.http.bodyLimitBytes });
    app.get('/livez', async () => ({ status: 'alive' }));
    app.get('/readyz', async (_req, reply) => {
      const r = await this.readiness();
      reply.code(r.ready ? 200 : 503);
      return { status: r.ready ? 'ready' : 'not ready', ...r };
    });
    app.get('/metrics', async (_req, reply) => {
      await this.readiness();
      reply.type(this.metrics.registry.contentType);
      return this.metrics.registry.metrics();
    });
    const g = this.gateway;
    const fromFile = new Map(this.config.smpp.upstreams.map((u) => [u.id, u]));
    await app.register(adminRoutes, {
      token,
      accounts: this.accounts,
      keys: this.keys,
      gateway: {
        router: g.router,
        pool: g.pool,
        ledger: g.ledger,
        outbox: g.outbox,
        accounts: this.accounts,
        upstreamStore: this.upstreamStore,
        configUpstreamIds: new Set(fromFile.keys()),
        configUpstream: (id) => fromFile.get(id),
        onOwed: () => g.delivery.wake(),
      },
      pricing: { prices: g.prices, store: this.pricing },
      sim: { simulator: () => this.embeddedUpstream?.simulator ?? null },
    });
    return app;
  }

  async readiness(): Promise<Readiness> {
    const checks: Readiness['checks'] = {};
    const probe = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
        checks[name] = { ok: true };
      } catch (err) {
        checks[name] = { ok: false, detail: (err as Error).message };
      }
      this.metrics.backendUp.set({ backend: name }, checks[name].ok ? 1 : 0);
    };
    await probe('database', () => this.db.ping());
    await probe(this.backends.kind === 'redis' ? 'redis' : 'embedded-stores', () => this.backends.ping());
    const ready = !this.stopping && Object.values(checks).every((c) => c.ok);
    return { ready, checks, warnings: this.warnings, upstreams: this.gateway?.upstreamKinds() ?? [] };
  }

  /** Registers something to close on shutdown; later registrations close first. */
  onShutdown(name: string, close: () => Promise<unknown>): void {
    this.closers.unshift({ name, close });
  }

  /** Stops accepting, lets in-flight work finish within the drain timeout, flushes, closes. */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    const deadline = Date.now() + this.config.shutdown.drainTimeoutMs;
    for (const c of this.closers) {
      const left = Math.max(100, deadline - Date.now());
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          c.close(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`did not close within ${left} ms`)), left);
          }),
        ]);
      } catch (err) {
        this.log.warn({ component: c.name, err: (err as Error).message }, 'shutdown step failed');
      } finally {
        clearTimeout(timer);
      }
    }
    this.closers.length = 0;
    this.unlock?.();
    this.unlock = null;
    this.log.info('ferry stopped');
  }
}
