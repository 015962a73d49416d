// The password page in a real browser (Debian chromium through playwright-core, with a normal user agent: headless
// Chrome names itself and would count as a bot), plus its CSRF and rate-limit refusals over plain HTTP.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { humanContext, launchBrowser, screenshotPath } from '../../helpers/browser.js';
import { backendLabel } from '../../helpers/env.js';
import { shortlinkDaemon } from './helpers.js';

t.test(`short link password page (${backendLabel})`, async (t) => {
  const s = await shortlinkDaemon({ FERRY_SHORTLINK_PASSWORD_ATTEMPTS_PER_MINUTE: '5' });
  t.teardown(() => s.d.stop());
  // The destination: a local page.
  const dest = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Landing</title><h1>You made it</h1>'));
  await new Promise<void>((r) => dest.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => dest.close(r)));
  const destUrl = `http://127.0.0.1:${(dest.address() as AddressInfo).port}/landing`;

  t.test('in chromium: a wrong password shows the error, the right one lands on the page, one human click', async (t) => {
    const browser = await launchBrowser({ skip: (m) => void t.comment(`SKIP ${m}`), teardown: (fn) => t.teardown(fn) });
    if (!browser) return;
    const l = (await s.api('POST', '/v1/shortlink/links', { url: destUrl, title: 'Quarterly report', password: 'open sesame' })).json.data;
    const ctx = await humanContext(browser);
    const page = await ctx.newPage();
    const first = await page.goto(l.shortUrl);
    t.equal(first?.status(), 401);
    t.equal(await page.locator('h1').textContent(), 'Quarterly report');
    t.equal(await page.locator('script').count(), 0, 'no JavaScript on the page');
    await page.screenshot({ path: screenshotPath('shortlink-password'), fullPage: true });

    await page.fill('input[name=password]', 'open says me');
    await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')]);
    t.equal(await page.locator('.error').textContent(), 'Wrong password.');
    await s.flush();
    t.equal((await s.api('GET', `/v1/shortlink/links/${l.id}/clicks`)).json.data.clicks.length, 0, 'a wrong password counts no click');

    await page.fill('input[name=password]', 'open sesame');
    await Promise.all([page.waitForURL(destUrl), page.click('button[type=submit]')]);
    t.equal(await page.locator('h1').textContent(), 'You made it');
    await s.flush();
    const a = (await s.api('GET', `/v1/shortlink/links/${l.id}/analytics?groupBy=device`)).json.data;
    t.equal(a.total, 1, 'exactly one human click');
    t.same(a.groups, [{ key: 'desktop', clicks: 1 }]);
    const clicks = (await s.api('GET', `/v1/shortlink/links/${l.id}/clicks`)).json.data.clicks;
    t.equal(clicks.length, 1);
    t.match(clicks[0], { method: 'GET', bot: false, outcome: 'redirected', browser: 'Chrome' });

    // The cookie is the slug's: another protected link still asks.
    const other = (await s.api('POST', '/v1/shortlink/links', { url: destUrl, password: 'open sesame' })).json.data;
    t.equal((await page.goto(other.shortUrl))?.status(), 401);
    await ctx.close();
  });

  t.test('over HTTP: no CSRF token, no entry; tries are rate-limited per client and slug', async (t) => {
    const l = (await s.api('POST', '/v1/shortlink/links', { url: destUrl, password: 'pw-1234' })).json.data;
    const form = (body: Record<string, string>, cookie?: string) =>
      fetch(l.shortUrl, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) }, body: new URLSearchParams(body).toString() });
    const noToken = await form({ password: 'pw-1234' });
    t.equal(noToken.status, 403, 'a form without the CSRF token is refused, even with the right password');
    t.notOk(noToken.headers.get('set-cookie')?.includes('slpw_'));

    const page = await fetch(l.shortUrl, { redirect: 'manual' });
    const csrfCookie = page.headers.get('set-cookie')!.split(';')[0];
    const token = /name="csrf" value="([^"]+)"/.exec(await page.text())![1];
    t.equal((await form({ password: 'pw-1234', csrf: 'x' + token.slice(1) }, csrfCookie)).status, 403, 'a forged token is refused');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await form({ password: 'wrong', csrf: token }, csrfCookie)).status);
    t.same(statuses, [401, 401, 401, 401, 401, 429]);
    const limited = await form({ password: 'pw-1234', csrf: token }, csrfCookie);
    t.equal(limited.status, 429, 'the right password waits out the window too');
    t.ok(Number(limited.headers.get('retry-after')) >= 1);

    const l2 = (await s.api('POST', '/v1/shortlink/links', { url: destUrl, password: 'pw-1234' })).json.data;
    const p2 = await fetch(l2.shortUrl, { redirect: 'manual' });
    const c2 = p2.headers.get('set-cookie')!.split(';')[0];
    const t2 = /name="csrf" value="([^"]+)"/.exec(await p2.text())![1];
    const ok = await fetch(l2.shortUrl, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: c2 }, body: `password=pw-1234&csrf=${encodeURIComponent(t2)}` });
    t.equal(ok.status, 303, 'another slug has its own budget');
    const pw = ok.headers.get('set-cookie')!;
    t.match(pw, new RegExp(`slpw_${l2.slug}=`));
    t.match(pw, new RegExp(`Path=/${l2.slug}`));
    t.match(pw, /HttpOnly/);
    const through = await fetch(l2.shortUrl, { redirect: 'manual', headers: { cookie: pw.split(';')[0] } });
    t.equal(through.status, 302);
    t.equal(through.headers.get('location'), destUrl);
    t.equal(through.headers.get('cache-control'), 'private, max-age=0');
    // Changing the password signs every old cookie out.
    await s.api('PATCH', `/v1/shortlink/links/${l2.id}`, { password: 'new-pass' });
    t.equal((await fetch(l2.shortUrl, { redirect: 'manual', headers: { cookie: pw.split(';')[0] } })).status, 401);
  });
});
