// Password tries on a short link: the per-link budget (every client address together) besides the per-address one,
// and the bound on scrypt checks (the threadpool fs and dns share).
import t from 'tap';
import { PasswordChecks } from '../../../src/channels/shortlink/password-checks.js';
import { backendLabel } from '../../helpers/env.js';
import { shortlinkDaemon } from './helpers.js';

t.test(`the link's budget holds across client addresses (${backendLabel})`, async (t) => {
  // The test's own address is the trusted proxy, so X-Forwarded-For names a different client per try.
  const s = await shortlinkDaemon({
    FERRY_SHORTLINK_TRUSTED_PROXIES: '127.0.0.1',
    FERRY_SHORTLINK_PASSWORD_ATTEMPTS_PER_MINUTE: '2',
    FERRY_SHORTLINK_PASSWORD_ATTEMPTS_PER_LINK_PER_MINUTE: '4',
  });
  t.teardown(() => s.d.stop());
  const link = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/secret', password: 'pw-1234' })).json.data;
  const other = (await s.api('POST', '/v1/shortlink/links', { url: 'https://example.com/secret', password: 'pw-1234' })).json.data;
  const tryFrom = async (l: { shortUrl: string }, client: string, password: string) => {
    const page = await fetch(l.shortUrl, { redirect: 'manual', headers: { 'x-forwarded-for': client } });
    const cookie = page.headers.get('set-cookie')!.split(';')[0];
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1];
    const res = await fetch(l.shortUrl, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-forwarded-for': client },
      body: new URLSearchParams({ password, csrf }).toString(),
    });
    await res.text();
    return res.status;
  };
  const statuses: number[] = [];
  // One wrong try from each of five addresses: none reaches its own budget of 2.
  for (let i = 1; i <= 5; i++) statuses.push(await tryFrom(link, `198.51.100.${i}`, 'wrong'));
  t.same(statuses, [401, 401, 401, 401, 429], 'the fifth address finds the link budget spent');
  t.equal(await tryFrom(link, '198.51.100.9', 'pw-1234'), 429, 'the right password waits out the window too');
  t.equal(await tryFrom(other, '198.51.100.9', 'pw-1234'), 303, 'another link has its own budget');
});

t.test('password checks: at most N at once, a bounded queue, refusal beyond it', async (t) => {
  const checks = new PasswordChecks(2, 1);
  const gates: Array<() => void> = [];
  let peak = 0;
  let running = 0;
  const slow = () =>
    checks.run(async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      return true;
    });
  const a = slow();
  const b = slow();
  const c = slow();
  t.equal(await slow(), null, 'the fourth finds two running and one waiting: refused at once');
  t.same(checks.load, { running: 2, waiting: 1 });
  // Release one at a time until all three have run (bounded: three gates).
  for (let i = 0; i < 3; i++) {
    for (let spins = 0; gates.length === 0 && spins < 1000; spins++) await new Promise((r) => setImmediate(r));
    gates.shift()!();
  }
  t.same(await Promise.all([a, b, c]), [true, true, true]);
  t.equal(peak, 2, 'never more than two at once');
  t.same(checks.load, { running: 0, waiting: 0 });
  t.equal(await checks.run(async () => 'free'), 'free', 'a slot is free again');
});
