// Live chat over HTTP against a whole daemon, on both backends: inboxes (server API) with their public widget key and
// derived identity secret; the widget's sessions (anonymous, identified by HMAC, a bad or rotated HMAC refused,
// requireIdentity enforced), the pre-chat form, business hours with both offline modes, the per-visitor limit and CORS;
// the /inbox page's sign-in (HttpOnly cookie, CSRF refused without its token), the conversation lists, joining,
// replying, assignment and status; and a visitor's socket getting an agent's reply live.
import { createHmac } from 'node:crypto';
import t, { type Test } from 'tap';
import { io, type Socket } from 'socket.io-client';
import { isOpen } from '../../../src/channels/chat/livechat/business-hours.js';
import { accountWithKey, call, startDaemon, type CallResult } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

t.setTimeout(240_000);

const sign = (secret: string, userId: string) => createHmac('sha256', secret).update(userId).digest('hex');
const ALWAYS_CLOSED = { timezone: 'UTC', days: {} };
const ALWAYS_OPEN = { timezone: 'Africa/Accra', days: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, [['00:00', '24:00']]])) };

t.test('business hours in the inbox time zone', async (t) => {
  const hours = { timezone: 'America/New_York', days: { mon: [['09:00', '17:00']] as Array<[string, string]>, tue: [['09:00', '12:00'], ['13:00', '17:00']] as Array<[string, string]> } };
  // Monday 2025-03-03 14:30 UTC is 09:30 in New York (EST, UTC-5).
  t.ok(isOpen(hours, new Date('2025-03-03T14:30:00Z')), 'Monday 09:30 local: open');
  t.notOk(isOpen(hours, new Date('2025-03-03T13:30:00Z')), 'Monday 08:30 local: closed');
  t.notOk(isOpen(hours, new Date('2025-03-03T22:00:00Z')), 'Monday 17:00 local: closed (a range ends before its to)');
  t.notOk(isOpen(hours, new Date('2025-03-04T17:30:00Z')), 'Tuesday 12:30 local: the lunch gap');
  t.ok(isOpen(hours, new Date('2025-03-04T18:30:00Z')), 'Tuesday 13:30 local: open again');
  t.notOk(isOpen(hours, new Date('2025-03-05T15:00:00Z')), 'Wednesday: not listed, closed');
  // Summer time: 2025-07-07 13:30 UTC is 09:30 in New York (EDT, UTC-4).
  t.ok(isOpen(hours, new Date('2025-07-07T13:30:00Z')), 'daylight saving time follows the zone');
  t.ok(isOpen(null, new Date()), 'no hours: always open');
});

