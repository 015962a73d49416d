/**
 * GET /chat-widget.js: the script a customer's page embeds
 * (`<script src="{base}/chat-widget.js" data-widget-key="wk_…" async></script>`). Plain JS, no build step. It renders
 * a launcher and a panel inside a shadow root (the page's styles do not reach it, its own do not leak), keeps an
 * anonymous visitor's key in localStorage, sends through /v1/chat-sdk/widget and receives over Socket.IO's /chat-sdk
 * namespace (the client is placed where the marker below is, scoped: no global `io`). Text is always set with
 * textContent. It checks what the server would refuse (the pre-chat form, an expiring token) before asking, so that a
 * normal visit logs no failed request in the page's console.
 */
export const WIDGET_JS = String.raw`/* Ferry live chat widget */
(function () {
  'use strict';
  var script = document.currentScript || document.querySelector('script[data-widget-key][src*="chat-widget.js"]');
  if (!script || !window.fetch || !document.body || !document.body.attachShadow) return;
  var widgetKey = script.getAttribute('data-widget-key') || '';
  var widgets = (window.__ferryChatWidgets = window.__ferryChatWidgets || {});
  if (!widgetKey || widgets[widgetKey]) return;
  widgets[widgetKey] = true;

  var base = script.src.replace(/\/chat-widget\.js(?:[?#].*)?$/, '');
  var baseUrl = new URL(base);
  var socketPath = baseUrl.pathname.replace(/\/$/, '') + '/socket.io';
  var io = /*SOCKET_IO_CLIENT*/ null;
  var storeKey = 'ferry-chat:' + widgetKey;
  var attr = function (name) { return (script.getAttribute(name) || '').trim(); };
  var identity = attr('data-user-id') && attr('data-user-hmac') ? { userId: attr('data-user-id'), hmac: attr('data-user-hmac') } : null;

  function load() {
    try { return JSON.parse(localStorage.getItem(storeKey) || '{}') || {}; } catch (e) { return {}; }
  }
  function save() {
    try { localStorage.setItem(storeKey, JSON.stringify(saved)); } catch (e) { /* storage off: a new visitor on each visit */ }
  }
  var saved = load();
  var state = {
    inbox: null,
    session: null,
    sessionPending: null,
    channelId: null,
    status: null,
    userId: null,
    seqs: {},
    lastSeq: 0,
    readSent: 0,
    agentReadSeq: 0,
    socket: null,
    open: false,
    unread: 0,
    formDone: false,
    typingSentAt: 0,
    typingTimer: null,
    details: { name: attr('data-user-name') || saved.name || '', email: attr('data-user-email') || saved.email || '' }
  };

  // The widget's elements, in a shadow root.
  var host = document.createElement('div');
  host.setAttribute('data-ferry-chat', '');
  var root = host.attachShadow({ mode: 'open' });
  var css = ':host { all: initial; }\n' +
    '* { box-sizing: border-box; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }\n' +
    '[hidden] { display: none !important; }\n' +
    '.launcher { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; display: flex; align-items: center; gap: 8px; padding: 12px 18px; border: 0; border-radius: 999px; background: #14324f; color: #fff; font-size: 15px; font-weight: 600; cursor: pointer; box-shadow: 0 4px 14px rgba(0,0,0,.25); }\n' +
    'button:focus-visible, textarea:focus-visible, input:focus-visible { outline: 3px solid #f5a623; outline-offset: 2px; }\n' +
    '.badge { min-width: 20px; height: 20px; padding: 0 6px; border-radius: 10px; background: #b3261e; color: #fff; font-size: 12px; line-height: 20px; text-align: center; }\n' +
    '.panel { position: fixed; right: 20px; bottom: 84px; z-index: 2147483000; width: 360px; max-width: calc(100vw - 24px); height: 520px; max-height: calc(100vh - 110px); display: flex; flex-direction: column; background: #fff; color: #1d2430; border-radius: 12px; box-shadow: 0 10px 40px rgba(0,0,0,.3); overflow: hidden; font-size: 14px; }\n' +
    '.head { display: flex; align-items: center; justify-content: space-between; padding: 12px 14px; background: #14324f; color: #fff; }\n' +
    'h2 { margin: 0; font-size: 16px; }\n' +
    '.close { background: transparent; border: 0; color: #fff; font-size: 22px; line-height: 1; cursor: pointer; padding: 2px 8px; border-radius: 4px; }\n' +
    '.greeting, .notice { margin: 0; padding: 10px 14px; border-bottom: 1px solid #e3e6ea; }\n' +
    '.notice { background: #fff6dd; color: #4d3900; }\n' +
    '.messages { list-style: none; margin: 0; padding: 12px; flex: 1; overflow-y: auto; display: flex; flex-direction: column; gap: 8px; }\n' +
    '.msg { max-width: 80%; padding: 8px 10px; border-radius: 10px; overflow-wrap: anywhere; white-space: pre-wrap; }\n' +
    '.msg.me { align-self: flex-end; background: #14324f; color: #fff; }\n' +
    '.msg.them { align-self: flex-start; background: #eef1f5; color: #1d2430; }\n' +
    '.msg.sending { opacity: .7; }\n' +
    '.who { display: block; font-size: 12px; font-weight: 600; margin-bottom: 2px; }\n' +
    '.meta { display: block; font-size: 11px; margin-top: 3px; opacity: .85; }\n' +
    '.typing { margin: 0; padding: 0 14px; min-height: 18px; font-size: 12px; color: #4a5563; }\n' +
    'form { padding: 10px 12px; border-top: 1px solid #e3e6ea; display: flex; gap: 8px; margin: 0; }\n' +
    '.prechat { flex-direction: column; }\n' +
    'label { display: flex; flex-direction: column; gap: 3px; font-size: 13px; color: #1d2430; }\n' +
    'input, textarea { font: inherit; font-size: 14px; padding: 7px 9px; border: 1px solid #8a94a3; border-radius: 6px; color: #1d2430; background: #fff; }\n' +
    'textarea { flex: 1; resize: none; }\n' +
    'form button { background: #14324f; color: #fff; border: 0; border-radius: 6px; padding: 8px 14px; font: inherit; font-size: 14px; font-weight: 600; cursor: pointer; }\n' +
    '.error { margin: 0; padding: 0 14px 8px; color: #b3261e; font-size: 13px; }\n' +
    '.error:empty { display: none; }\n' +
    '.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0, 0, 0, 0); border: 0; }\n';
  // A constructed stylesheet where the browser has them (a page's CSP may forbid style elements).
  if (window.CSSStyleSheet && 'adoptedStyleSheets' in root && CSSStyleSheet.prototype.replaceSync) {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [sheet];
  } else {
    var style = document.createElement('style');
    style.textContent = css;
    root.appendChild(style);
  }
  var wrap = document.createElement('div');
  // Static markup only: everything from the inbox, the visitor or the agents is set with textContent below.
  wrap.innerHTML =
    '<button class="launcher" type="button" aria-expanded="false" aria-controls="fc-panel" hidden>' +
    '<svg aria-hidden="true" focusable="false" viewBox="0 0 24 24" width="22" height="22"><path fill="currentColor" d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z"/></svg>' +
    '<span>Chat</span><span class="badge" hidden></span></button>' +
    '<section id="fc-panel" class="panel" role="dialog" aria-labelledby="fc-title" hidden>' +
    '<div class="head"><h2 id="fc-title"></h2><button type="button" class="close" aria-label="Close chat">\u00d7</button></div>' +
    '<p class="greeting" hidden></p><p class="notice" hidden></p>' +
    '<ol class="messages" role="log" aria-live="polite" aria-label="Conversation"></ol>' +
    '<p class="typing" aria-live="polite"></p>' +
    '<form class="prechat" hidden novalidate><p class="sr-only">Before you start</p>' +
    '<label class="f-name">Name <input name="name" autocomplete="name" maxlength="300"></label>' +
    '<label class="f-email">Email <input name="email" type="email" autocomplete="email" maxlength="300"></label>' +
    '<button type="submit">Start chat</button></form>' +
    '<form class="composer" hidden><label class="sr-only" for="fc-text">Message</label>' +
    '<textarea id="fc-text" rows="2" maxlength="4000" placeholder="Write a message\u2026"></textarea>' +
    '<button type="submit">Send</button></form>' +
    '<p class="error" role="alert"></p></section>';
  while (wrap.firstChild) root.appendChild(wrap.firstChild);
  var $ = function (sel) { return root.querySelector(sel); };
  var el = {
    launcher: $('.launcher'), badge: $('.badge'), panel: $('.panel'), title: $('#fc-title'), close: $('.close'),
    greeting: $('.greeting'), notice: $('.notice'), messages: $('.messages'), typing: $('.typing'),
    prechat: $('.prechat'), composer: $('.composer'), text: $('#fc-text'), error: $('.error')
  };
  document.body.appendChild(host);

  function api(method, path, body, token) {
    var headers = { accept: 'application/json' };
    if (body) headers['content-type'] = 'application/json';
    if (token) headers.authorization = 'Bearer ' + token;
    return fetch(base + path, { method: method, headers: headers, body: body ? JSON.stringify(body) : undefined, mode: 'cors', credentials: 'omit' }).then(
      function (res) {
        return res.json().then(function (json) { return { status: res.status, json: json }; }, function () { return { status: res.status, json: null }; });
      },
      function () { return { status: 0, json: null }; }
    );
  }

  function showError(r) {
    el.error.textContent = r && r.json && r.json.message ? r.json.message : 'Support cannot be reached right now. Please try again.';
  }

  // What the pre-chat form asks for now (and whether each is required); outside business hours an email always.
  function formFields() {
    var f = (state.inbox && state.inbox.preChatForm) || {};
    var offline = state.inbox && !state.inbox.online;
    var out = [];
    if (f.name) out.push({ name: 'name', required: !!f.name.required });
    if (f.email || offline) out.push({ name: 'email', required: !!(f.email && f.email.required) || !!offline });
    return out;
  }
  function missingFields() {
    return formFields().filter(function (x) { return x.required && !state.details[x.name]; });
  }
  function needForm() {
    if (state.channelId) return false;
    var fields = formFields();
    return fields.length > 0 && (!state.formDone || missingFields().length > 0);
  }

  function render() {
    var inbox = state.inbox;
    if (!inbox) return;
    var hidden = (!inbox.online && inbox.offlineMode === 'hide' && !state.channelId) || (inbox.requireIdentity && !identity);
    el.launcher.hidden = hidden;
    if (hidden) { setOpen(false); return; }
    el.launcher.setAttribute('aria-label', (state.open ? 'Close chat with ' : 'Open chat with ') + inbox.name);
    el.title.textContent = inbox.name;
    el.greeting.textContent = inbox.greeting || '';
    el.greeting.hidden = !inbox.greeting;
    el.notice.hidden = inbox.online;
    el.notice.textContent = inbox.online ? '' : 'We are away right now. Leave a message and your email, and we will get back to you.';
    var form = needForm();
    el.prechat.hidden = !form;
    el.composer.hidden = form;
    if (form) {
      var fields = formFields();
      ['name', 'email'].forEach(function (n) {
        var f = fields.filter(function (x) { return x.name === n; })[0];
        var label = root.querySelector('.f-' + n);
        var input = label.querySelector('input');
        label.hidden = !f;
        input.required = !!(f && f.required);
        input.setAttribute('aria-required', f && f.required ? 'true' : 'false');
        label.firstChild.textContent = (n === 'name' ? 'Name' : 'Email') + (f && f.required ? ' (required) ' : ' (optional) ');
        if (!input.value) input.value = state.details[n] || '';
      });
    }
    el.badge.hidden = state.unread === 0;
    el.badge.textContent = state.unread ? String(state.unread) : '';
  }

  function setOpen(open) {
    state.open = open;
    el.panel.hidden = !open;
    el.launcher.setAttribute('aria-expanded', open ? 'true' : 'false');
    if (open) {
      state.unread = 0;
      render();
      markRead();
      var first = needForm() ? el.prechat.querySelector('label:not([hidden]) input') : el.text;
      if (first) first.focus();
      el.messages.scrollTop = el.messages.scrollHeight;
    } else if (state.inbox) {
      render();
    }
  }

  function time(iso) {
    try { return new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }); } catch (e) { return ''; }
  }

  function addMessage(m, live) {
    if (!m || state.seqs[m.seq]) {
      if (m && (m.deletedAt || live === 'update')) replaceMessage(m);
      return;
    }
    state.seqs[m.seq] = true;
    var mine = m.userId === state.userId;
    var li = document.createElement('li');
    li.className = 'msg ' + (mine ? 'me' : 'them');
    li.setAttribute('data-seq', String(m.seq));
    li.setAttribute('data-message-id', m.id);
    var who = document.createElement('span');
    who.className = 'who';
    who.textContent = mine ? 'You' : (m.data && m.data.agentName) || (state.inbox && state.inbox.name) || 'Support';
    var text = document.createElement('span');
    text.className = 'text';
    text.textContent = m.deletedAt ? '(deleted)' : m.text;
    var meta = document.createElement('span');
    meta.className = 'meta';
    meta.textContent = time(m.createdAt);
    li.appendChild(who);
    li.appendChild(text);
    li.appendChild(meta);
    // In seq order, whatever order they arrive in (a resync may bring older ones after a live one).
    var after = null;
    var items = el.messages.querySelectorAll('li[data-seq]');
    for (var i = 0; i < items.length; i++) {
      if (Number(items[i].getAttribute('data-seq')) > m.seq) { after = items[i]; break; }
    }
    el.messages.insertBefore(li, after);
    if (m.seq > state.lastSeq) state.lastSeq = m.seq;
    if (!mine && live) {
      if (state.open) markRead();
      else state.unread++;
    }
    renderSeen();
    el.messages.scrollTop = el.messages.scrollHeight;
    render();
  }

  function replaceMessage(m) {
    var li = el.messages.querySelector('li[data-seq="' + m.seq + '"] .text');
    if (li) li.textContent = m.deletedAt ? '(deleted)' : m.text;
  }

  function renderSeen() {
    var old = el.messages.querySelectorAll('.seen');
    for (var i = 0; i < old.length; i++) old[i].parentNode.removeChild(old[i]);
    var mine = el.messages.querySelectorAll('li.me[data-seq]');
    for (var j = mine.length - 1; j >= 0; j--) {
      if (Number(mine[j].getAttribute('data-seq')) <= state.agentReadSeq) {
        var s = document.createElement('span');
        s.className = 'seen';
        s.textContent = ' \u00b7 Seen';
        mine[j].querySelector('.meta').appendChild(s);
        return;
      }
    }
  }

  function markRead() {
    if (!state.open || !state.socket || !state.channelId || state.lastSeq <= state.readSent) return;
    state.readSent = state.lastSeq;
    state.socket.emit('read', { channelId: state.channelId, seq: state.lastSeq }, function () {});
  }

  // An anonymous visitor's key, made here (it never has to come back from the server): 24 random bytes.
  function newVisitorKey() {
    var bytes = new Uint8Array(24);
    window.crypto.getRandomValues(bytes);
    var s = '';
    for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return 'v_' + btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  // A session, renewed a minute before its token expires.
  function ensureSession() {
    if (state.session && Date.parse(state.session.expiresAt) - Date.now() > 60000) return Promise.resolve(state.session);
    if (state.sessionPending) return state.sessionPending;
    var body = { widgetKey: widgetKey, pageUrl: String(location.href).slice(0, 2000) };
    if (identity) body.identity = identity;
    else {
      if (!saved.v && window.crypto && window.crypto.getRandomValues) { saved.v = newVisitorKey(); save(); }
      if (saved.v) body.visitorId = saved.v;
    }
    if (state.details.name) body.visitorName = state.details.name;
    if (state.details.email) body.email = state.details.email;
    state.sessionPending = api('POST', '/v1/chat-sdk/widget/session', body).then(function (r) {
      state.sessionPending = null;
      if (!r.json || !r.json.success) { showError(r); throw new Error('session'); }
      var d = r.json.data;
      state.session = d;
      state.userId = d.userId;
      state.inbox = d.inbox;
      if (d.visitorId && d.visitorId !== saved.v) { saved.v = d.visitorId; save(); }
      if (d.conversation) {
        var first = !state.channelId;
        state.channelId = d.conversation.channelId;
        state.status = d.conversation.status;
        if (first) history();
      }
      render();
      return d;
    });
    return state.sessionPending;
  }

  function history() {
    return api('GET', '/v1/chat-sdk/widget/messages?widgetKey=' + encodeURIComponent(widgetKey) + '&limit=50', null, state.session.token).then(function (r) {
      if (!r.json || !r.json.success) return;
      var d = r.json.data;
      state.agentReadSeq = Math.max(state.agentReadSeq, d.agentReadSeq || 0);
      d.messages.forEach(function (m) { addMessage(m, false); });
      connect();
    });
  }

  function connect() {
    if (state.socket || !io || !state.channelId) return;
    var s = io(baseUrl.origin + '/chat-sdk', {
      path: socketPath,
      // Asked again at each (re)connection, so a renewed token is used.
      auth: function (cb) {
        ensureSession().then(function (d) { cb({ token: d.token }); }, function () { cb({ token: '' }); });
      }
    });
    state.socket = s;
    var retries = 0;
    s.on('connect', function () { retries = 0; sync(0); markRead(); });
    s.on('connect_error', function (err) {
      // A refusal by the server (not a lost connection, which the client retries itself): a new session, then again.
      if (!err || !err.data || retries >= 5) return;
      retries++;
      if (err.data.code === 'CHAT_TOKEN_EXPIRED' || err.data.code === 'CHAT_TOKEN_REVOKED' || err.data.code === 'CHAT_TOKEN_INVALID') state.session = null;
      setTimeout(function () { s.connect(); }, 1000 * retries);
    });
    s.on('message.new', function (p) { if (p.channelId === state.channelId) addMessage(p.message, true); });
    s.on('message.updated', function (p) { if (p.channelId === state.channelId) replaceMessage(p.message); });
    s.on('message.deleted', function (p) { if (p.channelId === state.channelId) replaceMessage(p.message); });
    s.on('typing.start', function (p) { if (p.channelId === state.channelId && p.userId !== state.userId) el.typing.textContent = 'Support is typing\u2026'; });
    s.on('typing.stop', function (p) { if (p.channelId === state.channelId && p.userId !== state.userId) el.typing.textContent = ''; });
    s.on('read', function (p) {
      if (p.channelId === state.channelId && p.userId !== state.userId && p.lastReadSeq > state.agentReadSeq) { state.agentReadSeq = p.lastReadSeq; renderSeen(); }
    });
    s.on('revoked', function () { state.session = null; });
  }

  // After a (re)connection: whatever was stored while the socket was away, by seq.
  function sync(round) {
    if (!state.socket || !state.channelId || round > 20) return;
    state.socket.emit('messages.sync', { channelId: state.channelId, afterSeq: state.lastSeq }, function (ack) {
      if (!ack || !ack.ok) return;
      ack.messages.forEach(function (m) { addMessage(m, true); });
      if (ack.hasMore) sync(round + 1);
    });
  }

  function stopTyping() {
    clearTimeout(state.typingTimer);
    if (state.typingSentAt && state.socket && state.channelId) state.socket.emit('typing.stop', { channelId: state.channelId });
    state.typingSentAt = 0;
  }

  function send(text) {
    el.error.textContent = '';
    var clientMsgId = 'w' + Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
    var pending = document.createElement('li');
    pending.className = 'msg me sending';
    pending.textContent = text;
    el.messages.appendChild(pending);
    el.messages.scrollTop = el.messages.scrollHeight;
    stopTyping();
    var visitor = {};
    if (state.details.name) visitor.name = state.details.name;
    if (state.details.email) visitor.email = state.details.email;
    visitor.pageUrl = String(location.href).slice(0, 2000);
    return ensureSession()
      .then(function (d) { return api('POST', '/v1/chat-sdk/widget/messages', { widgetKey: widgetKey, text: text, clientMsgId: clientMsgId, visitor: visitor }, d.token); })
      .then(function (r) {
        pending.parentNode && pending.parentNode.removeChild(pending);
        if (!r.json || !r.json.success) { el.text.value = text; showError(r); return; }
        var d = r.json.data;
        var first = !state.channelId;
        state.channelId = d.conversation.channelId;
        state.status = d.conversation.status;
        addMessage(d.message, false);
        if (first) { saved.c = 1; save(); render(); }
        connect();
      }, function () {
        pending.parentNode && pending.parentNode.removeChild(pending);
        el.text.value = text;
      });
  }

  el.launcher.addEventListener('click', function () {
    if (state.open) return setOpen(false);
    setOpen(true);
    ensureSession().then(function () { if (state.open) setOpen(true); }, function () {});
  });
  el.close.addEventListener('click', function () { setOpen(false); el.launcher.focus(); });
  el.panel.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape') { setOpen(false); el.launcher.focus(); }
  });
  el.prechat.addEventListener('submit', function (ev) {
    ev.preventDefault();
    var form = el.prechat;
    ['name', 'email'].forEach(function (n) { state.details[n] = form.querySelector('input[name=' + n + ']').value.trim(); });
    var missing = missingFields();
    var email = state.details.email;
    if (missing.length || (email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email))) {
      el.error.textContent = missing.length ? 'Please fill in: ' + missing.map(function (x) { return x.name; }).join(', ') + '.' : 'Please check the email address.';
      var bad = form.querySelector('input[name=' + (missing.length ? missing[0].name : 'email') + ']');
      if (bad) bad.focus();
      return;
    }
    el.error.textContent = '';
    saved.name = state.details.name;
    saved.email = state.details.email;
    save();
    state.formDone = true;
    render();
    el.text.focus();
  });
  el.composer.addEventListener('submit', function (ev) {
    ev.preventDefault();
    var text = el.text.value.trim();
    if (!text) return;
    el.text.value = '';
    send(text);
  });
  el.text.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); el.composer.requestSubmit ? el.composer.requestSubmit() : el.composer.dispatchEvent(new Event('submit', { cancelable: true })); }
  });
  el.text.addEventListener('input', function () {
    if (!state.socket || !state.channelId) return;
    if (Date.now() - state.typingSentAt > 2500) {
      state.typingSentAt = Date.now();
      state.socket.emit('typing.start', { channelId: state.channelId });
    }
    clearTimeout(state.typingTimer);
    state.typingTimer = setTimeout(stopTyping, 4000);
  });

  window.FerryChat = window.FerryChat || { open: function () { if (!el.launcher.hidden) setOpen(true); }, close: function () { setOpen(false); } };

  // A returning visitor with a conversation (or an identified one) gets a session at once, to see replies live;
  // anyone else only the inbox's state until they open the panel.
  if (identity || saved.c) {
    ensureSession().catch(function () {});
  } else {
    api('GET', '/v1/chat-sdk/widget/config?widgetKey=' + encodeURIComponent(widgetKey)).then(function (r) {
      if (r.json && r.json.success) { state.inbox = r.json.data; render(); }
    });
  }
})();
`;
