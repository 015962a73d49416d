// End-user tokens in the auth plugin: a route that declares `endUser` takes `Bearer <jwt>` through its verifier (and
// API keys as before); every other route refuses a JWT with END_USER_TOKEN_NOT_ACCEPTED, not with a failed guess.
import t from 'tap';
import type { AuthContext, KeyService } from '../../src/accounts/key-service.js';
import { createApp } from '../../src/http/app.js';
import authPlugin, { bearerJwt } from '../../src/http/auth.js';
import { ApiError } from '../../src/http/errors.js';
import { Metrics } from '../../src/metrics.js';
import { createLogger } from '../../src/log.js';
import type { Throttle } from '../../src/store/types.js';

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJlLW9mLWEtdXNlcg';

t.test('bearerJwt tells a compact JWS from an API key', async (t) => {
  t.equal(bearerJwt(`Bearer ${JWT}`), JWT);
  t.equal(bearerJwt(`bearer  ${JWT}`), JWT, 'scheme case and spacing as for keys');
  t.equal(bearerJwt('Bearer key_abc:secret'), null, 'a key pair');
  t.equal(bearerJwt(`Bearer ${Buffer.from('key_abc:secret').toString('base64')}`), null, 'a base64 key pair');
  t.equal(bearerJwt(`Basic ${JWT}`), null, 'only Bearer');
  t.equal(bearerJwt(undefined), null);
  t.equal(bearerJwt(`Bearer ${'a'.repeat(5000)}.b.c`), null, 'bounded');
});

t.test('a route with an endUser verifier; one without', async (t) => {
  const metrics = new Metrics();
  const app = await createApp({ log: createLogger('silent'), metrics, bodyLimitBytes: 65_536 });
  const auth: AuthContext = { keyId: 'key_1', accountId: 'acc_1', scopes: new Set(['chat:manage']) } as unknown as AuthContext;
  const keys = { authenticate: async (keyId: string, secret: string) => (keyId === 'key_1' && secret === 'right' ? { ok: true, auth } : { ok: false, reason: 'invalid' }) } as unknown as KeyService;
  let allowed = true;
  const throttle = { take: async () => ({ allowed, retryAfterMs: 1000 }), hit: async () => ({ allowed: true, count: 1, retryAfterMs: 0 }) } as unknown as Throttle;
  await app.register(authPlugin, { keys, throttle, metrics, failureLimit: 10, failureWindowMs: 60_000, perKeyPerSecond: 10, burst: 10 });
  const seen: string[] = [];
  app.get('/v1/both', {
    config: {
      endUser: async (token) => {
        seen.push(token);
        if (token !== JWT) throw new ApiError('INVALID_CREDENTIALS');
        return { accountId: 'acc_1', userId: 'user-1' };
      },
    },
    handler: async (req) => ({ user: req.endUser, key: req.auth?.keyId ?? null }),
  });
  app.get('/v1/keys-only', async (req) => ({ key: req.auth.keyId }));
  await app.ready();
  t.teardown(() => app.close());
  const get = (url: string, authorization: string) => app.inject({ method: 'GET', url, headers: { authorization } });

  const asUser = await get('/v1/both', `Bearer ${JWT}`);
  t.equal(asUser.statusCode, 200);
  t.same(asUser.json(), { user: { accountId: 'acc_1', userId: 'user-1' }, key: null }, 'the verifier resolved the user');
  const asKey = await get('/v1/both', 'Bearer key_1:right');
  t.same(asKey.json(), { user: null, key: 'key_1' }, 'an API key still opens it');
  const forged = await get('/v1/both', `Bearer ${JWT.slice(0, -2)}xx`);
  t.equal(forged.statusCode, 401, 'the verifier refuses');
  t.same(seen.length, 2);

  const refused = await get('/v1/keys-only', `Bearer ${JWT}`);
  t.equal(refused.statusCode, 401);
  t.equal(refused.json().code, 'END_USER_TOKEN_NOT_ACCEPTED', 'a user token never reaches an API-key route');
  t.equal(seen.length, 2, 'and no verifier saw it');

  allowed = false;
  const limited = await get('/v1/both', `Bearer ${JWT}`);
  t.equal(limited.statusCode, 429, 'an end user is rate limited like a key');
});
