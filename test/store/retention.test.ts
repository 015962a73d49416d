import pino from 'pino';
import t from 'tap';
import type { RetentionConfig } from '../../src/config/schema.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { bootOrder, declaredTables } from '../../src/platform/module-order.js';
import { RangePartitions } from '../../src/store/sql/range-partitions.js';
import { Retention } from '../../src/store/sql/retention.js';
import { newId } from '../../src/util/ids.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

const log = pino({ level: 'silent' });
// What the daemon passes: the core's tables, then the products' in boot order.
const TABLES = declaredTables(bootOrder(CHANNEL_MODULES));
const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T00:00:00Z');
const OLD = NOW - 100 * DAY;
const YOUNG = NOW - 10 * DAY;
// Real ids (time-ordered, made when the message was): the purge of messages walks its primary key below the cutoff.
const MSG = { old: newId('msg_', OLD), open: newId('msg_', OLD), young: newId('msg_', OLD) };
const LIVE_MSGS = [MSG.open, MSG.young].sort();
// Job ids carry the time they were made (the retention's purge looks only below the cutoff's first id).
const JOB = { old1: newId('job_', OLD), old2: newId('job_', OLD), old3: newId('job_', OLD), pending: newId('job_', OLD), young: newId('job_', YOUNG) };
const LIVE_JOBS = [JOB.pending, JOB.young].sort();
const iso = (ms: number) => new Date(ms).toISOString();

const config = (over: Partial<RetentionConfig> = {}): RetentionConfig => ({
  days: 90,
  outbound: null,
  webhooks: null,
  sms: null,
  messenger: null,
  email: null,
  ussd: null,
  shortlink: null,
  logs: null,
  intervalSeconds: 0,
  batchRows: 2,
  maxRowsPerPass: 1000,
  ...over,
});

