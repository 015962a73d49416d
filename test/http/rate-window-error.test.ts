import t from 'tap';
import { createApp } from '../../src/http/app.js';
import { ApiError } from '../../src/http/errors.js';
import { assertRateAllowed, rateWindowError } from '../../src/http/rate-window-error.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics.js';

t.test('a refused take is 429 RATE_LIMIT_EXCEEDED with Retry-After and data.window', async (t) => {
  const e = rateWindowError({ allowed: false, key: 'account:{acc_1}', window: 'minute', limit: 3000, retryAfterMs: 12_001 });
  t.ok(e instanceof ApiError);
  t.equal(e.status, 429);
  t.equal(e.code, 'RATE_LIMIT_EXCEEDED');
  t.same(e.data, { retryAfter: 13, window: 'minute', limit: 3000 }, 'seconds rounded up; the key is not shown');
  t.same(e.headers, { 'retry-after': '13' });
  t.equal(rateWindowError({ allowed: false, key: 'k', window: 'second', limit: 80, retryAfterMs: 1 }).headers?.['retry-after'], '1', 'never 0');
  t.same(rateWindowError({ allowed: false, key: 'k', window: 'day', limit: 100, retryAfterMs: 1000 }, { per: 'endpoint', window: 'x' }).data, { retryAfter: 1, per: 'endpoint', window: 'day', limit: 100 }, 'extra data cannot hide the window');

  t.same(assertRateAllowed({ allowed: true, remaining: { day: 4 } }), { allowed: true, remaining: { day: 4 } });
  t.throws(() => assertRateAllowed({ allowed: false, key: 'k', window: 'day', limit: 5, retryAfterMs: 3_600_000 }), { code: 'RATE_LIMIT_EXCEEDED', data: { window: 'day', retryAfter: 3600 } });
});

t.test('as the API answers it', async (t) => {
  const app = await createApp({ log: createLogger('silent'), metrics: new Metrics(), bodyLimitBytes: 1 << 16 });
  t.teardown(() => app.close());
  app.get('/limited', async () => assertRateAllowed({ allowed: false, key: 'recipient:{acc_1}:233200000001', window: 'second', limit: 80, retryAfterMs: 250 }));
  const res = await app.inject({ method: 'GET', url: '/limited' });
  t.equal(res.statusCode, 429);
  t.equal(res.headers['retry-after'], '1');
  const body = res.json();
  t.match(body, { success: false, code: 'RATE_LIMIT_EXCEEDED', data: { window: 'second', limit: 80, retryAfter: 1 } });
  t.notMatch(res.body, /acc_1|233200000001/, 'no key, account or recipient in the answer');
});
