// The rest of the event catalogue over real HTTP: sms.inbound from an injected MO, otp.requested/verified, the
// auto-disable of an endpoint that keeps failing, and the SSRF guard's address rules and pinning.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { TargetGuard } from '../../../src/channels/webhooks/target-guard.js';
import { WebhookHttp } from '../../../src/channels/webhooks/webhook-http.js';
import { accountWithKey, call, startDaemon, simulatorOf } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { waitFor } from '../../helpers/wait.js';

t.test(`webhook events and endpoint health (${backendLabel})`, async (t) => {
  const d = await startDaemon({
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_WEBHOOKS_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms',
    FERRY_WEBHOOKS_TIMEOUT_MS: '500',
    FERRY_WEBHOOKS_DISABLE_AFTER_HOURS: '0.0003', // about a second
    FERRY_SMPP_SIMULATOR_RECEIPT_DELAY_MS: '20',
  });
  t.teardown(() => d.stop());
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  const { account, token } = await accountWithKey(d, 'events');
  const wh = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url: rx.url, events: ['sms.inbound', 'otp.requested', 'otp.verified'] } });
  t.equal(wh.status, 200);

  t.test('sms.inbound for an MO to an owned number', async (t) => {
    await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: '233200000077' });
    await simulatorOf(d.daemon)!.simulator.injectMo({ source: '233241234567', destination: '233200000077', text: 'HELLO' });
    await waitFor(() => rx.received.some((r) => r.json?.type === 'sms.inbound'), 10_000, 'sms.inbound');
    const ev = rx.received.find((r) => r.json?.type === 'sms.inbound')!.json;
    t.equal(ev.accountId, account.id);
    t.match(ev.data, { from: '233241234567', to: '233200000077', text: 'HELLO' });
    t.match(ev.data.messageId, /^mo_/);
  });

  t.test('otp.requested and otp.verified, never with the code', async (t) => {
    const req = await call(d.api, 'POST', '/v1/otp/request', { token, body: { phone: '+233241230001', from: 'Ferry', message: 'Code {code}' } });
    t.equal(req.status, 200, req.text);
    const id = req.json.data.id as string;
    const sms = await (async () => {
      const sim = simulatorOf(d.daemon)!.simulator;
      await waitFor(() => sim.received().some((m) => m.destinations[0] === '233241230001'), 10_000, 'the OTP SMS');
      return sim.received().find((m) => m.destinations[0] === '233241230001')!.text;
    })();
    const code = /Code (\w+)/.exec(sms)![1];
    const ver = await call(d.api, 'POST', '/v1/otp/verify', { token, body: { id, pin: code } });
    t.equal(ver.json.data.verified, true);
    await waitFor(() => rx.received.some((r) => r.json?.type === 'otp.verified'), 10_000, 'otp.verified');
    const types = rx.received.filter((r) => r.json?.data?.id === id || r.json?.data?.otpId === id).map((r) => r.json.type);
    t.same(types, ['otp.requested', 'otp.verified']);
    for (const r of rx.received) t.notOk(r.body.includes(code), 'the code is never in an event');
  });

  t.test('an endpoint failing continuously is disabled, and says why', async (t) => {
    const bad = await WebhookReceiver.start();
    t.teardown(() => bad.close());
    bad.respond = () => 500;
    const ep = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url: bad.url, events: ['*'] } });
    const epId = ep.json.data.id as string;
    for (let i = 0; i < 3; i++) await call(d.api, 'POST', `/v1/webhooks/${epId}/test`, { token });
    let got: any;
    const end = Date.now() + 15_000;
    while (Date.now() < end) {
      got = (await call(d.api, 'GET', `/v1/webhooks/${epId}`, { token })).json.data;
      if (!got.enabled) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.equal(got.enabled, false, 'disabled after failing past disableAfterHours');
    t.match(got.disabledReason, /\S/, `the owner sees why: ${got.disabledReason}`);
    const resumed = await call(d.api, 'PATCH', `/v1/webhooks/${epId}`, { token, body: { enabled: true } });
    t.equal(resumed.json.data.enabled, true);
    t.equal(resumed.json.data.disabledReason, null, 'cleared on resume');
  });
});

t.test('SSRF guard: only public https targets unless private ones are allowed', async (t) => {
  const guard = new TargetGuard(false, async (host) => {
    if (host === 'public.example') return [{ address: '93.184.216.34', family: 4 }];
    if (host === 'sneaky.example') return [{ address: '93.184.216.34', family: 4 }, { address: '10.1.2.3', family: 4 }];
    throw new Error('ENOTFOUND');
  });
  t.equal((await guard.check('https://public.example/hook')).ok, true);
  for (const url of [
    'http://public.example/hook',
    'https://127.0.0.1/hook',
    'https://10.0.0.1/hook',
    'https://192.168.1.1/hook',
    'https://169.254.169.254/latest',
    'https://[::1]/hook',
    'https://[fd00::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://sneaky.example/hook',
    'https://nowhere.example/hook',
    'https://user:pw@public.example/hook',
    'ftp://public.example/hook',
    'not a url',
  ]) {
    const r = await guard.check(url);
    t.equal(r.ok, false, `${url} refused${r.ok ? '' : `: ${r.reason}`}`);
  }
  const open = new TargetGuard(true, async () => [{ address: '127.0.0.1', family: 4 }]);
  t.equal((await open.check('http://127.0.0.1:8080/hook')).ok, true, 'allowed when the operator says so');
});

t.test('SSRF guard: a name is resolved at most once per cache period, and refused once it points inside', async (t) => {
  let calls = 0;
  let answer = '93.184.216.34';
  const lookup = async () => {
    calls++;
    return [{ address: answer, family: 4 }];
  };
  let now = 1_000_000;
  const guard = new TargetGuard(false, lookup, 5000, () => now);
  for (let i = 0; i < 3; i++) {
    const r = await guard.check('https://hooks.example/hook');
    t.ok(r.ok && r.pinned?.address === '93.184.216.34', 'allowed, pinned to the address checked');
  }
  t.equal(calls, 1, 'one lookup for three checks within the cache period');
  answer = '10.9.8.7';
  now += 4999;
  t.equal((await guard.check('https://hooks.example/hook')).ok, true, 'the cached answer still holds');
  now += 1;
  const later = await guard.check('https://hooks.example/hook');
  t.equal(later.ok, false, 'resolved again after the cache period: now private, refused');
  t.equal(calls, 2);
});

t.test('a webhook POST connects to the address the guard checked, not to a fresh lookup of the name', async (t) => {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  // .invalid never resolves (RFC 6761): only the guard's own lookup can lead the POST to the server.
  const guard = new TargetGuard(true, async (host) => {
    if (host === 'pinned.invalid') return [{ address: '127.0.0.1', family: 4 }];
    throw new Error('ENOTFOUND');
  });
  const client = new WebhookHttp(guard);
  t.teardown(() => client.close());
  t.equal(await client.post(new URL(`http://pinned.invalid:${port}/hook`), {}, '{}', 2000), 204, 'delivered to the address the guard resolved');
  await t.rejects(client.post(new URL(`http://other.invalid:${port}/hook`), {}, '{}', 2000), /does not resolve/, 'no lookup of its own');
});
