import t from 'tap';
import { newId, randomBytesPooled } from '../../src/util/ids.js';

t.test('pooled random bytes: the length asked, never handed out twice, across pool refills', async (t) => {
  const seen = new Set<string>();
  let total = 0;
  let wrongLength = 0;
  for (let i = 0; i < 2000; i++) {
    const n = 1 + (i % 32);
    const b = randomBytesPooled(n);
    if (b.length !== n) wrongLength++;
    total += n;
    if (n >= 12) seen.add(b.toString('hex'));
    newId('x_'); // ids draw on the same pool
  }
  t.equal(wrongLength, 0, 'every value has the length asked');
  t.ok(total > 4096 * 2, 'the pool was refilled along the way');
  t.equal(seen.size, [...Array(2000).keys()].filter((i) => 1 + (i % 32) >= 12).length, 'no 12-byte or longer value repeats');
  const a = randomBytesPooled(16);
  const copy = Buffer.from(a);
  for (let i = 0; i < 600; i++) randomBytesPooled(16);
  t.same(a, copy, 'a value handed out is a copy: refilling the pool does not change it');
  t.throws(() => randomBytesPooled(257), RangeError);
});
