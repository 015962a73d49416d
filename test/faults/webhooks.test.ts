// Slow and dead webhook receivers under SMS traffic: a receiver that hangs and one that refuses connections do
// not hold back a healthy one, their deliveries are retried and logged, and no event is lost: once the dead one
// comes back every event reaches it. And Postgres out of reach for seconds while events keep being committed: every
// event arrives once it is back.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import pg from 'pg';
import { accountWithKey, call, startDaemon, testEnv } from '../helpers/daemon.js';
import { backendLabel, DATABASE_URL } from '../helpers/env.js';
import { TcpProxy } from './tcp-proxy.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { waitFor } from '../helpers/wait.js';

/** A free loopback port nobody listens on (yet). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

t.test(`slow and dead webhook receivers (${backendLabel})`, async (t) => {
  const d = await startDaemon({
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    // Quick retries, then slower ones: the retries must outlast the dead receiver's outage, which lasts until the healthy
    // one has every event (up to 20 s below); with ten 300 ms retries alone the first events could die before it came back.
    FERRY_WEBHOOKS_RETRY_SCHEDULE: [...Array<string>(10).fill('300ms'), ...Array<string>(25).fill('1s')].join(','),
    FERRY_WEBHOOKS_TIMEOUT_MS: '400',
    FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20',
  });
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'hooks');
  const healthy = await WebhookReceiver.start();
  const slow = await WebhookReceiver.start();
  slow.respond = () => 'hang';
  t.teardown(() => Promise.all([healthy.close(), slow.close()]));
  const deadPort = await freePort();
  const deadUrl = `http://127.0.0.1:${deadPort}/hook`;
  for (const url of [healthy.url, slow.url, deadUrl]) {
    const r = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url, events: ['sms.delivered'] } });
    t.equal(r.status, 200);
  }

  const N = 40;
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const r = await call(d.api, 'POST', '/v1/sms/send', { token, body: { to: '+233241234567', from: 'Ferry', message: `hook ${i}` } });
    ids.push(r.json.data.messageId);
  }
  const delivered = (rx: WebhookReceiver) => new Set(rx.received.filter((r) => r.json?.type === 'sms.delivered').map((r) => r.json.data.messageId));
  const started = Date.now();
  await waitFor(() => delivered(healthy).size === N, 20_000, 'every event at the healthy receiver');
  const healthyMs = Date.now() - started;
  t.ok(ids.every((id) => delivered(healthy).has(id)), `the healthy receiver got all ${N} events in ${healthyMs} ms despite a hung and a dead one`);
  t.ok(slow.received.length > 0, 'the hung receiver was tried');

  // The dead receiver comes back: every event reaches it (retried, nothing lost).
  const revived = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      revivedEvents.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  const revivedEvents: Array<{ type: string; data: { messageId: string } }> = [];
  await new Promise<void>((r) => revived.listen(deadPort, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => revived.close(() => r())));
  await waitFor(() => new Set(revivedEvents.map((e) => e.data.messageId)).size === N, 20_000, 'every event at the revived receiver');
  t.ok(ids.every((id) => revivedEvents.some((e) => e.data.messageId === id)), 'the revived receiver got every event after its outage');

  const list = await call(d.api, 'GET', '/v1/webhooks', { token });
  const slowId = list.json.data.find((w: { url: string }) => w.url === slow.url).id as string;
  // A batch's failures are written when the batch ends (each hung attempt takes the timeout).
  const timedOut = async () => {
    const log = await call(d.api, 'GET', `/v1/webhooks/${slowId}/deliveries`, { token });
    const entries = log.json.data;
    return Array.isArray(entries) && entries.some((e: { lastError: string | null }) => /time/i.test(e.lastError ?? ''));
  };
  const started2 = Date.now();
  let logged = await timedOut();
  while (!logged && Date.now() - started2 < 10_000) {
    await new Promise((r) => setTimeout(r, 100));
    logged = await timedOut();
  }
  t.ok(logged, 'the hung receiver is logged as timing out');
  t.comment(`webhook faults: backend=${backendLabel} events=${N} healthyAllIn=${healthyMs}ms revivedGotAll=${revivedEvents.length >= N} slowTried=${slow.received.length}`);
});

t.test(`Postgres out of reach mid-delivery: every event arrives once it is back (${backendLabel})`, { skip: DATABASE_URL ? false : 'needs DATABASE_URL (the embedded database is inside the daemon)' }, async (t) => {
  // The daemon reaches Postgres through a proxy the test cuts; the test writes events through its own connection.
  const { env, store } = await testEnv({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_WEBHOOKS_RETRY_SCHEDULE: '300ms,300ms,1s,1s,2s,2s,5s,5s' });
  const proxy = new TcpProxy(5432);
  await proxy.up();
  t.teardown(() => proxy.down());
  const url = new URL(store.url!);
  url.host = `127.0.0.1:${proxy.port}`;
  const d = await startDaemon({}, { env: { ...env, DATABASE_URL: url.toString() }, store });
  t.teardown(() => d.stop());
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  // Every fifth event is refused once: the retry set is at work when Postgres goes away too.
  const refused = new Set<string>();
  rx.respond = (r) => {
    const id = r.json?.id as string;
    if (Number.parseInt(id.slice(-2), 16) % 5 !== 0 || refused.has(id)) return 200;
    refused.add(id);
    return 500;
  };
  const { account, token } = await accountWithKey(d, 'pgcut');
  t.equal((await call(d.api, 'POST', '/v1/webhooks', { token, body: { url: rx.url, events: ['*'] } })).status, 200);

  const direct = new pg.Client({ connectionString: store.url! });
  await direct.connect();
  t.teardown(() => direct.end());
  const emit = async (n: number): Promise<string[]> =>
    (
      await direct.query<{ id: string }>(
        `INSERT INTO webhook_events (id, account_id, type, payload) SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), $1, 'sms.inbound', '{}' FROM generate_series(1, $2) RETURNING id`,
        [account.id, n],
      )
    ).rows.map((r) => r.id);
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) ids.push(...(await emit(10)));
  await waitFor(() => rx.received.length >= 20, 15_000, 'deliveries under way');

  await proxy.down();
  const cutAt = Date.now();
  for (let i = 0; i < 10; i++) {
    ids.push(...(await emit(10)));
    await new Promise((r) => setTimeout(r, 300));
  }
  await proxy.up();
  const distinct = () => new Set(rx.received.map((r) => r.json.id as string));
  await waitFor(() => ids.every((id) => distinct().has(id)), 60_000, 'every event at the receiver');
  t.equal(distinct().size, ids.length, `all ${ids.length} events arrived after Postgres was out of reach for ${Date.now() - cutAt} ms at most`);
  const extra = rx.received.length - ids.length - refused.size;
  t.comment(`webhooks, Postgres cut: events=${ids.length} refusedOnce=${refused.size} sentAgain=${extra} (a batch whose cursor write was cut is sent again)`);
});