t.test(`retention purges old final rows with their children, keeps the rest (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const q = (sql: string, params: unknown[] = []) => db.query(sql, params);

  for (const table of new Set(TABLES.flatMap((s) => [s.name, ...(s.retention?.children ?? []).map((c) => c.table)]))) {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, [table]);
    t.equal(rows[0].n, 1, `${table} exists (a maintained or purged table)`);
  }

  // Outbound: 3 old done jobs (more than one batch of 2), 1 old pending, 1 young done; each with history.
  const job = (id: string, pending: boolean, at: number) =>
    q(
      `INSERT INTO outbound_jobs (id, product, provider, account_id, message_id, payload, state, pending, next_attempt_at, deadline_at, created_at, updated_at)
       VALUES ($1, 'email', 'smtp', 'acc_r', $1, '{}', $2, $3, $4, $4, $4, $4)`,
      [id, pending ? 'queued' : 'sent', pending, at],
    ).then(() => q(`INSERT INTO outbound_history (job_id, kind, state, at) VALUES ($1, 'state', 'queued', $2), ($1, 'state', 'sent', $2)`, [id, at]));
  for (const id of [JOB.old1, JOB.old2, JOB.old3]) await job(id, false, OLD);
  await job(JOB.pending, true, OLD);
  await job(JOB.young, false, YOUNG);

  // Webhooks: events are dropped by whole partitions (test/store/range-partitions.test.ts); here all are in the
  // partition of today, not past its retention. Delivery rows are purged by their own age once ended.
  await q(`INSERT INTO webhook_endpoints (id, account_id, url, events, secret_cipher) VALUES ('we_r', 'acc_r', 'https://example.invalid/h', ARRAY['*'], 'x')`);
  const event = async (id: string, at: number, status: string | null) => {
    await q(`INSERT INTO webhook_events (id, account_id, type, payload, created_at) VALUES ($1, 'acc_r', 'email.sent', '{}', $2)`, [id, iso(at)]);
    if (status) await q(`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, status, created_at) VALUES ($1, 'we_r', $2, 1, $3, $4)`, [`wd_${id}`, id, status, iso(at)]);
  };
  await event('ev_old', OLD, 'delivered');
  await event('ev_retrying', OLD, 'failed');
  await event('ev_young', YOUNG, 'delivered');
  // The endpoint's cursor has read everything so far; an old event committed after it is still to be read.
  await q(`INSERT INTO webhook_ticks (snap, last_seq) VALUES (pg_current_snapshot(), 0)`);
  await q(`INSERT INTO webhook_cursors (endpoint_id, tick_id) SELECT 'we_r', max(id) FROM webhook_ticks`);
  await event('ev_unread', OLD, null);

  // SMS: an old delivered message with events and parts, an old one still queued, a young delivered one.
  const sms = async (id: string, status: string, finalAt: number | null) => {
    await q(
      `INSERT INTO messages (id, account_id, ingress, source, destination, body, encoding, status, currency, created_at, final_at)
       VALUES ($1, 'acc_r', 'rest', 'Ferry', '233241234567', 'hi', 'gsm7', $2, 'USD', $3, $4)`,
      [id, status, iso(OLD), finalAt === null ? null : iso(finalAt)],
    );
    await q(`INSERT INTO message_events (message_id, status) VALUES ($1, 'queued'), ($1, $2)`, [id, status]);
    await q(`INSERT INTO message_parts (message_id, part_index, status) VALUES ($1, 0, $2)`, [id, status]);
  };
  await sms(MSG.old, 'delivered', OLD);
  await sms(MSG.open, 'queued', null);
  await sms(MSG.young, 'delivered', YOUNG);

  // Products.
  const mm = (id: string, status: string, at: number) =>
    q(
      `INSERT INTO messenger_messages (id, account_id, business_number, recipient, type, content, status, job_id, created_at, updated_at)
       VALUES ($1, 'acc_r', '15550001', '4477001', 'text', '{}', $2, 'job_x', $3, $3)`,
      [id, status, at],
    );
  await mm('wam_old', 'read', OLD);
  await mm('wam_queued', 'queued', OLD);
  await mm('wam_young', 'delivered', YOUNG);
  await q(`INSERT INTO email_sends (id, account_id, content, created_at) VALUES ('send_old', 'acc_r', '{}', $1), ('send_kept', 'acc_r', '{}', $1)`, [OLD]);
  const em = async (id: string, send: string, status: string, at: number) => {
    await q(
      `INSERT INTO email_messages (id, account_id, send_id, stream, from_address, recipient, subject, status, created_at, updated_at)
       VALUES ($1, 'acc_r', $2, 'transactional', 'a@x.test', 'b@y.test', 's', $3, $4, $4)`,
      [id, send, status, at],
    );
    await q(`INSERT INTO email_events (message_id, kind, at) VALUES ($1, 'opened', $2)`, [id, at]);
  };
  await em('em_old', 'send_old', 'delivered', OLD);
  await em('em_queued', 'send_kept', 'queued', OLD);
  await q(`INSERT INTO accounts (id, name) VALUES ('acc_r', 'retention')`);
  const ussd = (id: string, status: string, at: number) =>
    q(
      `INSERT INTO ussd_sessions (id, account_id, service_code_id, service_code, dialled, phone, channel, network_key, status, app, state, started_at, updated_at)
       VALUES ($1, 'acc_r', 'sc_1', '*384#', '*384#', '233241234567', 'simulate', $1, $2, '{}', '{}', $3, $3)`,
      [id, status, at],
    );
  await ussd('us_old', 'ended', OLD);
  await ussd('us_active', 'active', OLD);
  await q(
    `INSERT INTO shortlink_clicks (link_id, id, account_id, at, device, bot, method, outcome) VALUES ('l1', 'c_old', 'acc_r', $1, 'desktop', false, 'GET', 'redirect'), ('l1', 'c_young', 'acc_r', $2, 'desktop', false, 'GET', 'redirect')`,
    [iso(OLD), iso(YOUNG)],
  );
  await q(
    `INSERT INTO shortlink_rollups (link_id, account_id, hour, dim, value, bot, clicks) VALUES ('l1', 'acc_r', $1, 'total', '', false, 3), ('l1', 'acc_r', $2, 'total', '', false, 4)`,
    [iso(OLD), iso(YOUNG)],
  );
  await q(`INSERT INTO log_sessions (token_hash, account_id, key_id, created_at, expires_at) VALUES ('h_old', 'acc_r', 'k', $1, $1), ('h_young', 'acc_r', 'k', $2, $2)`, [OLD, YOUNG]);

  const purged: Record<string, number> = {};
  const r = new Retention({ db, log, config: config({ shortlink: 0 }), tables: TABLES, partitions: new RangePartitions(db, log), clock: () => NOW, onPurged: (table, n) => (purged[table] = (purged[table] ?? 0) + n) });
  const out = await r.runOnce();
  t.same(out, purged, 'every purged row is reported (metrics)');

  const ids = async (sql: string) => (await db.query<{ id: string }>(sql)).rows.map((x) => x.id).sort();
  t.same(await ids(`SELECT id FROM outbound_jobs`), LIVE_JOBS, 'old done jobs purged over several batches; the pending and the young one kept');
  t.same(await ids(`SELECT DISTINCT job_id AS id FROM outbound_history`), LIVE_JOBS, 'their history went with them');
  t.equal(purged.outbound_jobs, 3);
  t.equal(purged.outbound_history, 6);
  t.same(await ids(`SELECT id FROM webhook_events`), ['ev_old', 'ev_retrying', 'ev_unread', 'ev_young'], 'events go only with their whole partition');
  t.same(await ids(`SELECT event_id AS id FROM webhook_deliveries`), ['ev_retrying', 'ev_young'], 'an old delivery row that ended is purged; one still retrying and a young one are kept');
  t.equal(purged.webhook_deliveries, 1);
  t.same(await ids(`SELECT id FROM messages`), LIVE_MSGS);
  t.same(await ids(`SELECT DISTINCT message_id AS id FROM message_events`), LIVE_MSGS, 'message events went with their message');
  t.same(await ids(`SELECT message_id AS id FROM message_parts`), LIVE_MSGS, 'parts too');
  t.same(await ids(`SELECT id FROM messenger_messages`), ['wam_queued', 'wam_young']);
  t.same(await ids(`SELECT id FROM email_messages`), ['em_queued']);
  t.same(await ids(`SELECT message_id AS id FROM email_events`), ['em_queued']);
  t.same(await ids(`SELECT id FROM email_sends`), ['send_kept'], "a send's content goes once none of its messages is left");
  t.same(await ids(`SELECT id FROM ussd_sessions`), ['us_active'], 'a live session is kept, however old');
  t.same(await ids(`SELECT id FROM shortlink_clicks`), ['c_old', 'c_young'], 'shortlink retention 0: kept forever');
  t.equal((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM shortlink_rollups`)).rows[0].n, 2);
  t.same(await ids(`SELECT token_hash AS id FROM log_sessions`), ['h_young']);

  // One instance at a time: another's live lease refuses the pass; once it ran out, the pass runs.
  await q(`UPDATE maintenance_leases SET holder = 'other', until_ms = $1 WHERE name = 'retention'`, [NOW + 60_000]);
  t.equal(await r.runOnce(), null, 'another instance holds the lease: nothing done');
  await q(`UPDATE maintenance_leases SET until_ms = $1 WHERE name = 'retention'`, [NOW - 1]);
  t.same(await r.runOnce(), {}, 'its lease ran out: this one runs (nothing left to purge)');
});

