import t from 'tap';
import { jitter, RetryPolicy } from '../../src/delivery/retry-policy.js';

const mid = () => 0.5;

t.test('a schedule: delay n for retry n, jittered, then final', async (t) => {
  const p = RetryPolicy.schedule([5000, 30_000, 120_000], 0.2, mid);
  t.same([1, 2, 3].map((n) => p.after(n)), [5000, 30_000, 120_000].map((delayMs) => ({ final: false, delayMs })));
  t.same(p.after(4), { final: true }, 'after the last delay the failure is final');
  t.same(RetryPolicy.schedule([]).after(1), { final: true }, 'an empty schedule: the first failure is final');
  t.same(RetryPolicy.schedule([1000], 0.2, () => 0).after(1), { final: false, delayMs: 800 }, 'low end: -20%');
  t.same(RetryPolicy.schedule([1000], 0.2, () => 0.9999999).after(1), { final: false, delayMs: 1200 }, 'high end: +20%');
});

t.test('backoff: exponential, capped, never final by count', async (t) => {
  const p = RetryPolicy.backoff({ baseMs: 1000, factor: 2, maxMs: 60_000 }, mid);
  t.same([1, 2, 3, 7, 8, 50].map((n) => p.after(n)), [1000, 2000, 4000, 60_000, 60_000, 60_000].map((delayMs) => ({ final: false, delayMs })));
});

t.test('a Retry-After replaces the delay, spread upward only; a final failure stays final', async (t) => {
  t.same(RetryPolicy.backoff({}, () => 0).after(1, 30_000), { final: false, delayMs: 30_000 }, 'never earlier than asked');
  t.same(RetryPolicy.backoff({}, () => 0.9999999).after(1, 30_000), { final: false, delayMs: 33_000 }, 'at most 10% later');
  t.same(RetryPolicy.schedule([1000], 0.2, mid).after(1, 5000), { final: false, delayMs: 5250 });
  t.same(RetryPolicy.schedule([1000]).after(2, 5000), { final: true });
});

t.test('one jitter', async (t) => {
  t.equal(jitter(1000, 0.2, () => 0), 800);
  t.equal(jitter(1000, 0.5, () => 0.9999999), 1500);
  t.equal(jitter(0, 0.2, () => 0), 1, 'at least 1 ms');
});
