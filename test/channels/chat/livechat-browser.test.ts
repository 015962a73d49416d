// The live chat widget and the agent inbox in a real browser (Debian's chromium through playwright-core): a host page on
// another origin (a loopback server of this test) embeds /chat-widget.js; a visitor opens it with the keyboard, fills
// the pre-chat form and writes; the agent, signed in to /inbox in a second browser context, sees the conversation with
// the visitor's details, types (the visitor sees it) and replies; the visitor sees the reply live and the agent sees it
// read; assignment and status change from the page. No console error on either page; screenshots are kept.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { ConsoleMessage, Page } from 'playwright-core';
import { humanContext, launchBrowser, screenshotPath } from '../../helpers/browser.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

t.setTimeout(240_000);

// The pages' globals for the functions playwright runs there (the tests compile without the DOM library).
declare const document: {
  activeElement: { tagName: string } | null;
  querySelector(s: string): { shadowRoot: { activeElement: { className: string; getAttribute(n: string): string | null } | null } | null } | null;
};
/** The element focused inside the widget's shadow root: its name attribute or its class. */
const widgetFocus = (page: Page) =>
  page.evaluate(() => {
    const el = document.querySelector('[data-ferry-chat]')?.shadowRoot?.activeElement;
    return el ? (el.getAttribute('name') ?? el.className) : '';
  });

/** Every console error and uncaught error of a page, from its first load on. */
function consoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error') errors.push(`${m.text()} ${m.location().url}`);
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