t.test('the declared tables: what retention purges and maintenance vacuums, in order', async (t) => {
  // The lists retention.ts and table-maintenance.ts held before issue 43, changed since only where a table's treatment changed (the event log: 0042).
  const purged = TABLES.filter((x) => x.retention).map((x) => `${x.retention!.family} ${x.name}${(x.retention!.children ?? []).map((c) => ` +${c.table}`).join('')}`);
  t.same(purged, [
    'outbound outbound_jobs +outbound_history',
    'webhooks webhook_events',
    'webhooks webhook_deliveries',
    'sms messages +message_events +message_parts',
    'messenger messenger_messages',
    'messenger messenger_inbound',
    'email email_messages +email_events',
    'email email_sends',
    'ussd ussd_sessions',
    'shortlink shortlink_clicks',
    'shortlink shortlink_rollups',
    'voice voice_calls +voice_call_history +voice_call_transcripts',
    'logs log_sessions',
  ], 'purged in the same order');
  const vacuumed = (kind: string) => TABLES.filter((x) => x.vacuum === kind).map((x) => x.name).sort();
  t.same(vacuumed('churn'), ['chat_channels', 'chat_members', 'chat_push_outbox', 'idempotency_keys', 'otp_codes', 'otp_phones', 'outbound_jobs', 'push_sends', 'push_topics', 'queue_items', 'shortlink_rollups', 'smpp_outbox', 'upstream_kept_receipts', 'ussd_sessions', 'voice_calls', 'webhook_cursors', 'webhook_deliveries', 'webhook_ticks']);
  t.same(vacuumed('ledger'), ['balance_holds', 'email_messages', 'log_sessions', 'message_parts', 'messages', 'messenger_messages', 'push_devices', 'request_logs', 'upstream_correlations', 'voice_call_history', 'voice_call_transcripts', 'webhook_events']);
});

t.test('a family the config names keeps its override; one it does not name uses retention.days', async (t) => {
  const r = new Retention({ db: null as never, log, config: config({ days: 30, ussd: 7, shortlink: 0 }), tables: [] });
  t.equal(r.days('ussd'), 7);
  t.equal(r.days('shortlink'), 0, '0: kept forever');
  t.equal(r.days('email'), 30, 'null: retention.days');
  t.equal(r.days('fixture'), 30, 'a module family the config does not name');
});
