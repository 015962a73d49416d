import t from 'tap';
import { trimOldest } from '../../src/util/trim-oldest.js';

t.test('a map is trimmed to its newest entries once it holds a quarter more than the bound', async (t) => {
  const m = new Map<number, number>();
  const dropped: number[] = [];
  for (let i = 0; i < 30; i++) {
    m.set(i, i);
    dropped.push(trimOldest(m, 8));
    t.ok(m.size <= 10, `never more than the bound plus a quarter (${m.size})`);
  }
  t.same([...m.keys()], [22, 23, 24, 25, 26, 27, 28, 29], 'the newest kept, in order');
  t.same(dropped.filter((n) => n > 0), [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], 'two at a time for a bound of 8');
  t.equal(trimOldest(m, 8), 0, 'nothing to do within the bound');
  m.delete(24);
  m.set(24, 24);
  m.set(30, 30);
  t.equal(trimOldest(m, 8), 0);
  m.set(31, 31);
  t.equal(trimOldest(m, 8), 2);
  t.same([...m.keys()], [25, 26, 27, 28, 29, 24, 30, 31], 'a re-inserted key counts as new');
});

t.test('a bound of 1 or 0', async (t) => {
  const one = new Map([['a', 1]]);
  one.set('b', 2);
  t.equal(trimOldest(one, 1), 1);
  t.same([...one.keys()], ['b']);
  const none = new Map([['a', 1]]);
  t.equal(trimOldest(none, 0), 1);
  t.equal(none.size, 0);
});
