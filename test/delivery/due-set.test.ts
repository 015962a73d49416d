// The due set (src/delivery/due-set.ts) on tables of its own, in both clocks: what a claim takes (due, open, of its
// scope, lanes in order, by due time), that a claimed row is not due again until its lease ends and then comes back,
// that a claim is ended only by its holder, and that two claimers at once never take the same row.
import t from 'tap';
import { RETRY_SET } from '../../src/channels/webhooks/retry-set.js';
import { DueSet } from '../../src/delivery/due-set.js';
import { preparedTexts } from '../../src/store/sql/prepared.js';
import { openDb } from '../../src/store/sql/db.js';
import type { Db } from '../../src/store/types.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { recording, seqScans, indexes, planOf, type Recorded } from '../helpers/plans.js';

const NOW = 1_900_000_000_000;

// Caller clock, a claim column, a scope and two lanes: the shape of outbound_jobs.
const JOBS = DueSet.declare({
  table: 'due_probe_jobs',
  id: 'id',
  due: 'due_at',
  clock: 'caller',
  claimedUntil: 'claimed_until',
  open: (row) => `${row}.open`,
  scope: 'target',
  lanes: { column: 'lane', values: [1, 2] },
  returning: 'j.id, j.lane, j.due_at',
});

// Database clock, the claim moving the due time: the shape of the webhook retry set.
const RETRIES = DueSet.declare({
  table: 'due_probe_retries',
  id: 'id',
  due: 'due_at',
  clock: 'database',
  open: (row) => `${row}.status IN ('pending', 'failed')`,
});

async function tables(db: Db): Promise<void> {
  await db.query(`CREATE TABLE due_probe_jobs (id text PRIMARY KEY, target text NOT NULL, lane smallint NOT NULL, open boolean NOT NULL DEFAULT true,
    due_at bigint NOT NULL, claimed_until bigint)`);
  await db.query(`CREATE INDEX due_probe_jobs_due ON due_probe_jobs (target, lane, due_at) WHERE open`);
  await db.query(`CREATE TABLE due_probe_retries (id text PRIMARY KEY, status text NOT NULL, due_at timestamptz)`);
  await db.query(`CREATE INDEX due_probe_retries_due ON due_probe_retries (due_at) WHERE status IN ('pending', 'failed')`);
}

t.test(`caller clock: scope, lanes, leases and claim ends (${backendLabel})`, async (t) => {
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  await tables(tdb.db);
  const rows: Array<[id: string, target: string, lane: number, open: boolean, due: number, claimed: number | null]> = [
    ['b1', 'a', 2, true, NOW - 300, null],
    ['b2', 'a', 2, true, NOW - 200, null],
    ['b_live', 'a', 2, true, NOW - 400, NOW + 60_000],
    ['b_ranout', 'a', 2, true, NOW - 250, NOW - 1],
    ['b_later', 'a', 2, true, NOW + 500_000, null],
    ['b_done', 'a', 2, false, NOW - 500, null],
    ['p1', 'a', 1, true, NOW - 10, null],
    ['p2', 'a', 1, true, NOW - 20, null],
    ['other', 'b', 1, true, NOW - 1000, null],
  ];
  await tdb.db.query(
    `INSERT INTO due_probe_jobs (id, target, lane, open, due_at, claimed_until)
     SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[], $4::bool[], $5::bigint[], $6::bigint[])`,
    [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), rows.map((r) => r[3]), rows.map((r) => r[4]), rows.map((r) => r[5])],
  );
  const set = new DueSet<{ id: string; lane: number; due_at: string }>(tdb.db, JOBS);
  const until = NOW + 30_000;
  const first = await set.claimDue(4, NOW, until, 'a');
  const order = (r: { id: string; lane: number; due_at: string }[]) => [...r].sort((x, y) => x.lane - y.lane || Number(x.due_at) - Number(y.due_at));
  t.same(
    order(first).map((r) => r.id),
    ['p2', 'p1', 'b1', 'b_ranout'],
    'the first lane first, each by due time; live claims, closed rows, later rows and other scopes skipped',
  );
  t.same(
    Object.fromEntries(first.map((r) => [r.id, r.prev_claim === null ? null : Number(r.prev_claim)])),
    { p2: null, p1: null, b1: null, b_ranout: NOW - 1 },
    'a claim that ran out comes back as the previous claim',
  );
  t.same((await set.claimDue(10, NOW, until, 'a')).map((r) => r.id), ['b2'], 'claimed rows are not due again while their lease runs');
  t.same(await set.claimDue(10, NOW + 29_999, until + 29_999, 'a'), [], 'nor a moment before it ends');
  const back = await set.claimDue(10, until, until + 30_000, 'a');
  t.same(back.map((r) => r.id).sort(), ['b1', 'b2', 'b_ranout', 'p1', 'p2'], 'once it ended they come back');
  t.same(
    back.map((r) => Number(r.prev_claim)),
    back.map(() => until),
    'each with the claim that ran out',
  );
  const byId = await set.claim(['b1', 'other'], until, until + 60_000);
  t.same(
    byId.map((r) => [r.id, r.prev_claim]),
    [['other', null]],
    'by ids: only those due and not held',
  );

  await set.endClaims([{ id: 'b1', until: until + 1, dueAt: NOW }]);
  t.same(await set.claimDue(10, until + 1, until + 2, 'a'), [], 'a claim not as made is not ended');
  await set.endClaims([{ id: 'b1', until: until + 30_000, dueAt: until + 10 }]);
  t.same((await set.claimDue(10, until + 9, until + 20, 'a')).map((r) => r.id), [], 'ended, the row is due when the end says');
  t.same((await set.claimDue(10, until + 10, until + 20, 'a')).map((r) => r.id), ['b1'], 'and then claimable');
});

