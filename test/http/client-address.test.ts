// Client addresses behind trusted proxies: X-Forwarded-For read right to left (src/http/client-address.ts), the one
// reading for the auth-failure throttle, the request logs and USSD connector allow-lists; with http.trustProxy off the
// header is ignored; the old boolean form.
import t from 'tap';
import type { LogsService } from '../../src/channels/logs/logs-service.js';
import { loadConfig, ConfigError } from '../../src/config/load.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { ClientAddresses, hopAddress, LEGACY_TRUST_PROXY, normalizeTrustProxy } from '../../src/http/client-address.js';
import { accountWithKey, call, LogLines, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

t.test('the parser: chains read from the right, IPv6, mapped IPv4, garbage', async (t) => {
  const proxies = new ClientAddresses(['10.0.0.0/8', '2001:db8:1::/48', '192.0.2.1']);
  const cases: Array<[string, string | undefined, string | string[] | undefined, string | null]> = [
    ['no proxy trusted from this peer: the header is ignored', '203.0.113.5', '1.2.3.4', '203.0.113.5'],
    ['a trusted peer without the header is the client', '10.0.0.1', undefined, '10.0.0.1'],
    ['one trusted proxy: its hop is the client', '10.0.0.1', '198.51.100.7', '198.51.100.7'],
    ['a forged hop left of the real one is not believed', '10.0.0.1', '1.2.3.4, 198.51.100.7', '198.51.100.7'],
    ['two trusted proxies in a row', '10.0.0.1', '1.2.3.4, 198.51.100.7, 10.0.0.2', '198.51.100.7'],
    ['a single trusted address', '192.0.2.1', '198.51.100.7', '198.51.100.7'],
    ['the header given twice is one list', '10.0.0.1', ['1.2.3.4', '198.51.100.7, 10.9.9.9'], '198.51.100.7'],
    ['every hop trusted: the leftmost one', '10.0.0.1', '10.1.1.1, 10.2.2.2', '10.1.1.1'],
    ['empty hops are skipped', '10.0.0.1', '198.51.100.7, ,', '198.51.100.7'],
    ['IPv6 proxy and client', '2001:db8:1::5', '2001:db8:ffff::9', '2001:db8:ffff::9'],
    ['IPv6 client behind an IPv4 proxy', '10.0.0.1', '2001:db8:ffff::9', '2001:db8:ffff::9'],
    ['a bracketed IPv6 hop with a port', '10.0.0.1', '[2001:db8:ffff::9]:4711', '2001:db8:ffff::9'],
    ['an IPv4 hop with a port', '10.0.0.1', '198.51.100.7:4711', '198.51.100.7'],
    ['an IPv4-mapped peer matches the IPv4 entry', '::ffff:10.0.0.1', '198.51.100.7', '198.51.100.7'],
    ['an IPv4-mapped hop is its IPv4 form', '10.0.0.1', '::ffff:198.51.100.7', '198.51.100.7'],
    ['a mapped untrusted peer is its IPv4 form', '::ffff:203.0.113.5', '1.2.3.4', '203.0.113.5'],
    ['garbage stops at the proxy that passed it', '10.0.0.1', '198.51.100.7, not-an-ip', '10.0.0.1'],
    ['garbage behind a trusted hop stops there', '10.0.0.1', 'junk, 10.0.0.3', '10.0.0.3'],
    ['garbage further left is never read', '10.0.0.1', 'junk, 198.51.100.7', '198.51.100.7'],
    ['an unknown peer', undefined, '1.2.3.4', null],
  ];
  for (const [name, peer, xff, want] of cases) t.equal(proxies.of(peer, xff), want, name);

  const off = new ClientAddresses([]);
  t.equal(off.enabled, false);
  t.equal(off.of('10.0.0.1', '1.2.3.4'), '10.0.0.1', 'trusting no proxy ignores the header');

  const named = new ClientAddresses(['loopback', 'private']);
  t.equal(named.of('127.0.0.1', '1.2.3.4, 198.51.100.7'), '198.51.100.7', 'loopback');
  t.equal(named.of('::1', '198.51.100.7'), '198.51.100.7', 'IPv6 loopback');
  t.equal(named.of('172.20.0.3', '198.51.100.7'), '198.51.100.7', 'private');
  t.equal(named.of('fd00::1', '198.51.100.7'), '198.51.100.7', 'unique local');
  t.equal(named.of('203.0.113.5', '198.51.100.7'), '203.0.113.5', 'public peers are not proxies');

  for (const [hop, want] of [['1.2.3.4', '1.2.3.4'], [' 1.2.3.4 ', '1.2.3.4'], ['::1', '::1'], ['[::1]', '::1'], ['unknown', null], ['1.2.3.4.5', null], ['', null], ['[::1', null], ['300.1.1.1', null]] as const) {
    t.equal(hopAddress(hop), want, `hop ${JSON.stringify(hop)}`);
  }
  for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '::/129', 'privat']) {
    t.throws(() => new ClientAddresses([bad]), { message: /^http\.trustProxy: / }, bad);
  }
});

t.test('http.trustProxy in the config: false, a list, a comma-separated variable, the old true', async (t) => {
  t.same(normalizeTrustProxy(false).value, false);
  t.same(normalizeTrustProxy(['10.0.0.0/8', ' 192.0.2.1 ']).value, ['10.0.0.0/8', '192.0.2.1']);
  t.same(normalizeTrustProxy([]).value, false, 'an empty list trusts no proxy');
  t.equal(normalizeTrustProxy(true).value, LEGACY_TRUST_PROXY);
  const env = (v: string) => loadConfig({ env: { FERRY_HTTP_TRUST_PROXY: v }, modules: CHANNEL_MODULES }).config.http.trustProxy;
  t.same(env('10.0.0.1, 10.0.0.0/8,loopback'), ['10.0.0.1', '10.0.0.0/8', 'loopback']);
  t.equal(env('false'), false);
  t.equal(env('true'), LEGACY_TRUST_PROXY, 'true is read as loopback and private ranges');
  t.throws(() => env('10.0.0.1,nonsense'), ConfigError);
  t.throws(() => env('10.0.0.1,nonsense'), { message: /http\.trustProxy: nonsense is not an address/ });
});

