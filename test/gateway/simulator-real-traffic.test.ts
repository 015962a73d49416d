// The embedded SMSC simulator never carries real traffic: once a real upstream exists (config file or admin API),
// the simulator takes nothing new, is not started again after a restart, and a dead carrier makes messages wait or
// fail, never look delivered.
import t from 'tap';
import { startSimulator } from '../../src/sim/smpp/simulator.js';
import { privateTargetsAllowed } from '../../src/channels/webhooks/target-guard.js';
import { simulatorDecision } from '../../src/sim/smpp/simulator-record.js';
import { accountWithKey, call, startDaemon, gatewayOf, simulatorOf } from '../helpers/daemon.js';
import { startGatewayDaemon } from '../helpers/gateway.js';

const DEST = '233241234567';

async function send(api: string, token: string, message: string) {
  return call(api, 'POST', '/v1/sms/send', { token, body: { to: DEST, from: 'Ferry', message } });
}

async function readyz(admin: string) {
  return (await call(admin, 'GET', '/readyz')).json;
}

t.test('an upstream added through the admin API retires the simulator; after a restart and the upstream dying, nothing is delivered', async (t) => {
  const carrier = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20 });
  let carrierUp = true;
  t.teardown(() => (carrierUp ? carrier.close() : undefined));

  const d1 = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : d1.stop()));
  t.ok(simulatorOf(d1.daemon), 'with no upstream, the simulator runs');
  let r = await readyz(d1.admin);
  t.same(r.upstreams.map((u: { id: string; kind: string; routable: boolean }) => [u.id, u.kind, u.routable]), [['embedded', 'simulator', true]]);
  t.match(r.warnings.join('\n'), /NOTHING LEAVES THIS MACHINE/);

  const { token } = await accountWithKey(d1, 'sim-retire');
  const before = await send(d1.api, token, 'to the simulator');
  t.equal(before.status, 200, 'a send goes to the simulator while it is the only upstream');

  await d1.adminCall('PUT', '/admin/upstreams/capture', { host: '127.0.0.1', port: carrier.port, systemId: 'ferry', password: 'pw', binds: 1, reconnect: { initialMs: 100, maxMs: 500 } });
  r = await readyz(d1.admin);
  t.same(
    r.upstreams.map((u: { id: string; kind: string; routable: boolean }) => [u.id, u.kind, u.routable]),
    [
      ['embedded', 'simulator', false],
      ['capture', 'real', true],
    ],
    'the simulator takes no new traffic once a real upstream exists',
  );
  t.notMatch(r.warnings.join('\n'), /NOTHING LEAVES THIS MACHINE/);
  t.match(r.warnings.join('\n'), /retired when real upstream capture was added/);
  await t.rejects(d1.adminCall('POST', '/admin/routes/default/switch', { upstream: 'embedded' }), { code: 'UNKNOWN_UPSTREAM' }, 'no route may be switched to it');

  const real = await send(d1.api, token, 'to the carrier');
  t.equal(real.status, 200);
  await waitFor(async () => (await gatewayOf(d1.daemon).ledger.get(real.json.data.messageId))?.status === 'delivered', 'delivered by the carrier');
  t.equal((await gatewayOf(d1.daemon).ledger.get(real.json.data.messageId))?.upstreamId, 'capture');
  t.ok(carrier.received().some((m) => m.text === 'to the carrier'), 'the carrier got it');
  await d1.stopKeepingStore();
  stopped = true;

  // Restart: the stored upstream is real, so no simulator at all.
  const d2 = await startDaemon({ FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20', FERRY_MESSAGES_MAX_ATTEMPTS: '2' }, d1.reuse);
  t.teardown(() => d2.stop());
  t.equal(simulatorOf(d2.daemon), null, 'the simulator is not started next to a real upstream');
  r = await readyz(d2.admin);
  t.same(r.upstreams.map((u: { id: string; kind: string }) => [u.id, u.kind]), [['capture', 'real']]);
  const metrics = (await call(d2.admin, 'GET', '/metrics', { headers: { authorization: `Bearer ${d2.adminToken}` } })).text;
  t.match(metrics, /ferry_upstream_simulated\{upstream="capture"\} 0/);
  t.notMatch(metrics, /ferry_upstream_simulated\{upstream="embedded"\}/);
  await waitFor(async () => (await readyz(d2.admin)).upstreams[0].up, 'capture bound');

  // The carrier dies: messages wait (or fail after their attempts); none is delivered.
  await carrier.close();
  carrierUp = false;
  const during = await Promise.all([send(d2.api, token, 'carrier down 1'), send(d2.api, token, 'carrier down 2')]);
  for (const s of during) t.equal(s.status, 200, 'accepted: it waits for the carrier');
  await new Promise((res) => setTimeout(res, 3000));
  for (const s of during) {
    const rec = await gatewayOf(d2.daemon).ledger.get(s.json.data.messageId);
    t.not(rec?.status, 'delivered', `${s.json.data.messageId} is not delivered (${rec?.status})`);
    t.not(rec?.upstreamId, 'embedded');
    const history = await gatewayOf(d2.daemon).ledger.history(s.json.data.messageId);
    t.notOk(history.some((h) => h.status === 'delivered'), 'no delivered in its history');
  }

  // The last real upstream removed: new sends are refused, the simulator does not come back.
  await d2.adminCall('DELETE', '/admin/upstreams/capture');
  const none = await send(d2.api, token, 'no upstream');
  t.equal(none.status, 422);
  t.equal(none.json.code, 'NO_ROUTE');
});