t.test(`live chat widget and inbox over HTTP (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const a = await accountWithKey(d, 'livechat-a', 'chat:manage');
  const b = await accountWithKey(d, 'livechat-b', 'chat:manage');
  const noChat = await accountWithKey(d, 'livechat-c', 'sms:send');
  const asKey = (token: string) => (method: string, path: string, body?: unknown) => call(d.api, method, path, { token, body });
  const apiA = asKey(a.token);
  const apiB = asKey(b.token);
  const widget = (method: string, path: string, body?: unknown, token?: string, headers: Record<string, string> = {}) =>
    call(d.api, method, `/v1/chat-sdk/widget${path}`, { body, headers: { 'user-agent': 'LivechatTest/1.0', ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  const expectError = (t: Test, r: CallResult, status: number, code: string, what: string) => {
    t.equal(r.status, status, `${what}: ${status}`);
    t.equal(r.json?.code, code, `${what}: ${code}`);
  };

  // Inboxes
  const created = await apiA('POST', '/v1/chat-sdk/inboxes', { name: 'Acme support', greeting: 'Hi! How can we help?', preChatForm: { email: { required: false } } });
  t.equal(created.status, 201, created.text);
  t.equal(created.json.code, 'CHAT_INBOX_CREATED');
  const inbox = created.json.data;
  t.match(inbox, { id: /^inb_/, widgetKey: /^wk_[A-Za-z0-9_-]{20,}$/, identitySecret: /^lcis_[A-Za-z0-9_-]{40,}$/, requireIdentity: false, offlineMode: 'form', businessHours: null });
  const secret = inbox.identitySecret as string;

  t.test('inbox CRUD, another account and a key without chat:manage', async (t) => {
    const list = await apiA('GET', '/v1/chat-sdk/inboxes');
    t.equal(list.status, 200);
    t.same(
      list.json.data.inboxes.map((i: { id: string }) => i.id),
      [inbox.id],
    );
    t.notOk('identitySecret' in list.json.data.inboxes[0], 'the list does not show the identity secret');
    const one = await apiA('GET', `/v1/chat-sdk/inboxes/${inbox.id}`);
    t.equal(one.json.data.widgetKey, inbox.widgetKey, 'the widget key is shown (it is public)');
    t.notOk('identitySecret' in one.json.data);
    expectError(t, await apiB('GET', `/v1/chat-sdk/inboxes/${inbox.id}`), 404, 'CHAT_INBOX_NOT_FOUND', "another account's inbox");
    expectError(t, await apiB('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}`, { name: 'x' }), 404, 'CHAT_INBOX_NOT_FOUND', "changing another account's inbox");
    expectError(t, await asKey(noChat.token)('GET', '/v1/chat-sdk/inboxes'), 403, 'INSUFFICIENT_SCOPE', 'a key without chat:manage');
    const bad = await apiA('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}`, { businessHours: { timezone: 'Mars/Olympus', days: {} } });
    expectError(t, bad, 400, 'VALIDATION_ERROR', 'an unknown time zone');
    t.equal(bad.json.data.errors[0].field, 'businessHours.timezone');
    expectError(t, await apiA('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}`, { businessHours: { timezone: 'UTC', days: { mon: [['17:00', '09:00']] } } }), 400, 'VALIDATION_ERROR', 'a range that ends before it starts');
    expectError(t, await apiA('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}`, { offlineMode: 'maybe' }), 400, 'VALIDATION_ERROR', 'an unknown offline mode');
    const renamed = await apiA('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}`, { name: 'Acme help', greeting: 'Hello!' });
    t.equal(renamed.status, 200, renamed.text);
    t.match(renamed.json.data, { name: 'Acme help', greeting: 'Hello!', widgetKey: inbox.widgetKey });
    const temp = (await apiA('POST', '/v1/chat-sdk/inboxes', { name: 'Temporary' })).json.data;
    const del = await apiA('DELETE', `/v1/chat-sdk/inboxes/${temp.id}`);
    t.same(del.json.data, { id: temp.id, deleted: true });
    expectError(t, await apiA('GET', `/v1/chat-sdk/inboxes/${temp.id}`), 404, 'CHAT_INBOX_NOT_FOUND', 'a deleted inbox');
    expectError(t, await widget('POST', '/session', { widgetKey: temp.widgetKey }), 404, 'CHAT_WIDGET_KEY_UNKNOWN', "a deleted inbox's widget");
  });

  t.test('the widget script, its config, CORS and the inbox page assets', async (t) => {
    const js = await call(d.api, 'GET', '/chat-widget.js');
    t.equal(js.status, 200);
    t.match(js.headers.get('content-type'), /text\/javascript/);
    t.ok(js.text.includes('data-widget-key') && js.text.includes('/v1/chat-sdk/widget/session'), 'the widget script');
    t.notOk(js.text.includes('/*SOCKET_IO_CLIENT*/'), "Socket.IO's client is in it");
    t.notOk(/sourceMappingURL/.test(js.text), 'no source map asked for');
    const again = await call(d.api, 'GET', '/chat-widget.js', { headers: { 'if-none-match': js.headers.get('etag')! } });
    t.equal(again.status, 304, 'cached by its ETag');

    const pre = await call(d.api, 'OPTIONS', '/v1/chat-sdk/widget/session', { headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    t.equal(pre.status, 204, 'preflight');
    t.equal(pre.headers.get('access-control-allow-origin'), '*');
    t.match(pre.headers.get('access-control-allow-headers'), /authorization/);
    const cfg = await widget('GET', `/config?widgetKey=${inbox.widgetKey}`, undefined, undefined, { origin: 'https://shop.example' });
    t.equal(cfg.status, 200, cfg.text);
    t.equal(cfg.headers.get('access-control-allow-origin'), '*', 'CORS on an answer');
    t.match(cfg.json.data, { name: 'Acme help', greeting: 'Hello!', online: true, offlineMode: 'form', preChatForm: { email: { required: false } }, requireIdentity: false });
    const unknown = await widget('GET', '/config?widgetKey=wk_nope', undefined, undefined, { origin: 'https://shop.example' });
    expectError(t, unknown, 404, 'CHAT_WIDGET_KEY_UNKNOWN', 'an unknown widget key');
    t.equal(unknown.headers.get('access-control-allow-origin'), '*', 'CORS on an error too (the page can read it)');

    const page = await call(d.api, 'GET', '/inbox');
    t.equal(page.status, 200);
    t.match(page.headers.get('content-security-policy'), /script-src 'self'/);
    t.ok(page.text.includes('/inbox/assets/inbox.js'));
    for (const asset of ['/inbox/assets/inbox.js', '/inbox/assets/inbox.css', '/inbox/assets/favicon.svg', '/inbox/assets/socket.io.min.js']) {
      t.equal((await call(d.api, 'GET', asset)).status, 200, asset);
    }
  });

  let anonToken = '';
  let anonUserId = '';
  let anonChannel = '';
  t.test('an anonymous visitor: a session, a kept key, the first message making the conversation', async (t) => {
    const s = await widget('POST', '/session', { widgetKey: inbox.widgetKey, pageUrl: 'https://shop.example/pricing' });
    t.equal(s.status, 200, s.text);
    const v = s.json.data;
    t.match(v, { token: /^ey/, userId: /^visitor:[A-Za-z0-9_-]{22}$/, visitorId: /^v_[A-Za-z0-9_-]{22,}$/, identified: false, conversation: null, inbox: { name: 'Acme help', online: true } });
    t.notOk(v.userId.includes(v.visitorId), "the user id does not reveal the visitor's key");
    const back = (await widget('POST', '/session', { widgetKey: inbox.widgetKey, visitorId: v.visitorId })).json.data;
    t.equal(back.userId, v.userId, 'the kept key is the same visitor');
    t.equal(back.visitorId, null, 'a key given is not sent back');
    const fresh = (await widget('POST', '/session', { widgetKey: inbox.widgetKey, visitorId: 'not-a-key' })).json.data;
    t.not(fresh.userId, v.userId, 'something that is no key: a new visitor');
    t.match(fresh.visitorId, /^v_/, 'whose key is made and sent');
    const own = `v_${'A1b2C3d4'.repeat(4)}`;
    const made = (await widget('POST', '/session', { widgetKey: inbox.widgetKey, visitorId: own })).json.data;
    t.match(made, { visitorId: null, userId: /^visitor:/ }, "a key the widget made: the visitor is known by it, it is not sent back");
    t.equal((await widget('POST', '/session', { widgetKey: inbox.widgetKey, visitorId: own })).json.data.userId, made.userId, 'the same visitor again');
    const me = await call(d.api, 'GET', '/v1/chat-sdk/me', { headers: { authorization: `Bearer ${v.token}` } });
    t.equal(me.status, 200, `the token is a chat user token: ${me.text}`);

    const history0 = await widget('GET', `/messages?widgetKey=${inbox.widgetKey}`, undefined, v.token);
    t.same(history0.json.data, { conversation: null, messages: [], hasMore: false, agentReadSeq: 0 }, 'no conversation before the first message');
    const sent = await widget('POST', '/messages', { widgetKey: inbox.widgetKey, text: 'Do you ship to Accra?', clientMsgId: 'c1', visitor: { name: 'Ama', pageUrl: 'https://shop.example/pricing' } }, v.token);
    t.equal(sent.status, 200, sent.text);
    t.match(sent.json.data, { created: true, message: { seq: 1, userId: v.userId, text: 'Do you ship to Accra?' }, conversation: { channelId: /^lc_/, status: 'open' } });
    anonChannel = sent.json.data.conversation.channelId;
    const retry = await widget('POST', '/messages', { widgetKey: inbox.widgetKey, text: 'Do you ship to Accra?', clientMsgId: 'c1' }, v.token);
    t.match(retry.json.data, { created: false, message: { id: sent.json.data.message.id, seq: 1 } }, 'a retried clientMsgId: the same message');
    const channel = await apiA('GET', `/v1/chat-sdk/channels/${anonChannel}`);
    t.match(channel.json.data, { id: anonChannel, type: 'livechat', lastSeq: 1, memberCount: 1 }, 'a channel of type livechat with the visitor');
    const s2 = (await widget('POST', '/session', { widgetKey: inbox.widgetKey, visitorId: v.visitorId })).json.data;
    t.same(s2.conversation, { channelId: anonChannel, status: 'open' }, 'the next session names the conversation');
    expectError(t, await widget('POST', '/messages', { widgetKey: inbox.widgetKey, text: 'x' }), 401, 'CHAT_TOKEN_INVALID', 'no token');
    expectError(t, await widget('POST', '/messages', { widgetKey: inbox.widgetKey, text: 'x' }, `${v.token.slice(0, -4)}AAAA`), 401, 'CHAT_TOKEN_INVALID', 'a forged token');
    const otherInbox = (await apiB('POST', '/v1/chat-sdk/inboxes', { name: 'B' })).json.data;
    expectError(t, await widget('POST', '/messages', { widgetKey: otherInbox.widgetKey, text: 'x' }, v.token), 404, 'CHAT_WIDGET_KEY_UNKNOWN', "another account's widget key with this token");
    anonToken = v.token;
    anonUserId = v.userId;
  });

  t.test('identified visitors: the HMAC checked, a bad or rotated one refused, requireIdentity enforced', async (t) => {
    const ok1 = await widget('POST', '/session', { widgetKey: inbox.widgetKey, identity: { userId: 'cust-42', hmac: sign(secret, 'cust-42') }, visitorName: 'Kofi', email: 'kofi@example.com' });
    t.equal(ok1.status, 200, ok1.text);
    t.match(ok1.json.data, { userId: 'cust-42', identified: true, visitorId: null });
    expectError(t, await widget('POST', '/session', { widgetKey: inbox.widgetKey, identity: { userId: 'cust-43', hmac: sign(secret, 'cust-42') } }), 401, 'CHAT_IDENTITY_INVALID', "another user's HMAC");
    expectError(t, await widget('POST', '/session', { widgetKey: inbox.widgetKey, identity: { userId: 'cust-42', hmac: 'zz' } }), 401, 'CHAT_IDENTITY_INVALID', 'a malformed HMAC');
    expectError(t, await widget('POST', '/session', { widgetKey: inbox.widgetKey, identity: { userId: 'cust-42', hmac: sign('lcis_guess', 'cust-42') } }), 401, 'CHAT_IDENTITY_INVALID', 'an HMAC with the wrong secret');

    const rotated = await apiA('POST', `/v1/chat-sdk/inboxes/${inbox.id}/identity-secret/rotate`);
    t.equal(rotated.status, 200, rotated.text);
    const newSecret = rotated.json.data.identitySecret as string;
    t.not(newSecret, secret, 'a new secret');
    expectError(t, await widget('POST', '/session', { widgetKey: inbox.widgetKey, identity: { userId: 'cust-42', hmac: sign(secret, 'cust-42') } }), 401, 'CHAT_IDENTITY_INVALID', 'the previous secret after rotation');
    const ok2 = await widget('POST', '/session', { widgetKey: inbox.widgetKey, identity: { userId: 'cust-42', hmac: sign(newSecret, 'cust-42') } });
    t.equal(ok2.status, 200, 'the new secret');
    for (const reserved of ['agent:ak_someone', 'visitor:abc']) {
      const r = await widget('POST', '/session', { widgetKey: inbox.widgetKey, identity: { userId: reserved, hmac: sign(newSecret, reserved) } });
      expectError(t, r, 400, 'VALIDATION_ERROR', `${reserved}: live chat's own ids are no identity, whatever the HMAC`);
    }

    const strict = (await apiA('POST', '/v1/chat-sdk/inboxes', { name: 'Members only', requireIdentity: true })).json.data;
    expectError(t, await widget('POST', '/session', { widgetKey: strict.widgetKey }), 401, 'CHAT_IDENTITY_REQUIRED', 'an anonymous session where identity is required');
    expectError(t, await widget('POST', '/messages', { widgetKey: strict.widgetKey, text: 'hello' }, anonToken), 401, 'CHAT_IDENTITY_REQUIRED', "an anonymous visitor's token on it");
    const ident = (await widget('POST', '/session', { widgetKey: strict.widgetKey, identity: { userId: 'cust-42', hmac: sign(strict.identitySecret, 'cust-42') } })).json.data;
    const sent = await widget('POST', '/messages', { widgetKey: strict.widgetKey, text: 'hello from a member' }, ident.token);
    t.equal(sent.status, 200, sent.text);
    const conv = (await apiA('GET', `/v1/chat-sdk/inboxes/${strict.id}/conversations`)).json.data.conversations[0];
    t.match(conv, { visitorId: 'cust-42', identified: true, status: 'open' });
  });

  t.test('the pre-chat form and business hours with both offline modes', async (t) => {
    const form = (await apiA('POST', '/v1/chat-sdk/inboxes', { name: 'Sales', preChatForm: { name: { required: true }, email: { required: false } } })).json.data;
    const v = (await widget('POST', '/session', { widgetKey: form.widgetKey })).json.data;
    const missing = await widget('POST', '/messages', { widgetKey: form.widgetKey, text: 'hi' }, v.token);
    expectError(t, missing, 422, 'CHAT_PRECHAT_REQUIRED', 'without the required name');
    t.same(missing.json.data.fields, ['name']);
    const given = await widget('POST', '/messages', { widgetKey: form.widgetKey, text: 'hi', visitor: { name: 'Esi', email: 'esi@example.com' } }, v.token);
    t.equal(given.status, 200, given.text);
    const later = await widget('POST', '/messages', { widgetKey: form.widgetKey, text: 'and then' }, v.token);
    t.equal(later.status, 200, 'the form is asked once: the conversation keeps the details');

    const closed = (await apiA('POST', '/v1/chat-sdk/inboxes', { name: 'Night', businessHours: ALWAYS_CLOSED, offlineMode: 'form' })).json.data;
    const s = (await widget('POST', '/session', { widgetKey: closed.widgetKey })).json.data;
    t.match(s.inbox, { online: false, offlineMode: 'form' });
    const noEmail = await widget('POST', '/messages', { widgetKey: closed.widgetKey, text: 'are you there?' }, s.token);
    expectError(t, noEmail, 422, 'CHAT_PRECHAT_REQUIRED', 'offline without an email');
    t.same(noEmail.json.data.fields, ['email']);
    const left = await widget('POST', '/messages', { widgetKey: closed.widgetKey, text: 'call me back', visitor: { email: 'yaw@example.com' } }, s.token);
    t.equal(left.status, 200, left.text);
    t.equal(left.json.data.conversation.status, 'pending', 'a message taken offline: pending');

    const opened = await apiA('PATCH', `/v1/chat-sdk/inboxes/${closed.id}`, { businessHours: ALWAYS_OPEN });
    t.equal(opened.status, 200, opened.text);
    t.equal((await widget('GET', `/config?widgetKey=${closed.widgetKey}`)).json.data.online, true, 'inside the hours now');
    const back = await widget('POST', '/messages', { widgetKey: closed.widgetKey, text: 'back in hours' }, s.token);
    t.equal(back.json.data.conversation.status, 'open', 'a message inside the hours: open again');

    const hidden = (await apiA('POST', '/v1/chat-sdk/inboxes', { name: 'Hidden', businessHours: ALWAYS_CLOSED, offlineMode: 'hide' })).json.data;
    const h = (await widget('POST', '/session', { widgetKey: hidden.widgetKey })).json.data;
    t.match(h.inbox, { online: false, offlineMode: 'hide' }, 'the widget is told to hide');
    expectError(t, await widget('POST', '/messages', { widgetKey: hidden.widgetKey, text: 'hello?', visitor: { email: 'a@example.com' } }, h.token), 409, 'CHAT_INBOX_OFFLINE', 'hide: no message taken');
  });

  t.test('widget requests are limited per visitor', async (t) => {
    const v = (await widget('POST', '/session', { widgetKey: inbox.widgetKey })).json.data;
    const answers = await Promise.all(Array.from({ length: 40 }, () => widget('POST', '/session', { widgetKey: inbox.widgetKey, visitorId: v.visitorId })));
    const refused = answers.filter((r) => r.status === 429);
    t.ok(refused.length > 0, `some of 40 at once are refused (${refused.length})`);
    t.ok(answers.filter((r) => r.status === 200).length >= 18, 'the burst passes');
    t.ok(answers.every((r) => r.status === 200 || r.status === 429), 'nothing else');
    t.equal(refused[0].json.code, 'RATE_LIMIT_EXCEEDED');
    t.equal(refused[0].json.data.limit, 'visitor');
    t.ok(Number(refused[0].headers.get('retry-after')) >= 1, 'Retry-After');
    const other = await widget('POST', '/session', { widgetKey: inbox.widgetKey });
    t.equal(other.status, 200, 'another visitor is not held back');
  });

  // The inbox page
  const cookieOf = (r: CallResult) => (r.headers.get('set-cookie') ?? '').split(';')[0];
  let cookie = '';
  let csrf = '';
  let agentId = '';
  let agentChatToken = '';
  const page = (method: string, path: string, body?: unknown, o: { csrf?: string | null; cookie?: string } = {}) =>
    call(d.api, method, path, {
      body,
      headers: { ...((o.cookie ?? cookie) ? { cookie: o.cookie ?? cookie } : {}), ...(o.csrf === null ? {} : { 'x-csrf-token': o.csrf ?? csrf }) },
    });

  t.test('agent sign-in: an HttpOnly session cookie, a CSRF token, a chat token', async (t) => {
    const fresh = await call(d.api, 'GET', '/inbox/api/session');
    t.same(fresh.json.data, { signedIn: false }, 'not signed in is an answer, not an error');
    expectError(t, await call(d.api, 'POST', '/inbox/session', { token: noChat.token, body: {} }), 403, 'INSUFFICIENT_SCOPE', 'a key without chat:manage');
    expectError(t, await call(d.api, 'POST', '/inbox/session', { body: {} }), 401, 'AUTH_HEADER_MISSING', 'no key');
    const r = await call(d.api, 'POST', '/inbox/session', { token: a.token, body: { agentName: 'Abena' } });
    t.equal(r.status, 200, r.text);
    const setCookie = r.headers.get('set-cookie') ?? '';
    t.match(setCookie, /^ferry_inbox_session=[A-Za-z0-9_-]{40,};/);
    t.match(setCookie, /HttpOnly/);
    t.match(setCookie, /SameSite=Strict/);
    t.match(setCookie, /Path=\/inbox/);
    t.notOk(setCookie.includes(a.token), 'the cookie is not the key');
    cookie = cookieOf(r);
    t.match(r.json.data, { signedIn: true, agentId: `agent:${a.key.keyId}`, agentName: 'Abena', csrfToken: /^[A-Za-z0-9_-]{40,}$/, chatToken: /^ey/ });
    csrf = r.json.data.csrfToken;
    agentId = r.json.data.agentId;
    agentChatToken = r.json.data.chatToken;
    const again = await page('GET', '/inbox/api/session');
    t.match(again.json.data, { signedIn: true, agentId, csrfToken: csrf }, 'the cookie is the session');
  });

  t.test('CSRF: a state-changing call needs the session and its token', async (t) => {
    expectError(t, await page('PATCH', `/inbox/api/conversations/${anonChannel}`, { status: 'pending' }, { csrf: null }), 403, 'CHAT_CSRF_TOKEN_INVALID', 'no CSRF token');
    expectError(t, await page('PATCH', `/inbox/api/conversations/${anonChannel}`, { status: 'pending' }, { csrf: `${csrf.slice(0, -2)}xx` }), 403, 'CHAT_CSRF_TOKEN_INVALID', 'a wrong CSRF token');
    expectError(t, await page('POST', `/inbox/api/conversations/${anonChannel}/messages`, { text: 'forged' }, { csrf: null }), 403, 'CHAT_CSRF_TOKEN_INVALID', 'a reply without it');
    expectError(t, await page('PATCH', `/inbox/api/conversations/${anonChannel}`, { status: 'pending' }, { cookie: '', csrf }), 401, 'CHAT_INBOX_SESSION_REQUIRED', 'the token without the cookie');
    expectError(t, await page('GET', '/inbox/api/conversations', undefined, { cookie: 'ferry_inbox_session=guess' }), 401, 'CHAT_INBOX_SESSION_REQUIRED', 'a made-up cookie');
    const conv = await page('GET', `/inbox/api/conversations/${anonChannel}`);
    t.equal(conv.json.data.conversation.status, 'open', 'nothing changed');
    t.equal(conv.json.data.messages.length, 1, 'no forged reply');
  });

  t.test('lists, joining, a reply reaching the visitor live, assignment and status', async (t) => {
    const open = await page('GET', '/inbox/api/conversations?status=open');
    t.equal(open.status, 200, open.text);
    const mine = open.json.data.items.find((c: { channelId: string }) => c.channelId === anonChannel);
    t.match(mine, { status: 'open', assignee: null, visitorId: anonUserId, inboxName: 'Acme help', lastMessageText: 'Do you ship to Accra?', unread: 1, visitor: { name: 'Ama', pageUrl: 'https://shop.example/pricing', userAgent: 'LivechatTest/1.0' } });
    const pending = await page('GET', '/inbox/api/conversations?status=pending');
    t.ok(pending.json.data.items.every((c: { status: string }) => c.status === 'pending'), 'the pending list');
    t.notOk(pending.json.data.items.some((c: { channelId: string }) => c.channelId === anonChannel));
    const otherAccount = await call(d.api, 'POST', '/inbox/session', { token: b.token });
    t.equal(otherAccount.status, 200, `a sign-in without a body (no name): ${otherAccount.text}`);
    const bCookie = cookieOf(otherAccount);
    expectError(t, await page('GET', `/inbox/api/conversations/${anonChannel}`, undefined, { cookie: bCookie }), 404, 'CHAT_CONVERSATION_NOT_FOUND', "another account's agent");
    t.same((await page('GET', '/inbox/api/conversations?status=open', undefined, { cookie: bCookie })).json.data.items, [], "another account's lists are empty");

    const before = await page('GET', `/inbox/api/conversations/${anonChannel}`);
    t.match(before.json.data, { joined: false, visitorReadSeq: 1, messages: [{ seq: 1, text: 'Do you ship to Accra?' }] });
    const joined = await page('POST', `/inbox/api/conversations/${anonChannel}/join`, {});
    t.equal(joined.status, 200, joined.text);
    t.equal((await page('GET', `/inbox/api/conversations/${anonChannel}`)).json.data.joined, true, 'a member now');

    // The visitor's socket gets the agent's reply.
    const socket: Socket = io(`${d.api}/chat-sdk`, { auth: { token: anonToken }, transports: ['websocket'], reconnection: false, forceNew: true });
    t.teardown(() => void socket.close());
    const got: Array<{ channelId: string; message: { text: string; userId: string; data: Record<string, unknown> } }> = [];
    socket.on('message.new', (p) => got.push(p));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    const reply = await page('POST', `/inbox/api/conversations/${anonChannel}/messages`, { text: 'Yes, we do!', clientMsgId: 'r1' });
    t.equal(reply.status, 200, reply.text);
    t.match(reply.json.data.message, { seq: 2, userId: agentId, text: 'Yes, we do!', data: { agentName: 'Abena' } });
    const until = Date.now() + 15_000;
    while (!got.length && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    t.match(got, [{ channelId: anonChannel, message: { text: 'Yes, we do!', userId: agentId } }], 'the visitor got the reply live');
    const history = await widget('GET', `/messages?widgetKey=${inbox.widgetKey}`, undefined, anonToken);
    t.same(
      history.json.data.messages.map((m: { seq: number }) => m.seq),
      [1, 2],
      "the visitor's history",
    );
    t.equal(history.json.data.agentReadSeq, 2, "the agent's read mark (their own message)");
    const read = await page('POST', `/inbox/api/conversations/${anonChannel}/read`, { seq: 2 });
    t.same(read.json.data, { lastReadSeq: 2 });

    // Assignment and status.
    const assigned = await page('PATCH', `/inbox/api/conversations/${anonChannel}`, { assignee: agentId });
    t.equal(assigned.status, 200, assigned.text);
    t.equal(assigned.json.data.assignee, agentId);
    expectError(t, await page('PATCH', `/inbox/api/conversations/${anonChannel}`, { assignee: 'agent:ak_nobody' }), 404, 'CHAT_AGENT_NOT_FOUND', 'an agent who never signed in');
    expectError(t, await page('PATCH', `/inbox/api/conversations/${anonChannel}`, { assignee: anonUserId }), 404, 'CHAT_AGENT_NOT_FOUND', 'a visitor is no agent');
    const mineList = await page('GET', '/inbox/api/conversations?status=open&assignee=me');
    t.same(
      mineList.json.data.items.map((c: { channelId: string }) => c.channelId),
      [anonChannel],
      'assigned to me',
    );
    t.notOk((await page('GET', '/inbox/api/conversations?status=open&assignee=none')).json.data.items.some((c: { channelId: string }) => c.channelId === anonChannel), 'not unassigned');
    const resolved = await page('PATCH', `/inbox/api/conversations/${anonChannel}`, { status: 'resolved' });
    t.match(resolved.json.data, { status: 'resolved', resolvedAt: String, assignee: agentId });
    t.ok((await page('GET', '/inbox/api/conversations?status=resolved')).json.data.items.some((c: { channelId: string }) => c.channelId === anonChannel), 'in the resolved list');
    const reopened = await widget('POST', '/messages', { widgetKey: inbox.widgetKey, text: 'One more question' }, anonToken);
    t.match(reopened.json.data.conversation, { channelId: anonChannel, status: 'open' }, "the visitor's message reopens it");

    // The same through the server API.
    const listed = await apiA('GET', `/v1/chat-sdk/inboxes/${inbox.id}/conversations?status=open`);
    t.ok(listed.json.data.conversations.some((c: { channelId: string }) => c.channelId === anonChannel), 'the server API lists it');
    const patched = await apiA('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}/conversations/${anonChannel}`, { status: 'pending', assignee: null });
    t.match(patched.json.data, { status: 'pending', assignee: null });
    expectError(t, await apiB('PATCH', `/v1/chat-sdk/inboxes/${inbox.id}/conversations/${anonChannel}`, { status: 'open' }), 404, 'CHAT_CONVERSATION_NOT_FOUND', "another account's conversation");
    t.ok(agentChatToken, 'the agent chat token was given');
  });

  t.test('sign-out ends the session (CSRF-checked)', async (t) => {
    expectError(t, await page('POST', '/inbox/session/end', undefined, { csrf: null }), 403, 'CHAT_CSRF_TOKEN_INVALID', 'sign-out without the token');
    const out = await page('POST', '/inbox/session/end');
    t.equal(out.status, 200, out.text);
    t.match(out.headers.get('set-cookie'), /Max-Age=0/);
    t.same((await page('GET', '/inbox/api/session')).json.data, { signedIn: false }, 'ended on the server');
  });
});
