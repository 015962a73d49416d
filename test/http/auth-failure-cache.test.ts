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
