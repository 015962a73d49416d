import t from 'tap';
import { EventOutbox } from '../../src/events/event-outbox.js';
import { Ledger } from '../../src/ledger/ledger.js';
import { CustomerOutbox } from '../../src/receipts/customer-outbox.js';
import { preparedTexts } from '../../src/store/sql/prepared.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { indexReads, recording, seqScans, type PlanNode, type Recorded } from '../helpers/plans.js';

/*
 * The batch statements of the hot path join a few hundred ids against the ledger. Written as a plain join, the planner
 * hashed the whole messages table on every batch once it held some tens of thousands of rows (seen in the benchmark:
 * 100 ms per batch at 42,000 rows, growing with the table). Each one must reach messages by key.
 */
t.test(`hot-path batch statements reach the ledger by key, not by scanning it (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  // A ledger much larger than a batch, as in production: 50,000 rows written in one statement, then fresh statistics
  // (Postgres's autovacuum or Ferry's table maintenance keeps them so).
  await db.query(
    `INSERT INTO messages (id, account_id, ingress, source, destination, body, segments, encoding, registered_delivery, currency, status, created_at)
     SELECT 'msg_plan' || lpad(g::text, 6, '0'), 'acc_1', 'smpp', 'Ferry', '4477009' || lpad(g::text, 5, '0'), 'Your code is ' || g, 1, 'gsm7', 1, 'EUR',
       'queued', now() - make_interval(secs => 50000 - g)
     FROM generate_series(1, 50000) g`,
  );
  await db.query('ANALYZE messages');
  const ids = Array.from({ length: 50_000 }, (_, i) => 'msg_plan' + String(i + 1).padStart(6, '0'));

  const log: Recorded[] = [];
  const rec = recording(db, log);
  const outbox = new CustomerOutbox(rec);
  const ledger = new Ledger(rec, { effects: [outbox.effect, new EventOutbox().effect] });
  t.teardown(() => ledger.close());

  // A batch spread over the table, like the receipts of a busy hour.
  const batch = ids.filter((_, i) => i % 100 === 7);
  // Half of them sent in two parts, so the parts upsert runs too (a message sent whole has no part rows).
  const outcomes = await Promise.all(
    batch.map((id, i) =>
      i % 2
        ? ledger.markSubmitted(id, 'up1', 'r1', [{ partIndex: 0, upstreamMessageId: `u${i}a` }, { partIndex: 1, upstreamMessageId: `u${i}b` }], 2)
        : ledger.markSubmitted(id, 'up1', 'r1', [{ partIndex: 0, upstreamMessageId: `u${i}` }]),
    ),
  );
  t.ok(outcomes.every((o) => o === 'changed'), 'the batch was recorded as submitted');
  const results = await ledger.transitionMany(batch.map((id) => ({ id, to: 'delivered' as const })));
  t.ok(results.every((r) => r.outcome === 'changed'), 'and delivered');
  const { rows: owed } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM smpp_outbox`);
  t.equal(owed[0].n, 500, 'a receipt is owed for each');
  t.equal((await outbox.claim(['acc_1'], 500, 30_000)).length, 500, 'and the receipts were claimed for sending');

  const touching = log.filter((r) => /\bmessages\b/.test(r.text) && r.params.length > 0);
  t.ok(touching.length >= 9, `the statements were seen (${touching.length})`);
  // messages is partitioned (0055): a scan reads a partition, named in the plan. One that holds no row may be scanned.
  const { rows: holding } = await db.query<{ p: string }>(`SELECT DISTINCT tableoid::regclass::text AS p FROM messages`);
  const ledgerRelations = new Set(holding.map((r) => r.p));
  t.ok(ledgerRelations.size >= 1 && [...ledgerRelations].every((p) => p.startsWith('messages_')), `the rows are in partitions: ${[...ledgerRelations].join(', ')}`);
  const scanned = (plan: PlanNode) => seqScans(plan).filter((rel) => ledgerRelations.has(rel) || rel === 'messages');
  // Each index read of a partition holding rows goes by key: the id bounds beside it only prune partitions.
  const byRange = (plan: PlanNode) =>
    indexReads(plan)
      .filter((r) => ledgerRelations.has(r.relation) && !/\bid = /.test(r.cond))
      .map((r) => `${r.index}: ${r.cond || 'no condition'}`);
  const planOf = (raw: unknown) => ((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>)[0].Plan;
  for (const r of touching) {
    const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${r.text}`, r.params);
    const plan = planOf(rows[0]['QUERY PLAN']);
    t.same(scanned(plan), [], `no scan of messages in ${r.text.replace(/\s+/g, ' ').slice(0, 60)}…`);
    t.same(byRange(plan), [], `each read of messages by key in ${r.text.replace(/\s+/g, ' ').slice(0, 60)}…`);
  }

  // On Postgres the named ones run as prepared statements, which may keep a generic plan (made without the batch's
  // values); those over a batch of ids are planned per batch (plannedPerBatch), as checked above with their values.
  const texts = preparedTexts().filter((text) => /\bmessages\b/.test(text));
  t.ok(texts.length >= 5, `the prepared statements that read the ledger (${texts.length})`);
  t.notOk(
    texts.some((text) => /id = ANY\(\$1::text\[\]\)/.test(text) && /FROM messages\b|JOIN messages\b|UPDATE messages\b/.test(text)),
    'no named statement reads messages by an array of ids (a kept plan could not prune its partitions)',
  );
  t.ok(new Set(touching.map((r) => r.text)).size >= 6, 'the batch statements were planned with their values above');
  for (const text of texts) {
    const params = Math.max(...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    const plan = await db.tx(async (q) => {
      await q.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
      await q.query(`PREPARE plan_check AS ${text}`);
      const { rows } = await q.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE plan_check(${Array(params).fill('NULL').join(', ')})`);
      await q.query(`DEALLOCATE plan_check`);
      return planOf(rows[0]['QUERY PLAN']);
    });
    t.same(scanned(plan), [], `generic plan: no scan of messages in ${text.replace(/\s+/g, ' ').slice(0, 60)}…`);
    t.same(byRange(plan), [], `generic plan: each read of messages by key in ${text.replace(/\s+/g, ' ').slice(0, 60)}…`);
  }
});

