// The workers' claim straight from outbound_jobs (OutboundStore.claimDue), against the table as production has it:
// mostly done jobs (kept for the retention period) and a few pending. What it picks (due, unclaimed or claim run out,
// priority lane first, then by due time), what it skips (claimed, scheduled, another provider's, rows being claimed
// by another worker), and that it and the scrape's counts reach the rows through the pending indexes, never by
// reading the whole table, with the values and in the generic plan Postgres may keep for a prepared statement.
import t from 'tap';
import { OutboundStore } from '../../src/outbound/outbound-store.js';
import { preparedTexts } from '../../src/store/sql/prepared.js';
import type { Db } from '../../src/store/types.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { recording, seqScans, indexes, planOf, roots, type PlanNode, type Recorded } from '../helpers/plans.js';

const NOW = 1_900_000_000_000;
const DONE = 50_000;

async function explain(db: Db, text: string, params: readonly unknown[]): Promise<PlanNode> {
  // EXPLAIN without ANALYZE: the UPDATE is planned, not run.
  const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, params as unknown[]);
  return planOf(rows[0]['QUERY PLAN']);
}

async function genericPlan(db: Db, text: string): Promise<PlanNode> {
  const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  return db.tx(async (q) => {
    await q.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
    await q.query(`PREPARE plan_check AS ${text}`);
    const { rows } = await q.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE plan_check(${Array(params).fill('NULL').join(', ')})`);
    await q.query(`DEALLOCATE plan_check`);
    return planOf(rows[0]['QUERY PLAN']);
  });
}

t.test(`the claim picks due jobs by lane and due time and reaches them through outbound_jobs_due (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  // The retention period's done jobs, of both providers.
  await db.query(
    `INSERT INTO outbound_jobs (id, product, provider, account_id, message_id, lane, payload, state, pending, next_attempt_at, deadline_at, created_at, updated_at)
     SELECT 'job_done' || lpad(g::text, 6, '0'), 'demo', CASE WHEN g % 2 = 0 THEN 'p-a' ELSE 'p-b' END, 'acc_1', 'dm_done' || g, 2, '{}', 'sent', false,
       $1::bigint - g * 1000, $1::bigint + 3600000, $1::bigint - g * 1000, $1::bigint - g * 1000
     FROM generate_series(1, ${DONE}) g`,
    [NOW],
  );
  // Pending, p-a: bulk due at NOW-300.., priority due later, one of each claimed by a live worker, one whose claim ran
  // out, one scheduled, and a backlog of 2,000 bulk jobs due after those; p-b: due jobs of its own.
  const pending: Array<[id: string, provider: string, lane: number, due: number, claimed: number | null]> = [
    ['job_b1', 'p-a', 2, NOW - 300, null],
    ['job_b2', 'p-a', 2, NOW - 200, null],
    ['job_b_live', 'p-a', 2, NOW - 400, NOW + 60_000],
    ['job_b_ranout', 'p-a', 2, NOW - 250, NOW - 1],
    ['job_b_later', 'p-a', 2, NOW + 5_000, null],
    ['job_p1', 'p-a', 1, NOW - 10, null],
    ['job_p2', 'p-a', 1, NOW - 20, null],
    ['job_p_live', 'p-a', 1, NOW - 30, NOW + 60_000],
    ['job_p_later', 'p-a', 1, NOW + 1, null],
    ['job_other', 'p-b', 1, NOW - 1000, null],
  ];
  await db.query(
    `INSERT INTO outbound_jobs (id, product, provider, account_id, message_id, lane, payload, state, next_attempt_at, deadline_at, claimed_until, created_at, updated_at)
     SELECT u.id, 'demo', u.provider, 'acc_1', 'dm_' || u.id, u.lane, '{}', 'queued', u.due, $1::bigint + 3600000, u.claimed, $1::bigint - 1000, $1::bigint - 1000
     FROM unnest($2::text[], $3::text[], $4::smallint[], $5::bigint[], $6::bigint[]) AS u(id, provider, lane, due, claimed)`,
    [NOW, pending.map((p) => p[0]), pending.map((p) => p[1]), pending.map((p) => p[2]), pending.map((p) => p[3]), pending.map((p) => p[4])],
  );
  await db.query(
    `INSERT INTO outbound_jobs (id, product, provider, account_id, message_id, lane, payload, state, next_attempt_at, deadline_at, created_at, updated_at)
     SELECT 'job_backlog' || lpad(g::text, 5, '0'), 'demo', CASE WHEN g % 10 = 0 THEN 'p-b' ELSE 'p-a' END, 'acc_1', 'dm_backlog' || g, 2, '{}', 'queued', $1::bigint - 100 + g % 50, $1::bigint + 3600000, $1::bigint, $1::bigint
     FROM generate_series(1, 2000) g`,
    [NOW],
  );
  await db.query('ANALYZE outbound_jobs');

  const log: Recorded[] = [];
  const store = new OutboundStore(recording(db, log));
  const until = NOW + 90_000;
  const first = await store.claimDue('p-a', 5, NOW, until);
  t.same(
    first.map((r) => r.id),
    ['job_p2', 'job_p1', 'job_b1', 'job_b_ranout', 'job_b2'],
    'the priority lane first, each lane by due time; live claims, scheduled jobs and the other provider skipped',
  );
  t.ok(first.every((r) => r.claimedUntil === until), 'claimed until the given end');
  t.same(
    first.map((r) => r.prevClaim),
    [null, null, null, NOW - 1, null],
    'the claim that ran out is returned as the previous claim (a possible duplicate)',
  );
  const again = await store.claimDue('p-a', 5, NOW, until);
  t.notOk(again.some((r) => first.some((f) => f.id === r.id)), 'claimed jobs are not claimed again while their claim runs');
  t.ok(again.every((r) => r.id.startsWith('job_backlog')), 'then the backlog');
  t.same(await store.claimDue('p-a', 5, NOW - 1_000_000, until), [], 'nothing is due before its time');
  const end = again[0];
  await store.endClaims([{ id: end.id, until: until + 1, nextAttemptAt: NOW }]);
  t.equal((await store.get(end.id))!.claimedUntil, until, 'a claim that is not ours any more is not ended');
  await store.endClaims([{ id: end.id, until, nextAttemptAt: NOW + 10_000 }]);
  t.match(await store.get(end.id), { claimedUntil: null, nextAttemptAt: NOW + 10_000 }, 'ours is ended, the job due again when the deferral says');
  const counts = await store.counts(NOW);
  t.same(counts.get('p-a'), { due: 1800 - 5, scheduled: 3, claimed: 2 + 10 - 1 }, 'the scrape: due, scheduled (the deferred one too), claimed');
  t.same(counts.get('p-b'), { due: 201, scheduled: 0, claimed: 0 });

  if (db.kind === 'postgres') {
    // Another worker in the middle of its claim holds row locks: this claim skips those rows rather than waiting.
    await db.tx(async (q) => {
      const { rows } = await q.query<{ id: string }>(`SELECT id FROM outbound_jobs WHERE provider = 'p-b' AND pending ORDER BY lane, next_attempt_at LIMIT 3 FOR UPDATE`);
      const got = await store.claimDue('p-b', 3, NOW, until);
      t.equal(got.length, 3, 'three claimed');
      t.notOk(got.some((g) => rows.some((r) => r.id === g.id)), 'none of the locked rows');
    });
  }

  // outbound_jobs is partitioned (0056): a scan reads a partition, named in the plan. One that holds no row may be scanned.
  const { rows: holding } = await db.query<{ p: string }>(`SELECT DISTINCT tableoid::regclass::text AS p FROM outbound_jobs`);
  const jobRelations = new Set(holding.map((r) => r.p));
  t.ok(jobRelations.size >= 1 && [...jobRelations].every((p) => p.startsWith('outbound_jobs_')), `the rows are in partitions: ${[...jobRelations].join(', ')}`);
  const scanned = (plan: PlanNode) => seqScans(plan).filter((rel) => jobRelations.has(rel) || rel === 'outbound_jobs');

  const claims = log.filter((r) => /^UPDATE outbound_jobs j SET claimed_until/.test(r.text));
  t.ok(claims.length >= 2, 'the claim statement was seen');
  for (const r of claims.slice(0, 1)) {
    const plan = await explain(db, r.text, r.params);
    t.same(scanned(plan), [], 'no scan of outbound_jobs in the claim');
    t.ok((await roots(db, indexes(plan))).includes('outbound_jobs_due'), `the claim reads outbound_jobs_due (${indexes(plan).join(', ')})`);
  }
  // Every statement the store ran over outbound_jobs, with its values (a batch of ids reaches the partitions holding them).
  const ran = log.filter((r) => /\boutbound_jobs\b/.test(r.text) && !/^INSERT/.test(r.text) && r.params.length > 0);
  t.ok(new Set(ran.map((r) => r.text)).size >= 3, `the store's statements were seen (${new Set(ran.map((r) => r.text)).size})`);
  for (const r of ran) t.same(scanned(await explain(db, r.text, r.params)), [], `no scan of outbound_jobs in ${r.text.replace(/\s+/g, ' ').slice(0, 70)}…`);
  const countsText = log.find((r) => /GROUP BY provider/.test(r.text))!;
  t.same(scanned(await explain(db, countsText.text, countsText.params)), [], 'no scan of outbound_jobs in the counts');

  // On Postgres they run as prepared statements, which may keep a generic plan (made without the values).
  const texts = preparedTexts().filter((text) => /\boutbound_jobs\b/.test(text) && !/^INSERT/.test(text));
  t.ok(texts.length >= 5, `the prepared statements that read outbound_jobs (${texts.length})`);
  for (const text of texts) {
    const plan = await genericPlan(db, text);
    t.same(scanned(plan), [], `generic plan: no scan of outbound_jobs in ${text.replace(/\s+/g, ' ').slice(0, 70)}…`);
  }
  const generic = await genericPlan(db, claims[0].text);
  t.ok((await roots(db, indexes(generic))).includes('outbound_jobs_due'), `generic plan of the claim reads outbound_jobs_due (${indexes(generic).join(', ')})`);
});
