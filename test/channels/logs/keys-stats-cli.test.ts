import t from 'tap';
import { call, ferryRun, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

t.test(`ferry keys stats shows what GET /v1/keys/stats answers (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => d.stop());
  await d.adminCall('POST', '/admin/accounts', { name: 'acme', defaultCountry: 'GH' });
  const key = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: 'all', name: 'backend' });
  await call(d.api, 'GET', '/v1/account/balance', { token: key.token });
  const missing = await call(d.api, 'GET', '/v1/sms/status/msg_nope', { token: key.token });
  const until = Date.now() + 10_000;
  let api: any;
  for (;;) {
    api = (await call(d.api, 'GET', '/v1/keys/stats', { token: key.token })).json.data;
    if (api.keys[0].requests >= 2) break;
    if (Date.now() > until) throw new Error('not logged');
    await new Promise((r) => setTimeout(r, 20));
  }
  t.ok(missing.json.requestId);
  const env = { FERRY_ADMIN_URL: d.admin, FERRY_ADMIN_TOKEN: d.adminToken, FERRY_LOG_LEVEL: 'silent' };
  const json = await ferryRun(['keys', 'stats', '--account', 'acme', '--json'], env);
  t.equal(json.code, 0, json.stderr);
  const cli = JSON.parse(json.stdout);
  t.equal(cli.keys[0].keyId, key.keyId);
  t.ok(cli.keys[0].requests >= 2);
  t.ok(cli.keys[0].errors >= 1);
  t.same(cli.limits, api.limits, 'the same rules as the API');
  const text = await ferryRun(['keys', 'stats', '--account', 'acme'], env);
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, `${key.keyId} (backend)`);
  t.match(text.stdout, /last used \S+ from 127\.0\.0\.1/);
  t.match(text.stdout, /sms\s+\d+\s+1\s+0/);
  t.match(text.stdout, 'rate limits in force:');
  t.match(text.stdout, /key\s+2000 per second/);
  // (An unknown account is the admin API's ACCOUNT_NOT_FOUND; the CLI prints an admin error as every command does.)
  await t.rejects(d.adminCall('GET', '/admin/accounts/nobody/keys/stats'), { code: 'ACCOUNT_NOT_FOUND' });
});