/*
 * The per-part receipts of long messages are counted per batch. Written as `message_id = ANY($1)`, the count was planned
 * as a scan of all of message_parts while the table was young (a few thousand rows, as in the benchmark), comparing
 * every row with every id of the batch: a tenth of Postgres's statement time in the smpp bench.
 */
t.test(`part counts reach message_parts by key while the table is young (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  await db.query(
    `INSERT INTO messages (id, account_id, ingress, source, destination, body, segments, encoding, registered_delivery, currency, status)
     SELECT 'msg_part' || lpad(g::text, 6, '0'), 'acc_1', 'smpp', 'Ferry', '4477009' || lpad(g::text, 5, '0'), 'long text ' || g, 3, 'gsm7', 1, 'EUR', 'submitted'
     FROM generate_series(1, 1000) g`,
  );
  await db.query(
    `INSERT INTO message_parts (message_id, part_index, upstream_id, upstream_message_id, status)
     SELECT 'msg_part' || lpad(g::text, 6, '0'), i, 'up1', 'u' || g || '-' || i, 'submitted' FROM generate_series(1, 1000) g, generate_series(0, 2) i`,
  );

  const log: Recorded[] = [];
  const ledger = new Ledger(recording(db, log));
  t.teardown(() => ledger.close());
  const batch = Array.from({ length: 30 }, (_, i) => 'msg_part' + String(i * 33 + 1).padStart(6, '0'));
  const summaries = await Promise.all(batch.map((messageId) => ledger.recordPart({ messageId, partIndex: 1, status: 'delivered' })));
  t.same(summaries[0], { total: 3, delivered: 1, failed: 0, pending: 2 }, 'the counts are right');

  const counts = log.filter((r) => /\bmessage_parts\b/.test(r.text) && /count\(\*\)/.test(r.text));
  t.equal(counts.length, 1, 'one count for the batch');
  const planOf = (raw: unknown) => ((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>)[0].Plan;
  const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${counts[0].text}`, counts[0].params);
  t.same(seqScans(planOf(rows[0]['QUERY PLAN'])), [], 'no scan of message_parts with the batch values');
  const generic = await db.tx(async (q) => {
    await q.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
    await q.query(`PREPARE count_check AS ${counts[0].text}`);
    const { rows } = await q.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE count_check(NULL)`);
    await q.query(`DEALLOCATE count_check`);
    return planOf(rows[0]['QUERY PLAN']);
  });
  t.same(seqScans(generic), [], 'no scan of message_parts in the generic plan');
});
