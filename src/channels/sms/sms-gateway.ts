import type { UpstreamConfig } from '../../config/schema.js';
import type { SmsConfig } from './config.js';
import { PricingStore } from '../../billing/pricing-store.js';
import { Gateway } from '../../gateway.js';
import { RouteSwitchStore } from '../../routing/route-switch-store.js';
import { SecretCipher } from '../../security/cipher.js';
import { EMBEDDED_UPSTREAM_WARNING, startEmbeddedUpstream, type EmbeddedUpstream } from '../../sim/smpp/embedded.js';
import { SIMULATOR_UPSTREAM_ID, SimulatorRecord, simulatorDecision } from '../../sim/smpp/simulator-record.js';
import { UpstreamStore } from '../../smpp/upstream/upstream-store.js';
import type { ModuleContext } from '../../platform/channel-module.js';
import type { SmsGatewayService } from '../../messaging/sms-gateway-service.js';
import { UssdMoHandlers } from '../../messaging/ussd-mo-handlers.js';
import type { JobSpec } from '../../platform/scheduler.js';

/** How often an instance running the stand-in simulator looks whether another one recorded a real upstream. */
const RETIREMENT_POLL_MS = 2000;

/** A start-up problem of the SMS gateway, reported as the daemon's one-line cause. */
export class SmsStartupError extends Error {
  override readonly name = 'SmsStartupError';
}

/** What the SMS module gives the daemon (admin API) and the modules that depend on it (OTP). */
export interface SmsGateway extends SmsGatewayService {
  gateway: Gateway;
  upstreamStore: UpstreamStore;
  pricing: PricingStore;
  routeSwitches: RouteSwitchStore;
  /** The simulated upstream, when it runs (nothing it takes leaves the machine); started by the SMS module's start(). */
  embeddedUpstream: EmbeddedUpstream | null;
  /** Config-file upstreams by id (the admin API reverts runtime overrides to these). */
  configUpstreams: ReadonlyMap<string, UpstreamConfig>;
  /** The country local numbers are read in when the account sets none (sms.defaultCountry); OTP and USSD read numbers with it. */
  defaultCountry: string | null;
  /** Where USSD dialogue messages from upstreams go: OTP's fallback and the USSD module register here. */
  ussd: UssdMoHandlers;
}

