import t from 'tap';
import { PacingHistogram } from '../../src/rtp/pacing-histogram.js';
import { PortPool } from '../../src/rtp/port-pool.js';

t.test('even ports only, RTCP room above each, none handed out twice at once', async (t) => {
  const pool = new PortPool({ min: 20001, max: 20010 });
  t.equal(pool.size, 4, '20002, 20004, 20006, 20008 (20010 has no RTCP port)');
  const taken = [pool.acquire(), pool.acquire(), pool.acquire(), pool.acquire()];
  t.same(taken, [20002, 20004, 20006, 20008]);
  t.equal(pool.acquire(), undefined, 'exhausted');
  t.equal(pool.available, 0);
  pool.release(20004);
  t.equal(pool.acquire(), 20004, 'a released port comes back');
  t.equal(pool.acquire(), undefined);
  pool.release(20002);
  pool.release(20008);
  const next = [pool.acquire(), pool.acquire()];
  t.same([...next].sort(), [20002, 20008]);
  t.equal(new Set(next).size, 2);
});

t.test('round-robin: a released port rests while others are free', async (t) => {
  const pool = new PortPool({ min: 30000, max: 30007 });
  const a = pool.acquire()!;
  pool.release(a);
  t.not(pool.acquire(), a);
});

t.test('split gives each worker a disjoint even range', async (t) => {
  const parts = PortPool.split({ min: 40000, max: 40099 }, 3);
  t.equal(parts.length, 3);
  const seen = new Set<number>();
  for (const range of parts) {
    const pool = new PortPool(range);
    for (let port = pool.acquire(); port !== undefined; port = pool.acquire()) {
      t.equal(port % 2, 0);
      t.ok(port + 1 <= 40099);
      t.notOk(seen.has(port), `${port} in one part only`);
      seen.add(port);
    }
  }
  t.equal(seen.size, 50, 'all 50 pairs used');
  t.throws(() => PortPool.split({ min: 40000, max: 40003 }, 3), RangeError);
  t.throws(() => new PortPool({ min: 40001, max: 40001 }), RangeError);
});

t.test('pacing histogram: max, mean, p99 and merging', async (t) => {
  const h = new PacingHistogram();
  for (let i = 0; i < 990; i++) h.record(100);
  for (let i = 0; i < 10; i++) h.record(-5000);
  const s = h.summary();
  t.equal(s.samples, 1000);
  t.equal(s.maxUs, 5000, 'early counts as error too');
  t.equal(s.p99Us, 110, '99% at or below the 100–110 µs bucket');
  t.equal(s.meanUs, Math.round((990 * 100 + 10 * 5000) / 1000));
  const merged = new PacingHistogram();
  merged.merge(s);
  merged.merge(s);
  t.equal(merged.summary().samples, 2000);
  t.equal(merged.summary().p99Us, 110);
  h.record(20_000);
  h.record(20_000);
  h.record(20_000);
  t.ok(h.percentile(0.999) >= 5000);
});
