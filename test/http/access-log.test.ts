import t from 'tap';
import { accountWithKey, call, LogLines, startDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';

t.test(`one access log line per request, with the request id and the actor, never the secret (${backendLabel})`, async (t) => {
  const logs = new LogLines();
  const d = await startDaemon({ FERRY_LOG_LEVEL: 'info' }, undefined, logs);
  t.teardown(() => d.stop());
  const { token, key, account } = await accountWithKey(d, 'logged');
  const access = () => logs.find('request');
  const byReq = (id: string) => logs.lines.filter((l) => l.reqId === id && (l.msg === 'request' || l.msg === 'request failed'));

  const ok = await call(d.api, 'GET', '/v1/health', { token });
  t.equal(ok.status, 200);
  const [line, ...more] = byReq(ok.json.requestId);
  t.equal(more.length, 0, 'exactly one line for the request');
  t.match(line, {
    level: 'info',
    msg: 'request',
    reqId: ok.json.requestId,
    method: 'GET',
    route: '/v1/health',
    status: 200,
    durationMs: Number,
    ip: /127\.0\.0\.1$/,
    keyId: key.keyId,
    accountId: account.id,
  });
  t.equal(line.code, undefined, 'no error code on a success');

  const sent = await call(d.api, 'POST', '/v1/sms/send', { token, body: { to: '+233241234567', from: 'Ferry', message: 'the text is not logged' } });
  t.equal(sent.status, 200, sent.text);
  t.match(byReq(sent.json.requestId)[0], { method: 'POST', route: '/v1/sms/send', status: 200, keyId: key.keyId, accountId: account.id }, 'the route pattern, not the URL');
  const status = await call(d.api, 'GET', `/v1/sms/status/${sent.json.data.messageId}?x=1`, { token });
  t.match(byReq(status.json.requestId)[0], { route: '/v1/sms/status/:messageId', status: 200 });

  const denied = await call(d.api, 'GET', '/v1/health', { token: Buffer.from(`${key.keyId}:sk_wrong_secret`).toString('base64') });
  const deniedLine = byReq(denied.json.requestId)[0];
  t.match(deniedLine, { level: 'info', status: 401, code: 'INVALID_CREDENTIALS', ip: /127\.0\.0\.1$/ }, 'refusals too, with their code and address');
  t.equal(deniedLine.keyId, undefined, 'an unverified key is no actor');

  const missing = await call(d.api, 'GET', '/v1/nope');
  t.match(byReq(missing.json.requestId)[0], { route: 'unmatched', status: 404, code: 'NOT_FOUND' });

  const adminReq = await call(d.admin, 'GET', '/admin/accounts', { headers: { authorization: `Bearer ${d.adminToken}` } });
  t.match(byReq(adminReq.json.requestId)[0], { route: '/admin/accounts', status: 200 }, 'the admin listener logs the same way');

  const all = JSON.stringify(logs.lines);
  t.notMatch(all, key.secret, 'never the secret');
  t.notMatch(all, token, 'never the Authorization value');
  t.notMatch(all, /sk_wrong_secret|Basic |Bearer /, 'never an Authorization header');
  t.notMatch(all, d.adminToken, 'never the admin token');
  t.notMatch(all, /the text is not logged/, 'never a message text');
  t.ok(access().length >= 6, 'one line per request');
});

t.test(`at level warn, requests that succeed write no access line (${backendLabel})`, async (t) => {
  const logs = new LogLines();
  const d = await startDaemon({ FERRY_LOG_LEVEL: 'warn' }, undefined, logs);
  t.teardown(() => d.stop());
  const { token } = await accountWithKey(d, 'quiet');
  t.equal((await call(d.api, 'GET', '/v1/health', { token })).status, 200);
  t.equal(logs.find('request').length, 0);
});
