import t from 'tap';
import { AuthFailureCache } from '../../src/http/auth-failure-cache.js';

t.test('a reading serves limit − count requests, for at most its age', async (t) => {
  const c = new AuthFailureCache(5, 1000);
  t.equal(c.use('a', 0), undefined, 'nothing read yet: ask the store');
  c.record('a', 0, 0); // the read that let its own request through
  const served = [1, 2, 3, 4, 5].map((i) => c.use('a', i));
  t.same(served, [0, 0, 0, 0, undefined], 'four more requests on a count of 0 with limit 5, then read again');

  c.record('a', 3, 10);
  t.same([c.use('a', 11), c.use('a', 12)], [3, undefined], 'a count of 3 leaves room for one more request');

  c.record('a', 0, 100);
  t.equal(c.use('a', 1099), 0, 'still fresh just under the age');
  c.record('a', 0, 100);
  t.equal(c.use('a', 1100), undefined, 'read again once the reading is as old as maxAgeMs');
  c.record('a', 0, 5000);
  t.equal(c.use('a', 4000), undefined, 'a clock that went back does not keep a reading');
});

t.test('a throttled address is read every time', async (t) => {
  const c = new AuthFailureCache(5, 1000);
  c.record('a', 5, 0);
  t.equal(c.use('a', 1), undefined);
  c.record('a', 7, 2);
  t.equal(c.use('a', 3), undefined);
});

t.test('addresses are kept apart and the oldest readings go first', async (t) => {
  const c = new AuthFailureCache(20, 1000, 3);
  c.record('a', 1, 0);
  c.record('b', 2, 0);
  c.record('c', 3, 0);
  t.same([c.use('a', 1), c.use('b', 1), c.use('c', 1)], [1, 2, 3]);
  c.record('a', 4, 2); // refreshed: now the newest
  c.record('d', 0, 2);
  t.equal(c.size, 3);
  t.equal(c.use('b', 3), undefined, 'b, the oldest, made room');
  t.same([c.use('a', 3), c.use('c', 3), c.use('d', 3)], [4, 3, 0]);
});

/** A store read that answers when told to, counting how many were made and how many ran at once. */
function manualReads(count: number) {
  const waiting: Array<() => void> = [];
  const s = {
    made: 0,
    running: 0,
    mostAtOnce: 0,
    read: () => {
      s.made++;
      s.running++;
      s.mostAtOnce = Math.max(s.mostAtOnce, s.running);
      return new Promise<number>((resolve) => waiting.push(() => {
        s.running--;
        resolve(count);
      }));
    },
    /** Answers the reads made so far, then lets their waiters run. */
    answer: async () => {
      for (const f of waiting.splice(0)) f();
      for (let i = 0; i < 10; i++) await Promise.resolve();
    },
  };
  return s;
}

t.test('concurrent requests of one address share reads, each serving at most limit − count of them', async (t) => {
  const c = new AuthFailureCache(20, 1000);
  const store = manualReads(0);
  const answers = Array.from({ length: 64 }, () => c.countOf('a', store.read, () => 0));
  t.equal(store.made, 4, '64 requests that came together make four reads of 20 seats, side by side, not one after another');
  await store.answer();
  t.same(await Promise.all(answers), new Array(64).fill(0));
  t.equal(store.made, 4, 'a count of 0 with limit 20 lets each read serve 20');
  t.equal(c.use('a', 1), 0, 'the last read served 4 of its 20: the next request uses its reading');
  const later = Array.from({ length: 16 }, () => c.use('a', 1));
  t.same(later, [...new Array(15).fill(0), undefined], 'and that reading serves 16 requests after its own 4, not 20');

  const c2 = new AuthFailureCache(20, 1000);
  const store2 = manualReads(15);
  const answers2 = Array.from({ length: 20 }, () => c2.countOf('a', store2.read, () => 0));
  while (store2.running) await store2.answer();
  t.same(await Promise.all(answers2), new Array(20).fill(15));
  t.equal(store2.made, 4, 'a count of 15 leaves room for 5 requests per read');
});

t.test('a throttled count answers every request waiting on its read', async (t) => {
  const c = new AuthFailureCache(20, 1000);
  const store = manualReads(20);
  const answers = Array.from({ length: 10 }, () => c.countOf('a', store.read, () => 0));
  await store.answer();
  t.same(await Promise.all(answers), new Array(10).fill(20), 'all judged throttled on the one read');
  t.equal(store.made, 1);
  const next = c.countOf('a', store.read, () => 1);
  t.equal(store.made, 2, 'and the next request reads again');
  await store.answer();
  t.equal(await next, 20);
});

t.test('a failed read fails the requests waiting on it, and the next request reads again', async (t) => {
  const c = new AuthFailureCache(20, 1000);
  let calls = 0;
  const down = () => {
    calls++;
    return Promise.reject(new Error('store down'));
  };
  const results = await Promise.allSettled([c.countOf('a', down, () => 0), c.countOf('a', down, () => 0)]);
  t.same(results.map((r) => r.status), ['rejected', 'rejected']);
  t.equal(calls, 1);
  t.equal(await c.countOf('a', () => Promise.resolve(2), () => 0), 2, 'nothing of the failed read is left behind');
});
