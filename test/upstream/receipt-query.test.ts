// The sweep that asks upstreams with query_sm about overdue receipts: which messages it picks, its back-off and
// maxAttempts, its rate per tick, instances sharing one database, and the plans of its statements.
import t from 'tap';
import type { ReceiptQueryConfig, UpstreamConfig } from '../../src/config/schema.js';
import { CommandStatus, MessageState } from '../../src/smpp/constants.js';
import type { UpstreamReceipt } from '../../src/smpp/upstream/outbound.js';
import { ReceiptQueryStore } from '../../src/smpp/upstream/receipt-query-store.js';
import { ReceiptQuerySweep, nextQueryAt, type QueryableUpstream } from '../../src/smpp/upstream/receipt-query-sweep.js';
import type { QueryAnswer } from '../../src/smpp/upstream/upstream.js';
import type { Db } from '../../src/store/types.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { upstreamConfig } from './upstream-helpers.js';
import { seqScans, type PlanNode } from '../helpers/plans.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const SILENT = { info: () => undefined, warn: () => undefined };

/** An upstream whose query_sm answers come from a script: per upstream message id, one answer per query (the last repeats). */
class ScriptedUpstream implements QueryableUpstream {
  readonly config: UpstreamConfig;
  isUp = true;
  readonly asked: string[] = [];
  constructor(
    readonly id: string,
    receiptQuery: Partial<ReceiptQueryConfig>,
    private readonly script: Record<string, QueryAnswer[]> = {},
  ) {
    this.config = upstreamConfig(id, 1, { receiptQuery: { enabled: true, afterSeconds: 60, intervalSeconds: 10, maxPerSecond: 100, maxAttempts: 3, ...receiptQuery } });
  }
  async query(upstreamMessageId: string): Promise<QueryAnswer> {
    this.asked.push(upstreamMessageId);
    const answers = this.script[upstreamMessageId] ?? [{ kind: 'state', state: MessageState.ENROUTE, finalDate: '', errorCode: 0 }];
    const n = this.asked.filter((id) => id === upstreamMessageId).length;
    return answers[Math.min(n, answers.length) - 1];
  }
  count(id: string): number {
    return this.asked.filter((x) => x === id).length;
  }
}

async function insertMessage(
  db: Db,
  id: string,
  o: { status?: string; upstream?: string | null; upstreamMessageId?: string | null; submittedAt?: number; parts?: number },
): Promise<void> {
  await db.query(
    `INSERT INTO messages (id, account_id, ingress, source, source_ton, source_npi, destination, body, segments, encoding, registered_delivery, currency,
       status, upstream_id, upstream_message_id, parts_total, updated_at)
     VALUES ($1, 'acc_1', 'smpp', '+Ferry', 5, 0, '447700900123', 'hi', 1, 'gsm7', 1, 'EUR', $2, $3, $4, $5, to_timestamp($6::float8 / 1000.0))`,
    [id, o.status ?? 'submitted', o.upstream ?? null, o.upstreamMessageId ?? null, o.parts ?? 1, o.submittedAt ?? T0 - 3_600_000],
  );
}

function sweepOf(db: Db, ups: ScriptedUpstream[], clock: () => number, receipts: UpstreamReceipt[] = []) {
  const byId = new Map(ups.map((u) => [u.id, u]));
  return new ReceiptQuerySweep({
    store: new ReceiptQueryStore(db),
    upstreams: { ids: () => [...byId.keys()], get: (id) => byId.get(id) },
    onReceipt: async (r) => {
      receipts.push(r);
    },
    log: SILENT,
    clock,
  });
}

t.test('nextQueryAt doubles from intervalSeconds and stops at maxAttempts', async (t) => {
  const s: ReceiptQueryConfig = { enabled: true, afterSeconds: 60, intervalSeconds: 10, maxPerSecond: 5, maxAttempts: 4 };
  t.equal(nextQueryAt(s, 1, 0), 10_000);
  t.equal(nextQueryAt(s, 2, 0), 20_000);
  t.equal(nextQueryAt(s, 3, 0), 40_000);
  t.equal(nextQueryAt(s, 4, 0), null, 'no query after the fourth');
  t.equal(nextQueryAt({ ...s, intervalSeconds: 86_400, maxAttempts: 10 }, 5, 0), 6 * 3_600_000, 'the wait stops growing at 6 h');
});

