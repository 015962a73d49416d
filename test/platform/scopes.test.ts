// The scope catalogue: the spec's ten plus the products' own, "all" stored as such (so later scopes are granted
// too), unknown scopes refused, and the catalogue listed in the OpenAPI description.
import t from 'tap';
import { SCOPES, grantedScopes, parseScopes } from '../../src/accounts/scopes.js';
import { CHANNEL_MODULES } from '../../src/channels/index.js';
import { ModuleHost } from '../../src/platform/module-host.js';
import { call, startDaemon } from '../helpers/daemon.js';

const PRODUCT_SCOPES = ['email:send', 'email:read', 'email:manage', 'voice:calls', 'voice:agents', 'ussd:manage', 'ussd:read', 'chat:manage', 'push:send', 'push:manage', 'shortlink:manage', 'shortlink:read', 'logs:read'];

t.test('the catalogue holds the spec’s ten and every product scope', async (t) => {
  // The products' scopes join the core's when their modules boot.
  new ModuleHost(CHANNEL_MODULES);
  for (const s of ['sms:send', 'sms:read', 'otp:send', 'otp:verify', 'messenger:send', 'messenger:read', 'messenger:templates', 'webhooks:manage', 'numbers:read', 'account:read', ...PRODUCT_SCOPES]) {
    t.ok(SCOPES.includes(s as never), s);
  }
  t.equal(SCOPES.length, 23);
  t.same(parseScopes('email:send, logs:read'), ['email:send', 'logs:read']);
  t.throws(() => parseScopes('email:sned'), /unknown scope: email:sned/);
  t.same(grantedScopes(['all']), SCOPES, '"all" is every scope of this version');
  t.same(grantedScopes(['sms:send', 'future:thing']), ['sms:send'], "a newer version's scope is ignored, not an error");
});

t.test('a key made with "all" is stored as all and granted every scope; the OpenAPI description lists them', async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  await d.adminCall('POST', '/admin/accounts', { name: 'scopes' });
  const all = await d.adminCall('POST', '/admin/keys', { account: 'scopes', scopes: 'all' });
  t.same(all.scopes, SCOPES, 'shown as every scope');
  const { rows } = await d.daemon.db.query<{ scopes: string[] }>('SELECT scopes FROM api_keys WHERE id = $1', [all.keyId]);
  t.same(rows[0].scopes, ['all'], 'stored as all');
  const health = await call(d.api, 'GET', '/v1/health', { token: all.token });
  t.same(health.json.data.scopes, SCOPES);

  const some = await d.adminCall('POST', '/admin/keys', { account: 'scopes', scopes: ['email:send', 'sms:read'] });
  const h2 = await call(d.api, 'GET', '/v1/health', { token: some.token });
  t.same(h2.json.data.scopes, ['email:send', 'sms:read']);

  const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
  for (const s of PRODUCT_SCOPES) t.match(doc.info.description, `| \`${s}\` |`, `${s} is documented`);
  t.same(
    doc.tags.map((tag: { name: string; 'x-maturity': string }) => [tag.name, tag['x-maturity']]),
    [
      ['account', 'stable'],
      ['sms', 'stable'],
      ['webhooks', 'stable'],
      ['otp', 'stable'],
      ['messenger', 'beta'],
      ['email', 'beta'],
      ['ussd', 'beta'],
      ['shortlink', 'beta'],
      ['push', 'beta'],
      ['chat', 'beta'],
      ['voice', 'beta'],
      ['logs', 'beta'],
      ['mcp', 'beta'],
    ],
    'every module is a tag with its maturity',
  );
});