t.test('a restart after every real upstream was removed still runs no simulator (the record is kept)', async (t) => {
  const carrier = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' } });
  t.teardown(() => carrier.close());
  const d1 = await startDaemon();
  await d1.adminCall('PUT', '/admin/upstreams/carrier', { host: '127.0.0.1', port: carrier.port, systemId: 'ferry', password: 'pw' });
  await d1.adminCall('DELETE', '/admin/upstreams/carrier');
  await d1.stopKeepingStore();
  const d2 = await startDaemon({}, d1.reuse);
  t.teardown(() => d2.stop());
  t.equal(simulatorOf(d2.daemon), null);
  const r = await readyz(d2.admin);
  t.same(r.upstreams, []);
  t.match(r.warnings.join('\n'), /NO UPSTREAM: the embedded simulator is not started \(real upstream carrier was configured at/);
  const { token } = await accountWithKey(d2, 'sim-none');
  const res = await send(d2.api, token, 'nowhere to go');
  t.equal(res.json.code, 'NO_ROUTE');
});

t.test('enabled by name beside a real upstream: it runs, but only a rule naming it alone sends to it', async (t) => {
  const carrier = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20 });
  t.teardown(() => carrier.close());
  const gw = await startGatewayDaemon({ upstreams: [{ id: 'carrier', port: carrier.port }], env: { FERRY_SMPP_SIMULATOR_ENABLED: 'on' } });
  t.teardown(() => gw.stop());
  t.ok(simulatorOf(gw.daemon), 'the simulator runs');
  const r = await readyz(gw.admin);
  t.same(
    r.upstreams.map((u: { id: string; kind: string; routable: boolean }) => [u.id, u.kind, u.routable]),
    [
      ['carrier', 'real', true],
      ['embedded', 'simulator', false],
    ],
  );
  t.same(gatewayOf(gw.daemon).router.rules().map((rule) => rule.upstreams), [['carrier']], 'the default route has only the real upstream');
  await t.rejects(gw.adminCall('POST', '/admin/routes/default/switch', { upstream: 'embedded' }), { code: 'UNKNOWN_UPSTREAM' });
  await t.rejects(gw.adminCall('PUT', '/admin/upstreams/embedded', { host: '127.0.0.1', port: carrier.port, systemId: 'ferry', password: 'pw' }), { code: 'VALIDATION_ERROR' }, 'its id is reserved');

  // A rule that names it alone sends to it (the operator asked by name). Its own carrier: receipts go to whichever
  // session of the system_id is bound, and the daemon above is bound to the first one.
  const carrier2 = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' }, receiptDelayMs: 20 });
  t.teardown(() => carrier2.close());
  const named = await startGatewayDaemon({
    upstreams: [{ id: 'carrier', port: carrier2.port }],
    rules: [
      { id: 'test-range', match: { prefix: ['23355'] }, upstreams: ['embedded'] },
      { id: 'rest', match: {}, upstreams: ['carrier'] },
    ],
    env: { FERRY_SMPP_SIMULATOR_ENABLED: 'on', FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' },
  });
  t.teardown(() => named.stop());
  const { token } = await accountWithKey(named, 'sim-named');
  const toSim = await call(named.api, 'POST', '/v1/sms/send', { token, body: { to: '233551234567', from: 'Ferry', message: 'test range' } });
  const toCarrier = await send(named.api, token, 'real range');
  await named.waitStatus(toSim.json.data.messageId, ['delivered']);
  await named.waitStatus(toCarrier.json.data.messageId, ['delivered']);
  t.equal((await gatewayOf(named.daemon).ledger.get(toSim.json.data.messageId))?.upstreamId, 'embedded');
  t.equal((await gatewayOf(named.daemon).ledger.get(toCarrier.json.data.messageId))?.upstreamId, 'carrier');

  await t.rejects(
    startGatewayDaemon({
      upstreams: [{ id: 'carrier', port: carrier.port }],
      rules: [{ id: 'mixed', match: {}, upstreams: ['carrier', 'embedded'] }],
      env: { FERRY_SMPP_SIMULATOR_ENABLED: 'on' },
    }),
    /the embedded simulator may be a rule's only upstream, never beside others/,
    'a rule may not put the simulator beside a real upstream',
  );
  await t.rejects(
    startGatewayDaemon({ upstreams: [{ id: 'carrier', port: carrier.port }], rules: [{ id: 'sim', match: {}, upstreams: ['embedded'] }] }),
    /a routing target only with smpp.simulator.enabled: on/,
    'not a target unless enabled by name',
  );
});

