import t from 'tap';
import { CircuitBreaker, type BreakerState } from '../../src/outbound/circuit-breaker.js';
import { testClock } from '../helpers/backends.js';

function breaker(opts: ConstructorParameters<typeof CircuitBreaker>[0] = {}) {
  const clock = testClock(1_000_000);
  const moves: Array<[BreakerState, BreakerState]> = [];
  const b = new CircuitBreaker({ failureThreshold: 3, openMs: 1000, maxOpenMs: 4000, clock: () => clock.now, onChange: (from, to) => moves.push([from, to]), ...opts });
  return { b, clock, moves };
}

t.test('opens after consecutive failures; a success in between resets the count', async (t) => {
  const { b, moves } = breaker();
  for (let i = 0; i < 2; i++) b.failure(b.tryAcquire()!);
  b.success(b.tryAcquire()!);
  t.equal(b.consecutiveFailures, 0, 'a success resets');
  for (let i = 0; i < 2; i++) b.failure(b.tryAcquire()!);
  t.equal(b.state, 'closed', 'two in a row: still closed');
  b.failure(b.tryAcquire()!);
  t.equal(b.state, 'open', 'the third opens it');
  t.equal(b.tryAcquire(), null, 'nothing goes while open');
  t.equal(b.retryInMs(), 1000);
  t.same(moves, [['closed', 'open']]);
});

t.test('half-open after the open period: one probe; success closes', async (t) => {
  const { b, clock, moves } = breaker();
  for (let i = 0; i < 3; i++) b.failure(b.tryAcquire()!);
  clock.advance(999);
  t.equal(b.state, 'open', '1 ms early');
  clock.advance(1);
  t.equal(b.state, 'half-open');
  t.equal(b.freeProbes, 1);
  const probe = b.tryAcquire()!;
  t.ok(probe.probe, 'the first request is the probe');
  t.equal(b.tryAcquire(), null, 'a second waits while the probe runs');
  t.equal(b.retryInMs(), null, 'unknown until the probe ends');
  b.success(probe);
  t.equal(b.state, 'closed');
  t.notOk(b.tryAcquire()!.probe);
  t.same(moves, [['closed', 'open'], ['open', 'half-open'], ['half-open', 'closed']]);
});

t.test('a failed probe opens it again for twice as long, up to the cap', async (t) => {
  const { b, clock } = breaker();
  for (let i = 0; i < 3; i++) b.failure(b.tryAcquire()!);
  const periods: number[] = [];
  for (let round = 0; round < 4; round++) {
    periods.push(b.retryInMs()!);
    clock.advance(b.retryInMs()!);
    b.failure(b.tryAcquire()!);
  }
  periods.push(b.retryInMs()!);
  t.same(periods, [1000, 2000, 4000, 4000, 4000]);
  clock.advance(4000);
  b.success(b.tryAcquire()!);
  for (let i = 0; i < 3; i++) b.failure(b.tryAcquire()!);
  t.equal(b.retryInMs(), 1000, 'after closing, the next opening starts short again');
});

t.test('outcomes of requests started before a change do not move the breaker', async (t) => {
  const { b, clock } = breaker();
  const early = [b.tryAcquire()!, b.tryAcquire()!, b.tryAcquire()!, b.tryAcquire()!];
  for (let i = 0; i < 3; i++) b.failure(early[i]);
  t.equal(b.state, 'open');
  clock.advance(1000);
  const probe = b.tryAcquire()!;
  b.success(early[3]);
  t.equal(b.state, 'half-open', 'a stale success does not close it');
  b.failure(probe);
  t.equal(b.state, 'open');
});

t.test('throttling holds the endpoint for the time asked without counting as a failure', async (t) => {
  const { b, clock } = breaker();
  b.failure(b.tryAcquire()!);
  b.failure(b.tryAcquire()!);
  b.throttled(b.tryAcquire()!, 30_000);
  t.equal(b.state, 'open');
  t.equal(b.retryInMs(), 30_000, 'the Retry-After, not the open period');
  b.throttled(null, 5000);
  t.equal(b.retryInMs(), 30_000, 'a shorter hold does not shorten it');
  clock.advance(30_000);
  const probe = b.tryAcquire()!;
  t.ok(probe.probe);
  b.success(probe);
  t.equal(b.state, 'closed');
  t.equal(b.consecutiveFailures, 0);
  b.failure(b.tryAcquire()!);
  b.failure(b.tryAcquire()!);
  t.equal(b.state, 'closed', 'the failures before the throttling were forgotten with the close');
});

t.test('a released probe frees its slot', async (t) => {
  const { b, clock } = breaker({ halfOpenProbes: 2 });
  for (let i = 0; i < 3; i++) b.failure(b.tryAcquire()!);
  clock.advance(1000);
  const p1 = b.tryAcquire()!;
  const p2 = b.tryAcquire()!;
  t.equal(b.tryAcquire(), null);
  b.release(p1);
  t.ok(b.tryAcquire(), 'a slot again');
  b.success(p2);
  t.equal(b.state, 'closed');
});
