import t from 'tap';
import { idFloor, idTime, newId, randomBytesPooled } from '../../src/util/ids.js';

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

t.test('idFloor: every id made before the instant sorts below it, every id made at or after it does not', async (t) => {
  for (const ms of [0, 1, 1_700_000_000_000, Date.parse('2026-11-28T10:00:00Z')]) {
    const floor = idFloor('msg_', ms);
    for (let i = 0; i < 50; i++) {
      t.ok(newId('msg_', ms) >= floor, 'made at the instant');
      if (ms > 0) t.ok(newId('msg_', ms - 1) < floor, 'made a millisecond before');
    }
    t.ok(newId('msg_', ms + 1) > floor, 'made after');
  }
});

t.test('idTime: the time an id carries, null for another prefix or shape', async (t) => {
  for (const ms of [0, 1, 1_767_225_600_123, 32 ** 10 - 1]) t.equal(idTime('req_', newId('req_', ms)), ms, `made at ${ms}`);
  t.equal(idTime('clk_', newId('req_', 5)), null, 'another prefix');
  t.equal(idTime('req_', 'req_short'), null, 'not an id newId makes');
  t.equal(idTime('req_', 'req_' + 'u'.repeat(26)), null, 'a letter Crockford base 32 leaves out');
});