t.test(`sweep: overdue messages only, back-off on non-final answers and errors, none after maxAttempts (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  let now = T0;
  const a = new ScriptedUpstream('a', { maxAttempts: 3 }, {
    slow: [
      { kind: 'state', state: MessageState.ENROUTE, finalDate: '', errorCode: 0 },
      { kind: 'error', status: CommandStatus.ESME_RQUERYFAIL },
      { kind: 'state', state: MessageState.UNKNOWN, finalDate: '', errorCode: 0 },
    ],
    done: [{ kind: 'state', state: MessageState.UNDELIVERABLE, finalDate: '300101000005000+', errorCode: 11 }],
  });
  const off = new ScriptedUpstream('off', { enabled: false });
  await insertMessage(db, 'msg_01slow', { upstream: 'a', upstreamMessageId: 'slow' });
  await insertMessage(db, 'msg_02done', { upstream: 'a', upstreamMessageId: 'done' });
  await insertMessage(db, 'msg_03fresh', { upstream: 'a', upstreamMessageId: 'fresh', submittedAt: T0 - 30_000 });
  await insertMessage(db, 'msg_04queued', { status: 'queued' });
  await insertMessage(db, 'msg_05off', { upstream: 'off', upstreamMessageId: 'nope' });
  await insertMessage(db, 'msg_06final', { status: 'delivered', upstream: 'a', upstreamMessageId: 'old' });
  await db.query(`UPDATE messages SET final_at = now() WHERE id = 'msg_06final'`);
  const receipts: UpstreamReceipt[] = [];
  const sweep = sweepOf(db, [a, off], () => now, receipts);

  await sweep.tick();
  t.same([...a.asked].sort(), ['done', 'slow'], 'the overdue submitted messages of an upstream that answers query_sm are asked about, nothing else');
  t.same(off.asked, [], 'an upstream with receiptQuery disabled is never asked');
  t.equal(receipts.length, 1, 'the final answer was recorded as a receipt');
  t.match(receipts[0], { messageId: 'msg_02done', partIndex: 0, parts: 1, upstreamId: 'a', upstreamMessageId: 'done', state: MessageState.UNDELIVERABLE, stat: 'UNDELIV', final: true, source: 'query_sm', errorCode: '011' });
  t.ok(receipts[0].doneDate instanceof Date, 'with the final_date as the done date');

  now = T0 + 9_000;
  await sweep.tick();
  t.equal(a.count('slow'), 1, 'not asked again before intervalSeconds');
  now = T0 + 10_000;
  await sweep.tick();
  t.equal(a.count('slow'), 2, 'asked again after intervalSeconds (ENROUTE)');
  now = T0 + 29_000;
  await sweep.tick();
  t.equal(a.count('slow'), 2, 'the wait doubled after the second query');
  now = T0 + 30_000;
  await sweep.tick();
  t.equal(a.count('slow'), 3, 'third query after an error status');
  for (const later of [3_600_000, 7 * 3_600_000, 24 * 3_600_000]) {
    now = T0 + later;
    await sweep.tick();
  }
  t.equal(a.count('slow'), 3, 'no query after maxAttempts (UNKNOWN is not final)');
  t.equal(a.count('done'), 1, 'a message answered final is not asked again');
  t.equal(a.count('fresh'), 3, 'the message that was fresh at first is asked once it is overdue, maxAttempts times');
  const { rows } = await db.query<{ message_id: string; attempts: number; next_at: string | null }>(`SELECT message_id, attempts, next_at FROM receipt_queries ORDER BY message_id`);
  t.same(
    rows.map((r) => [r.message_id, Number(r.attempts), r.next_at === null ? null : 'due']),
    [
      ['msg_01slow', 3, null],
      ['msg_02done', 1, null],
      ['msg_03fresh', 3, null],
    ],
    'the rows say who was asked how often, and that nobody is asked again',
  );
});

t.test(`sweep: at most maxPerSecond queries per tick, none without a live bind, closed messages dropped (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  let now = T0;
  const a = new ScriptedUpstream('a', { maxPerSecond: 2 });
  for (let i = 0; i < 5; i++) await insertMessage(db, `msg_0${i}`, { upstream: 'a', upstreamMessageId: `u${i}` });
  const sweep = sweepOf(db, [a], () => now);
  a.isUp = false;
  await sweep.tick();
  t.equal(a.asked.length, 0, 'nothing is asked while the upstream has no live bind');
  a.isUp = true;
  await sweep.tick();
  t.equal(a.asked.length, 2, 'two queries in the first tick (maxPerSecond 2)');
  const late = [0, 1, 2, 3, 4].find((i) => !a.asked.includes(`u${i}`))!;
  await db.query(`UPDATE messages SET status = 'delivered', final_at = now() WHERE id = $1`, [`msg_0${late}`]);
  now += 1000;
  await sweep.tick();
  t.ok(a.asked.length <= 4, `at most two more in the next tick (${a.asked.length})`);
  now += 1000;
  await sweep.tick();
  t.same([...a.asked].sort(), ['u0', 'u1', 'u2', 'u3', 'u4'].filter((u) => u !== `u${late}`), 'a message whose receipt came meanwhile is not asked about');
});

