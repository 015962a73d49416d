// The queue contract every Queue keeps (the SQL queue, the Redis queue, a sharded Redis queue): lanes, leases,
// retries, dead items, idempotent pushes, stats. Each caller gives fresh queues and the clock their backends read.
import type { Test } from 'tap';
import type { Lane, Queue, QueueItem } from '../../src/store/types.js';
import type { TestClock } from '../helpers/backends.js';

const ids = (items: readonly QueueItem[]) => items.map((i) => i.id);
const LEASE = 30_000;

export function queueContract(t: Test, o: { fresh: <P = unknown>() => Queue<P>; clock: TestClock }): void {
  const { fresh, clock } = o;
  t.test('lanes are served receipt, then priority, then bulk', async (t) => {
    const q = fresh<{ n: number; s?: string }>();
    const now = clock.now;
    await q.push([
      { id: 'b1', lane: 'bulk', payload: { n: 1 }, runAt: now - 30 },
      { id: 'p1', lane: 'priority', payload: { n: 2 }, runAt: now - 20 },
      { id: 'r1', lane: 'receipt', payload: { n: 3, s: 'ünï "q" ☃' }, runAt: now - 1 },
      { id: 'b2', lane: 'bulk', payload: { n: 4 }, runAt: now - 10 },
      { id: 'p2', lane: 'priority', payload: { n: 5 }, runAt: now - 5 },
    ]);
    const first = await q.lease(3, LEASE);
    t.same(ids(first), ['r1', 'p1', 'p2'], 'receipts first, then priority in due order');
    t.same(first[0], { id: 'r1', lane: 'receipt', payload: { n: 3, s: 'ünï "q" ☃' }, runAt: now - 1, attempts: 1, maxAttempts: 10, lastError: null });
    t.same(ids(await q.lease(10, LEASE)), ['b1', 'b2'], 'bulk last, oldest first');
    t.same(await q.lease(10, LEASE), [], 'nothing left');

    await q.push([
      { id: 'r2', lane: 'receipt', payload: { n: 6 } },
      { id: 'b3', lane: 'bulk', payload: { n: 7 } },
      { id: 'p3', lane: 'priority', payload: { n: 8 } },
    ]);
    t.same(ids(await q.lease(10, LEASE, ['bulk'])), ['b3'], 'only the lanes asked for');
    t.same(ids(await q.lease(10, LEASE, ['bulk', 'receipt'])), ['r2'], 'lanes argument limits, order stays receipt first');
    t.same(ids(await q.lease(10, LEASE)), ['p3']);
    t.same(await q.lease(0, LEASE), []);
  });

  t.test('a lease of many items returns them in lane order', async (t) => {
    const q = fresh<number>();
    const lanes: Lane[] = ['bulk', 'priority', 'receipt'];
    await q.push(Array.from({ length: 30 }, (_, i) => ({ id: `i${i}`, lane: lanes[i % 3], payload: i })));
    const got = await q.lease(30, LEASE);
    t.equal(got.length, 30);
    const order = got.map((i) => i.lane);
    t.same(order, [...Array(10).fill('receipt'), ...Array(10).fill('priority'), ...Array(10).fill('bulk')]);
  });

  t.test('scheduled items are not leased before runAt', async (t) => {
    const q = fresh<string>();
    const runAt = clock.now + 1000;
    await q.push([{ id: 's', lane: 'priority', payload: 'later', runAt }]);
    t.same(await q.lease(5, LEASE), []);
    const st = await q.stats();
    t.same(st.lanes.find((l) => l.lane === 'priority'), { lane: 'priority', due: 0, scheduled: 1, oldestDueAt: null });
    clock.advance(999);
    t.same(await q.lease(5, LEASE), [], 'still 1 ms early');
    clock.advance(1);
    const got = await q.lease(5, LEASE);
    t.same(ids(got), ['s']);
    t.equal(got[0].runAt, runAt);
  });

  t.test('an expired lease makes the item due again, attempts kept', async (t) => {
    const q = fresh<string>();
    await q.push([{ id: 'x', lane: 'bulk', payload: 'p' }]);
    const a = await q.lease(1, 1000);
    t.equal(a[0].attempts, 1);
    clock.advance(999);
    t.same(await q.lease(1, 1000), [], 'not while the lease runs');
    t.equal((await q.stats()).leased, 1);
    clock.advance(1);
    const b = await q.lease(1, 1000);
    t.same(ids(b), ['x'], 'back after the lease deadline');
    t.equal(b[0].attempts, 2);
    t.equal((await q.get('x'))?.attempts, 2);
    t.equal((await q.stats()).leased, 1);
  });

  t.test('a lease that expires on the last attempt makes the item dead', async (t) => {
    const q = fresh<string>();
    await q.push([{ id: 'poison', lane: 'bulk', payload: 'p', maxAttempts: 1 }]);
    t.equal((await q.lease(1, 100)).length, 1);
    clock.advance(100);
    t.same(await q.lease(1, 100), []);
    const dead = await q.dead(10);
    t.same(ids(dead), ['poison']);
    t.equal(dead[0].lastError, 'lease expired');
    t.equal((await q.stats()).dead, 1);
    t.equal((await q.stats()).leased, 0);
  });

  t.test('ack removes items, unknown ids are ignored', async (t) => {
    const q = fresh<number>();
    await q.push([1, 2, 3, 4].map((n) => ({ id: `a${n}`, lane: 'priority' as const, payload: n })));
    const got = await q.lease(3, LEASE);
    t.equal(got.length, 3);
    await q.ack(['a1', 'a2', 'nope']);
    t.equal(await q.get('a1'), null);
    t.equal(await q.get('a2'), null);
    t.ok(await q.get('a3'));
    await q.ack(['a4']);
    t.equal(await q.get('a4'), null, 'an item that is not leased is removed too');
    await q.ack([]);
    const st = await q.stats();
    t.equal(st.leased, 1);
    t.same(st.lanes.map((l) => l.due + l.scheduled), [0, 0, 0]);
    clock.advance(LEASE);
    t.same(ids(await q.lease(10, LEASE)), ['a3'], 'acked items never come back');
  });

  t.test('a refunded retry does not use an attempt and never kills', async (t) => {
    const q = fresh<string>();
    await q.push([{ id: 'w', lane: 'bulk', payload: 'p', maxAttempts: 2 }]);
    for (let round = 1; round <= 5; round++) {
      const got = await q.lease(1, LEASE);
      t.equal(got.length, 1, `leased in round ${round}`);
      t.equal(got[0].attempts, 1, 'the refunded attempts are not counted');
      t.equal(await q.retry('w', 100, 'window full', { refund: true }), 'scheduled');
      clock.advance(100);
    }
    const got = await q.lease(1, LEASE);
    t.equal(got[0].attempts, 1);
    t.equal(await q.retry('w', 0, 'timeout'), 'scheduled', 'a counted failure');
    t.equal((await q.lease(1, LEASE))[0].attempts, 2);
    t.equal(await q.retry('w', 0, 'timeout'), 'dead', 'counted failures still kill at maxAttempts');
  });

  t.test('retry counts attempts, reschedules, and kills after maxAttempts', async (t) => {
    const q = fresh<string>();
    await q.push([{ id: 'r', lane: 'bulk', payload: 'p', maxAttempts: 3 }]);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const got = await q.lease(1, LEASE);
      t.equal(got.length, 1, `leased for attempt ${attempt}`);
      t.equal(got[0].attempts, attempt);
      if (attempt > 1) t.equal(got[0].lastError, `e${attempt - 1}`);
      const res = await q.retry('r', 500, `e${attempt}`);
      if (attempt < 3) {
        t.equal(res, 'scheduled');
        const item = await q.get('r');
        t.equal(item?.runAt, clock.now + 500);
        t.equal(item?.lastError, `e${attempt}`);
        t.same(await q.lease(1, LEASE), [], 'not before the delay');
        clock.advance(500);
      } else {
        t.equal(res, 'dead');
      }
    }
    t.same(await q.lease(1, LEASE), []);
    clock.advance(10_000);
    t.same(await q.lease(1, LEASE), [], 'a dead item is never leased');
    const dead = await q.dead(10);
    t.same(ids(dead), ['r']);
    t.equal(dead[0].attempts, 3);
    t.equal(dead[0].lastError, 'e3');
    t.equal(await q.retry('r', 0, 'again'), 'dead', 'retry of a dead item');
    t.equal(await q.retry('ghost', 0, 'x'), 'unknown');
    const st = await q.stats();
    t.equal(st.dead, 1);
    t.equal(st.leased, 0);

    // A dead id pushed again starts over.
    await q.push([{ id: 'r', lane: 'receipt', payload: 'again' }]);
    const back = await q.lease(1, LEASE);
    t.same(back.map((i) => [i.id, i.lane, i.payload, i.attempts, i.lastError]), [['r', 'receipt', 'again', 1, null]]);
    t.equal((await q.stats()).dead, 0);
  });

  t.test('dead items are listed newest first', async (t) => {
    const q = fresh<number>();
    await q.push([1, 2, 3].map((n) => ({ id: `d${n}`, lane: 'bulk' as const, payload: n, maxAttempts: 1 })));
    await q.lease(3, LEASE);
    for (const n of [2, 1, 3]) {
      clock.advance(10);
      t.equal(await q.retry(`d${n}`, 0, `fail ${n}`), 'dead');
    }
    t.same(ids(await q.dead(10)), ['d3', 'd1', 'd2']);
    t.same(ids(await q.dead(2)), ['d3', 'd1']);
    t.same(await q.dead(0), []);
  });

  t.test('push is idempotent by id', async (t) => {
    const q = fresh<string>();
    await q.push([{ id: 'same', lane: 'bulk', payload: 'first' }]);
    await q.push([{ id: 'same', lane: 'receipt', payload: 'second' }]);
    t.same(await q.get('same'), { id: 'same', lane: 'bulk', payload: 'first', runAt: clock.now, attempts: 0, maxAttempts: 10, lastError: null });
    await q.push([
      { id: 'dup', lane: 'bulk', payload: 'one' },
      { id: 'dup', lane: 'bulk', payload: 'two' },
    ]);
    t.equal((await q.get('dup'))?.payload, 'one', 'a repeat within one batch is dropped');
    const leased = await q.lease(10, LEASE);
    t.same(ids(leased).sort(), ['dup', 'same']);
    await q.push([{ id: 'same', lane: 'bulk', payload: 'third' }]);
    const st = await q.stats();
    t.equal(st.leased, 2, 'pushing a leased id does not queue it twice');
    t.equal(st.lanes[2].due, 0);
    t.equal((await q.get('same'))?.payload, 'first');
  });

  t.test('cancel removes items that are not leased', async (t) => {
    const q = fresh<string>();
    await q.push([
      { id: 'sched', lane: 'bulk', payload: 'p', runAt: clock.now + 60_000 },
      { id: 'due', lane: 'bulk', payload: 'p' },
    ]);
    t.equal(await q.cancel('sched'), true);
    t.equal(await q.get('sched'), null);
    t.equal(await q.cancel('sched'), false, 'twice');
    t.same(ids(await q.lease(5, LEASE)), ['due']);
    t.equal(await q.cancel('due'), false, 'leased');
    t.ok(await q.get('due'));
    t.equal(await q.cancel('unknown'), false);
    await q.ack(['due']);
    clock.advance(60_000);
    t.same(await q.lease(5, 1), [], 'the cancelled one never comes');
  });

  t.test('stats count due, scheduled, leased and dead per lane', async (t) => {
    const q = fresh<number>();
    const now = clock.now;
    await q.push([
      { id: 'r1', lane: 'receipt', payload: 1 },
      { id: 'r2', lane: 'receipt', payload: 2 },
      { id: 'p1', lane: 'priority', payload: 3, runAt: now + 5000 },
      { id: 'b1', lane: 'bulk', payload: 4 },
      { id: 'b2', lane: 'bulk', payload: 5 },
      { id: 'b3', lane: 'bulk', payload: 6, runAt: now + 10, maxAttempts: 1 },
    ]);
    t.same(await q.stats(), {
      lanes: [
        { lane: 'receipt', due: 2, scheduled: 0, oldestDueAt: now },
        { lane: 'priority', due: 0, scheduled: 1, oldestDueAt: null },
        { lane: 'bulk', due: 2, scheduled: 1, oldestDueAt: now },
      ],
      leased: 0,
      dead: 0,
    });
    await q.lease(1, LEASE);
    clock.advance(10);
    await q.lease(1, LEASE, ['bulk']); // b1
    await q.push([{ id: 'x', lane: 'bulk', payload: 7, maxAttempts: 1 }]);
    await q.lease(1, LEASE, ['receipt']);
    t.same(await q.stats(), {
      lanes: [
        { lane: 'receipt', due: 0, scheduled: 0, oldestDueAt: null },
        { lane: 'priority', due: 0, scheduled: 1, oldestDueAt: null },
        // b2 has been due since the push, 10 ms ago: how far behind the lane is.
        { lane: 'bulk', due: 3, scheduled: 0, oldestDueAt: now },
      ],
      leased: 3,
      dead: 0,
    });
    const more = await q.lease(10, LEASE, ['bulk']);
    t.equal(more.length, 3);
    t.equal(await q.retry('x', 0, 'boom'), 'dead');
    const st = await q.stats();
    t.equal(st.leased, 5);
    t.equal(st.dead, 1);
  });

  t.test('get returns the stored item or null', async (t) => {
    const q = fresh<{ deep: { list: number[] } } | null>();
    await q.push([
      { id: 'g', lane: 'priority', payload: { deep: { list: [1, 2, 3] } }, runAt: clock.now + 5, maxAttempts: 4 },
      { id: 'nul', lane: 'bulk', payload: null },
    ]);
    t.same(await q.get('g'), { id: 'g', lane: 'priority', payload: { deep: { list: [1, 2, 3] } }, runAt: clock.now + 5, attempts: 0, maxAttempts: 4, lastError: null });
    t.equal((await q.get('nul'))?.payload, null);
    t.equal(await q.get('none'), null);
  });

  t.test('queues are independent', async (t) => {
    const a = fresh<string>();
    const b = fresh<string>();
    await a.push([{ id: 'shared-id', lane: 'bulk', payload: 'a' }]);
    await b.push([{ id: 'shared-id', lane: 'bulk', payload: 'b' }]);
    t.equal((await a.lease(1, LEASE))[0].payload, 'a');
    t.equal((await b.lease(1, LEASE))[0].payload, 'b');
    await a.ack(['shared-id']);
    t.ok(await b.get('shared-id'));
  });

  t.test('parallel leasers never get the same item', async (t) => {
    const q = fresh<number>();
    const N = 2000;
    const lanes: Lane[] = ['receipt', 'priority', 'bulk'];
    await q.push(Array.from({ length: N }, (_, i) => ({ id: `c${i}`, lane: lanes[i % 3], payload: i })));
    const seen = new Map<string, number>();
    const loop = async () => {
      for (;;) {
        const got = await q.lease(37, LEASE);
        if (got.length === 0) return;
        for (const it of got) seen.set(it.id, (seen.get(it.id) ?? 0) + 1);
        await q.ack(ids(got));
      }
    };
    await Promise.all([loop(), loop(), loop(), loop()]);
    t.equal(seen.size, N, 'every item leased');
    t.equal([...seen.values()].filter((n) => n !== 1).length, 0, 'none twice');
    const st = await q.stats();
    t.equal(st.leased, 0);
    t.same(st.lanes.map((l) => l.due), [0, 0, 0]);
  });
}