t.test(`database clock: the claim moves the due time, hand back and bring forward (${backendLabel})`, async (t) => {
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  await tables(tdb.db);
  await tdb.db.query(`INSERT INTO due_probe_retries (id, status, due_at) VALUES
    ('r1', 'failed', now() - interval '3 seconds'), ('r2', 'pending', now() - interval '2 seconds'), ('r3', 'failed', now() - interval '1 second'),
    ('r_later', 'failed', now() + interval '1 hour'), ('r_done', 'delivered', NULL), ('r_dead', 'dead', now() - interval '1 hour')`);
  const set = new DueSet(tdb.db, RETRIES);
  const now = Date.now();
  t.same((await set.claimDue(2, now, now + 3_600_000)).map((r) => r.id).sort(), ['r1', 'r2'], 'the earliest due open rows');
  t.same((await set.claimDue(10, now, now + 3_600_000)).map((r) => r.id), ['r3'], 'claimed ones are not due again during the lease');
  t.same(await set.claimDue(10, now, now + 3_600_000), [], 'nothing else is due');
  await set.endClaims([{ id: 'r1', dueAt: now }, { id: 'r_done', dueAt: now }, { id: 'r_later', dueAt: now }]);
  t.same((await set.claimDue(10, now, now + 1)).map((r) => r.id).sort(), ['r1', 'r_later'], 'handed back or brought forward: due now; closed rows stay closed');
  // Claimed for 1 ms above: the lease ends and they come back (polled, bounded).
  let again: string[] = [];
  for (let i = 0; i < 100 && again.length < 2; i++) {
    await new Promise((r) => setTimeout(r, 20));
    again = again.concat((await set.claimDue(10, Date.now(), Date.now() + 3_600_000)).map((r) => r.id));
  }
  t.same(again.sort(), ['r1', 'r_later'], 'rows whose lease ended come back');
  t.same(await set.claim(['r2', 'r_dead'], Date.now(), Date.now() + 1000), [], 'by ids: neither a held row nor a closed one');
});

