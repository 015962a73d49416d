// Process roles: `api,smpp` in one daemon and `workers` in another, on one Postgres and one Redis, serve SMS end to
// end (REST send → the simulator upstream → receipt → webhook event and REST status); split roles refuse the
// embedded stores.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { accountWithKey, call, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL } from '../helpers/env.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { waitFor } from '../helpers/wait.js';
import { parseRoles } from '../../src/platform/roles.js';

t.test('roles are read from a list or a comma-separated string', async (t) => {
  t.equal(parseRoles(undefined).toString(), 'all');
  t.equal(parseRoles('all').toString(), 'all');
  t.equal(parseRoles('api, smpp').toString(), 'api,smpp');
  t.same(parseRoles(['workers']).list, ['workers']);
  t.ok(parseRoles('realtime,media').has('media'), 'roles of later products are accepted');
  t.throws(() => parseRoles('api,web'), /unknown role web/);
});

t.test('split roles refuse the embedded stores with one clear line', async (t) => {
  await t.rejects(startDaemon({ FERRY_ROLE: 'workers', DATABASE_URL: '', REDIS_URL: '' }), { name: 'StartupError', message: /split roles need shared stores/ });
  await t.rejects(startDaemon({ FERRY_ROLE: 'api,bogus', DATABASE_URL: '', REDIS_URL: '' }), { name: 'StartupError', message: /unknown role bogus/ });
});

/** Two daemons on one database and Redis prefix: one with `roles`, the other with `otherRoles`. */
export async function splitDaemons(
  t: { teardown(fn: () => unknown): void },
  extra: Record<string, string> = {},
): Promise<{ front: TestDaemon; workers: TestDaemon; startWorkers(): Promise<TestDaemon>; workersDir: string }> {
  const shared = { FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('hex'), ...extra };
  const front = await startDaemon({ ...shared, FERRY_ROLE: 'api,smpp' });
  const workersDir = mkdtempSync(join(tmpdir(), 'ferry-workers-'));
  const startWorkers = () => startDaemon({ FERRY_ROLE: 'workers', FERRY_DATA_DIR: workersDir }, front.reuse);
  const workers = await startWorkers();
  t.teardown(async () => {
    await workers.stopKeepingStore();
    await front.stop();
    rmSync(workersDir, { recursive: true, force: true });
  });
  return { front, workers, startWorkers, workersDir };
}

const shared = DATABASE_URL && REDIS_URL ? false : 'split roles need Postgres and Redis: set DATABASE_URL and REDIS_URL to run this test';

t.test('api,smpp and workers in two daemons serve SMS end to end', { skip: shared }, async (t) => {
  const { front, workers } = await splitDaemons(t, { FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20' });

  // What each process runs.
  t.ok(front.daemon.addresses.http, 'the api role has the API listener');
  t.match(front.daemon.addresses.smpp, /:\d+$/, 'the smpp role has the customer SMPP listener');
  t.equal(workers.daemon.addresses.http, '', 'no API listener in the workers role');
  t.equal(workers.daemon.addresses.smpp, '', 'no SMPP listener in the workers role');
  t.ok(workers.daemon.addresses.admin, 'the admin listener runs in every role');
  const frontReady = (await call(front.admin, 'GET', '/readyz')).json;
  const workersReady = (await call(workers.admin, 'GET', '/readyz')).json;
  t.equal(frontReady.roles, 'api,smpp');
  t.equal(workersReady.roles, 'workers');
  t.match(frontReady.listeners.find((l: { name: string }) => l.name === 'smpp'), { role: 'smpp', kind: 'tcp', address: front.daemon.addresses.smpp });
  t.match(workersReady.listeners.find((l: { name: string }) => l.name === 'smpp'), { role: 'smpp', address: null }, 'declared, not open here');
  t.equal(workersReady.status, 'ready');
  t.ok(workers.daemon.scheduler.names().includes('sms.idempotency-purge'), 'cluster jobs run with the workers');
  t.notOk(front.daemon.scheduler.names().includes('sms.idempotency-purge'), 'and not in the api,smpp process');
  const frontJobs = front.daemon.scheduler.names();
  const workersJobs = workers.daemon.scheduler.names();
  for (const job of ['sms.reconcile', 'outbound.reconcile', 'sms.correlation-purge']) {
    t.ok(workersJobs.includes(job) && !frontJobs.includes(job), `${job} runs with the workers only`);
  }
  for (const job of ['sms.receipt-queries', 'sms.customer-outbox-purge', 'otp.expiry-sweep']) {
    t.ok(frontJobs.includes(job) && !workersJobs.includes(job), `${job} runs where the binds and the API are, not with the workers`);
  }
  t.ok(frontJobs.includes('sms.route-switches') && workersJobs.includes('sms.route-switches'), 'route switches are followed in every process');

  const { token } = await accountWithKey(front, 'split');
  const receiver = await WebhookReceiver.start();
  t.teardown(() => receiver.close());
  t.equal((await call(front.api, 'POST', '/v1/webhooks', { token, body: { url: receiver.url, events: ['sms.delivered'] } })).status, 200);

  const N = 5;
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const r = await call(front.api, 'POST', '/v1/sms/send', { token, body: { to: '+233241234567', from: 'Ferry', message: `split ${i}` } });
    t.equal(r.status, 200, r.text);
    ids.push(r.json.data.messageId);
  }
  const delivered = () => new Set(receiver.received.filter((r) => r.json?.type === 'sms.delivered').map((r) => r.json.data.messageId));
  await waitFor(() => ids.every((id) => delivered().has(id)), 30_000, 'an sms.delivered event per message at the receiver');
  t.pass('the workers process delivered a webhook event for every message');
  for (const id of ids) {
    const s = await call(front.api, 'GET', `/v1/sms/status/${id}`, { token });
    t.equal(s.json.data.status, 'delivered', `REST status of ${id}`);
  }
});
