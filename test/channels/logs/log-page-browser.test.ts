import t from 'tap';
import type { LogsService } from '../../../src/channels/logs/logs-service.js';
import { humanContext, launchBrowser, screenshotPath } from '../../helpers/browser.js';
import { call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

// The page's globals, for the functions playwright runs in the browser (the tests compile without the DOM library;
// functions, not strings: the page's CSP forbids eval).
interface PageRow {
  dataset: { requestId?: string };
}
interface Box {
  top: number;
  bottom: number;
}
declare const document: {
  querySelectorAll(s: string): ArrayLike<PageRow>;
  querySelector(s: string): { textContent: string | null; getBoundingClientRect(): Box } | null;
  cookie: string;
  scrollingElement: { scrollWidth: number; scrollTop: number };
};
declare const window: { innerWidth: number; innerHeight: number };
declare const localStorage: Record<string, string>;
declare const sessionStorage: Record<string, string>;

t.test(`the /logs page in a real browser (${backendLabel})`, async (t) => {
  const browser = await launchBrowser({ skip: (m) => void t.skip(m, () => {}), teardown: (fn) => t.teardown(fn) });
  if (!browser) return;
  const d = await startDaemon({ FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => d.stop());
  await d.adminCall('POST', '/admin/accounts', { name: 'acme', defaultCountry: 'GH' });
  await d.adminCall('POST', '/admin/accounts/acme/credit', { amount: 10 });
  const key = await d.adminCall('POST', '/admin/keys', { account: 'acme', scopes: 'all' });
  const token = key.token as string;
  const secret = Buffer.from(token, 'base64').toString().split(':')[1];
  const logs = d.daemon.modules.service<LogsService>('logs');

  // Three calls, one of them a 4xx.
  const balance = await call(d.api, 'GET', '/v1/account/balance', { token });
  const sent = await call(d.api, 'POST', '/v1/sms/send', { token, body: { to: '0241234567', from: 'Ferry', message: 'hello' } });
  const missing = await call(d.api, 'GET', '/v1/sms/status/msg_missing', { token });
  t.equal(missing.status, 404);
  const ids = [balance.json.requestId, sent.json.requestId, missing.json.requestId] as string[];
  const until = Date.now() + 10_000;
  while ((await logs.search(key.accountId, {}, 10)).items.length < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));

  const context = await humanContext(browser);
  const page = await context.newPage();
  t.equal(page.viewportSize()?.width, 1280, 'a 1280 px wide window');
  // Every console error and uncaught page error, from the first visit on.
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${m.text()} ${m.location().url}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  const authorizations: string[] = [];
  page.on('request', (r) => {
    const a = r.headers().authorization;
    if (a) authorizations.push(`${r.method()} ${new URL(r.url()).pathname}`);
  });
  await page.goto(`${d.api}/logs`);
  await page.locator('#signin-form').waitFor();
  await page.waitForLoadState('networkidle');
  t.same(consoleErrors, [], 'a fresh visit logs no console error (the session check is no failed request)');
  await page.fill('#credential', token);
  await page.click('#signin-form button[type=submit]');
  await page.locator('#logs').waitFor();
  t.equal(await page.inputValue('#credential'), '', 'the key field is emptied once used');

  const shownIds = () => page.evaluate(() => Array.from(document.querySelectorAll('#rows tbody tr')).map((tr) => tr.dataset.requestId ?? ''));
  const rowCount = (atLeast: number, exactly = false) =>
    page.waitForFunction(([n, exact]) => (exact ? document.querySelectorAll('#rows tbody tr').length === n : document.querySelectorAll('#rows tbody tr').length >= n), [atLeast, exactly] as const);
  await rowCount(3);
  t.same((await shownIds()).slice(0, 3).sort(), [...ids].sort(), 'the three calls are listed');

  // Filtering by status class shows only the 4xx.
  await page.selectOption('#f-status', '4xx');
  await page.click('#apply');
  await rowCount(1, true);
  t.same(await shownIds(), [missing.json.requestId], 'only the 4xx');
  t.equal(await page.textContent('#rows tbody tr td:nth-child(4)'), '404');

  // A request id search finds one.
  await page.selectOption('#f-status', '');
  await page.fill('#f-request', sent.json.requestId);
  await page.click('#apply');
  await page.waitForFunction((id) => Array.from(document.querySelectorAll('#rows tbody tr')).map((tr) => tr.dataset.requestId).join() === id, sent.json.requestId as string);
  t.same(await shownIds(), [sent.json.requestId]);

  // The detail view of that request: its bodies, redacted.
  await page.click('#rows tbody tr');
  await page.locator('#detail').waitFor();
  t.equal(await page.textContent('#detail-id'), sent.json.requestId);
  t.match(await page.textContent('#detail-request'), '"message": "[redacted]"');
  t.match(await page.textContent('#detail-response'), sent.json.data.messageId);

  // The live tail shows a new call.
  await page.fill('#f-request', '');
  await page.click('#apply');
  await rowCount(3);
  await page.check('#tail');
  await page.waitForFunction(() => document.querySelector('#status-line')?.textContent === 'Live tail on');
  await new Promise((r) => setTimeout(r, 300)); // the stream is open before the call is made
  const fresh = await call(d.api, 'GET', '/v1/account/balance', { token, headers: { 'user-agent': 'tail-check' } });
  await page.locator(`#rows tbody tr[data-request-id="${fresh.json.requestId}"]`).waitFor({ timeout: 15_000 });
  t.equal((await shownIds())[0], fresh.json.requestId, 'the new call is on top');

  // No Authorization value anywhere in the page, its storage or its cookies (the session cookie is HttpOnly).
  const html = await page.content();
  for (const v of [token, secret]) t.notOk(html.includes(v), 'not in the DOM');
  const storage = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie }));
  t.same(JSON.parse(storage), { local: {}, session: {}, cookie: '' });
  const cookies = await context.cookies();
  t.ok(cookies.every((c) => !c.value.includes(token) && !c.value.includes(secret)));
  t.ok(cookies.find((c) => c.name === 'ferry_logs_session')?.httpOnly, 'the session cookie is HttpOnly');
  t.same(authorizations, ['POST /logs/session'], 'the key left the page once, to sign in');

  // A long page of requests, one with a long path and user agent: the table fits the window, and a row's detail, below
  // the rows, is scrolled into view when the row is clicked.
  await page.uncheck('#tail');
  const longPath = `/v1/sms/status/msg_${'x'.repeat(180)}`;
  for (let i = 0; i < 55; i++) await call(d.api, 'GET', '/v1/account/balance', { token });
  const long = await call(d.api, 'GET', longPath, { token, headers: { 'user-agent': `agent/${'y'.repeat(300)}` } });
  const until2 = Date.now() + 15_000;
  while ((await logs.search(key.accountId, {}, 60)).items.length < 60 && Date.now() < until2) await new Promise((r) => setTimeout(r, 20));
  await page.click('#apply');
  await rowCount(50);
  await page.locator(`#rows tbody tr[data-request-id="${long.json.requestId}"]`).waitFor();
  const overflow = await page.evaluate(() => ({ scrollWidth: document.scrollingElement.scrollWidth, innerWidth: window.innerWidth }));
  t.ok(overflow.scrollWidth <= overflow.innerWidth, `no horizontal overflow (${overflow.scrollWidth} <= ${overflow.innerWidth})`);
  await page.evaluate(() => void (document.scrollingElement.scrollTop = 0));
  await page.click(`#rows tbody tr[data-request-id="${long.json.requestId}"]`);
  await page.waitForFunction((id) => document.querySelector('#detail-id')?.textContent === id, long.json.requestId as string);
  // Scrolling is instant (no smooth behaviour in the page's style): the detail's top is in the window at once.
  const seen = await page.evaluate(() => ({ box: document.querySelector('#detail')!.getBoundingClientRect(), height: window.innerHeight }));
  t.ok(seen.box.top >= 0 && seen.box.top < seen.height, `the detail is in view after the click (top ${Math.round(seen.box.top)} of ${seen.height})`);
  const overflowDetail = await page.evaluate(() => document.scrollingElement.scrollWidth <= window.innerWidth);
  t.ok(overflowDetail, 'the detail with its long path and user agent fits the window too');
  await page.screenshot({ path: screenshotPath('logs-page'), fullPage: false });
  await page.screenshot({ path: screenshotPath('logs-page-full'), fullPage: true });
  t.same(consoleErrors, [], 'no console error while signed in');

  // Sign-out (a CSRF-checked POST) ends the session.
  await page.click('#logout');
  await page.locator('#signin').waitFor();
  await page.reload();
  await page.locator('#signin-form').waitFor();
  t.ok(await page.isVisible('#signin'), 'after sign-out a reload asks to sign in again');
  await page.waitForLoadState('networkidle');
  t.same(consoleErrors, [], 'nor after signing out and coming back');
  await context.close();
});