t.test(`sweep: a split message asks each waiting part on its own id and records each final part (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const delivered: QueryAnswer = { kind: 'state', state: MessageState.DELIVERED, finalDate: '', errorCode: 0 };
  const a = new ScriptedUpstream('a', {}, { p0: [delivered], p2: [delivered] });
  await insertMessage(db, 'msg_long', { upstream: 'a', parts: 3 });
  await db.query(
    `INSERT INTO message_parts (message_id, part_index, upstream_id, upstream_message_id, status) VALUES
       ('msg_long', 0, 'a', 'p0', 'submitted'), ('msg_long', 1, 'a', 'p1', 'delivered'), ('msg_long', 2, 'a', 'p2', 'submitted')`,
  );
  const receipts: UpstreamReceipt[] = [];
  await sweepOf(db, [a], () => T0, receipts).tick();
  t.same(a.asked, ['p0', 'p2'], 'only the parts still waiting are asked about');
  t.same(receipts.map((r) => [r.partIndex, r.parts, r.upstreamMessageId]), [[0, 3, 'p0'], [2, 3, 'p2']], 'each answer is a part receipt');
});

t.test(`sweep: an upstream without query_sm is not asked about that message again (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  let now = T0;
  const a = new ScriptedUpstream('a', { maxAttempts: 5 }, { x: [{ kind: 'error', status: CommandStatus.ESME_RINVCMDID }] });
  await insertMessage(db, 'msg_x', { upstream: 'a', upstreamMessageId: 'x' });
  const warned: string[] = [];
  const sweep = new ReceiptQuerySweep({
    store: new ReceiptQueryStore(db),
    upstreams: { ids: () => ['a'], get: () => a },
    onReceipt: async () => undefined,
    log: { info: () => undefined, warn: (_o, msg) => warned.push(String(msg)) },
    clock: () => now,
  });
  await sweep.tick();
  now += 3_600_000;
  await sweep.tick();
  t.equal(a.count('x'), 1, 'asked once');
  t.match(warned, [/does not answer query_sm/], 'and the operator is told to turn it off');
});

t.test(`sweep: instances sharing the database never ask about a message twice (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const delivered: QueryAnswer = { kind: 'state', state: MessageState.DELIVERED, finalDate: '', errorCode: 0 };
  const script: Record<string, QueryAnswer[]> = {};
  for (let i = 0; i < 60; i++) {
    script[`u${i}`] = [delivered];
    await insertMessage(db, `msg_${String(i).padStart(3, '0')}`, { upstream: 'a', upstreamMessageId: `u${i}` });
  }
  const ups = [0, 1, 2].map(() => new ScriptedUpstream('a', { maxPerSecond: 15 }, script));
  const sweeps = ups.map((u) => sweepOf(db, [u], () => T0));
  for (let round = 0; round < 4; round++) await Promise.all(sweeps.map((s) => s.tick()));
  const all = ups.flatMap((u) => u.asked);
  t.equal(all.length, 60, 'every message asked about once in all');
  t.equal(new Set(all).size, 60, 'none twice');
  t.ok(ups.filter((u) => u.asked.length > 0).length >= 2, 'the work was shared');
});

t.test(`sweep statements reach messages by index in a large ledger (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  // 50,000 final rows and a few open ones, as in production: the walk must read the open ones only.
  await db.query(
    `INSERT INTO messages (id, account_id, ingress, source, destination, body, segments, encoding, registered_delivery, currency, status, final_at, upstream_id)
     SELECT 'msg_plan' || lpad(g::text, 6, '0'), 'acc_1', 'smpp', 'Ferry', '4477009' || lpad(g::text, 5, '0'), 'x', 1, 'gsm7', 1, 'EUR',
       CASE WHEN g % 1000 = 0 THEN 'submitted' ELSE 'delivered' END, CASE WHEN g % 1000 = 0 THEN NULL ELSE now() END, 'a'
     FROM generate_series(1, 50000) g`,
  );
  await db.query('ANALYZE messages');
  const texts: Array<{ text: string; params: readonly unknown[] }> = [];
  const recording: Db = { ...db, kind: db.kind, query: (text, params = []) => (texts.push({ text, params }), db.query(text, params)), tx: (fn) => db.tx(fn), ping: () => db.ping(), close: () => db.close() };
  const store = new ReceiptQueryStore(recording);
  const page = await store.discover('', 500, new Map([['a', T0]]), T0);
  t.equal(page.scanned, 50, 'the walk read the open rows only');
  t.equal(page.added, 50, 'and gave each overdue one a row');
  await store.targets((await store.claim('a', T0, T0 + 60_000, 10)).map((c) => c.messageId));
  const planOf = (raw: unknown) => ((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>)[0].Plan;
  const touching = texts.filter((r) => /\bmessages\b/.test(r.text));
  t.ok(touching.length >= 2, 'the walk and the target read were seen');
  for (const r of touching) {
    const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${r.text}`, r.params);
    t.same(seqScans(planOf(rows[0]['QUERY PLAN'])).filter((rel) => rel === 'messages'), [], `no scan of messages in ${r.text.replace(/\s+/g, ' ').slice(0, 60)}…`);
  }
});