t.test(`two claimers at once never take the same row, and rows come back after the lease (${backendLabel})`, async (t) => {
  const tdb = await testDb({ migrate: false });
  t.teardown(() => tdb.cleanup());
  await tables(tdb.db);
  const N = 2000;
  await tdb.db.query(
    `INSERT INTO due_probe_jobs (id, target, lane, due_at) SELECT 'j' || lpad(g::text, 5, '0'), 't', 1 + g % 2, $1::bigint - g FROM generate_series(1, ${N}) g`,
    [NOW],
  );
  // On Postgres the second claimer is a pool of its own (other connections, as another instance has).
  const other = tdb.url ? await openDb({ url: tdb.url, dataDir: tdb.dataDir, poolSize: 4 }) : tdb.db;
  t.teardown(() => (other !== tdb.db ? other.close() : undefined));
  const claimers = [new DueSet(tdb.db, JOBS), new DueSet(other, JOBS)];
  const until = NOW + 60_000;

  const round = async (now: number, end: number): Promise<string[][]> => {
    const got: string[][] = [[], []];
    // Each claimer runs four claims at a time until a claim comes back empty (at most N / 25 rounds).
    await Promise.all(
      claimers.flatMap((set, who) =>
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < N / 25; i++) {
            const rows = await set.claimDue(25, now, end, 't');
            if (!rows.length) return;
            got[who].push(...rows.map((r) => r.id));
          }
        }),
      ),
    );
    return got;
  };

  const got = await round(NOW, until);
  const all = [...got[0], ...got[1]];
  t.equal(new Set(all).size, all.length, `no row claimed twice (${got[0].length} + ${got[1].length})`);
  t.equal(all.length, N, 'every row claimed');
  if (tdb.db.kind === 'postgres') t.ok(got[0].length > 0 && got[1].length > 0, 'both claimers took rows');
  t.same(await round(until - 1, until + 60_000), [[], []], 'none due again while the lease runs');

  const later = await round(until, until + 60_000);
  const back = [...later[0], ...later[1]];
  t.equal(back.length, N, 'after the lease every row comes back');
  t.equal(new Set(back).size, N, 'once each');
});

/*
 * The retry set's statements against webhook_deliveries as production has it: mostly delivered rows (the delivery
 * log) and a few open. The claim reads webhook_deliveries_due, the rest the primary key, with the values and in the
 * generic plan Postgres may keep for a prepared statement. (outbound_jobs: test/outbound/claim.test.ts.)
 */
t.test(`the retry set's claim reaches webhook_deliveries through its due index (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  await db.query(`INSERT INTO webhook_endpoints (id, account_id, url, events, secret_cipher) VALUES ('wh_plan', 'acc_1', 'https://example.test/', '{}', 'x')`);
  await db.query(
    `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_seq, status, attempts, next_attempt_at, delivered_at, created_at)
     SELECT 'whd_' || g, 'wh_plan', 'evt_' || g, g, CASE WHEN g % 1000 = 0 THEN 'failed' ELSE 'delivered' END, 1,
       CASE WHEN g % 1000 = 0 THEN now() - interval '1 second' END, now(), now() - make_interval(secs => 50000 - g)
     FROM generate_series(1, 50000) g`,
  );
  await db.query('ANALYZE webhook_deliveries');
  const log: Recorded[] = [];
  const set = new DueSet(recording(db, log), RETRY_SET);
  const now = Date.now();
  const got = await set.claimDue(10, now, now + 60_000);
  t.equal(got.length, 10, 'ten of the fifty open rows claimed');
  await set.endClaims(got.map((r) => ({ id: r.id, dueAt: now })), now);
  t.equal((await set.claim(got.map((r) => r.id), now, now + 60_000)).length, 10, 'handed back and claimed again by id');

  const claim = log[0];
  const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${claim.text}`, claim.params as unknown[]);
  const plan = planOf(rows[0]['QUERY PLAN']);
  t.same(seqScans(plan).filter((rel) => rel === 'webhook_deliveries'), [], 'no scan of webhook_deliveries in the claim');
  t.ok(indexes(plan).includes('webhook_deliveries_due'), `the claim reads webhook_deliveries_due (${indexes(plan).join(', ')})`);

  const texts = preparedTexts().filter((text) => /^UPDATE webhook_deliveries j\b/.test(text) && log.some((r) => r.text === text));
  t.equal(texts.length, 3, 'the retry set\'s three statements ran');
  for (const text of texts) {
    const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    const generic = await db.tx(async (q) => {
      await q.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
      await q.query(`PREPARE plan_check AS ${text}`);
      const { rows } = await q.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE plan_check(${Array(params).fill('NULL').join(', ')})`);
      await q.query(`DEALLOCATE plan_check`);
      return planOf(rows[0]['QUERY PLAN']);
    });
    t.same(seqScans(generic).filter((rel) => rel === 'webhook_deliveries'), [], `generic plan: no scan of webhook_deliveries in ${text.replace(/\s+/g, ' ').slice(0, 70)}…`);
    if (text === claim.text) t.ok(indexes(generic).includes('webhook_deliveries_due'), `generic plan of the claim reads webhook_deliveries_due (${indexes(generic).join(', ')})`);
  }
});
