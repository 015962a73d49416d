import t from 'tap';
import { Ledger } from '../../src/ledger/ledger.js';
import { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import { decide } from '../../src/ledger/transitions.js';
import type { TransitionInput } from '../../src/ledger/types.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { sampleMessage } from '../helpers/ledger-rows.js';

t.test(`ledger reads and state changes (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const base = Date.parse('2030-01-01T00:00:00Z');
  const w = new LedgerWriter(db, { clock: () => base });
  const ledger = new Ledger(db, { clock: () => base });
  t.teardown(async () => {
    await ledger.close();
    await w.close();
  });

  t.test('get, account scoping, history', async (t) => {
    const m = sampleMessage({ reference: 'ref-1' });
    await w.accept(m);
    const got = await ledger.get(m.id);
    t.equal(got?.status, 'queued');
    t.equal(got?.reference, 'ref-1');
    t.equal(got?.costMicros, 35_000);
    t.equal(await ledger.get(m.id, 'acc_other'), null, 'another account does not see it');
    t.ok(await ledger.get(m.id, 'acc_1'));
    t.equal(await ledger.get('msg_nope'), null);
    const h = await ledger.history(m.id);
    t.same(h.map((e) => e.status), ['queued']);
  });

  t.test('transitions and the final-state rule', async (t) => {
    const m = sampleMessage();
    await w.accept(m);
    t.equal((await ledger.transition(m.id, 'submitted', { upstream: 'up1' })).outcome, 'changed');
    t.equal((await ledger.transition(m.id, 'submitted')).outcome, 'unchanged', 'same status: no event');
    t.equal((await ledger.transition(m.id, 'expired', null, 'VALIDITY')).outcome, 'changed');
    const late = await ledger.transition(m.id, 'delivered', { upstream: 'up1' });
    t.same(late, { id: m.id, outcome: 'late', status: 'expired' }, 'a late delivered keeps the final status');
    const got = await ledger.get(m.id);
    t.equal(got?.status, 'expired');
    t.equal(got?.errorCode, 'VALIDITY');
    t.ok(got?.finalAt, 'final_at set');
    const h = await ledger.history(m.id);
    t.same(h.map((e) => e.status), ['queued', 'submitted', 'expired', 'delivered']);
    t.same(h[1].detail, { upstream: 'up1' });
    t.same(h[2].detail, { error: 'VALIDITY' });
    t.same(h[3].detail, { upstream: 'up1', late: true, kept: 'expired' });
    t.equal((await ledger.transition(m.id, 'expired')).outcome, 'unchanged');
    t.equal((await ledger.transition('msg_missing', 'delivered')).outcome, 'not_found');
    const q = sampleMessage();
    await w.accept(q);
    t.equal((await ledger.transition(q.id, 'scheduled')).outcome, 'invalid', 'queued → scheduled is not a move');
    t.equal((await ledger.history(q.id)).length, 1, 'an invalid move writes no event');
  });

  t.test('the rule table', async (t) => {
    t.equal(decide('scheduled', 'queued'), 'changed');
    t.equal(decide('submitted', 'queued'), 'changed', 'requeue for retry');
    t.equal(decide('submitted', 'cancelled'), 'invalid');
    t.equal(decide('queued', 'delivered'), 'changed', 'a receipt may overtake the submit record');
    t.equal(decide('cancelled', 'submitted'), 'late');
  });

  t.test('transitionMany: one batch, in order, repeated ids', async (t) => {
    const rows = Array.from({ length: 300 }, () => sampleMessage({ accountId: 'acc_many' }));
    await w.acceptMany(rows);
    const before = ledger.transitionStats.batches;
    const items: TransitionInput[] = [];
    for (const r of rows) items.push({ id: r.id, to: 'submitted', detail: { upstream: 'up1' } });
    for (let i = 0; i < rows.length; i++) items.push({ id: rows[i].id, to: i % 3 ? 'delivered' : 'undelivered', errorCode: i % 3 ? null : '001' });
    items.push({ id: rows[0].id, to: 'delivered' }); // late
    const res = await ledger.transitionMany(items);
    t.equal(res.length, items.length);
    t.equal(res.filter((r) => r.outcome === 'changed').length, 600);
    t.same(res[res.length - 1], { id: rows[0].id, outcome: 'late', status: 'undelivered' });
    t.ok(ledger.transitionStats.batches - before <= 2, `${ledger.transitionStats.batches - before} batches for ${items.length} changes`);
    const counts = await db.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM messages WHERE account_id = 'acc_many' GROUP BY status ORDER BY status`,
    );
    t.same(counts.rows, [
      { status: 'delivered', n: 200 },
      { status: 'undelivered', n: 100 },
    ]);
    t.same((await ledger.history(rows[0].id)).map((e) => e.status), ['queued', 'submitted', 'undelivered', 'delivered']);
    t.equal((await ledger.get(rows[0].id))?.errorCode, '001');
  });

  t.test('concurrent single transitions share batches', async (t) => {
    const rows = Array.from({ length: 200 }, () => sampleMessage({ accountId: 'acc_conc_tr' }));
    await w.acceptMany(rows);
    const before = ledger.transitionStats.batches;
    const res = await Promise.all(rows.map((r) => ledger.transition(r.id, 'submitted')));
    t.ok(res.every((r) => r.outcome === 'changed'));
    t.ok(ledger.transitionStats.batches - before < 20, `${ledger.transitionStats.batches - before} batches for 200 transitions`);
  });

  t.test('markSubmitted and parts', async (t) => {
    const m = sampleMessage({ segments: 3 });
    await w.accept(m);
    t.equal(await ledger.markSubmitted(m.id, 'up1', 'rule-uk', [{ partIndex: 0, upstreamMessageId: 'a0' }, { partIndex: 1, upstreamMessageId: 'a1' }], 3), 'changed');
    let got = await ledger.get(m.id);
    t.same([got?.status, got?.upstreamId, got?.routeRule, got?.partsTotal, got?.partsDone, got?.attempts], ['submitted', 'up1', 'rule-uk', 3, 2, 1]);
    await ledger.markSubmitted(m.id, 'up1', null, [{ partIndex: 2, upstreamMessageId: 'a2' }], 3);
    got = await ledger.get(m.id);
    t.same([got?.partsDone, got?.attempts, got?.routeRule], [3, 2, 'rule-uk'], 'a resumed send adds its parts');
    t.same(await ledger.recordPart({ messageId: m.id, partIndex: 0, status: 'delivered' }), { total: 3, delivered: 1, failed: 0, pending: 2 });
    t.same(await ledger.recordPart({ messageId: m.id, partIndex: 1, status: 'undelivered', errorCode: '034' }), { total: 3, delivered: 1, failed: 1, pending: 1 });
    const parts = await db.query<{ part_index: number; upstream_message_id: string; status: string }>(
      `SELECT part_index, upstream_message_id, status FROM message_parts WHERE message_id = $1 ORDER BY part_index`,
      [m.id],
    );
    t.same(parts.rows, [
      { part_index: 0, upstream_message_id: 'a0', status: 'delivered' },
      { part_index: 1, upstream_message_id: 'a1', status: 'undelivered' },
      { part_index: 2, upstream_message_id: 'a2', status: 'submitted' },
    ]);
    t.equal(await ledger.markSubmitted('msg_missing', 'up1', null, []), 'not_found');
    t.equal(await ledger.markSubmitted('msg_missing', 'up1', null, [{ partIndex: 0, upstreamMessageId: 'z0' }], 2), 'not_found');
    t.same(await ledger.recordPart({ messageId: 'msg_missing', partIndex: 1, status: 'delivered' }), { total: 0, delivered: 0, failed: 0, pending: 0 });
    const orphans = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM message_parts WHERE message_id = 'msg_missing'`);
    t.equal(orphans.rows[0].n, 0, 'no part row without its message, from a submit record or a receipt');
  });

  t.test('part records of one batch: repeats merge, the last receipt of a message decides it', async (t) => {
    const a = sampleMessage({ segments: 3 });
    const b = sampleMessage({ segments: 2 });
    await w.acceptMany([a, b]);
    const sent = (p: string, n: number) => Array.from({ length: n }, (_, i) => ({ partIndex: i, upstreamMessageId: `${p}${i}` }));
    await ledger.markSubmitted(a.id, 'up1', null, sent('a', 3), 3);
    await ledger.markSubmitted(b.id, 'up1', null, sent('b', 2), 2);
    const before = ledger.partRecordStats.batches;
    const res = await Promise.all([
      ledger.recordPart({ messageId: a.id, partIndex: 0, status: 'delivered' }),
      ledger.recordPart({ messageId: b.id, partIndex: 0, status: 'undelivered', errorCode: '011' }),
      ledger.recordPart({ messageId: a.id, partIndex: 1, status: 'submitted', upstreamMessageId: 'a1-again' }),
      ledger.recordPart({ messageId: a.id, partIndex: 1, status: 'delivered' }),
      ledger.recordPart({ messageId: a.id, partIndex: 2, status: 'expired', errorCode: '004' }),
      ledger.recordPart({ messageId: b.id, partIndex: 1, status: 'delivered' }),
      ledger.recordPart({ messageId: 'msg_missing', partIndex: 0, status: 'delivered' }),
    ]);
    t.equal(ledger.partRecordStats.batches - before, 1, 'one batch');
    t.same(res, [
      { total: 3, delivered: 1, failed: 0, pending: 2 },
      { total: 2, delivered: 0, failed: 1, pending: 1 },
      { total: 3, delivered: 1, failed: 0, pending: 2 },
      { total: 3, delivered: 2, failed: 0, pending: 1 },
      { total: 3, delivered: 2, failed: 1, pending: 0 },
      { total: 2, delivered: 1, failed: 1, pending: 0 },
      { total: 0, delivered: 0, failed: 0, pending: 0 },
    ], 'each caller sees the parts as written up to its own receipt');
    const rows = await db.query<{ message_id: string; part_index: number; upstream_message_id: string; status: string; error_code: string | null }>(
      `SELECT message_id, part_index, upstream_message_id, status, error_code FROM message_parts WHERE message_id = ANY($1::text[]) ORDER BY message_id = $2 DESC, part_index`,
      [[a.id, b.id, 'msg_missing'], a.id],
    );
    t.same(rows.rows, [
      { message_id: a.id, part_index: 0, upstream_message_id: 'a0', status: 'delivered', error_code: null },
      { message_id: a.id, part_index: 1, upstream_message_id: 'a1-again', status: 'delivered', error_code: null },
      { message_id: a.id, part_index: 2, upstream_message_id: 'a2', status: 'expired', error_code: '004' },
      { message_id: b.id, part_index: 0, upstream_message_id: 'b0', status: 'undelivered', error_code: '011' },
      { message_id: b.id, part_index: 1, upstream_message_id: 'b1', status: 'delivered', error_code: null },
    ], 'a repeated part keeps its last status and the ids it was given');
  });

  t.test('cancel only before submit', async (t) => {
    const q = sampleMessage({ accountId: 'acc_c' });
    const s = sampleMessage({ accountId: 'acc_c', scheduledAt: base + 3_600_000 });
    const sent = sampleMessage({ accountId: 'acc_c' });
    await w.acceptMany([q, s, sent]);
    await ledger.markSubmitted(sent.id, 'up1', null, [{ partIndex: 0, upstreamMessageId: 'x' }]);
    t.equal(await ledger.cancel(q.id, 'acc_other'), false, "another account's message");
    t.equal(await ledger.cancel(q.id, 'acc_c'), true, 'queued');
    t.equal(await ledger.cancel(s.id, 'acc_c'), true, 'scheduled');
    t.equal(await ledger.cancel(sent.id, 'acc_c'), false, 'submitted');
    t.equal(await ledger.cancel(q.id, 'acc_c'), false, 'twice');
    t.equal((await ledger.get(q.id))?.status, 'cancelled');
    t.same((await ledger.history(s.id)).map((e) => e.status), ['scheduled', 'cancelled']);
    t.equal(await ledger.markSubmitted(q.id, 'up1', null, [{ partIndex: 0, upstreamMessageId: 'y' }]), 'late', 'a send racing the cancel is recorded, status kept');
    t.equal((await ledger.get(q.id))?.status, 'cancelled');
  });

  t.test('a receipt that beats the submit record: status stays final, upstream and route still recorded', async (t) => {
    const m = sampleMessage({ accountId: 'acc_r' });
    await w.accept(m);
    t.equal((await ledger.transition(m.id, 'delivered', { upstream: 'up2' })).outcome, 'changed');
    t.equal(await ledger.markSubmitted(m.id, 'up2', 'gh', [{ partIndex: 0, upstreamMessageId: 'z' }]), 'late');
    const rec = await ledger.get(m.id);
    t.equal(rec?.status, 'delivered');
    t.equal(rec?.upstreamId, 'up2');
    t.equal(rec?.routeRule, 'gh');
    t.equal(rec?.attempts, 1);
    t.equal(rec?.partsDone, 1, 'sent whole: its one part counts');
    t.equal(rec?.upstreamMessageId, 'z', 'the upstream id is on the row');
    const partRows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM message_parts WHERE message_id = $1`, [m.id]);
    t.equal(partRows.rows[0].n, 0, 'no part row for a message sent whole');
    t.same(await ledger.parts(m.id), [{ partIndex: 0, status: 'delivered', upstreamId: 'up2', upstreamMessageId: 'z', errorCode: null }]);
  });

  t.test('final_at marks the final rows exactly; no index of messages reads what the status changes write', async (t) => {
    const [queued, scheduled, sent, delivered, cancelled, late, requeued, split] = Array.from({ length: 8 }, (_, i) =>
      sampleMessage(i === 1 ? { scheduledAt: base + 60_000 } : {}),
    );
    await w.acceptMany([queued, scheduled, sent, delivered, cancelled, late, requeued, split]);
    const part = (m: string) => [{ partIndex: 0, upstreamMessageId: m }];
    await ledger.markSubmitted(sent.id, 'up1', 'r1', part('a'));
    await ledger.markSubmitted(delivered.id, 'up1', 'r1', part('b'));
    await ledger.transition(delivered.id, 'delivered');
    await ledger.cancel(cancelled.id, 'acc_1');
    await ledger.transition(late.id, 'expired');
    t.equal((await ledger.transition(late.id, 'delivered')).outcome, 'late');
    await ledger.markSubmitted(requeued.id, 'up1', 'r1', part('c'));
    await ledger.transition(requeued.id, 'queued');
    await ledger.markSubmitted(split.id, 'up1', 'r1', [{ partIndex: 0, upstreamMessageId: 'd0' }, { partIndex: 1, upstreamMessageId: 'd1' }], 2);
    await ledger.transition(split.id, 'undelivered', null, 'ERR_X');
    const ids = [queued, scheduled, sent, delivered, cancelled, late, requeued, split].map((m) => m.id);
    const { rows } = await db.query<{ id: string; status: string; open: boolean }>(
      `SELECT id, status, final_at IS NULL AS open FROM messages WHERE id = ANY($1::text[])`,
      [ids],
    );
    const got = new Map(rows.map((r) => [r.id, [r.status, r.open]]));
    t.same(
      ids.map((id) => got.get(id)),
      [['queued', true], ['scheduled', true], ['submitted', true], ['delivered', false], ['cancelled', false], ['expired', false], ['queued', true], ['undelivered', false]],
    );
    // The open index (final_at IS NULL) keeps the submit record a heap-only update: an index naming any column it or
    // the receipt writes would put a new entry in every index of messages for each of them again.
    const { rows: indexes } = await db.query<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'messages' AND schemaname = current_schema()`,
    );
    t.ok(indexes.some((i) => i.indexname === 'messages_open'), 'the open index is there');
    for (const i of indexes) {
      t.notMatch(i.indexdef, /\b(status|error_code|updated_at|upstream_id|route_rule|parts_total|parts_done|upstream_message_id|attempts)\b/, `${i.indexname} names none of them`);
      if (i.indexname !== 'messages_open') t.notMatch(i.indexdef, /\bfinal_at\b/, `${i.indexname} leaves final_at to the open index`);
    }
  });

  t.test('message_events keeps one index, by message then id; history reads it in id order', async (t) => {
    // Each event costs an entry in every index of message_events, at three or more events per message; the only read
    // is a message's history, so an index on anything else (such as id alone) is written for nothing.
    const { rows: indexes } = await db.query<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'message_events' AND schemaname = current_schema()`,
    );
    t.same(
      indexes.map((i) => i.indexname),
      ['message_events_message'],
      'only the history index',
    );
    t.match(indexes[0]?.indexdef ?? '', /\(message_id, id\)/);
    // Two messages whose events interleave across batches: each history is its own events, oldest first, ids unique.
    const [a, b] = [sampleMessage(), sampleMessage()];
    await w.acceptMany([a, b]);
    await ledger.transitionMany([
      { id: b.id, to: 'submitted' },
      { id: a.id, to: 'submitted' },
    ]);
    await ledger.transition(a.id, 'delivered');
    await ledger.transition(b.id, 'undelivered', null, 'ERR_B');
    await ledger.transition(a.id, 'expired');
    const ha = await ledger.history(a.id);
    const hb = await ledger.history(b.id);
    t.same(ha.map((e) => e.status), ['queued', 'submitted', 'delivered', 'expired']);
    t.equal(ha[3].detail?.late, true, 'the late event is kept too');
    t.same(hb.map((e) => e.status), ['queued', 'submitted', 'undelivered']);
    const ids = [...ha, ...hb].map((e) => e.id);
    t.equal(new Set(ids).size, ids.length, 'event ids stay unique');
    for (const h of [ha, hb]) t.ok(h.every((e, i) => i === 0 || e.id > h[i - 1].id), 'and rise along a history');
  });

  t.test('event details travel as written: none stays SQL NULL, any text survives, each detail on its own event', async (t) => {
    // The batch statements carry their events' details as one JSON array: an element must land on its own event
    // (not a neighbour's), a missing detail must stay NULL (not the JSON value null), and no text may be altered.
    const awkward = 'quote " backslash \\ brace } comma , NULL {"a":1} tab\t newline\n é ✓ 😀 \u2028';
    const rows = Array.from({ length: 6 }, () => sampleMessage({ accountId: 'acc_detail' }));
    await w.acceptMany(rows);
    const res = await ledger.transitionMany([
      { id: rows[0].id, to: 'submitted' },
      { id: rows[1].id, to: 'submitted', detail: { text: awkward, n: 1.5, list: [1, null, 'x'], nested: { deep: true } } },
      { id: rows[2].id, to: 'submitted', detail: null },
      { id: rows[3].id, to: 'submitted', detail: { upstream: 'up3' } },
      { id: rows[3].id, to: 'undelivered', errorCode: 'E3' },
      { id: rows[4].id, to: 'submitted', detail: { upstream: 'up4' }, errorCode: undefined },
    ]);
    t.same(res.map((r) => r.outcome), ['changed', 'changed', 'changed', 'changed', 'changed', 'changed']);
    const { rows: ev } = await db.query<{ message_id: string; status: string; detail_is_null: boolean; detail: unknown }>(
      `SELECT message_id, status, detail IS NULL AS detail_is_null, detail FROM message_events
       WHERE message_id = ANY($1::text[]) AND status <> 'queued' ORDER BY id`,
      [rows.map((r) => r.id)],
    );
    const parsed = ev.map((e) => ({ ...e, detail: typeof e.detail === 'string' ? JSON.parse(e.detail) : e.detail }));
    t.same(
      parsed.map((e) => [e.message_id, e.status, e.detail_is_null]),
      [
        [rows[0].id, 'submitted', true],
        [rows[1].id, 'submitted', false],
        [rows[2].id, 'submitted', true],
        [rows[3].id, 'submitted', false],
        [rows[3].id, 'undelivered', false],
        [rows[4].id, 'submitted', false],
      ],
      'one event per change, in input order; an absent detail is SQL NULL',
    );
    t.same(parsed[1].detail, { text: awkward, n: 1.5, list: [1, null, 'x'], nested: { deep: true } }, 'awkward text unchanged');
    t.same(parsed[3].detail, { upstream: 'up3' });
    t.same(parsed[4].detail, { error: 'E3' }, 'an error code alone becomes the detail');
    t.same(parsed[5].detail, { upstream: 'up4' });
    // Submit records carry theirs the same way: one detail per message, late ones marked.
    t.equal(await ledger.markSubmitted(rows[5].id, 'up"5', 'rule\\5', [{ partIndex: 0, upstreamMessageId: 'u5' }]), 'changed');
    t.equal(await ledger.markSubmitted(rows[3].id, 'up3', null, [{ partIndex: 0, upstreamMessageId: 'u3' }]), 'late');
    const h5 = await ledger.history(rows[5].id);
    t.same(h5.at(-1)?.detail, { upstream: 'up"5', parts: [0] });
    const h3 = await ledger.history(rows[3].id);
    t.same(h3.at(-1)?.detail, { upstream: 'up3', parts: [0], late: true, kept: 'undelivered' });
  });

  t.test('recoverable: queued and due scheduled, paged by id', async (t) => {
    const other = await testDb();
    t.teardown(() => other.cleanup());
    const w2 = new LedgerWriter(other.db, { clock: () => base });
    const l2 = new Ledger(other.db, { clock: () => base });
    const queued = Array.from({ length: 25 }, () => sampleMessage());
    const dueLater = sampleMessage({ scheduledAt: base + 60_000 });
    const farLater = sampleMessage({ scheduledAt: base + 3_600_000 });
    const done = sampleMessage();
    const sent = sampleMessage();
    await w2.acceptMany([...queued, dueLater, farLater, done, sent]);
    await l2.transition(done.id, 'failed');
    await l2.markSubmitted(sent.id, 'up1', null, [{ partIndex: 0, upstreamMessageId: 'z' }]);
    const seen: string[] = [];
    let after = '';
    for (let page = 0; page < 20; page++) {
      const got = await l2.recoverable(10, after, base + 120_000);
      seen.push(...got.map((m) => m.id));
      if (got.length < 10) break;
      after = got[got.length - 1].id;
    }
    const expected = [...queued.map((m) => m.id), dueLater.id].sort();
    t.same(seen, expected, 'queued + due scheduled, in id order, nothing twice');
    t.equal((await l2.recoverable(100, '', base)).length, 25, 'a scheduled message is not due before its time');
    await l2.close();
    await w2.close();
  });
});
