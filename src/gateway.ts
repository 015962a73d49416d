import type { Logger } from 'pino';
import { AccountPolicies } from './accounts/account-policies.js';
import type { AccountService } from './accounts/account-service.js';
import type { NumberValidation } from './numbers/number-validation.js';
import { SmsService } from './messaging/sms-service.js';
import type { DispatchPayload } from './messaging/types.js';
import type { FerryConfig, RouteRuleConfig, UpstreamConfig } from './config/schema.js';
import { Billing } from './billing/billing.js';
import { PriceBook } from './billing/price-book.js';
import { DispatchMetrics } from './dispatch/dispatch-metrics.js';
import { Dispatcher } from './dispatch/dispatcher.js';
import { QueueFeeder } from './dispatch/queue-feeder.js';
import { Reconciler } from './dispatch/reconciler.js';
import { EventOutbox } from './events/event-outbox.js';
import { AccountMessageMetrics } from './ledger/account-metrics.js';
import { Ledger } from './ledger/ledger.js';
import { LedgerWriter } from './ledger/ledger-writer.js';
import type { Metrics } from './metrics.js';
import { CustomerDelivery } from './receipts/customer-delivery.js';
import { CustomerOutbox } from './receipts/customer-outbox.js';
import { ReceiptService } from './receipts/receipt-service.js';
import { Router } from './routing/router.js';
import { addressBudgetPolicy, bindGuardPolicy } from './smpp/customer/bind-guard.js';
import { CustomerMetrics } from './smpp/customer/customer-metrics.js';
import { CustomerServer } from './messaging/smpp-ingress/customer-server.js';
import { ReceiptCorrelator } from './smpp/upstream/receipt-correlator.js';
import { ReceiptQueryStore } from './smpp/upstream/receipt-query-store.js';
import { ReceiptQuerySweep } from './smpp/upstream/receipt-query-sweep.js';
import { SqlCorrelationStore } from './smpp/upstream/sql-correlation-store.js';
import { UpstreamMetrics } from './smpp/upstream/upstream-metrics.js';
import type { UpstreamMo } from './smpp/upstream/outbound.js';
import { UpstreamPool } from './smpp/upstream/upstream-pool.js';
import type { Backends, Queue } from './store/types.js';
import { RoleSet } from './platform/roles.js';
import type { JobSpec } from './platform/scheduler.js';

export interface GatewayDeps {
  config: FerryConfig;
  /** The SMS module's config section: the ingress defaults of number reading. */
  sms: { defaultCountry: string | null; numberValidation: { smpp: NumberValidation; rest: NumberValidation } };
  log: Logger;
  metrics: Metrics;
  backends: Backends;
  accounts: AccountService;
  /** Seals secret message texts (OTP codes) in the ledger. */
  sealer: { encrypt(plain: string): string; decrypt(sealed: string): string };
  /** USSD dialogue messages from upstreams (the OTP USSD fallback). */
  onUssd?: (mo: UpstreamMo) => void | Promise<void>;
  /** A real upstream was added while the stand-in simulator ran: it takes no new traffic from now on. */
  onSimulatorRetired?: (upstreamId: string) => void;
  /**
   * The process roles (default all): upstream binds, dispatch, receipt queries and the customer SMPP server run in
   * `smpp`; the reconciler in `workers`; the pressure sample wherever messages are accepted (`api`, `smpp`).
   */
  roles?: RoleSet;
}

/**
 * Without rules, every message goes to the real upstreams in the order they are configured (primary, then
 * failover). The simulator is the default route only while it is the sole upstream: it never stands beside a real
 * one, so a carrier outage cannot fail over to it and look like delivery.
 */
/**
 * The embedded SMSC simulator among the upstreams, when it runs: its id, and whether the operator enabled it by name
 * (`smpp.simulator.enabled: on`) rather than it standing in for missing upstreams (`auto`).
 */
export interface SimulatorUpstream {
  id: string;
  explicit: boolean;
}

