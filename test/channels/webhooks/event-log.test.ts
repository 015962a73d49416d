// The event log read through per-endpoint cursors (docs/webhooks.md, "How delivery works"): the PgQ visibility rule
// (an event whose transaction began before a tick and committed after it is not skipped), two instances streaming
// one endpoint's events exactly once and taking over from each other, and a dead endpoint's backlog that costs a
// healthy endpoint no rows.
import { createHmac } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { BATCH_SQL } from '../../../src/channels/webhooks/event-stream.js';
import { accountWithKey, call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel, DATABASE_URL } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';

const ENV = { FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', FERRY_WEBHOOKS_RETRY_SCHEDULE: '300ms,300ms,300ms' };

/** Events written as a product writes them (an INSERT into the log), in one statement; their ids. */
async function emit(d: TestDaemon, accountId: string, n: number, type = 'sms.inbound'): Promise<string[]> {
  const { rows } = await d.daemon.db.query<{ id: string }>(
    `INSERT INTO webhook_events (id, account_id, type, message_key, payload)
     SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), $1, $2, NULL, jsonb_build_object('n', g) FROM generate_series(1, $3) g RETURNING id`,
    [accountId, type, n],
  );
  return rows.map((r) => r.id);
}

async function endpoint(d: TestDaemon, token: string, url: string, events = ['*']): Promise<string> {
  const r = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url, events } });
  if (r.status !== 200) throw new Error(r.text);
  return r.json.data.id;
}

t.test(`an event whose transaction was open across ticks is delivered once it commits (${backendLabel})`, { skip: DATABASE_URL ? false : 'needs a second connection to hold a transaction open (Postgres); the embedded database has one' }, async (t) => {
  const d = await startDaemon(ENV);
  t.teardown(() => d.stop());
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  const { account, token } = await accountWithKey(d, 'acme');
  await endpoint(d, token, rx.url);

  const client = new pg.Client({ connectionString: d.reuse.store.url ?? undefined });
  await client.connect();
  t.teardown(() => client.end());
  await client.query('BEGIN');
  const late = (await client.query<{ id: string }>(
    `INSERT INTO webhook_events (id, account_id, type, payload) VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), $1, 'sms.inbound', '{"late":true}') RETURNING id`,
    [account.id],
  )).rows[0].id;
  // Events committed meanwhile are delivered, past ticks that saw the open transaction.
  const early = await emit(d, account.id, 3);
  await until(() => rx.received.length, (n) => n >= 3);
  const ticks = await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_ticks`);
  t.ok(ticks.rows[0].n >= 2, 'ticks were written while it was open');
  await client.query('COMMIT');
  await until(() => rx.received.length, (n) => n >= 4);
  t.same(rx.received.map((r) => r.json.id).sort(), [...early, late].sort(), 'every event once, the late one included');

  // An INSERT takes its event's number before its transaction id: a tick in between sees the number handed out and
  // no running transaction. Nothing else happens afterwards; the event must still arrive.
  await client.query('BEGIN');
  const seq = (await client.query<{ n: string }>(`SELECT nextval('webhook_events_seq_seq') AS n`)).rows[0].n;
  const ticked = (await d.daemon.db.query<{ id: string }>(`SELECT max(id) AS id FROM webhook_ticks`)).rows[0].id;
  await until(async () => (await d.daemon.db.query<{ id: string }>(`SELECT max(id) AS id FROM webhook_ticks`)).rows[0].id, (id) => id !== ticked);
  const numbered = (await client.query<{ id: string }>(
    `INSERT INTO webhook_events (id, seq, account_id, type, payload) VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), $2, $1, 'sms.inbound', '{}') RETURNING id`,
    [account.id, seq],
  )).rows[0].id;
  await client.query('COMMIT');
  await until(() => rx.received.length, (n) => n >= 5);
  t.equal(rx.received.at(-1)!.json.id, numbered, 'an event numbered before a tick that could not see its transaction arrives');
});

t.test(`two instances stream one endpoint's events exactly once, and one takes over when the other stops (${backendLabel})`, { skip: DATABASE_URL ? false : 'two instances share Postgres and Redis; the embedded backends are one process' }, async (t) => {
  const a = await startDaemon({ ...ENV, FERRY_WEBHOOKS_MAX_CONCURRENCY_PER_ENDPOINT: '2' });
  t.teardown(() => a.stop());
  const b = await startDaemon({}, a.reuse);
  let bStopped = false;
  // b shares a's database: stopping it must not drop it.
  t.teardown(() => (bStopped ? undefined : b.stopKeepingStore()));
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  const { account, token } = await accountWithKey(a, 'acme');
  await endpoint(a, token, rx.url);
  const { account: other, token: otherToken } = await accountWithKey(a, 'other');
  await endpoint(a, otherToken, rx.url);

  const first = [...(await emit(a, account.id, 150)), ...(await emit(b, other.id, 150))];
  await until(() => rx.received.length, (n) => n >= 300, 30_000);
  const owners = await a.daemon.db.query<{ owner: string | null }>(`SELECT owner FROM webhook_cursors`);
  t.equal(owners.rows.length, 2);
  t.ok(owners.rows.every((r) => r.owner), 'each endpoint is streamed by one instance');

  // Whoever held them, the other instance takes over once it stops.
  await b.stopKeepingStore();
  bStopped = true;
  const second = [...(await emit(a, account.id, 100)), ...(await emit(a, other.id, 100))];
  await until(() => rx.received.length, (n) => n >= 500, 30_000);
  const ids = rx.received.map((r) => r.json.id);
  t.equal(new Set(ids).size, ids.length, 'no event was delivered twice');
  t.same([...ids].sort(), [...first, ...second].sort(), 'every event was delivered');
});

