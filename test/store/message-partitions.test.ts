// The SMS ledger is partitioned by ranges of the message id (0055): messages, message_events and message_parts share
// their bounds, a lookup by id reaches one partition, and retention drops a range of all three whole once past it,
// moving the messages still open to the default partitions, where they are purged row by row once final and past
// the retention.
import pino from 'pino';
import t from 'tap';
import { Ledger } from '../../src/ledger/ledger.js';
import { CORE_TABLES } from '../../src/store/sql/core-tables.js';
import { RangePartitions, type PartitionedTable } from '../../src/store/sql/range-partitions.js';
import { Retention } from '../../src/store/sql/retention.js';
import { TableMaintenance } from '../../src/store/sql/table-maintenance.js';
import { newId } from '../../src/util/ids.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { retentionConfig } from '../helpers/retention-config.js';

const log = pino({ level: 'silent' });
const DAY = 86_400_000;
const MESSAGES = CORE_TABLES.find((x) => x.name === 'messages') as PartitionedTable;
const TABLES = ['messages', 'message_events', 'message_parts'];
const iso = (ms: number) => new Date(ms).toISOString();

t.test(`the SMS ledger's partitions: shared bounds, lookups by id in one partition, dropped whole with what is still needed kept (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const q = (sql: string, params: unknown[] = []) => db.query(sql, params);
  const parts = new RangePartitions(db, log);
  const now = Date.now();
  const tomorrow = Math.floor(now / DAY) * DAY + DAY;

  for (const table of TABLES) {
    t.same(
      (await parts.list(table)).map((p) => [p.name, p.fromMs, p.toMs]),
      [[`${table}_p_before`, null, tomorrow]],
      `${table} after the migration: the table so far, every id up to tomorrow's first`,
    );
  }
  const made = await parts.ensure(MESSAGES, 1, now);
  t.same(made.filter((n) => n.startsWith('messages_')).length, made.length / 3, `each range made for all three tables: ${made.join(', ')}`);
  t.same(await parts.ensure(MESSAGES, 1, now), [], 'ensuring again makes none');
  const bounds = async (table: string) => (await parts.list(table)).map((p) => [p.name.slice(table.length), p.fromMs, p.toMs]);
  t.same(await bounds('message_events'), await bounds('messages'), 'message_events: the same ranges under the same suffixes');
  t.same(await bounds('message_parts'), await bounds('messages'), 'message_parts: the same ranges under the same suffixes');
  const { rows: storage } = await q(`SELECT relname, reloptions FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname LIKE 'messages\\_p2%' AND relkind = 'r'`);
  t.ok(storage.length >= 1 && storage.every((r) => String(r.reloptions).includes('fillfactor=60')), 'each new messages partition keeps room for heap-only updates (fillfactor 60)');

  // Messages of three ages: forty days ago (each a fate), today, and ahead of every partition (a daemon's clock ahead).
  const sms = async (at: number, status: string, finalAt: number | null) => {
    const id = newId('msg_', at);
    await q(
      `INSERT INTO messages (id, account_id, ingress, source, destination, body, encoding, status, currency, created_at, final_at)
       VALUES ($1, 'acc_mp', 'rest', 'Ferry', '233241234567', 'hi', 'gsm7', $2, 'USD', $3, $4)`,
      [id, status, iso(at), finalAt === null ? null : iso(finalAt)],
    );
    await q(`INSERT INTO message_events (message_id, status) VALUES ($1, 'queued'), ($1, $2)`, [id, status]);
    await q(`INSERT INTO message_parts (message_id, part_index, status) VALUES ($1, 0, $2)`, [id, status]);
    return id;
  };
  const where = async (table: string, column: string, id: string) =>
    (await q(`SELECT DISTINCT tableoid::regclass::text AS p FROM ${table} WHERE ${column} = $1`, [id])).rows.map((r) => r.p as string);
  const today = await sms(now, 'delivered', now);
  const next = await sms(tomorrow + 3_600_000, 'delivered', now);
  const ahead = await sms(now + 30 * DAY, 'queued', null);
  for (const table of TABLES) {
    const column = table === 'messages' ? 'id' : 'message_id';
    t.same(await where(table, column, today), [`${table}_p_before`], `${table}: a message of today is in the first partition`);
    t.match(await where(table, column, next), [/_p\d{8}$/], `${table}: one of tomorrow in tomorrow's range`);
    t.same(await where(table, column, ahead), [`${table}_default`], `${table}: one past every range waits in the default partition`);
  }

  // A lookup by id, planned once for any id (as a prepared statement is), reads one partition; so does a batch.
  const ledger = new Ledger(db);
  t.teardown(() => ledger.close());
  t.equal((await ledger.get(today))?.id, today, 'the ledger reads a message by id');
  t.same([...(await ledger.getMany([today, ahead])).keys()].sort(), [today, ahead].sort(), 'and a batch across partitions');
  if (db.kind === 'postgres') {
    await db.tx(async (tx) => {
      await tx.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
      await tx.query(`PREPARE one_message(text) AS SELECT status FROM messages WHERE id = $1`);
      const plan = (await tx.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE one_message('${next}')`)).rows.map((r) => r['QUERY PLAN']).join('\n');
      t.match(plan, /Subplans Removed: [1-9]/, 'by id: the other partitions are pruned when the statement starts');
      await tx.query(`DEALLOCATE one_message`);
    });
  }

  // Forty days on, retention ten days: the first partition and every range up to thirty days on are past it.
  const clock = now + 40 * DAY;
  await parts.ensure(MESSAGES, 1, clock);
  for (const table of TABLES) {
    const column = table === 'messages' ? 'id' : 'message_id';
    t.match(await where(table, column, ahead), [/_p\d{8}$/], `${table}: the message from ahead moved into its range once that was made`);
  }

  // Fates inside tomorrow's range (past the retention at `clock`): still queued, still waiting for a receipt, final
  // only lately (a final row goes with its range whatever its final time), final long ago.
  const open = await sms(tomorrow + 1, 'queued', null);
  const waiting = await sms(tomorrow + 4, 'submitted', null);
  const lately = await sms(tomorrow + 2, 'delivered', clock - DAY);
  const gone = await sms(tomorrow + 3, 'delivered', now + 3);
  const retention = new Retention({ db, log, config: retentionConfig({ sms: 10 }), tables: [MESSAGES], partitions: parts, clock: () => clock });
  const out = await retention.runOnce();
  t.ok(out && 'messages' in out, `the pass dropped partitions: ${JSON.stringify(out)}`);
  const left = (await parts.list('messages')).map((p) => p.name);
  t.notOk(left.includes('messages_p_before'), 'the first partition went');
  t.ok((await parts.list('messages')).every((p) => p.toMs > clock - 10 * DAY), 'every range left reaches into the retention');
  for (const table of TABLES) t.same((await bounds(table)).length, left.length, `${table}: its partitions went with them`);
  for (const table of TABLES) {
    const column = table === 'messages' ? 'id' : 'message_id';
    t.same(await where(table, column, open), [`${table}_default`], `${table}: the open message is kept, moved to the default partition`);
    t.same(await where(table, column, waiting), [`${table}_default`], `${table}: the one waiting for its receipt too`);
    t.same(await where(table, column, lately), [], `${table}: the one final only lately went with its range`);
    t.same(await where(table, column, gone), [], `${table}: the one final long ago went with its partition`);
    t.same(await where(table, column, today), [], `${table}: so did today's message, with the first partition`);
    t.same(await where(table, column, next), [], `${table}: and the rest of its range`);
  }
  t.same((await q(`SELECT status FROM message_events WHERE message_id = $1 ORDER BY id`, [open])).rows.map((r) => r.status), ['queued', 'queued'], 'its history came along whole');

  // The ledger still finds and changes the kept message in the default partition; once final and old it is purged
  // there row by row, with its history and parts.
  t.equal((await ledger.get(open))?.status, 'queued', 'the ledger still reads the kept message');
  await q(`UPDATE messages SET status = 'expired', final_at = $2 WHERE id = $1`, [open, iso(clock - 20 * DAY)]);
  const second = await retention.runOnce();
  t.same(second?.message_events, 2, `the second pass purged its events from the default partition: ${JSON.stringify(second)}`);
  for (const table of TABLES) t.same(await where(table, table === 'messages' ? 'id' : 'message_id', open), [], `${table}: now it is gone`);
  t.same(await where('messages', 'id', waiting), ['messages_default'], 'the one still waiting stays');

  // A new message after all that lands in its range; the event sequence survived the first partition's drop.
  const fresh = await sms(clock, 'queued', null);
  t.match(await where('message_events', 'message_id', fresh), [/^message_events_p\d{8}$/], 'a new message and its history land in their range');

  // Table maintenance vacuums the partitions (the parents have no storage of their own).
  const vacuumed: string[] = [];
  const ledgerTables = CORE_TABLES.filter((x) => TABLES.includes(x.name));
  await new TableMaintenance({ db, log, tables: ledgerTables, intervalSeconds: 0, minDeadRows: 0, ledgerEvery: 1, onVacuum: (table) => vacuumed.push(table) }).runOnce();
  t.notOk(vacuumed.some((x) => TABLES.includes(x)), `never the parents: ${vacuumed.join(', ') || 'none'}`);
  if (db.kind === 'pglite') t.ok(vacuumed.some((x) => x.startsWith('message_parts_p')), 'message_parts partitions are vacuumed');
});
