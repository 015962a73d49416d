// The outbound pipeline's jobs and their history are partitioned by ranges of the job id (0056), as the SMS ledger is:
// both tables share their bounds, the store reads and changes a job in whichever partition holds it, and retention
// drops a range of both whole once past retention.outbound, moving the jobs still pending (with their history) to the
// default partitions, where they are purged row by row once done and past the retention.
import pino from 'pino';
import t from 'tap';
import { OutboundStore, type JobRow } from '../../src/outbound/outbound-store.js';
import { CORE_TABLES } from '../../src/store/sql/core-tables.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { migrationFolders } from '../../src/platform/module-order.js';
import { openDb } from '../../src/store/sql/db.js';
import { loadMigrations, migrate } from '../../src/store/sql/migrate.js';
import { RangePartitions, type PartitionedTable } from '../../src/store/sql/range-partitions.js';
import { Retention } from '../../src/store/sql/retention.js';
import { newId } from '../../src/util/ids.js';
import { testDatabase, testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { retentionConfig } from '../helpers/retention-config.js';

const log = pino({ level: 'silent' });
const DAY = 86_400_000;
const JOBS = CORE_TABLES.find((x) => x.name === 'outbound_jobs') as PartitionedTable;
const TABLES = ['outbound_jobs', 'outbound_history'];
const column = (table: string) => (table === 'outbound_jobs' ? 'id' : 'job_id');

t.test(`the outbound jobs' partitions: shared bounds, the store across them, dropped whole with pending jobs kept (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const q = (sql: string, params: unknown[] = []) => db.query(sql, params);
  const parts = new RangePartitions(db, log);
  const store = new OutboundStore(db);
  const now = Date.now();
  const tomorrow = Math.floor(now / DAY) * DAY + DAY;

  for (const table of TABLES) {
    t.same(
      (await parts.list(table)).map((p) => [p.name, p.fromMs, p.toMs]),
      [[`${table}_p_before`, null, tomorrow]],
      `${table} after the migration: the table so far, every id up to tomorrow's first`,
    );
  }
  const made = await parts.ensure(JOBS, 1, now);
  t.ok(made.length >= 2 && made.filter((n) => n.startsWith('outbound_jobs_')).length === made.length / 2, `each range made for both tables: ${made.join(', ')}`);
  const bounds = async (table: string) => (await parts.list(table)).map((p) => [p.name.slice(table.length), p.fromMs, p.toMs]);
  t.same(await bounds('outbound_history'), await bounds('outbound_jobs'), 'outbound_history: the same ranges under the same suffixes');

  // Jobs as the pipeline writes them (its clock makes the id and the times), with a first history row each.
  const job = async (at: number, pending: boolean): Promise<string> => {
    const row: JobRow = {
      id: newId('job_', at),
      product: 'email',
      provider: 'smtp',
      accountId: 'acc_op',
      messageId: newId('em_', at),
      lane: 'bulk',
      payload: { to: 'someone@example.invalid' },
      state: pending ? 'queued' : 'sent',
      pending,
      attempts: pending ? 0 : 1,
      nextAttemptAt: at,
      deadlineAt: at + DAY,
      claimedUntil: null,
      providerId: null,
      ferryError: null,
      providerError: null,
      errorMessage: null,
      createdAt: at,
      updatedAt: at,
    };
    await db.tx(async (tx) => {
      // The pipeline inserts jobs pending and writes their outcome later.
      await store.insertJobs(tx, [row], at);
      if (!pending) await store.write(tx, [row]);
      await store.insertHistory(tx, [
        { jobId: row.id, kind: 'state', state: 'queued', at, detail: null },
        ...(pending ? [] : [{ jobId: row.id, kind: 'state' as const, state: 'sent', at, detail: null }]),
      ]);
    });
    return row.id;
  };
  const where = async (table: string, id: string) =>
    (await q(`SELECT DISTINCT tableoid::regclass::text AS p FROM ${table} WHERE ${column(table)} = $1`, [id])).rows.map((r) => r.p as string);
  const today = await job(now, false);
  const next = await job(tomorrow + 3_600_000, true);
  const ahead = await job(now + 30 * DAY, true);
  for (const table of TABLES) {
    t.same(await where(table, today), [`${table}_p_before`], `${table}: a job of today is in the first partition`);
    t.match(await where(table, next), [/_p\d{8}$/], `${table}: one of tomorrow in tomorrow's range`);
    t.same(await where(table, ahead), [`${table}_default`], `${table}: one past every range waits in the default partition`);
  }

  // The store across partitions: a job by id, a batch locked and written, a claim of due jobs, the history in order.
  t.equal((await store.get(next))?.state, 'queued', 'a job read by id');
  await db.tx(async (tx) => {
    const locked = await store.lock(tx, [ahead, today, next]);
    t.same(locked.map((r) => r.id), [today, next, ahead].sort(), 'a batch across three partitions locked, in id order');
    await store.write(tx, locked.map((r) => (r.id === next ? { ...r, attempts: 1, errorMessage: 'try again', updatedAt: now + 1 } : r)));
    await store.insertHistory(tx, [{ jobId: next, kind: 'attempt', state: 'queued', at: now + 1, detail: { code: 'retry' } }]);
  });
  t.match(await store.get(next), { attempts: 1, errorMessage: 'try again' }, 'and written');
  t.same((await store.history(next)).map((h) => h.kind), ['state', 'attempt'], 'its history in order');
  const claimed = await store.claimDue('smtp', 10, now + 31 * DAY, now + 31 * DAY + 60_000);
  t.same(claimed.map((r) => r.id).sort(), [next, ahead].sort(), 'the claim finds the due pending jobs in their partitions');
  await store.endClaims(claimed.map((r) => ({ id: r.id, until: now + 31 * DAY + 60_000, nextAttemptAt: r.nextAttemptAt })));
  t.same((await store.claim([ahead], now + 31 * DAY, now + 31 * DAY + 60_000)).map((r) => r.id), [ahead], 'and a claim by id');
  await store.endClaims([{ id: ahead, until: now + 31 * DAY + 60_000, nextAttemptAt: now + 30 * DAY }]);

  // Forty days on, retention ten days: the first partition and every range up to thirty days on are past it.
  const clock = now + 40 * DAY;
  await parts.ensure(JOBS, 1, clock);
  for (const table of TABLES) t.match(await where(table, ahead), [/_p\d{8}$/], `${table}: the job from ahead moved into its range once that was made`);

  // In tomorrow's range (past the retention at `clock`): `next` still pending, one done lately, one done long ago.
  const lately = await job(tomorrow + 2, false);
  await q(`UPDATE outbound_jobs SET updated_at = $2 WHERE id = $1`, [lately, clock - DAY]);
  const gone = await job(tomorrow + 3, false);
  const retention = new Retention({ db, log, config: retentionConfig({ outbound: 10 }), tables: [JOBS], partitions: parts, clock: () => clock });
  const out = await retention.runOnce();
  t.ok(out && 'outbound_jobs' in out, `the pass dropped partitions: ${JSON.stringify(out)}`);
  t.notOk((await parts.list('outbound_jobs')).some((p) => p.name === 'outbound_jobs_p_before'), 'the first partition went');
  t.ok((await parts.list('outbound_jobs')).every((p) => p.toMs > clock - 10 * DAY), 'every range left reaches into the retention');
  t.same((await bounds('outbound_history')).length, (await bounds('outbound_jobs')).length, 'outbound_history: its partitions went with them');
  for (const table of TABLES) {
    t.same(await where(table, next), [`${table}_default`], `${table}: the pending job is kept, moved to the default partition`);
    t.same(await where(table, lately), [], `${table}: the one done only lately went with its range`);
    t.same(await where(table, gone), [], `${table}: the one done long ago too`);
    t.same(await where(table, today), [], `${table}: so did today's, with the first partition`);
  }
  t.same((await store.history(next)).map((h) => h.kind), ['state', 'attempt'], 'its history came along whole');

  // The kept job is still claimed and finished by the store; once done and old it is purged there row by row.
  const again = await store.claim([next], clock, clock + 60_000);
  t.same(again.map((r) => r.id), [next], 'the kept job is still claimed');
  await db.tx(async (tx) => {
    const [row] = await store.lock(tx, [next]);
    await store.write(tx, [{ ...row, state: 'failed', pending: false, claimedUntil: null, updatedAt: clock - 20 * DAY }]);
  });
  const second = await retention.runOnce();
  t.same(second?.outbound_history, 2, `the second pass purged its history from the default partition: ${JSON.stringify(second)}`);
  for (const table of TABLES) t.same(await where(table, next), [], `${table}: now it is gone`);

  // A new job after all that lands in its range; the history's sequence survived the first partition's drop.
  const fresh = await job(clock, true);
  t.match(await where('outbound_history', fresh), [/^outbound_history_p\d{8}$/], 'a new job and its history land in their range');
  const { rows: seqs } = await q(`SELECT seq FROM outbound_history WHERE job_id = $1`, [fresh]);
  t.ok(seqs.length === 1 && Number(seqs[0].seq) > 4, `the history's seq goes on (${seqs[0]?.seq})`);
});