t.test(`a dead endpoint's backlog costs a healthy endpoint no rows (${backendLabel})`, async (t) => {
  // Retries an hour away: every attempt counted here is the stream's own.
  const d = await startDaemon({ ...ENV, FERRY_WEBHOOKS_RETRY_SCHEDULE: '1h,1h' });
  t.teardown(() => d.stop());
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  const { account, token } = await accountWithKey(d, 'acme');
  // Nothing listens on port 9: every attempt is refused.
  const dead = await endpoint(d, token, 'http://127.0.0.1:9/hook', ['sms.inbound']);
  const healthy = await endpoint(d, token, rx.url, ['otp.requested']);
  const BACKLOG = 3000;
  await emit(d, account.id, BACKLOG, 'sms.inbound');
  const parked = await until(
    async () => (await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1`, [dead])).rows[0].n,
    (n) => n >= BACKLOG,
    60_000,
  );
  t.equal(parked, BACKLOG, 'the dead endpoint has every event in its retry set');
  const attempts = (await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts > 0`, [dead])).rows[0].n;
  t.ok(attempts < BACKLOG / 2, `a receiver that is down is probed, not sent each event (${attempts} of ${BACKLOG} tried so far)`);
  // On Postgres the backlog grows to a million: events that had been parked long ago (a transaction id every tick
  // sees, so no cursor reads them again) and their open rows in the retry set, due in an hour like the real ones.
  let backlog = BACKLOG;
  if (d.daemon.db.kind === 'postgres') {
    const more = 1_000_000 - BACKLOG;
    await d.daemon.db.query(
      `INSERT INTO webhook_events (id, account_id, type, message_key, payload, txid)
       SELECT 'evt_bulk' || g, $1, 'sms.inbound', 'msg_bulk' || g, jsonb_build_object('messageId', 'msg_bulk' || g, 'status', 'received'), '3'::xid8
       FROM generate_series(1, $2::int) AS g`,
      [account.id, more],
    );
    await d.daemon.db.query(
      `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, message_key, status, attempts, next_attempt_at, last_error)
       SELECT 'whd_bulk' || g, $1, 'evt_bulk' || g, g, 'msg_bulk' || g, 'failed', 1, now() + interval '1 hour', 'connection refused'
       FROM generate_series(1, $2::int) AS g`,
      [dead, more],
    );
    await d.daemon.db.query(`ANALYZE webhook_deliveries`);
    await d.daemon.db.query(`ANALYZE webhook_events`);
    backlog += more;
    const open = (await d.daemon.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status IN ('pending', 'failed')`, [dead])).rows[0].n;
    t.equal(open, backlog, 'the dead endpoint has a million undelivered events');
  }

  // The healthy endpoint's next batch, as its stream reads it, measured in rows the plan touched.
  await emit(d, account.id, 10, 'otp.requested');
  await until(() => rx.received.length, (n) => n >= 10);
  // Where its stream stands once those ten are written (the cursor is written with the batch, after its sends).
  const before = await until(
    async () => (await d.daemon.db.query<{ tick_id: string; delivered: string }>(`SELECT tick_id, delivered FROM webhook_cursors WHERE endpoint_id = $1`, [healthy])).rows[0],
    (c) => Number(c.delivered) >= 10,
  ).then((c) => Number(c.tick_id));
  await emit(d, account.id, 10, 'otp.requested');
  const latest = await until(
    async () => Number((await d.daemon.db.query<{ id: string }>(`SELECT max(id) AS id FROM webhook_ticks`)).rows[0].id),
    (id) => id > before,
  );
  const plan = await d.daemon.db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${BATCH_SQL}`, [account.id, before, latest, 2000, healthy, ['otp.requested']]);
  let touched = 0;
  const walk = (node: Record<string, unknown>) => {
    if (/Scan/.test(String(node['Node Type']))) touched += Number(node['Actual Rows'] ?? 0) * Number(node['Actual Loops'] ?? 1) + Number(node['Rows Removed by Filter'] ?? 0) + Number(node['Rows Removed by Index Recheck'] ?? 0);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const raw = plan.rows[0]['QUERY PLAN'];
  walk((typeof raw === 'string' ? JSON.parse(raw) : raw)[0].Plan);
  // Its 10 events, the ticks, and the account's other new events it filters out by type: nothing in proportion to
  // the dead endpoint's open rows (3,000 embedded, 1,000,000 on Postgres).
  t.ok(touched < 200, `the healthy endpoint's batch touched ${touched} rows (backlog ${backlog})`);
  await until(() => rx.received.length, (n) => n >= 20);
  t.equal(rx.received.length, 20, 'the healthy endpoint got its events meanwhile');
});

t.test(`batched delivery: signed arrays of up to maxEvents, retries as arrays of one (${backendLabel})`, async (t) => {
  const d = await startDaemon(ENV);
  t.teardown(() => d.stop());
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  const { account, token } = await accountWithKey(d, 'acme');
  const created = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url: rx.url, events: ['*'], batch: { maxEvents: 50, maxWaitMs: 300 } } });
  t.equal(created.status, 200, created.text);
  t.same(created.json.data.batch, { maxEvents: 50, maxWaitMs: 300 });
  const secret: string = created.json.data.secret;
  const bad = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url: rx.url, events: ['*'], batch: { maxEvents: 5000 } } });
  t.equal(bad.json.code, 'VALIDATION_ERROR', 'maxEvents is bounded');

  // The first POST fails: its events come back one by one, each as an array of one.
  rx.respond = (_r, n) => (n === 1 ? 500 : 200);
  const ids = await emit(d, account.id, 120);
  const got = () => rx.received.filter((r) => r.at && Array.isArray(r.json)).flatMap((r) => r.json.map((e: { id: string }) => e.id));
  await until(() => new Set(got()).size, (n) => n >= 120, 30_000);
  t.ok(rx.received.every((r) => Array.isArray(r.json)), 'every POST carries an array');
  t.ok(rx.received.every((r) => r.json.length <= 50), `at most 50 events a POST (${rx.received.map((r) => r.json.length).join(', ')})`);
  const first = rx.received[0];
  t.ok(rx.received.slice(1).some((r) => r.json.length === 1 && r.json[0].id === first.json[0].id), 'a failed array is retried as arrays of one');
  t.same([...new Set(got())].sort(), [...ids].sort(), 'every event delivered');
  const delivered = rx.received.slice(1).flatMap((r) => r.json.map((e: { id: string }) => e.id));
  t.equal(new Set(delivered).size, delivered.length, 'none twice after the failure');
  // Signed as one body under a webhook-id of its own (Standard Webhooks).
  const r = rx.received[1];
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const sig = createHmac('sha256', key).update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`).digest('base64');
  t.ok(String(r.headers['webhook-signature']).split(' ').includes(`v1,${sig}`), 'the array verifies with the endpoint secret');
  t.match(String(r.headers['webhook-id']), /^(whb_|evt_)/);

  // Back to one event per POST.
  const patched = await call(d.api, 'PATCH', `/v1/webhooks/${created.json.data.id}`, { token, body: { batch: null } });
  t.equal(patched.json.data.batch, null);
});