t.test(`the live chat widget and the agent inbox in a real browser (${backendLabel})`, async (t) => {
  const browser = await launchBrowser({ skip: (m) => void t.skip(m, () => {}), teardown: (fn) => t.teardown(fn) });
  if (!browser) return;
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const { token: key } = await accountWithKey(d, 'livechat-browser', 'chat:manage');
  const created = await call(d.api, 'POST', '/v1/chat-sdk/inboxes', {
    token: key,
    body: { name: 'Acme support', greeting: 'Hi! Ask us anything.', preChatForm: { name: { required: true }, email: { required: false } } },
  });
  t.equal(created.status, 201, created.text);
  const inbox = created.json.data;

  // The customer's site: another origin than Ferry's.
  const hostHtml = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme shop</title></head>
<body><h1>Acme shop</h1><p><a href="#pricing">Pricing</a></p>
<script src="${d.api}/chat-widget.js" data-widget-key="${inbox.widgetKey}" async></script></body></html>`;
  const site: Server = createServer((req, res) => {
    if (req.url === '/favicon.ico') return void res.writeHead(204).end();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(hostHtml);
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => site.close(() => r())));
  const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;

  // The visitor opens the widget with the keyboard and fills the pre-chat form.
  const visitorContext = await humanContext(browser);
  const visitor = await visitorContext.newPage();
  const visitorErrors = consoleErrors(visitor);
  await visitor.goto(siteUrl);
  const launcher = visitor.getByRole('button', { name: 'Open chat with Acme support' });
  await launcher.waitFor({ timeout: 15_000 });
  await launcher.focus();
  await visitor.keyboard.press('Enter');
  const panel = visitor.getByRole('dialog', { name: 'Acme support' });
  await panel.waitFor();
  t.equal(await visitor.getByRole('button', { name: 'Close chat with Acme support' }).getAttribute('aria-expanded'), 'true', 'the launcher says the panel is open');
  t.equal(await panel.locator('.greeting').textContent(), 'Hi! Ask us anything.', 'the greeting');
  const name = visitor.getByLabel('Name (required)');
  await name.waitFor();
  t.equal(await widgetFocus(visitor), 'name', 'the first form field has the focus');
  await name.fill('Ama Mensah');
  await visitor.keyboard.press('Enter');
  const message = visitor.getByLabel('Message');
  await message.waitFor();
  await message.fill('Do you deliver to Kumasi?');
  await visitor.keyboard.press('Enter');
  await panel.locator('li.msg.me[data-seq="1"]').waitFor({ timeout: 15_000 });
  t.equal(await panel.locator('li.msg.me[data-seq="1"] .text').textContent(), 'Do you deliver to Kumasi?', 'the visitor sees their message, stored (seq 1)');

  // The agent signs in to /inbox in another context and finds the conversation.
  const agentContext = await humanContext(browser);
  const agent = await agentContext.newPage();
  const agentErrors = consoleErrors(agent);
  await agent.goto(`${d.api}/inbox`);
  await agent.locator('#signin-form').waitFor();
  await agent.waitForLoadState('networkidle');
  t.same(agentErrors, [], 'a fresh visit to /inbox logs no console error');
  await agent.getByLabel('API key').fill(key);
  await agent.getByLabel(/Your name/).fill('Kojo');
  await agent.getByRole('button', { name: 'Sign in' }).click();
  await agent.locator('#inbox').waitFor();
  t.equal(await agent.inputValue('#credential'), '', 'the key field is emptied once used');
  const item = agent.locator('#conversations li button', { hasText: 'Ama Mensah' });
  await item.waitFor({ timeout: 20_000 });
  t.match(await item.textContent(), /Do you deliver to Kumasi\?/, 'the list shows the last message');
  await item.click();
  await agent.locator('#c-messages li[data-seq="1"]').waitFor();
  t.equal(await agent.locator('#c-title').textContent(), 'Ama Mensah');
  t.match(await agent.locator('#c-visitor').textContent(), /anonymous/, "the visitor's details");
  t.match(await agent.locator('#c-visitor').textContent(), /Acme support/, 'the inbox by its name');
  t.match(await agent.locator('#c-visitor').textContent(), new RegExp(siteUrl.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')), 'the page the visitor is on');
  t.equal(await agent.locator('#live').textContent(), 'Live', "the agent's socket is connected");

  // The agent types: the visitor sees it. Then the reply reaches the visitor live.
  await agent.getByLabel('Reply').focus();
  await agent.keyboard.type('Yes');
  await panel.locator('.typing', { hasText: 'typing' }).waitFor({ timeout: 15_000 });
  t.pass('the visitor sees the agent typing');
  await agent.keyboard.type(', every weekday.');
  await agent.keyboard.press('Enter');
  const reply = panel.locator('li.msg.them[data-seq="2"]');
  await reply.waitFor({ timeout: 15_000 });
  t.equal(await reply.locator('.text').textContent(), 'Yes, every weekday.', 'the visitor got the reply live');
  t.equal(await reply.locator('.who').textContent(), 'Kojo', "with the agent's name");
  // The visitor's panel is open: the reply is read, and the agent sees so.
  await agent.locator('#c-messages li.agent[data-seq="2"] .seen').waitFor({ timeout: 15_000 });
  t.pass('the agent sees the visitor read the reply');
  await agent.locator('#c-messages li.agent[data-seq="2"]').waitFor();
  await visitor.screenshot({ path: screenshotPath('livechat-widget') });
  await agent.screenshot({ path: screenshotPath('livechat-inbox') });

  // Assignment and status from the page.
  await agent.locator('#c-assignee').selectOption({ label: 'me (Kojo)' });
  await agent.locator('#live', { hasText: 'Saved' }).waitFor();
  await agent.locator('#c-status').selectOption('resolved');
  const state = async () => {
    const r = await call(d.api, 'GET', `/v1/chat-sdk/inboxes/${inbox.id}/conversations?status=resolved`, { token: key });
    return r.json.data.conversations as Array<{ assignee: string | null; status: string }>;
  };
  const until = Date.now() + 15_000;
  let resolved = await state();
  while (!resolved.length && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    resolved = await state();
  }
  t.match(resolved, [{ status: 'resolved', assignee: /^agent:/ }], 'assigned to the agent and resolved');

  // Keyboard: Escape closes the panel and gives the focus back to the launcher.
  await message.focus();
  await visitor.keyboard.press('Escape');
  await panel.waitFor({ state: 'hidden' });
  t.equal(await widgetFocus(visitor), 'launcher', 'the focus is back on the launcher');
  t.equal(await visitor.getByRole('button', { name: 'Open chat with Acme support' }).getAttribute('aria-expanded'), 'false');

  // A reload: the visitor is the same and their conversation comes back.
  await visitor.reload();
  await visitor.getByRole('button', { name: 'Open chat with Acme support' }).click();
  await panel.locator('li.msg[data-seq="2"]').waitFor({ timeout: 15_000 });
  t.equal(await panel.locator('li.msg').count(), 2, 'the conversation after a reload');
  await visitor.waitForLoadState('networkidle');

  t.same(visitorErrors, [], 'no console error on the host page');
  t.same(agentErrors, [], 'no console error on /inbox');
  await visitorContext.close();
  await agentContext.close();
});
