// The fault suite with split roles: `api,smpp` in this process and `workers` as its own process, on one Postgres and
// Redis. SIGKILL of the workers process while messages flow, then a new one: every accepted message ends final
// exactly once, with exactly one sms.delivered event each, and every event reaches the webhook receiver.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { FINAL_STATUSES } from '../../src/ledger/types.js';
import { accountWithKey, awaitStarted, call, ferry, startDaemon } from '../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL } from '../helpers/env.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { waitFor } from '../helpers/wait.js';
import { settle } from './common.js';

const skip = DATABASE_URL && REDIS_URL ? false : 'split roles need Postgres and Redis: set DATABASE_URL and REDIS_URL to run this test';

t.test('SIGKILL of the workers process mid-flow, then a new one: every accepted message final exactly once', { skip }, async (t) => {
  const front = await startDaemon({
    FERRY_ROLE: 'api,smpp',
    FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('hex'),
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_WEBHOOKS_RETRY_SCHEDULE: Array<string>(30).fill('300ms').join(','),
    FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20',
  });
  const workersDir = mkdtempSync(join(tmpdir(), 'ferry-workers-'));
  const workersEnv = { ...front.reuse.env, FERRY_ROLE: 'workers', FERRY_DATA_DIR: workersDir, FERRY_LOG_LEVEL: 'info' };
  const children: Array<ReturnType<typeof ferry>> = [];
  t.teardown(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await front.stop();
    rmSync(workersDir, { recursive: true, force: true });
  });
  const startWorkers = async () => {
    const child = ferry(['start'], workersEnv);
    children.push(child);
    return awaitStarted(child);
  };
  const first = await startWorkers();

  const { token } = await accountWithKey(front, 'splitkill');
  const receiver = await WebhookReceiver.start();
  t.teardown(() => receiver.close());
  t.equal((await call(front.api, 'POST', '/v1/webhooks', { token, body: { url: receiver.url, events: ['sms.delivered'] } })).status, 200);
  const delivered = () => new Set(receiver.received.filter((r) => r.json?.type === 'sms.delivered').map((r) => r.json.data.messageId as string));

  const N = 60;
  const ids: string[] = [];
  const send = async (i: number) => {
    const r = await call(front.api, 'POST', '/v1/sms/send', { token, body: { to: '+233241234567', from: 'Ferry', message: `split kill ${i}` } });
    if (r.status === 200) ids.push(r.json.data.messageId);
  };
  for (let i = 0; i < N / 3; i++) await send(i);
  await waitFor(() => delivered().size >= 5, 30_000, 'the first webhook events');
  first.child.kill('SIGKILL');
  t.equal((await first.exited).signal, 'SIGKILL', 'the workers process was killed mid-flow');
  // Accepted, sent and receipted without workers: their events wait in the outbox.
  for (let i = N / 3; i < (2 * N) / 3; i++) await send(i);
  await startWorkers();
  for (let i = (2 * N) / 3; i < N; i++) await send(i);
  t.equal(ids.length, N, 'every message accepted');

  const { open, missing } = await settle(front.daemon.gateway.ledger, ids, 60_000);
  t.same({ open, missing }, { open: [], missing: [] }, 'every accepted message is final');
  const finals = await front.daemon.db.query<{ message_id: string; n: string }>(
    `SELECT message_id, count(*) AS n FROM message_events WHERE message_id = ANY($1::text[]) AND status = ANY($2::text[]) GROUP BY message_id`,
    [ids, FINAL_STATUSES],
  );
  t.equal(finals.rows.length, N, 'a final status for every message');
  t.same(finals.rows.filter((r) => Number(r.n) !== 1), [], 'each reached a final status exactly once');
  const events = await front.daemon.db.query<{ message_key: string; n: string }>(
    `SELECT message_key, count(*) AS n FROM webhook_events WHERE type = 'sms.delivered' AND message_key = ANY($1::text[]) GROUP BY message_key`,
    [ids],
  );
  t.equal(events.rows.length, N, 'an sms.delivered event for every message');
  t.same(events.rows.filter((r) => Number(r.n) !== 1), [], 'exactly one event each');
  await waitFor(() => ids.every((id) => delivered().has(id)), 60_000, 'every event at the receiver');
  t.pass('the new workers process delivered every event, those the killed one left too');
  t.comment(`split roles kill: messages=${N} webhookRequests=${receiver.received.length} (at least once: a repeat is a delivery the killed process sent but did not record)`);
});