t.test(`0056 turns the jobs and history so far into the first partitions, the history's seq going on (${backendLabel})`, async (t) => {
  const store = await testDatabase({ bare: true });
  t.teardown(() => store.cleanup());
  const db = await openDb({ url: store.url, dataDir: store.dataDir, poolSize: 1 });
  t.teardown(() => db.close());
  const all = loadMigrations(migrationFolders(CHANNEL_MODULES));
  await migrate(db, all.filter((m) => m.version < 56));
  const at = Date.now() - 3 * DAY;
  const ids = [newId('job_', at), newId('job_', at + 1)];
  await db.query(
    `INSERT INTO outbound_jobs (id, product, provider, account_id, message_id, payload, state, pending, next_attempt_at, deadline_at, created_at, updated_at)
     SELECT id, 'email', 'smtp', 'acc_m', id, '{}', 'queued', true, $2, $2, $2, $2 FROM unnest($1::text[]) AS id`,
    [ids, at],
  );
  await db.query(`INSERT INTO outbound_history (job_id, kind, state, at) SELECT id, 'state', 'queued', $2 FROM unnest($1::text[]) AS id`, [ids, at]);
  const { rows: before } = await db.query<{ seq: string }>(`SELECT max(seq) AS seq FROM outbound_history`);

  const applied = await migrate(db, all);
  t.same(applied.map((m) => m.version).filter((v) => v === 56), [56], '0056 applied');
  for (const table of TABLES) {
    const { rows } = await db.query<{ p: string; n: number }>(`SELECT tableoid::regclass::text AS p, count(*)::int AS n FROM ${table} GROUP BY 1`);
    t.same(rows, [{ p: `${table}_p_before`, n: 2 }], `${table}: its rows are the first partition's`);
  }
  const { rows: adopted } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'outbound\\_jobs\\_p\\_before\\_%' AND c.relkind = 'i'`,
  );
  t.equal(adopted[0].n, 7, "the old table's indexes became the partition's (key, deadline, oldest, provider id, message, done, due)");
  await db.query(`INSERT INTO outbound_history (job_id, kind, state, at) VALUES ($1, 'state', 'sent', $2)`, [ids[0], at + 5]);
  const { rows: after } = await db.query<{ seq: string }>(`SELECT max(seq) AS seq FROM outbound_history`);
  t.equal(Number(after[0].seq), Number(before[0].seq) + 1, 'the next history row takes the next seq');
  const store2 = new OutboundStore(db);
  t.same((await store2.history(ids[0])).map((h) => h.state), ['queued', 'sent'], 'and reads back in order');
});