export function defaultRules(config: FerryConfig, upstreamIds: readonly string[], simulatorId: string | null = null): RouteRuleConfig[] {
  if (config.routing.rules.length) return config.routing.rules;
  const real = upstreamIds.filter((id) => id !== simulatorId);
  const ids = real.length ? real : upstreamIds;
  return ids.length ? [{ id: 'default', match: {}, upstreams: [...ids] }] : [];
}

/**
 * The message path, assembled: SMPP server and SMS service (ingress) → ledger → queue → dispatcher → router →
 * upstream pool, and receipts back through the ledger to the customer outbox. Started and stopped as one.
 */
export class Gateway {
  readonly ledger: Ledger;
  readonly writer: LedgerWriter;
  readonly queue: Queue<DispatchPayload>;
  readonly feeder: QueueFeeder<DispatchPayload>;
  readonly router: Router;
  readonly pool: UpstreamPool;
  readonly outbox: CustomerOutbox;
  /** Webhook events, written by the ledger effect and the MO transaction. */
  readonly events = new EventOutbox();
  readonly receipts: ReceiptService;
  readonly dispatcher: Dispatcher;
  readonly reconciler: Reconciler;
  /** query_sm for messages whose receipt is overdue (lost with a bind a crash closed). */
  readonly receiptQueries: ReceiptQuerySweep;
  readonly sms: SmsService;
  readonly policies: AccountPolicies;
  readonly prices: PriceBook;
  readonly billing: Billing;
  /** Maps upstream message ids to Ferry's (the pool's), kept in SQL. */
  readonly correlator: ReceiptCorrelator;
  delivery!: CustomerDelivery;
  server!: CustomerServer;
  private busy = false;
  private pressureTimer: NodeJS.Timeout | undefined;
  /** The simulator stood in for missing upstreams and a real one came: it takes no new traffic in this life. */
  private simulatorRetired = false;
  /** Upstreams to bind to (config file plus runtime ones, or the embedded simulator): set by useUpstreams() at start. */
  private upstreams: readonly UpstreamConfig[] = [];
  private simulator: SimulatorUpstream | null = null;