/** The embedded simulator as an upstream: a couple of binds with room for a real load test. */
function embeddedUpstreamConfig(e: Pick<EmbeddedUpstream, 'host' | 'port' | 'systemId' | 'password'>): UpstreamConfig {
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

/** The SMS gateway as the module's create builds it: its service, its jobs, and the start that loads and binds. */
export interface BuiltSmsGateway {
  readonly service: SmsGateway;
  /** Jobs known from the config (the gateway's are added by the module). */
  readonly jobs: readonly JobSpec[];
  /**
   * The upstreams (config file, then runtime ones from the admin API), the embedded simulator when no real upstream
   * exists, and the stored price table and route switches, applied before the gateway takes its first message: a
   * restart must not price or route even one message by the config file's defaults. What it opened is handed to
   * `onClose` as it opens, so a start that fails halfway is closed by the module's stop.
   */
  start(onClose: (name: string, close: () => Promise<unknown>) => void): Promise<void>;
}

/** Builds the gateway and the stores of its state without I/O (the module's create); `start` loads and starts them. */
export function buildSmsGateway(ctx: ModuleContext): BuiltSmsGateway {
  // The simulator is an upstream: it runs with the binds, in the smpp role; other roles only route to it.
  const binds = ctx.roles.has('smpp');
  const { config, log, db } = ctx;
  // Upstreams added through the admin API live in the settings table, their passwords encrypted with a key
  // derived from the secret key; they override config-file entries of the same id.
  const upstreamKey = ctx.deriveKey('upstream-password');
  const upstreamStore = new UpstreamStore(db, new SecretCipher({ current: { id: SecretCipher.keyIdOf(upstreamKey), key: upstreamKey } }), {
    onUnreadable: (id, reason) => ctx.warn(`runtime upstream ${id} skipped: ${reason}`),
  });
  const simulatorRecord = new SimulatorRecord(db);
  const simMode = config.smpp.simulator.enabled;
  const ussd = new UssdMoHandlers();
  const bodyKey = ctx.deriveKey('message-body');
  const gateway = new Gateway({
    config,
    sms: ctx.section<SmsConfig>(),
    log: ctx.rootLog,
    metrics: ctx.metrics,
    backends: ctx.backends,
    accounts: ctx.accounts,
    sealer: new SecretCipher({ current: { id: SecretCipher.keyIdOf(bodyKey), key: bodyKey } }),
    // Sessions arriving before a handler is registered (start-up) get no answer.
    onUssd: ussd.dispatch,
    roles: ctx.roles,
    onSimulatorRetired: (upstreamId) => {
      ctx.unwarn(EMBEDDED_UPSTREAM_WARNING);
      ctx.warn(`the embedded simulator was retired when real upstream ${upstreamId} was added: it takes no new messages and is not started again`);
      void simulatorRecord.retire(upstreamId).catch((err: Error) => log.error({ err: err.message }, 'could not record that a real upstream exists; a restart may start the simulator again'));
    },
  });
  const pricing = new PricingStore(db, gateway.prices, ctx.rootLog.child({ component: 'pricing' }));
  // Route switches survive restarts and reach every instance sharing the database.
  const routeSwitches = new RouteSwitchStore(db, gateway.router, ctx.rootLog.child({ component: 'routing' }));
  const service: SmsGateway = {
    gateway,
    upstreamStore,
    pricing,
    routeSwitches,
    embeddedUpstream: null,
    configUpstreams: new Map(config.smpp.upstreams.map((u) => [u.id, u])),
    defaultCountry: ctx.section<SmsConfig>().defaultCountry,
    ussd,
  };

  // Another instance sharing the database may add a real upstream: its record retires this instance's stand-in too.
  // Declared with `auto`; it looks only while the stand-in runs here (start decides).
  let standingIn = false;
  const jobs: JobSpec[] = [];
  if (simMode === 'auto') {
    jobs.push({
      name: 'sms.simulator-retirement',
      everyMs: RETIREMENT_POLL_MS,
      scope: 'instance',
      roles: ['api', 'smpp'],
      run: async () => {
        if (!standingIn) return;
        const r = await simulatorRecord.read(); // the database is down: the next look will tell
        if (!r) return;
        gateway.retireSimulator(r.upstream);
        standingIn = false;
      },
    });
  }

  return {
    service,
    jobs,
    async start(onClose) {
      const upstreams: UpstreamConfig[] = UpstreamStore.merge(config.smpp.upstreams, await upstreamStore.load());
      const real = upstreams.map((u) => u.id);
      if (real.includes(SIMULATOR_UPSTREAM_ID)) throw new SmsStartupError(`upstream id ${SIMULATOR_UPSTREAM_ID} is reserved for the embedded SMSC simulator; rename that upstream`);
      let retired = await simulatorRecord.read();
      if (real.length && !retired) {
        await simulatorRecord.retire(real[0]);
        retired = await simulatorRecord.read();
      }
      const decision = simulatorDecision(simMode, real, retired);
      if (decision.start && !binds) {
        upstreams.push(embeddedUpstreamConfig({ host: '127.0.0.1', port: 0, systemId: '', password: '' }));
      } else if (decision.start) {
        const sim = await startEmbeddedUpstream({
          logger: log.child({ component: 'embedded-upstream' }),
          behaviour: { receiptDelayMs: config.smpp.simulator.receiptDelayMs },
          warn: !real.length,
        });
        onClose('embedded upstream', () => sim.close());
        service.embeddedUpstream = sim;
        if (!real.length) ctx.warn(sim.warning);
        upstreams.push(embeddedUpstreamConfig(sim));
      } else if (!real.length) {
        ctx.warn(`NO UPSTREAM: the embedded simulator is not started (${decision.reason}); messages are refused with NO_ROUTE until an upstream is added`);
      }
      log.info({ simulator: decision.start ? 'running' : 'off', reason: decision.reason }, 'embedded SMSC simulator');
      gateway.useUpstreams(upstreams, decision.start ? { id: SIMULATOR_UPSTREAM_ID, explicit: simMode === 'on' } : null);
      try {
        await pricing.restore();
        await routeSwitches.restore();
      } catch (err) {
        throw new SmsStartupError(`SMPP gateway: ${(err as Error).message}`);
      }
      gateway.clearSimulatorSwitches('restore');
      standingIn = decision.start && simMode === 'auto';
    },
  };
}