/** A call that reaches the daemon through a "proxy" on loopback: that proxy appends `client` to what was sent. */
function viaProxy(d: TestDaemon, method: string, path: string, client: string, forged: string | null, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  return call(d.api, method, path, { ...opts, headers: { ...(opts.headers ?? {}), 'x-forwarded-for': forged ? `${forged}, ${client}` : client } });
}

const badToken = Buffer.from('ak_live_cccccccccccccccccccc:sk_nope').toString('base64');

async function loggedAddress(d: TestDaemon, accountId: string, requestId: string): Promise<string | null> {
  const logs = d.daemon.modules.service<LogsService>('logs');
  for (let i = 0; i < 200; i++) {
    const row = await logs.get(accountId, requestId);
    if (row) return row.clientIp;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`request ${requestId} not logged`);
}

t.test(`behind one trusted proxy, a client's forged X-Forwarded-For changes nothing (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_HTTP_TRUST_PROXY: '127.0.0.1', FERRY_AUTH_FAILURE_LIMIT: '3', FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'behind');

  t.test('the auth-failure throttle counts the real address', async (t) => {
    const codes: string[] = [];
    for (let i = 0; i < 5; i++) codes.push((await viaProxy(d, 'GET', '/v1/health', '198.51.100.7', `1.2.3.${i}`, { token: badToken })).json.code);
    t.same(codes, ['INVALID_CREDENTIALS', 'INVALID_CREDENTIALS', 'INVALID_CREDENTIALS', 'TOO_MANY_AUTH_FAILURES', 'TOO_MANY_AUTH_FAILURES'], 'a new forged address each time does not escape the limit');
    const other = await viaProxy(d, 'GET', '/v1/health', '198.51.100.8', '198.51.100.9', { token: badToken });
    t.equal(other.json.code, 'INVALID_CREDENTIALS', 'another client behind the same proxy has its own count');
    const forgedAsOther = await viaProxy(d, 'GET', '/v1/health', '198.51.100.7', '198.51.100.8', { token: badToken });
    t.equal(forgedAsOther.json.code, 'TOO_MANY_AUTH_FAILURES', "naming another client's address does not borrow its count");
  });

  t.test('the request log records the real address', async (t) => {
    const r = await viaProxy(d, 'GET', '/v1/account/balance', '198.51.100.20', '1.2.3.4', { token });
    t.equal(r.status, 200);
    t.equal(await loggedAddress(d, account.id, r.json.requestId), '198.51.100.20');
  });

  t.test('a USSD connector allow-list: forging an allowed address is refused', async (t) => {
    const c = await call(d.api, 'POST', '/v1/ussd/connectors', { token, body: { dialect: 'africastalking', secret: false, allowIps: ['203.0.113.9'] } });
    t.equal(c.status, 200, c.json?.code);
    const hop = async (client: string, forged: string | null) => {
      const res = await fetch(d.api + c.json.data.callbackPath, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': forged ? `${forged}, ${client}` : client },
        body: new URLSearchParams({ sessionId: `AT_${client}_${forged}`, serviceCode: '*384*77#', phoneNumber: '+254711000111', text: '' }).toString(),
      });
      await res.text();
      return res.status;
    };
    t.equal(await hop('198.51.100.7', '203.0.113.9'), 401, 'a client naming the allowed address is refused');
    t.not(await hop('203.0.113.9', null), 401, 'the allowed address, as the proxy saw it, is let in');
  });
});

t.test(`with http.trustProxy off, X-Forwarded-For is ignored (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_AUTH_FAILURE_LIMIT: '3', FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'direct');
  const codes: string[] = [];
  for (let i = 0; i < 4; i++) codes.push((await viaProxy(d, 'GET', '/v1/health', `198.51.100.${i}`, null, { token: badToken })).json.code);
  t.same(codes, ['INVALID_CREDENTIALS', 'INVALID_CREDENTIALS', 'INVALID_CREDENTIALS', 'TOO_MANY_AUTH_FAILURES'], 'every attempt counts against the connection address');
  const r = await viaProxy(d, 'GET', '/v1/account/balance', '198.51.100.20', null, { token });
  t.equal(await loggedAddress(d, account.id, r.json.requestId), '127.0.0.1');
});

t.test(`http.trustProxy: true is read as loopback + private ranges, with a warning (${backendLabel})`, async (t) => {
  const logs = new LogLines();
  const d = await startDaemon({ FERRY_HTTP_TRUST_PROXY: 'true', FERRY_AUTH_FAILURE_LIMIT: '2', FERRY_LOG_LEVEL: 'warn' }, undefined, logs);
  t.teardown(() => d.stop());
  t.equal(logs.find(/http\.trustProxy: true is read as \[loopback, private\]/).length, 1, 'one warning at start');
  const codes: string[] = [];
  for (let i = 0; i < 3; i++) codes.push((await viaProxy(d, 'GET', '/v1/health', '198.51.100.7', `1.2.3.${i}`, { token: badToken })).json.code);
  t.same(codes, ['INVALID_CREDENTIALS', 'INVALID_CREDENTIALS', 'TOO_MANY_AUTH_FAILURES'], 'the leftmost hop is no longer believed');
});