  /** Builds every part and does no I/O (the SMS module's create): the upstreams come with useUpstreams(), the binds with startWorkers(). */
  constructor(private readonly d: GatewayDeps) {
    const { config, log, metrics, backends } = d;
    const db = backends.db;
    this.outbox = new CustomerOutbox(db);
    this.prices = new PriceBook(config.pricing);
    this.billing = new Billing(db, { refundOnFailure: config.billing.refundOnFailure });
    // One status-change batch at a time by default: while it commits the next one fills, so batches grow with load
    // and each message costs the database less (measured on 2 cores: 4 at once gave 3,900 receipts/s, 1 gave 4,700).
    const accountMetrics = new AccountMessageMetrics(metrics.registry, config.messages.accountMetrics);
    this.ledger = new Ledger(db, {
      effects: [this.outbox.effect, this.billing.effect, this.events.effect],
      transitions: { maxInFlight: db.kind === 'postgres' ? config.database.commitsInFlight : 1 },
      accountMetrics,
    });
    this.writer = new LedgerWriter(db, { accountMetrics });
    this.queue = backends.queue<DispatchPayload>('messages');
    const dispatchMetrics = new DispatchMetrics(metrics.registry, this.queue);
    this.policies = new AccountPolicies(db);
    const prevOnChange = d.accounts.onChange;
    d.accounts.onChange = (id) => {
      prevOnChange(id);
      this.policies.invalidate(id);
    };
    // The operator's rules, or none until the upstreams are known (useUpstreams gives the default route).
    this.router = new Router(defaultRules(config, []), { knowsUpstream: (id) => this.routable(id) });
    this.receipts = new ReceiptService({
      db,
      ledger: this.ledger,
      outbox: this.outbox,
      events: this.events,
      accounts: d.accounts,
      log: log.child({ component: 'receipts' }),
      onOwed: () => this.delivery?.wake(),
      onUssd: d.onUssd,
      submitRecorded: (id) => this.dispatcher?.submitRecorded(id),
    });
    const upstreamMetrics = new UpstreamMetrics(metrics.registry);
    upstreamMetrics.observeRouter(this.router);
    this.correlator = new ReceiptCorrelator(new SqlCorrelationStore(db));
    const poolOptions = {
      throttle: backends.throttle,
      metrics: upstreamMetrics,
      correlator: this.correlator,
      onReceipt: this.receipts.onReceipt,
      onUnmatchedReceipt: this.receipts.onUnmatchedReceipt,
      onMo: this.receipts.onMo,
    };
    // Binds start with the workers (startWorkers), in the smpp role only: until then, and in other roles, routes are
    // checked against the upstream list.
    this.pool = new UpstreamPool(poolOptions);
    this.pool.on('bindState', (upstreamId, bindIndex, state) => log.info({ upstream: upstreamId, bind: bindIndex, state }, 'upstream bind state'));
    this.pool.on('correlationError', (err, messageId) => log.error({ messageId, err: (err as Error).message }, 'receipt correlation not recorded'));
    this.dispatcher = new Dispatcher({
      queue: this.queue,
      ledger: this.ledger,
      router: this.router,
      pool: this.pool,
      log: log.child({ component: 'dispatcher' }),
      metrics: dispatchMetrics,
      open: (sealed) => d.sealer.decrypt(sealed),
      batch: config.dispatch.batch,
      leaseMs: config.dispatch.leaseSeconds * 1000,
      maxQueueMs: config.messages.maxQueueHours * 3_600_000,
    });
    this.feeder = new QueueFeeder(this.queue, {
      onPushed: () => this.dispatcher.wake(),
      onError: (err, count) => log.warn({ err: (err as Error).message, count }, 'queue push failed; the reconciler will push these messages again'),
    });
    this.reconciler = new Reconciler({
      ledger: this.ledger,
      queue: this.queue,
      log: log.child({ component: 'reconciler' }),
      metrics: dispatchMetrics,
      maxAttempts: config.messages.maxAttempts,
      staleMs: config.dispatch.reconcileStaleSeconds * 1000,
      receiptTimeoutMs: config.messages.receiptTimeoutHours * 3_600_000,
      onPushed: () => this.dispatcher.wake(),
      billing: this.billing,
    });
    this.receiptQueries = new ReceiptQuerySweep({
      store: new ReceiptQueryStore(db),
      upstreams: this.pool,
      onReceipt: this.receipts.onReceipt,
      throttle: backends.throttle,
      metrics: upstreamMetrics,
      log: log.child({ component: 'receipt-queries' }),
    });
    this.sms = new SmsService({
      writer: this.writer,
      ledger: this.ledger,
      queue: this.queue,
      feeder: this.feeder,
      router: this.router,
      throttle: backends.throttle,
      policies: this.policies,
      prices: this.prices,
      billing: this.billing,
      sealer: d.sealer,
      defaultCountry: d.sms.defaultCountry,
      numberValidation: d.sms.numberValidation,
      defaultAccountTps: config.messages.defaultAccountTps,
      maxAttempts: config.messages.maxAttempts,
      isBusy: () => this.busy,
    });
  }

  /**
   * The upstreams found at start (config file merged with the stored ones, and the embedded simulator when it runs),
   * before any route is switched or bind started: the default route goes to them.
   */
  useUpstreams(upstreams: readonly UpstreamConfig[], simulator: SimulatorUpstream | null): void {
    this.upstreams = upstreams;
    this.simulator = simulator;
    this.router.setRules(defaultRules(this.d.config, upstreams.map((u) => u.id), simulator?.id ?? null));
    for (const u of upstreams) this.d.metrics.upstreamSimulated.set({ upstream: u.id }, u.id === simulator?.id ? 1 : 0);
  }

  /** Upstreams by kind, for /readyz and the start-up log: which are real, and whether each takes new traffic. */
  upstreamKinds(): Array<{ id: string; kind: 'real' | 'simulator'; routable: boolean; up: boolean }> {
    const simulatorId = this.simulator?.id;
    return this.pool.ids().map((id) => ({ id, kind: id === simulatorId ? 'simulator' : 'real', routable: this.routable(id), up: this.pool.isUp(id) }));
  }

