import t from 'tap';
import { backoffDelay, jitter, parseRetryAfter } from '../../src/delivery/retry-policy.js';
import { ErrorTable } from '../../src/outbound/error-table.js';

// A provider's one table, shaped like Meta's Cloud API codes (the numbers are theirs, kept as text).
const table = new ErrorTable('meta-cloud', {
  '130429': { ferryCode: 'PROVIDER_THROTTLED', action: 'backoff' },
  '131056': { ferryCode: 'PAIR_RATE_LIMITED', action: 'later' },
  '131000': { ferryCode: 'PROVIDER_UNAVAILABLE', action: 'retry' },
  '131026': { ferryCode: 'RECIPIENT_UNREACHABLE', action: 'fail' },
  '190': { ferryCode: 'PROVIDER_AUTH_FAILED', action: 'fail', message: 'the access token is invalid or expired' },
});

t.test('a provider code maps to Ferry code and action, the code kept verbatim', async (t) => {
  t.same(table.classify({ providerCode: 131026, message: 'Message undeliverable', httpStatus: 400 }), {
    kind: 'fail',
    code: 'RECIPIENT_UNREACHABLE',
    providerCode: '131026',
    message: 'Message undeliverable',
  });
  t.same(table.classify({ providerCode: '130429', retryAfterMs: 60_000, httpStatus: 400, message: 'Rate limit hit' }), {
    kind: 'retry',
    code: 'PROVIDER_THROTTLED',
    providerCode: '130429',
    message: 'Rate limit hit',
    retryAfterMs: 60_000,
    throttled: true,
  });
  t.same(table.classify({ providerCode: 131056, httpStatus: 400, message: 'pair rate limit' }), {
    kind: 'retry',
    code: 'PAIR_RATE_LIMITED',
    providerCode: '131056',
    message: 'pair rate limit',
    providerHealthy: true,
  }, 'later: only this message waits');
  t.same(table.classify({ providerCode: 131000, httpStatus: 500 }), { kind: 'retry', code: 'PROVIDER_UNAVAILABLE', providerCode: '131000', message: 'meta-cloud answered HTTP 500' });
  t.equal(table.classify({ providerCode: 190, message: 'Error validating access token' }).message, 'the access token is invalid or expired', 'the rule may fix the text');
});

t.test('unknown codes fall back by HTTP status', async (t) => {
  const cases: Array<[number | undefined, string, string, boolean]> = [
    [429, 'retry', 'PROVIDER_THROTTLED', true],
    [500, 'retry', 'PROVIDER_UNAVAILABLE', false],
    [503, 'retry', 'PROVIDER_UNAVAILABLE', false],
    [408, 'retry', 'PROVIDER_UNAVAILABLE', false],
    [undefined, 'retry', 'PROVIDER_UNAVAILABLE', false],
    [400, 'fail', 'PROVIDER_REJECTED', false],
    [404, 'fail', 'PROVIDER_REJECTED', false],
  ];
  for (const [status, kind, code, throttled] of cases) {
    const r = table.classify({ providerCode: 'x-unknown', httpStatus: status });
    t.equal(r.kind, kind, `HTTP ${status}: ${kind}`);
    t.equal(r.code, code);
    t.equal(r.providerCode, 'x-unknown');
    t.equal(r.kind === 'retry' && r.throttled === true, throttled);
  }
  t.equal(table.classify({ providerCode: null, httpStatus: 502 }).providerCode, 'HTTP 502', 'no code: the status stands in');
  t.throws(() => new ErrorTable('p', { x: { ferryCode: 'lower', action: 'fail' } }), /UPPER_SNAKE/);
});

t.test('backoff grows exponentially up to the cap, jittered ±spread', async (t) => {
  const mid = () => 0.5;
  const policy = { baseMs: 1000, factor: 2, maxMs: 60_000, spread: 0.2 };
  t.same([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffDelay(n, policy, mid)), [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
  t.equal(backoffDelay(1, policy, () => 0), 800, 'low end: -20%');
  t.equal(backoffDelay(1, policy, () => 0.9999999), 1200, 'high end: +20%');
  t.equal(backoffDelay(10, policy, () => 0.9999999), 60_000, 'never above the cap');
  t.equal(jitter(0, 0.2, () => 0), 1, 'at least 1 ms');
});

t.test('Retry-After in seconds or as an HTTP date', async (t) => {
  const now = Date.parse('2026-03-01T12:00:00Z');
  t.equal(parseRetryAfter('30', now), 30_000);
  t.equal(parseRetryAfter(['2.5'], now), 2500);
  t.equal(parseRetryAfter('Sun, 01 Mar 2026 12:01:00 GMT', now), 60_000);
  t.equal(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now), 0, 'a past date: now');
  t.equal(parseRetryAfter('999999', now), 86_400_000, 'capped at a day');
  t.equal(parseRetryAfter('soon', now), undefined);
  t.equal(parseRetryAfter(undefined, now), undefined);
  t.equal(parseRetryAfter('', now), undefined);
});
