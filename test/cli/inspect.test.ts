// `ferry <product> list|show` as processes against a running daemon: data made through the REST API by two
// accounts, listed across accounts and by account (--account, --status, --since, --limit), as a table and --json,
// and one item shown with its history, deliveries, transcript or clicks; bad filters are refused with their code.
import t from 'tap';
import type { MessengerModuleService } from '../../src/channels/messenger/index.js';
import { accountWithKey, call, ferryRun, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

// Each `ferry` call here is a process that loads the CLI (the compiled one when dist/ is fresh, else through tsx:
// seconds each on a 2-core machine): the file's bound is set for that, above the suite's default.
t.setTimeout(420_000);

// A bound, not a measure: on a loaded machine a CLI process (tsx) can take over a minute to start.
const CLI_LIMIT_MS = 300_000;

t.test(`list and show every product through the CLI (${backendLabel})`, async (t) => {
  // The webhook endpoint points at this machine: allowed by name (on Postgres it is not a developer's machine).
  const d = await startDaemon({ FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
  t.teardown(() => d.stop());
  const a = await accountWithKey(d, 'inspect-a');
  const b = await accountWithKey(d, 'inspect-b');
  const api = async (token: string, method: string, path: string, body?: unknown) => {
    const r = await call(d.api, method, path, { token, body });
    t.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.status < 300 ? '' : r.text}`);
    return r.json.data;
  };

  const sms = await api(a.token, 'POST', '/v1/sms/send', { to: '233241234567', from: 'Acme', message: 'order shipped' });
  await api(b.token, 'POST', '/v1/sms/send', { to: '233241234568', from: 'Other', message: 'hello' });
  await api(a.token, 'POST', '/v1/email/domains', { domain: 'example.test' });
  const email = (await api(a.token, 'POST', '/v1/email/send', { from: 'hello@example.test', to: ['alice@dest.test'], subject: 'Welcome', text: 'Hi' })).messages[0];
  const phone = '447700900123';
  await d.daemon.modules.service<MessengerModuleService>('messenger').simulator!.userReply(phone, 'hello'); // opens the 24-hour window
  const chat = await api(a.token, 'POST', '/v1/messenger/send', { to: `+${phone}`, type: 'text', text: { body: 'Hi there' } });
  const menu = await api(a.token, 'POST', '/v1/ussd/menus', { name: 'm', tree: { start: 'main', nodes: { main: { type: 'end', text: 'Bye' } } } });
  await api(a.token, 'POST', `/v1/ussd/menus/${menu.id}/publish`, {});
  await api(a.token, 'POST', '/v1/ussd/service-codes', { serviceCode: '*384*77#', menuId: menu.id });
  await api(a.token, 'POST', '/v1/ussd/simulate', { serviceCode: '*384*77#', phoneNumber: '+233241112222' });
  const link = await api(a.token, 'POST', '/v1/shortlink/links', { url: 'https://example.com/sale', maxClicks: 5 });
  const hook = await api(a.token, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/events', events: ['webhook.test'] });
  await api(a.token, 'POST', `/v1/webhooks/${hook.id}/test`);
  // A status filter the SMS ledger knows (the message moves on by itself, so only the filter's shape is checked here).
  t.same((await d.adminCall('GET', '/admin/messages?status=cancelled')).items, [], 'no cancelled message');
  const failed = await call(d.api, 'GET', '/v1/sms/status/msg_nope', { token: a.token });
  t.equal(failed.status, 404);
  const failedRequest = failed.json.requestId as string;

  const env = { FERRY_ADMIN_URL: d.admin, FERRY_ADMIN_TOKEN: d.adminToken };
  const admin = (path: string) => d.adminCall('GET', path);

  // The request log is written a moment after the answer: wait for it (bounded) before listing it.
  const until = Date.now() + 20_000;
  while (Date.now() < until && !(await admin('/admin/logs?status=404')).items.some((r: { id: string }) => r.id === failedRequest)) await new Promise((r) => setTimeout(r, 100));

  // Every list and show through the admin API the commands call (each command is a thin client: a few run below).
  const smsAll = (await admin('/admin/messages')).items;
  const smsA = (await admin(`/admin/messages?account=inspect-a&since=${new Date(Date.now() - 3600_000).toISOString()}`)).items;
  const emails = (await admin('/admin/email/messages?account=inspect-a')).items;
  const chats = (await admin(`/admin/messenger/messages?account=${a.account.id}`)).items;
  const sessions = (await admin('/admin/ussd/sessions?account=inspect-a')).items;
  const links = (await admin('/admin/shortlinks?account=inspect-a')).items;
  const hooks = (await admin('/admin/webhooks?status=enabled')).items;
  const logs = (await admin('/admin/logs?account=inspect-a&status=4xx')).items;
  t.same(smsAll.map((m: { accountId: string }) => m.accountId).sort(), [a.account.id, b.account.id].sort(), 'across accounts');
  t.same(smsA.map((m: { id: string }) => m.id), [sms.messageId], 'one account, by name');
  t.match(smsA[0], { to: '233241234567', from: 'Acme', segments: 1 });
  t.match(emails, [{ id: email.messageId, to: 'alice@dest.test', subject: 'Welcome', accountId: a.account.id }]);
  t.match(chats, [{ id: chat.messageId, to: phone, type: 'text' }], 'one account, by id');
  t.match(sessions, [{ serviceCode: '*384*77#', phone: '233241112222', channel: 'simulate' }]);
  t.match(links, [{ id: link.id, slug: link.slug, maxClicks: 5, clicks: 0 }]);
  t.match(hooks, [{ id: hook.id, url: 'http://127.0.0.1:9/events', enabled: true }]);
  t.same((await admin('/admin/webhooks?status=disabled')).items, []);
  t.match(logs, [{ id: failedRequest, status: 404, errorCode: 'MESSAGE_NOT_FOUND', method: 'GET' }]);
  t.equal((await admin('/admin/logs?limit=1')).items.length, 1, '--limit');

  t.match(await admin(`/admin/email/messages/${email.messageId}`), { accountId: a.account.id, to: 'alice@dest.test', history: [{ status: 'queued' }] }, 'email: with its history');
  const chatShown = await admin(`/admin/messenger/messages/${chat.messageId}`);
  t.match(chatShown, { accountId: a.account.id, messageId: chat.messageId, history: Array }, 'messenger: with its history');
  t.ok(chatShown.history.length >= 1);
  t.match(await admin(`/admin/ussd/sessions/${sessions[0].id}`), { accountId: a.account.id, transcript: [{}] }, 'ussd: with its transcript');
  t.match(await admin(`/admin/shortlinks/${link.id}`), { accountId: a.account.id, slug: link.slug, recentClicks: [] }, 'short link: with its clicks');
  t.match(await admin(`/admin/logs/${failedRequest}`), { accountId: a.account.id, requestId: failedRequest, status: 404, responseBody: /MESSAGE_NOT_FOUND/ }, 'log: the request with its bodies');

  // The commands as processes (each starts a CLI: a few, one after another, on a loaded machine).
  const shown = await ferryRun(['webhooks', 'show', hook.id, '--json'], env, CLI_LIMIT_MS);
  t.equal(shown.code, 0, shown.stderr);
  t.match(JSON.parse(shown.stdout), { accountId: a.account.id, deliveries: [{ eventType: 'webhook.test' }] }, 'webhook: with its deliveries');
  t.notMatch(shown.stdout, /whsec_/, 'never the signing secret');
  const listed = await ferryRun(['messages', 'list', '--account', 'inspect-b', '--since', '1h', '--json'], env, CLI_LIMIT_MS);
  t.equal(listed.code, 0, listed.stderr);
  t.match(JSON.parse(listed.stdout), [{ accountId: b.account.id, to: '233241234568', from: 'Other' }]);

  // The default output is a table: a header and one row per item.
  const table = await ferryRun(['email', 'list', '--account', 'inspect-a'], env, CLI_LIMIT_MS);
  t.equal(table.code, 0, table.stderr);
  t.match(table.stdout, /^ID +ACCOUNTID +STATUS +FROM +TO +SUBJECT +CREATEDAT\nem_\S+ +acc_\S+ +\w+ +hello@example\.test +alice@dest\.test +Welcome +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
  t.same((await admin('/admin/shortlinks?account=inspect-b')).items, [], 'none');

  // Refusals: a code, exit 2 (the admin API) or a local check before anything is sent.
  const unknown = await ferryRun(['email', 'show', 'em_nope'], env, CLI_LIMIT_MS);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /EMAIL_NOT_FOUND/);
  const auth = { authorization: `Bearer ${d.adminToken}` };
  t.equal((await call(d.admin, 'GET', '/admin/logs?account=nobody', { headers: auth })).json.code, 'ACCOUNT_NOT_FOUND');
  t.equal((await call(d.admin, 'GET', '/admin/logs?status=teapot', { headers: auth })).json.code, 'VALIDATION_ERROR');
  t.equal((await call(d.admin, 'GET', '/admin/shortlinks/lnk_nope', { headers: auth })).json.code, 'SHORTLINK_NOT_FOUND');
  const badLimit = await ferryRun(['logs', 'list', '--limit', '501'], env, CLI_LIMIT_MS);
  t.not(badLimit.code, 0);
  t.match(badLimit.stderr, /expected 1-500/);
  t.equal((await call(d.admin, 'GET', '/admin/shortlinks?status=active', { headers: auth })).json.code, 'VALIDATION_ERROR', 'short links have no status');
  t.equal((await call(d.admin, 'GET', '/admin/messages?limit=501', { headers: auth })).json.code, 'VALIDATION_ERROR', 'at most 500');
  t.equal((await call(d.admin, 'GET', '/admin/messages?since=yesterday', { headers: auth })).json.code, 'VALIDATION_ERROR');
  t.equal((await call(d.admin, 'GET', '/admin/webhooks')).status, 401, 'behind the admin token');
});