  /** Whether a route may send to this upstream: the simulator only while it is the sole upstream, or named alone by the operator. */
  routable(id: string): boolean {
    const ids = this.binding ? this.pool.ids() : this.upstreams.map((u) => u.id);
    if (!ids.includes(id)) return false;
    const simulatorId = this.simulator?.id;
    if (id !== simulatorId) return true;
    if (this.simulatorRetired) return false;
    return ids.every((other) => other === simulatorId);
  }

  /** Drops route switches that point at the simulator while it may not take traffic (a stored one, or one made before a real upstream came). */
  clearSimulatorSwitches(origin: string): void {
    const simulatorId = this.simulator?.id;
    if (!simulatorId || this.routable(simulatorId)) return;
    for (const r of this.router.rules()) if (r.override === simulatorId) this.router.clearSwitch(r.id, origin);
  }

  /**
   * A real upstream exists (added here, or recorded by another instance sharing the database): the stand-in
   * simulator takes no new traffic for the rest of this process. It keeps its binds so receipts of what it already
   * took come back. No-op when it was enabled by name, or is already retired.
   */
  retireSimulator(upstreamId: string): void {
    const { log } = this.d;
    const { simulator } = this;
    if (!simulator || simulator.explicit || this.simulatorRetired || upstreamId === simulator.id) return;
    this.simulatorRetired = true;
    log.warn({ upstream: upstreamId, simulator: simulator.id }, 'real upstream exists: the embedded simulator takes no new messages from now on');
    this.d.onSimulatorRetired?.(upstreamId);
    this.refreshRoutes();
  }

  private upstreamChanged(upstreamId: string, change: 'added' | 'replaced' | 'removed'): void {
    const { metrics } = this.d;
    const { simulator } = this;
    if (change === 'removed') metrics.upstreamSimulated.remove({ upstream: upstreamId });
    else metrics.upstreamSimulated.set({ upstream: upstreamId }, upstreamId === simulator?.id ? 1 : 0);
    if (change !== 'removed') this.retireSimulator(upstreamId);
    this.refreshRoutes();
  }

  /** The default route follows the pool's routable upstreams; switches to a simulator that may not take traffic go. */
  private refreshRoutes(): void {
    const { config } = this.d;
    const { simulator } = this;
    if (!config.routing.rules.length) {
      const ids = this.pool.ids().filter((id) => this.routable(id));
      this.router.setRules(defaultRules(config, ids, simulator?.id ?? null));
    }
    this.clearSimulatorSwitches('simulator-retired');
  }

  /** The pool holds the upstreams' binds (smpp role, from startWorkers on). */
  private binding = false;

  /** Binds the upstreams and starts the workers of this process's roles (the module's start); the SMPP server opens with its listener. */
  async startWorkers(): Promise<void> {
    this.correlator.start();
    if (this.roles.has('smpp')) {
      for (const u of this.upstreams) this.pool.upsert(u);
      this.binding = true;
      // Changes from here on (the admin API, another instance's record) move routes and the simulator's standing.
      this.pool.on('changed', (upstreamId, change) => this.upstreamChanged(upstreamId, change));
    }
    if (this.roles.has('workers')) {
      // Accepted messages the queue lost track of (a crash between commit and push) go back before anything new; the
      // periodic pass is the job sms.reconcile.
      await this.reconciler.sweep();
    }
    if (this.roles.has('smpp')) this.dispatcher.start();
    if (this.roles.has('api') || this.roles.has('smpp')) {
      this.pressureTimer = setInterval(() => void this.samplePressure(), 500);
      this.pressureTimer.unref();
    }
  }

