// The SMS module's lifecycle: create() builds the gateway (nothing loaded, nothing listening); start() loads the
// upstreams, starts the embedded simulator and restores the stored state before the binds. A start that fails after
// the simulator listens leaves it to stop(), which the daemon runs for every created module: nothing stays open.
import { connect } from 'node:net';
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { AccountService } from '../../../src/accounts/account-service.js';
import { CHANNEL_MODULES } from '../../../src/channels/index.js';
import { smsModule } from '../../../src/channels/sms/index.js';
import type { SmsGateway } from '../../../src/channels/sms/sms-gateway.js';
import { loadConfig } from '../../../src/config/load.js';
import { createLogger } from '../../../src/log.js';
import { Metrics } from '../../../src/metrics.js';
import { ModuleHost, type CoreContext } from '../../../src/platform/module-host.js';
import { ModulePlatform } from '../../../src/platform/module-platform.js';
import { OutboundRegistry } from '../../../src/platform/outbound-registry.js';
import { TargetGuard } from '../../../src/security/target-guard.js';
import type { Db } from '../../../src/store/types.js';
import { openTestBackends } from '../../helpers/backends.js';
import { backendLabel } from '../../helpers/env.js';

/** Whether something accepts a connection on the loopback port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** The SMS module alone on a test database, `db` standing in for it where given. */
async function smsHost(t: Test, db?: (real: Db) => Db) {
  const tb = await openTestBackends();
  t.teardown(() => tb.cleanup());
  const log = createLogger('silent');
  const usedDb = db ? db(tb.tdb.db) : tb.tdb.db;
  const config = loadConfig({ env: { FERRY_DATA_DIR: t.testdir(), FERRY_SMPP_SIMULATOR_ENABLED: 'on' }, modules: CHANNEL_MODULES }).config;
  const platform = new ModulePlatform({ db: usedDb, master: randomBytes(32), redisUrl: null, keyPrefix: 'ferry:', http: new TargetGuard(false), log });
  t.teardown(() => platform.close());
  const host = new ModuleHost([smsModule]);
  const warnings: string[] = [];
  await host.create({
    outbound: new OutboundRegistry(),
    config,
    rootLog: log,
    metrics: new Metrics(),
    db: usedDb,
    backends: tb.backends,
    accounts: new AccountService(usedDb),
    roles: host.roles,
    facilities: platform.forModule,
    mcpTools: () => host.mcpTools(),
    warn: (m) => void warnings.push(m),
    unwarn: () => undefined,
  } as CoreContext);
  return { host, sms: host.service<SmsGateway>('sms'), warnings };
}

t.test(`create() builds the gateway; start() brings the simulator and the upstreams (${backendLabel})`, async (t) => {
  const { host, sms } = await smsHost(t);
  t.equal(sms.embeddedUpstream, null, 'no simulator after create()');
  t.same(sms.gateway.upstreamKinds(), [], 'no upstream known after create()');
  t.same(sms.gateway.router.rules(), [], 'and no default route yet');
  await host.start();
  t.teardown(async () => {
    for (const step of host.stopSteps()) await step.close();
  });
  t.ok(sms.embeddedUpstream, 'the simulator runs after start()');
  t.ok(await listening(sms.embeddedUpstream!.port), 'and listens');
  t.match(sms.gateway.upstreamKinds(), [{ id: 'embedded', kind: 'simulator' }], 'the simulator is the upstream');
  t.match(sms.gateway.router.rules(), [{ id: 'default' }], 'the default route goes to it');
});

t.test(`a start that fails after the simulator listens leaves nothing open once stopped (${backendLabel})`, async (t) => {
  // The stored price table cannot be read: start() fails after the simulator started, before any bind.
  const { host, sms } = await smsHost(t, (real) => ({
    kind: real.kind,
    query: (text, params) => (params?.[0] === 'pricing' ? Promise.reject(new Error('pricing unreadable')) : real.query(text, params)),
    tx: (fn) => real.tx(fn),
    ping: () => real.ping(),
    close: () => real.close(),
  }));
  await t.rejects(host.start(), { name: 'SmsStartupError', message: 'SMPP gateway: pricing unreadable' });
  const sim = sms.embeddedUpstream;
  t.ok(sim, 'the simulator had started');
  t.ok(await listening(sim!.port), 'and listens until the module stops');
  for (const step of host.stopSteps()) await step.close();
  t.notOk(await listening(sim!.port), "the module's stop closed it");
});
