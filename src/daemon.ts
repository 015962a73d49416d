import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AccountService } from './accounts/account-service.js';
import { KeyService } from './accounts/key-service.js';
import { scopeCatalogue } from './accounts/scopes.js';
import { adminRoutes } from './admin/admin-routes.js';
import { CHANNEL_MODULES } from './channels/index.js';
import type { SmsGatewayService } from './messaging/sms-gateway-service.js';
import type { FerryConfig } from './config/schema.js';
import type { Gateway } from './gateway.js';
import { createApp, errorCatalogueMarkdown } from './http/app.js';
import authPlugin from './http/auth.js';
import { registerOpenApiRoute } from './http/openapi.js';
import { CORE_MCP_TOOLS } from './platform/core-mcp-tools.js';
import { accountRoutes } from './http/routes/account.js';
import { healthRoutes } from './http/routes/health.js';
import { Metrics } from './metrics.js';
import type { ChannelModule } from './platform/channel-module.js';
import { ModuleHost } from './platform/module-host.js';
import { OutboundRegistry } from './platform/outbound-registry.js';
import { SqlJobLease, swapLeaseHolder } from './platform/job-lease.js';
import { parseRoles, ROLES, type RoleSet } from './platform/roles.js';
import { Scheduler, type JobSpec } from './platform/scheduler.js';
import { buildModulePlatform } from './platform/build-module-platform.js';
import { credentialAdminRoutes } from './platform/credential-admin-routes.js';
import type { ModulePlatform } from './platform/module-platform.js';
import type { OutboundPipeline } from './outbound/outbound-pipeline.js';
import { OutboundReconciler } from './outbound/outbound-reconciler.js';
import { deriveKey, loadAdminToken, loadSecretKey } from './security/secrets.js';
import type { EmbeddedUpstream } from './sim/smpp/embedded.js';
import { openBackends } from './store/backends.js';
import { loadMigrations, migrate } from './store/sql/migrate.js';
import { openDb, redactUrl } from './store/sql/db.js';
import { ReadDb, type ReadDbOptions } from './store/sql/read-db.js';
import { TableMaintenance } from './store/sql/table-maintenance.js';
import { isPartitioned, partitionWidthDays, RangePartitions } from './store/sql/range-partitions.js';
import { Retention } from './store/sql/retention.js';
import type { Backends, Db } from './store/types.js';
import { lockDataDir } from './util/lock.js';
import { VERSION } from './version.js';
import { LEGACY_TRUST_PROXY } from './http/client-address.js';

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
  /** The process roles, and every module listener with its address when it is open in this process. */
  roles: string;
  listeners: ReturnType<ModuleHost['listeners']>;
}

/** Built when the API starts: the scope and error tables hold what the running modules declared. */
const apiDescription = (): string => `Ferry's REST API: one base address and one authentication scheme for every channel.

Every response, success or error, is the envelope { success, code, message, data, requestId }; the request id
(prefix req_) is also in the X-Request-Id header. Authenticate with \`Authorization: Basic base64(keyId:secret)\`
(or \`Bearer\` with the same token). Rate limits answer 429 with a Retry-After header.

## Scopes

An API key carries scopes; each operation names the one it requires (a key without it gets 403 INSUFFICIENT_SCOPE).
\`all\` grants every scope, including those added by later versions. Scopes of planned products are accepted on keys
today so that keys need not change when those products arrive.

${scopeTableMarkdown()}

## Error codes

${errorCatalogueMarkdown()}
`;

function scopeTableMarkdown(): string {
  return ['| scope | grants |', '|---|---|', ...Object.entries(scopeCatalogue()).map(([scope, what]) => `| \`${scope}\` | ${what} |`)].join('\n');
}

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

/** The whole process: storage, services, listeners, and the order they stop in. */
export class Daemon {
  readonly metrics = new Metrics();
  readonly warnings: string[] = [];
  db!: Db;
  /** Reads that tolerate replica lag (database.readUrl): `db` itself when no read URL is set. */
  readDb!: Db;
  /** The read replica's wrapper, when database.readUrl is set. */
  private replica: ReadDb | null = null;
  backends!: Backends;
  accounts!: AccountService;
  keys!: KeyService;
  api!: FastifyInstance;
  admin!: FastifyInstance;
  /** The products (src/channels/*), booted in dependency order. */
  modules!: ModuleHost;
  /** The outbound pipeline, when a module registered a product or provider in it. */
  outbound: OutboundPipeline | null = null;
  /** Bound addresses; `listeners` has every module listener open here by name (smpp and smppTls are two of them). */
  addresses: { http: string; admin: string; smpp: string; smppTls: string | null; listeners: Record<string, string> } = { http: '', admin: '', smpp: '', smppTls: null, listeners: {} };
  /** The process roles this daemon runs (`ferry start --role`). */
  roles!: RoleSet;
  /** The one scheduler of the modules' periodic jobs. */
  scheduler!: Scheduler;
  private unlock: (() => void) | null = null;
  private stopping: Promise<void> | null = null;
  private readonly closers: { name: string; close: () => Promise<unknown> }[] = [];
  /** The modules' shared facilities (keys, events, Redis clients, pub/sub, guarded HTTP, credentials). */
  platform!: ModulePlatform;