  /**
   * The gateway's periodic work, run by the platform's scheduler as the SMS module's jobs (each in its roles): the
   * reconciler's pass, query_sm for overdue receipts (on this instance's binds), and the purges of correlation
   * entries and of what no customer bind took within the retention.
   */
  jobs(): JobSpec[] {
    const { config } = this.d;
    return [
      // Pushes and expiries over the whole ledger: one instance at a time suffices.
      { name: 'sms.reconcile', everyMs: config.dispatch.reconcileSeconds * 1000, scope: 'cluster', roles: ['workers'], run: () => this.reconciler.periodic() },
      // Asked on this instance's binds; claims are leased rows and the rate a shared bucket, so every smpp instance asks.
      { name: 'sms.receipt-queries', everyMs: this.receiptQueries.tickMs, scope: 'instance', roles: ['smpp'], run: () => this.receiptQueries.run() },
      { name: 'sms.correlation-purge', everyMs: 600_000, scope: 'cluster', roles: ['workers'], run: () => this.correlator.purge() },
      // Counted in ferry_smpp_customer_deliveries_dropped_total where customer binds are served.
      { name: 'sms.customer-outbox-purge', everyMs: 60_000, scope: 'cluster', roles: ['smpp'], run: async () => this.delivery?.purge() },
    ];
  }

  private get roles(): RoleSet {
    return this.d.roles ?? RoleSet.all();
  }

  /**
   * Opens the customer SMPP server (plain and TLS ports) and starts delivering receipts and MOs to its binds: they go
   * out on the customer's bind, so they run where the binds are. Called by the SMS module's listeners; once.
   */
  openServer(): Promise<CustomerServer> {
    this.opening ??= this.startServer();
    return this.opening;
  }

  /** Closes the customer SMPP server (no new binds, sessions closed); the receipts' delivery stops with the gateway. */
  async closeServer(): Promise<void> {
    const server = await this.opening?.catch(() => null);
    await server?.close();
  }

  private opening: Promise<CustomerServer> | undefined;

  private async startServer(): Promise<CustomerServer> {
    const { config, log, metrics } = this.d;
    const tls = config.smpp.tls.enabled && config.smpp.tls.cert && config.smpp.tls.key ? { port: config.smpp.tls.port, cert: config.smpp.tls.cert, key: config.smpp.tls.key } : null;
    this.server = await CustomerServer.start({
      host: config.smpp.host,
      port: config.smpp.port,
      tls,
      accounts: this.d.accounts,
      sms: this.sms,
      idleTimeoutMs: config.smpp.idleTimeoutSeconds * 1000,
      enquireLinkIntervalMs: config.smpp.enquireLinkSeconds * 1000,
      maxSessions: config.smpp.maxSessions,
      maxSessionsPerAddress: config.smpp.maxSessionsPerAddress,
      bindTimeoutMs: config.smpp.bindTimeoutSeconds * 1000,
      bindGuard: { cooldowns: this.d.backends.cooldowns, policy: bindGuardPolicy(config.smpp.bindGuard), addressPolicy: addressBudgetPolicy(config.smpp.bindGuard) },
      log: log.child({ component: 'smpp-server' }),
      metrics: new CustomerMetrics(metrics.registry),
    });
    this.delivery = new CustomerDelivery({
      outbox: this.outbox,
      binds: this.server.binds,
      log: log.child({ component: 'customer-delivery' }),
      registry: metrics.registry,
      retentionMs: config.smpp.receiptRetentionHours * 3_600_000,
    });
    this.delivery.start();
    return this.server;
  }

  // Saturated = the queue is deeper than maxBacklog and the dispatcher holds every window it can: refuse new work.
  private async samplePressure(): Promise<void> {
    try {
      const st = await this.queue.stats();
      let due = 0;
      for (const l of st.lanes) if (l.lane !== 'receipt') due += l.due;
      this.busy = due > this.d.config.messages.maxBacklog;
    } catch {
      this.busy = false; // storage errors surface on the accept itself
    }
  }

  /** Stops in the order that loses nothing: ingress, then accepts, then sending, then receipts. */
  async stop(drainMs: number): Promise<void> {
    clearInterval(this.pressureTimer);
    await this.closeServer();
    await this.billing.close().catch(() => undefined);
    await this.writer.close().catch(() => undefined);
    await this.feeder.flush();
    if (this.roles.has('workers')) await this.reconciler.stop();
    if (this.roles.has('smpp')) await this.receiptQueries.stop();
    await Promise.all([this.dispatcher.stop(), this.pool.close(Math.min(drainMs, 5000))]);
    await this.delivery?.stop();
    await this.ledger.close();
  }
}