t.test('the simulator decision and the private webhook targets default, as tables', async (t) => {
  const retired = { retiredAt: '2026-01-01T00:00:00.000Z', upstream: 'c' };
  t.equal(simulatorDecision('auto', [], null).start, true);
  t.equal(simulatorDecision('auto', ['c'], null).start, false);
  t.equal(simulatorDecision('auto', [], retired).start, false);
  t.equal(simulatorDecision('on', ['c'], retired).start, true);
  t.equal(simulatorDecision('off', [], null).start, false);

  const dev = { httpHost: '127.0.0.1', embeddedDatabase: true, trustProxy: false, publicUrl: null };
  t.equal(privateTargetsAllowed('auto', dev).allowed, true, 'a developer machine');
  t.equal(privateTargetsAllowed('auto', { ...dev, httpHost: '::1' }).allowed, true);
  t.equal(privateTargetsAllowed('auto', { ...dev, httpHost: 'localhost' }).allowed, true);
  t.equal(privateTargetsAllowed('auto', { ...dev, httpHost: '0.0.0.0' }).allowed, false, 'listening beyond loopback');
  t.equal(privateTargetsAllowed('auto', { ...dev, httpHost: '10.0.0.5' }).allowed, false);
  t.equal(privateTargetsAllowed('auto', { ...dev, embeddedDatabase: false }).allowed, false, 'a database server: a deployment');
  t.equal(privateTargetsAllowed('auto', { ...dev, trustProxy: true }).allowed, false, 'behind a proxy');
  t.equal(privateTargetsAllowed('auto', { ...dev, publicUrl: 'https://api.example.com' }).allowed, false);
  t.equal(privateTargetsAllowed(true, { ...dev, httpHost: '0.0.0.0' }).allowed, true, 'by name');
  t.equal(privateTargetsAllowed(false, dev).allowed, false, 'by name');
});

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('two instances on one database: a real upstream added on one retires the simulator of the other', { skip: process.env.DATABASE_URL ? false : 'several instances share a Postgres server; the embedded database is one process' }, async (t) => {
  const carrier = await startSimulator({ host: '127.0.0.1', port: 0, accounts: { ferry: 'pw' } });
  t.teardown(() => carrier.close());
  const a = await startDaemon();
  t.teardown(() => a.stop());
  const b = await startDaemon({ DATABASE_URL: a.reuse.env.DATABASE_URL });
  t.teardown(() => b.stop());
  t.ok(simulatorOf(b.daemon), 'the second instance stands in with its simulator too');
  await a.adminCall('PUT', '/admin/upstreams/carrier', { host: '127.0.0.1', port: carrier.port, systemId: 'ferry', password: 'pw' });
  await waitFor(async () => (await readyz(b.admin)).upstreams.some((u: { id: string; routable: boolean }) => u.id === 'embedded' && !u.routable), 'the other instance retires its simulator');
  const { token } = await accountWithKey(b, 'two-instances');
  const res = await send(b.api, token, 'on the other instance');
  t.equal(res.json.code, 'NO_ROUTE', 'it sends nothing to its simulator (it learns of the upstream itself at its restart)');
  t.match((await readyz(b.admin)).warnings.join('\n'), /retired when real upstream carrier was added/);
});
