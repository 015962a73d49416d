// The event log is partitioned by time: partitions are made ahead, a row no partition covers waits in the default
// one and moves when its range is made, and retention drops a whole partition only once nothing still needs it.
import pino from 'pino';
import t from 'tap';
import { CORE_TABLES } from '../../src/store/sql/core-tables.js';
import { isPartitioned, partitionWidthDays, RangePartitions, type PartitionedTable } from '../../src/store/sql/range-partitions.js';
import { Retention } from '../../src/store/sql/retention.js';
import { TableMaintenance } from '../../src/store/sql/table-maintenance.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { retentionConfig } from '../helpers/retention-config.js';

const log = pino({ level: 'silent' });
const DAY = 86_400_000;
const EVENTS = CORE_TABLES.find((x) => x.name === 'webhook_events') as PartitionedTable;
const iso = (ms: number) => new Date(ms).toISOString();

t.test('partition width: about a tenth of the retention, one day to a week', async (t) => {
  t.ok(isPartitioned(EVENTS), 'the event log is declared partitioned');
  t.equal(partitionWidthDays(90), 7);
  t.equal(partitionWidthDays(30), 3);
  t.equal(partitionWidthDays(7), 1);
  t.equal(partitionWidthDays(0), 7, 'kept forever: a week');
});

t.test(`the event log's partitions: made ahead, strays moved, dropped whole once read (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const q = (sql: string, params: unknown[] = []) => db.query(sql, params);
  const parts = new RangePartitions(db, log);
  const now = Date.now();
  const whereIs = async (id: string) => (await db.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM webhook_events WHERE id = $1`, [id])).rows[0]?.p;
  const event = (id: string, at: number) => q(`INSERT INTO webhook_events (id, account_id, type, payload, created_at) VALUES ($1, 'acc_p', 'sms.sent', '{}', $2)`, [id, iso(at)]);

  const first = await parts.list('webhook_events');
  t.same(first.map((p) => [p.name, p.fromMs]), [['webhook_events_p_before', null]], 'after the migration: the table so far, up to tomorrow');
  const made = await parts.ensure(EVENTS, 1, now);
  t.ok(made.length >= 1 && made.length <= 2, `partitions through two days ahead: ${made.join(', ')}`);
  t.same(await parts.ensure(EVENTS, 1, now), [], 'ensuring again makes none');
  const listed = await parts.list('webhook_events');
  for (let i = 1; i < listed.length; i++) t.equal(listed[i].fromMs, listed[i - 1].toMs, `${listed[i].name} starts where the one before ends`);
  t.ok(listed[listed.length - 1].toMs >= now + 2 * DAY, 'the newest reaches two days ahead');

  // A row far ahead (a daemon down for weeks) waits in the default partition and moves once its range is made.
  const later = now + 30 * DAY;
  await event('evt_stray', later);
  t.equal(await whereIs('evt_stray'), 'webhook_events_default', 'no partition covers it yet: the default one holds it');
  await parts.ensure(EVENTS, 1, later);
  t.match(await whereIs('evt_stray'), /^webhook_events_p\d{8}$/, 'its range was made: it moved there');
  t.equal((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events_default`)).rows[0].n, 0, 'the default partition is empty again');

  // The endpoints' cursors are at a tick from before these events: not read yet (we_q's endpoint is disabled). One
  // event also waits in the retry set.
  await q(`INSERT INTO webhook_endpoints (id, account_id, url, events, secret_cipher, enabled) VALUES
    ('we_p', 'acc_p', 'https://example.invalid/h', ARRAY['*'], 'x', true), ('we_q', 'acc_p', 'https://example.invalid/q', ARRAY['*'], 'x', false)`);
  await q(`INSERT INTO webhook_ticks (snap, last_seq) VALUES (pg_current_snapshot(), 0)`);
  await q(`INSERT INTO webhook_cursors (endpoint_id, tick_id) SELECT e, (SELECT max(id) FROM webhook_ticks) FROM unnest(ARRAY['we_p', 'we_q']) AS e`);
  await event('evt_unread', now);
  await event('evt_retrying', now);
  await q(`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, status) VALUES ('whd_r', 'we_p', 'evt_retrying', 1, 'failed')`);

  // Forty days on, retention 10 days: everything up to 30 days ahead is past it.
  const clock = now + 40 * DAY;
  await parts.ensure(EVENTS, 1, clock);
  const retention = new Retention({ db, log, config: retentionConfig({ webhooks: 10 }), tables: [EVENTS], partitions: parts, clock: () => clock });
  t.same(await retention.runOnce(), {}, 'nothing dropped: the oldest partition has an unread event and an open delivery');
  t.ok(await whereIs('evt_unread'), 'the unread event is kept');

  await q(`UPDATE webhook_deliveries SET status = 'dead' WHERE id = 'whd_r'`);
  t.same(await retention.runOnce(), {}, 'its delivery ended, but an enabled endpoint has not read it: kept');

  await q(`INSERT INTO webhook_ticks (snap, last_seq) VALUES (pg_current_snapshot(), 0)`);
  await q(`UPDATE webhook_cursors SET tick_id = (SELECT max(id) FROM webhook_ticks) WHERE endpoint_id = 'we_p'`);
  const out = await retention.runOnce();
  t.ok(out && 'webhook_events' in out, 'read by the enabled endpoint (a disabled one does not hold it back): the partitions past the retention are dropped');
  const left = await parts.list('webhook_events');
  t.notOk(left.some((p) => p.name === 'webhook_events_p_before'), 'the first partition went');
  t.ok(left.every((p) => p.toMs > clock - 10 * DAY), 'every partition left reaches into the retention');
  t.equal(await whereIs('evt_unread'), undefined, 'its events went with it');
  t.match(await whereIs('evt_stray'), /^webhook_events_p\d{8}$/, 'a younger event is kept');

  // The log goes on: an insert after the first partition (the sequence's old owner) went.
  const { rows } = await db.query<{ seq: string }>(`INSERT INTO webhook_events (id, account_id, type, payload, created_at) VALUES ('evt_after', 'acc_p', 'sms.sent', '{}', $1) RETURNING seq`, [iso(clock)]);
  t.ok(Number(rows[0].seq) > 0, 'the event sequence survived the drop');

  // Table maintenance vacuums the partitions (the parent has no storage of its own).
  const vacuumed: string[] = [];
  await new TableMaintenance({ db, log, tables: [EVENTS], intervalSeconds: 0, minDeadRows: 0, ledgerEvery: 1, onVacuum: (table) => vacuumed.push(table) }).runOnce();
  if (db.kind === 'pglite') t.ok(vacuumed.some((x) => x.startsWith('webhook_events_p')), `the partitions are vacuumed: ${vacuumed.length}`);
  t.notOk(vacuumed.includes('webhook_events'), 'not the parent');
});