  private constructor(
    readonly config: FerryConfig,
    readonly log: Logger,
  ) {}

  /** The SMS module's gateway (SMPP server, upstream pool, ledger, dispatcher), through the messaging layer's type (tests: test/helpers/daemon.ts). */
  get sms(): SmsGatewayService {
    return this.modules.service<SmsGatewayService>('sms');
  }

  get gateway(): Gateway {
    return this.sms.gateway;
  }

  /** The simulated upstream, when it runs (nothing it takes leaves the machine). */
  get embeddedUpstream(): EmbeddedUpstream | null {
    return this.sms.embeddedUpstream;
  }

  static async start(config: FerryConfig, log: Logger, modules: readonly ChannelModule[] = CHANNEL_MODULES): Promise<Daemon> {
    const d = new Daemon(config, log);
    try {
      d.modules = new ModuleHost(modules);
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
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
    try {
      this.roles = parseRoles(config.roles);
    } catch (err) {
      throw new StartupError(`roles: ${(err as Error).message}`);
    }
    // Split roles hand work to each other through the database and the queues: embedded ones are private to a process.
    if (!this.roles.isAll && (!config.database.url || !config.redis.url)) {
      throw new StartupError(
        `role ${this.roles} runs only part of Ferry, and split roles need shared stores: set database.url (DATABASE_URL, Postgres) and redis.url (REDIS_URL); the embedded database and queues are private to one process`,
      );
    }
    this.modules.roles = this.roles;
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
    this.readDb = this.db;
    if (config.database.readUrl) await this.openReadReplica(config.database.readUrl);
    const applied = await migrate(this.db, loadMigrations(this.modules.migrationFolders())).catch((err: Error) => {
      throw new StartupError(`database migration failed: ${err.message}`);
    });
    if (applied.length) log.info({ versions: applied.map((m) => m.version) }, 'migrations applied');
    const maintenance = new TableMaintenance({
      db: this.db,
      log: log.child({ component: 'table-maintenance' }),
      intervalSeconds: config.database.maintenanceSeconds,
      tables: this.modules.tables(),
      onVacuum: (table, seconds, kind) => {
        this.metrics.vacuums.inc({ table, kind });
        this.metrics.vacuumSeconds.inc({ table, kind }, seconds);
      },
    });
    maintenance.start();
    this.closers.unshift({ name: 'table maintenance', close: () => maintenance.stop() });
    const partitions = new RangePartitions(this.db, log.child({ component: 'partitions' }));
    const retention = new Retention({
      db: this.db,
      log: log.child({ component: 'retention' }),
      config: config.retention,
      tables: this.modules.tables(),
      partitions,
      onPurged: (table, rows) => this.metrics.retentionPurged.inc({ table }, rows),
    });
    // Partitioned tables get their partitions ahead of time before anything writes, then hourly (store.partitions).
    const ensurePartitions = async (): Promise<void> => {
      for (const table of this.modules.tables().filter(isPartitioned)) {
        await partitions.ensure(table, table.partitions.widthDays ?? partitionWidthDays(retention.days(table.retention?.family ?? '')));
      }
    };
    await ensurePartitions().catch((err: Error) => log.warn({ err: err.message }, 'partitions not created ahead; retried hourly (rows go to the default partition meanwhile)'));
    retention.start();
    this.closers.unshift({ name: 'retention', close: () => retention.stop() });

    try {
      this.backends = await openBackends({ db: this.db, redisUrl: config.redis.url, redisCluster: config.redis.cluster, queueShards: config.redis.queueShards, keyPrefix: config.redis.keyPrefix });
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

    // The pipeline stops after every module (they may hand it work while they stop), so its step goes in first.
    const outbound = new OutboundRegistry();
    this.closers.unshift({ name: 'outbound pipeline', close: async () => this.outbound?.stop() });
    // The modules' shared facilities (derived keys, events, Redis clients, pub/sub, guarded HTTP, credentials): their
    // Redis clients close after every module stopped.
    const platform = (this.platform = buildModulePlatform({ config, db: this.db, readDb: this.readDb, master, log }));
    this.closers.unshift({ name: 'module platform', close: () => platform.close() });
    try {
      await this.modules.create({
        outbound,
        config,
        rootLog: log,
        metrics: this.metrics,
        db: this.db,
        backends: this.backends,
        accounts: this.accounts,
        roles: this.roles,
        facilities: platform.forModule,
        mcpTools: () => [...CORE_MCP_TOOLS, ...this.modules.mcpTools()],
        warn: (message) => void this.warnings.push(message),
        unwarn: (message) => {
          const i = this.warnings.indexOf(message);
          if (i >= 0) this.warnings.splice(i, 1);
        },
      });
    } catch (err) {
      throw new StartupError((err as Error).message);
    } finally {
      // Whatever was created stops on shutdown, even when a later module failed to start.
      for (const step of this.modules.stopSteps().reverse()) this.closers.unshift(step);
    }
    this.outbound = outbound.build({ backends: this.backends, log: log.child({ component: 'outbound' }), registry: this.metrics.registry });
    // The core's own periodic jobs, run by the scheduler with the modules' (in their roles).
    const coreJobs: JobSpec[] = [{ name: 'store.partitions', everyMs: 3_600_000, scope: 'cluster', roles: ROLES, run: ensurePartitions }];
    if (this.outbound) {
      // Its pass every reconcileIntervalSeconds is a cluster job: it fails the jobs of the whole outbound_jobs table
      // whose deadline passed while nobody held them.
      const reconciler = new OutboundReconciler({ pipeline: this.outbound, log: log.child({ component: 'outbound-reconciler' }) });
      coreJobs.push({ name: 'outbound.reconcile', everyMs: config.outbound.reconcileIntervalSeconds * 1000, scope: 'cluster', roles: ['workers'], run: () => reconciler.periodic() });
    }
    try {
      await this.modules.start();
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    // The pipeline's senders are workers; other roles only hand it jobs. They start once the modules started the
    // providers they send to (an embedded simulator listens from its module's start on).
    if (this.roles.has('workers')) this.outbound?.start();
    this.addresses.listeners = this.modules.listenerAddresses;
    this.addresses.smpp = this.modules.listenerAddresses.smpp ?? '';
    this.addresses.smppTls = this.modules.listenerAddresses.smppTls ?? null;
    // Jobs stop before the modules do (their first shutdown step), so no job runs against a stopped module.
    const lease = new SqlJobLease(this.db);
    this.scheduler = new Scheduler({ lease, log: log.child({ component: 'scheduler' }), registry: this.metrics.registry });
    const jobs = [...coreJobs.filter((j) => this.roles.any(j.roles ?? ['workers'])), ...this.modules.jobs()];
    for (const job of jobs) this.scheduler.add(job);
    // The cluster leases a crashed earlier life on this data folder still holds are given back, so its jobs run here
    // from their first interval on (a restart of the only instance would otherwise wait them out).
    const previous = swapLeaseHolder(config.dataDir, this.scheduler.holder);
    if (previous) await Promise.all(jobs.filter((j) => j.scope === 'cluster').map((j) => lease.release(j.name, previous).catch(() => undefined)));
    this.scheduler.start();
    this.closers.unshift({ name: 'scheduler', close: () => this.scheduler.stop() });

    // The admin listener (health, metrics) runs in every role; the API listener in the api role.
    this.admin = await this.buildAdmin(adminToken);
    this.addresses.admin = await listen(this.admin, 'admin', config.admin.host, config.admin.port);
    this.closers.unshift({ name: 'admin listener', close: () => this.admin.close() });
    // The realtime role needs the API listener too: its modules' sockets live on that server (with /v1 only in api).
    if (this.roles.has('api') || (this.roles.has('realtime') && this.modules.hasRealtime())) {
      this.api = await this.buildApi();
      await this.modules.attachRealtime(this.api.server);
      this.addresses.http = await listen(this.api, 'http', config.http.host, config.http.port);
      this.closers.unshift({ name: 'http listener', close: () => this.api.close() });
      // Live sockets are told to reconnect elsewhere before the listener closes (it would wait for them otherwise).
      this.closers.unshift({ name: 'realtime drain', close: () => this.modules.drainRealtime() });
    }

    log.info(
      {
        version: VERSION,
        roles: this.roles.toString(),
        listeners: this.addresses.listeners,
        jobs: this.scheduler.names(),
        http: this.addresses.http || null,
        admin: this.addresses.admin,
        smpp: this.addresses.smpp,
        smppTls: this.addresses.smppTls,
        database: config.database.url ? redactUrl(config.database.url) : `embedded (${config.dataDir}/pg)`,
        ...(config.database.readUrl ? { databaseRead: redactUrl(config.database.readUrl) } : {}),
        redis: config.redis.url ? redactUrl(config.redis.url) : 'embedded',
        upstreams: this.gateway.upstreamKinds().map(({ id, kind, routable }) => ({ id, kind, routable })),
        simulator: this.embeddedUpstream ? `127.0.0.1:${this.embeddedUpstream.port}` : 'off',
      },
      'ferry started',
    );
  }

  /**
   * The read-only pool on database.readUrl (half the primary's pool): closed before the primary. An unreachable
   * replica does not stop the start: its reads go to the primary, and /readyz lists a warning until it answers.
   */
  private async openReadReplica(url: string): Promise<void> {
    const { config } = this;
    const unreachable = 'database.readUrl: the read replica is unreachable; lag-tolerant reads go to the primary';
    const options: ReadDbOptions = {
      url,
      primary: this.db,
      open: (readOnly) =>
        openDb({
          url: readOnly,
          dataDir: config.dataDir,
          poolSize: Math.max(1, Math.ceil(config.database.poolSize / 2)),
          preparedStatements: config.database.preparedStatements,
          pipeline: config.database.pipeline,
        }),
      log: this.log.child({ component: 'database-read' }),
      onChange: (up) => {
        this.metrics.backendUp.set({ backend: 'database-read' }, up ? 1 : 0);
        const i = this.warnings.indexOf(unreachable);
        if (up && i >= 0) this.warnings.splice(i, 1);
        if (!up && i < 0) this.warnings.push(unreachable);
      },
    };
    let replica: ReadDb;
    try {
      replica = new ReadDb(options);
    } catch (err) {
      // A read URL that is not a URL (an unreachable replica is not an error).
      throw new StartupError((err as Error).message);
    }
    this.closers.unshift({ name: 'database (read replica)', close: () => replica.close() });
    await replica.start();
    this.replica = replica;
    this.readDb = replica;
  }

  private async buildApi(): Promise<FastifyInstance> {
    const { config } = this;
    if (config.http.trustProxy === LEGACY_TRUST_PROXY) {
      this.log.warn(
        { trustProxy: LEGACY_TRUST_PROXY },
        'http.trustProxy: true is read as [loopback, private]: X-Forwarded-For is believed only as far back as it was written by proxies at ' +
          'those addresses. Name your proxies instead (a list of addresses or CIDR blocks; FERRY_HTTP_TRUST_PROXY comma-separated)',
      );
    }
    const app = await createApp({
      log: this.log,
      metrics: this.metrics,
      bodyLimitBytes: config.http.bodyLimitBytes,
      trustProxy: config.http.trustProxy,
      openapi: {
        version: VERSION,
        title: 'Ferry messaging API',
        description: apiDescription(),
        publicUrl: config.http.publicUrl,
        tags: [{ name: 'account', description: 'Credentials check and the account balance', 'x-maturity': 'stable' }, ...this.modules.tags()],
      },
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
    await this.modules.routes(app);
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
    // Each module's admin routes (SMS's gateway, pricing and simulator, every product's read-only lists, the logs' key
    // statistics) come from the module, under its admin paths (ModuleHost.adminRoutes).
    await app.register(adminRoutes, { token, accounts: this.accounts, keys: this.keys, moduleRoutes: async (app) => {
        await this.modules.adminRoutes(app);
        await app.register(credentialAdminRoutes, { accounts: this.accounts, views: (account, module) => this.platform.credentialViews(account, module) });
      },
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
    // A lost read replica is a warning and the gauge, not a failed check: its reads go to the primary meanwhile.
    if (this.replica) this.metrics.backendUp.set({ backend: 'database-read' }, (await this.replica.probe()) ? 1 : 0);
    // A module that can tell it cannot serve (its provider's credentials refused, its worker dead) says so here.
    if (this.modules) Object.assign(checks, await this.modules.health());
    const ready = !this.stopping && Object.values(checks).every((c) => c.ok);
    return {
      ready,
      checks,
      warnings: this.warnings,
      upstreams: this.modules?.has('sms') ? this.gateway.upstreamKinds() : [],
      roles: this.roles?.toString() ?? 'all',
      listeners: this.modules?.listeners() ?? [],
    };
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
