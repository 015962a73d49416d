/**
 * The /inbox page: one HTML document, its stylesheet and its script, served by the daemon (no build step, no inline
 * script, so the Content-Security-Policy forbids any). Everything the visitors or agents wrote is set with textContent,
 * never as HTML. Socket.IO's client comes from /inbox/assets/socket.io.min.js.
 */
export const INBOX_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ferry · live chat inbox</title>
<link rel="icon" href="/inbox/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/inbox/assets/inbox.css">
<script src="/inbox/assets/socket.io.min.js" defer></script>
<script src="/inbox/assets/inbox.js" defer></script>
</head>
<body>
<header>
  <h1>Ferry <span>live chat inbox</span></h1>
  <div id="who" hidden><span id="who-name"></span> <span id="live" class="live" aria-live="polite"></span> <button id="logout" type="button">Sign out</button></div>
</header>
<main>
  <section id="signin" hidden>
    <form id="signin-form" autocomplete="off">
      <h2>Sign in with an API key</h2>
      <p>The key needs the <code>chat:manage</code> scope. It is sent once to open a session and is not kept by this page.</p>
      <label>API key <input id="credential" name="credential" type="password" placeholder="keyId:secret, or its base64 token" required></label>
      <label>Your name <span class="hint">(visitors see it with your replies)</span> <input id="agent-name" name="agentName" maxlength="100" autocomplete="name"></label>
      <button type="submit">Sign in</button>
      <p id="signin-error" role="alert"></p>
    </form>
  </section>
  <section id="inbox" hidden>
    <nav id="lists" aria-label="Conversation lists">
      <div role="group" aria-label="Status" class="tabs">
        <button type="button" class="tab" data-status="open" aria-pressed="true">Open</button>
        <button type="button" class="tab" data-status="pending" aria-pressed="false">Pending</button>
        <button type="button" class="tab" data-status="resolved" aria-pressed="false">Resolved</button>
      </div>
      <label>Show <select id="f-assignee"><option value="">everyone's</option><option value="me">mine</option><option value="none">unassigned</option></select></label>
      <label>Inbox <select id="f-inbox"><option value="">all inboxes</option></select></label>
      <p id="list-status" class="muted" aria-live="polite"></p>
      <ul id="conversations" aria-label="Conversations"></ul>
    </nav>
    <section id="conversation" aria-labelledby="c-title" hidden>
      <div class="c-head">
        <h2 id="c-title"></h2>
        <div class="c-actions">
          <label>Assignee <select id="c-assignee"></select></label>
          <label>Status <select id="c-status"><option value="open">open</option><option value="pending">pending</option><option value="resolved">resolved</option></select></label>
        </div>
      </div>
      <dl id="c-visitor"></dl>
      <button id="c-older" type="button" hidden>Older messages</button>
      <ol id="c-messages" role="log" aria-live="polite" aria-label="Messages"></ol>
      <p id="c-typing" class="muted" aria-live="polite"></p>
      <form id="reply-form">
        <label for="reply">Reply</label>
        <textarea id="reply" rows="3" maxlength="4000" placeholder="Write a reply (Enter sends, Shift+Enter for a new line)"></textarea>
        <button type="submit">Send</button>
      </form>
      <p id="c-error" role="alert"></p>
    </section>
    <p id="empty" class="muted">Choose a conversation.</p>
  </section>
</main>
</body>
</html>
`;

/** The page's icon (else the browser asks for /favicon.ico, which nothing serves, and logs the 404 as an error). */
export const INBOX_PAGE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#14324f"/><path d="M3 4h10v6H7l-3 3v-3H3z" fill="#fff"/></svg>`;

export const INBOX_PAGE_CSS = `
:root { font-family: system-ui, sans-serif; color: #1d2430; background: #f6f7f9; }
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; }
header { display: flex; justify-content: space-between; align-items: center; padding: 0.6rem 1.2rem; background: #14324f; color: #fff; }
header h1 { font-size: 1.2rem; margin: 0; } header h1 span { font-weight: 400; opacity: 0.85; }
.live { font-size: 0.8rem; opacity: 0.9; margin: 0 0.5rem; }
main { padding: 1rem 1.2rem; }
label { display: flex; flex-direction: column; font-size: 0.85rem; gap: 0.2rem; }
input, select, button, textarea { font: inherit; padding: 0.3rem 0.45rem; }
button { cursor: pointer; }
:focus-visible { outline: 3px solid #f5a623; outline-offset: 2px; }
.muted { color: #4a5563; font-size: 0.85rem; }
.hint { color: #4a5563; }
#signin-form { max-width: 28rem; background: #fff; padding: 1rem 1.2rem; border: 1px solid #dde1e6; }
#signin-form label { margin-bottom: 0.6rem; }
#signin-error, #c-error { color: #b3261e; }
#inbox { display: grid; grid-template-columns: minmax(16rem, 22rem) minmax(0, 1fr); gap: 1rem; align-items: start; }
#inbox > #empty { grid-column: 2; }
#lists { background: #fff; border: 1px solid #dde1e6; padding: 0.6rem; display: flex; flex-direction: column; gap: 0.5rem; }
.tabs { display: flex; gap: 0.3rem; }
.tab { flex: 1; border: 1px solid #9aa3af; background: #fff; border-radius: 4px; }
.tab[aria-pressed="true"] { background: #14324f; color: #fff; border-color: #14324f; }
#conversations { list-style: none; margin: 0; padding: 0; max-height: calc(100vh - 16rem); overflow-y: auto; }
#conversations li button { display: block; width: 100%; text-align: left; background: #fff; border: 0; border-bottom: 1px solid #e3e6ea; padding: 0.5rem; }
#conversations li button:hover { background: #eef3f8; }
#conversations li button[aria-current="true"] { background: #e1ecf7; }
.c-name { font-weight: 600; display: block; overflow-wrap: anywhere; }
.c-line { display: block; font-size: 0.8rem; color: #4a5563; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.unread { display: inline-block; min-width: 1.3rem; padding: 0 0.35rem; border-radius: 0.65rem; background: #b3261e; color: #fff; font-size: 0.75rem; text-align: center; margin-left: 0.3rem; }
#conversation { background: #fff; border: 1px solid #dde1e6; padding: 0.8rem 1rem; display: flex; flex-direction: column; gap: 0.5rem; }
.c-head { display: flex; justify-content: space-between; align-items: end; flex-wrap: wrap; gap: 0.6rem; }
.c-head h2 { margin: 0; font-size: 1.1rem; overflow-wrap: anywhere; }
.c-actions { display: flex; gap: 0.6rem; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.2rem 1rem; font-size: 0.85rem; margin: 0; }
dd { margin: 0; overflow-wrap: anywhere; } dt { font-weight: 600; }
#c-messages { list-style: none; margin: 0; padding: 0.5rem; display: flex; flex-direction: column; gap: 0.45rem; max-height: calc(100vh - 24rem); min-height: 8rem; overflow-y: auto; background: #f9fafb; border: 1px solid #e3e6ea; }
.msg { max-width: 75%; padding: 0.45rem 0.6rem; border-radius: 8px; white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.visitor { align-self: flex-start; background: #eef1f5; }
.msg.agent { align-self: flex-end; background: #14324f; color: #fff; }
.msg .who { display: block; font-size: 0.75rem; font-weight: 600; }
.msg .meta { display: block; font-size: 0.7rem; opacity: 0.85; margin-top: 0.15rem; }
#reply-form { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: 0.4rem; align-items: end; }
#reply-form label { grid-column: 1 / -1; }
#reply { width: 100%; resize: vertical; }
`;

export const INBOX_PAGE_JS = String.raw`'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var me = null;
  var socket = null;
  var filter = { status: 'open', assignee: '', inboxId: '' };
  var current = null;
  var seqs = {};
  var lastSeq = 0;
  var oldestSeq = 0;
  var visitorReadSeq = 0;
  var agents = [];
  var inboxNames = {};
  var pollTimer = null;
  var listTimer = null;
  var typingSentAt = 0;
  var typingTimer = null;

  function api(method, url, body, headers) {
    var h = Object.assign({ accept: 'application/json' }, headers || {});
    if (method !== 'GET' && me) h['x-csrf-token'] = me.csrfToken;
    if (body !== undefined) h['content-type'] = 'application/json';
    return fetch(url, { method: method, headers: h, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) }).then(
      function (res) { return res.json().then(function (json) { return { status: res.status, json: json }; }, function () { return { status: res.status, json: null }; }); },
      function () { return { status: 0, json: null }; }
    );
  }
  function failed(r) { return r.json ? r.json.code + ': ' + r.json.message : 'The server cannot be reached'; }

  function show(section) {
    $('signin').hidden = section !== 'signin';
    $('inbox').hidden = section !== 'inbox';
    $('who').hidden = section !== 'inbox';
  }

  function visitorName(c) { return c.visitor.name || c.visitor.email || (c.identified ? c.visitorId : 'Visitor ' + c.visitorId.slice(-6)); }
  function agentLabel(id) {
    if (!id) return 'unassigned';
    if (me && id === me.agentId) return 'you';
    var a = agents.filter(function (x) { return x.id === id; })[0];
    return (a && a.name) || id;
  }
  function time(iso) { try { return new Date(iso).toLocaleString(); } catch (e) { return iso; } }

  // The lists

  function loadList() {
    var q = new URLSearchParams({ status: filter.status, limit: '100' });
    if (filter.assignee) q.set('assignee', filter.assignee);
    if (filter.inboxId) q.set('inboxId', filter.inboxId);
    return api('GET', '/inbox/api/conversations?' + q.toString()).then(function (r) {
      if (r.status === 401) return signedOut();
      if (!r.json || !r.json.success) { $('list-status').textContent = failed(r); return; }
      var ul = $('conversations');
      var focused = document.activeElement && document.activeElement.closest && document.activeElement.closest('#conversations li');
      var focusedId = focused ? focused.dataset.channelId : null;
      ul.textContent = '';
      r.json.data.items.forEach(function (c) {
        var li = document.createElement('li');
        li.dataset.channelId = c.channelId;
        var b = document.createElement('button');
        b.type = 'button';
        if (current && current.channelId === c.channelId) b.setAttribute('aria-current', 'true');
        var name = document.createElement('span');
        name.className = 'c-name';
        name.textContent = visitorName(c);
        if (c.unread > 0 && !(current && current.channelId === c.channelId)) {
          var u = document.createElement('span');
          u.className = 'unread';
          u.textContent = String(c.unread);
          u.setAttribute('aria-label', c.unread + ' unread');
          name.appendChild(u);
        }
        var line1 = document.createElement('span');
        line1.className = 'c-line';
        line1.textContent = c.lastMessageText || '(no message yet)';
        var line2 = document.createElement('span');
        line2.className = 'c-line';
        line2.textContent = c.inboxName + ' \u00b7 ' + agentLabel(c.assignee) + (c.lastMessageAt ? ' \u00b7 ' + time(c.lastMessageAt) : '');
        b.appendChild(name);
        b.appendChild(line1);
        b.appendChild(line2);
        b.addEventListener('click', function () { openConversation(c.channelId); });
        li.appendChild(b);
        ul.appendChild(li);
        if (focusedId === c.channelId) b.focus();
      });
      var n = r.json.data.items.length;
      $('list-status').textContent = n + ' ' + filter.status + ' conversation' + (n === 1 ? '' : 's');
    });
  }
  // Debounced: a burst of socket events reloads the list once.
  function refreshList() { clearTimeout(listTimer); listTimer = setTimeout(loadList, 250); }

  // One conversation

  function messageItem(m) {
    var li = document.createElement('li');
    var fromVisitor = current && m.userId === current.visitorId;
    li.className = 'msg ' + (fromVisitor ? 'visitor' : 'agent');
    li.dataset.seq = String(m.seq);
    li.dataset.messageId = m.id;
    var who = document.createElement('span');
    who.className = 'who';
    who.textContent = fromVisitor ? visitorName(current) : m.userId === null ? 'system' : m.userId === me.agentId ? 'You' : (m.data && m.data.agentName) || agentLabel(m.userId);
    var text = document.createElement('span');
    text.className = 'text';
    text.textContent = m.deletedAt ? '(deleted)' : m.text;
    var meta = document.createElement('span');
    meta.className = 'meta';
    meta.textContent = time(m.createdAt);
    li.appendChild(who);
    li.appendChild(text);
    li.appendChild(meta);
    return li;
  }

  function addMessage(m) {
    if (seqs[m.seq]) {
      var t = document.querySelector('#c-messages li[data-seq="' + m.seq + '"] .text');
      if (t) t.textContent = m.deletedAt ? '(deleted)' : m.text;
      return;
    }
    seqs[m.seq] = true;
    var ol = $('c-messages');
    var after = null;
    var items = ol.querySelectorAll('li[data-seq]');
    for (var i = 0; i < items.length; i++) if (Number(items[i].dataset.seq) > m.seq) { after = items[i]; break; }
    var atBottom = ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40;
    ol.insertBefore(messageItem(m), after);
    if (m.seq > lastSeq) lastSeq = m.seq;
    if (!oldestSeq || m.seq < oldestSeq) oldestSeq = m.seq;
    if (atBottom || !after) ol.scrollTop = ol.scrollHeight;
    renderSeen();
  }

  // "Seen" under the newest agent message the visitor has read.
  function renderSeen() {
    document.querySelectorAll('#c-messages .seen').forEach(function (s) { s.remove(); });
    var mine = document.querySelectorAll('#c-messages li.agent');
    for (var i = mine.length - 1; i >= 0; i--) {
      if (Number(mine[i].dataset.seq) <= visitorReadSeq) {
        var s = document.createElement('span');
        s.className = 'seen';
        s.textContent = ' \u00b7 Seen by the visitor';
        mine[i].querySelector('.meta').appendChild(s);
        return;
      }
    }
  }

  function renderDetails(c) {
    $('c-title').textContent = visitorName(c);
    var dl = $('c-visitor');
    dl.textContent = '';
    [['Visitor', c.identified ? c.visitorId + ' (identified)' : 'anonymous (' + c.visitorId + ')'], ['Name', c.visitor.name || '\u2014'], ['Email', c.visitor.email || '\u2014'],
     ['Page', c.visitor.pageUrl || '\u2014'], ['Browser', c.visitor.userAgent || '\u2014'], ['Started', time(c.createdAt)], ['Inbox', inboxNames[c.inboxId] || c.inboxId]].forEach(function (kv) {
      var dt = document.createElement('dt'); dt.textContent = kv[0];
      var dd = document.createElement('dd'); dd.textContent = kv[1];
      dl.appendChild(dt); dl.appendChild(dd);
    });
    $('c-status').value = c.status;
    var sel = $('c-assignee');
    sel.textContent = '';
    var opts = [{ id: '', name: 'unassigned' }, { id: me.agentId, name: 'me (' + (me.agentName || me.agentId) + ')' }].concat(agents.filter(function (a) { return a.id !== me.agentId; }));
    if (c.assignee && !opts.some(function (o) { return o.id === c.assignee; })) opts.push({ id: c.assignee, name: c.assignee });
    opts.forEach(function (a) {
      var o = document.createElement('option');
      o.value = a.id;
      o.textContent = a.name || a.id;
      sel.appendChild(o);
    });
    sel.value = c.assignee || '';
  }

  function openConversation(channelId) {
    return api('GET', '/inbox/api/conversations/' + encodeURIComponent(channelId)).then(function (r) {
      if (r.status === 401) return signedOut();
      if (!r.json || !r.json.success) { $('c-error').textContent = failed(r); return; }
      var d = r.json.data;
      current = d.conversation;
      seqs = {};
      lastSeq = 0;
      oldestSeq = 0;
      visitorReadSeq = d.visitorReadSeq;
      $('c-messages').textContent = '';
      $('c-typing').textContent = '';
      $('c-error').textContent = '';
      renderDetails(current);
      d.messages.forEach(addMessage);
      $('c-older').hidden = !d.hasMore;
      $('conversation').hidden = false;
      $('empty').hidden = true;
      document.querySelectorAll('#conversations li button').forEach(function (b) {
        if (b.parentNode.dataset.channelId === channelId) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
      });
      // Joining makes this agent a member: the socket then gets the conversation's events.
      var joined = d.joined ? Promise.resolve() : api('POST', '/inbox/api/conversations/' + encodeURIComponent(channelId) + '/join', {});
      return joined.then(function () { markRead(); sync(); refreshList(); });
    });
  }

  function older() {
    if (!current || !oldestSeq) return;
    api('GET', '/inbox/api/conversations/' + encodeURIComponent(current.channelId) + '?beforeSeq=' + oldestSeq).then(function (r) {
      if (!r.json || !r.json.success) return;
      var ol = $('c-messages');
      var before = ol.scrollHeight;
      r.json.data.messages.forEach(addMessage);
      ol.scrollTop = ol.scrollHeight - before;
      $('c-older').hidden = !r.json.data.hasMore;
    });
  }

  function markRead() {
    if (!current || !lastSeq) return;
    api('POST', '/inbox/api/conversations/' + encodeURIComponent(current.channelId) + '/read', { seq: lastSeq });
  }

  function change(body) {
    if (!current) return;
    $('c-error').textContent = '';
    api('PATCH', '/inbox/api/conversations/' + encodeURIComponent(current.channelId), body).then(function (r) {
      if (!r.json || !r.json.success) { $('c-error').textContent = failed(r); renderDetails(current); return; }
      current = r.json.data;
      renderDetails(current);
      $('live').textContent = 'Saved';
      refreshList();
    });
  }

  function reply(text) {
    var clientMsgId = 'a' + Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
    stopTyping();
    return api('POST', '/inbox/api/conversations/' + encodeURIComponent(current.channelId) + '/messages', { text: text, clientMsgId: clientMsgId }).then(function (r) {
      if (!r.json || !r.json.success) { $('reply').value = text; $('c-error').textContent = failed(r); return; }
      addMessage(r.json.data.message);
      refreshList();
    });
  }

  function stopTyping() {
    clearTimeout(typingTimer);
    if (typingSentAt && socket && current) socket.emit('typing.stop', { channelId: current.channelId });
    typingSentAt = 0;
  }

  // Real time

  function sync() {
    if (!socket || !current || !socket.connected) return;
    var channelId = current.channelId;
    socket.emit('messages.sync', { channelId: channelId, afterSeq: lastSeq }, function (ack) {
      if (!ack || !ack.ok || !current || current.channelId !== channelId) return;
      ack.messages.forEach(addMessage);
      if (ack.messages.length) markRead();
    });
  }

  function connect() {
    if (socket || typeof io !== 'function') return;
    socket = io('/chat-sdk', { auth: function (cb) { cb({ token: me ? me.chatToken : '' }); } });
    socket.on('connect', function () { $('live').textContent = 'Live'; sync(); });
    socket.on('disconnect', function () { $('live').textContent = 'Reconnecting\u2026'; });
    socket.on('connect_error', function (err) {
      $('live').textContent = 'Offline';
      // Refused (an expired token): a fresh one from the session, then again.
      if (err && err.data) setTimeout(function () { checkSession().then(function () { if (socket && me) socket.connect(); }); }, 2000);
    });
    socket.on('message.new', function (p) {
      if (current && p.channelId === current.channelId) {
        addMessage(p.message);
        if (p.message.userId === current.visitorId) $('c-typing').textContent = '';
        if (document.visibilityState === 'visible') markRead();
      }
      refreshList();
    });
    socket.on('message.updated', function (p) { if (current && p.channelId === current.channelId) addMessage(p.message); });
    socket.on('message.deleted', function (p) { if (current && p.channelId === current.channelId) addMessage(p.message); });
    socket.on('typing.start', function (p) {
      if (current && p.channelId === current.channelId && p.userId !== me.agentId) $('c-typing').textContent = (p.userId === current.visitorId ? visitorName(current) : agentLabel(p.userId)) + ' is typing\u2026';
    });
    socket.on('typing.stop', function (p) { if (current && p.channelId === current.channelId && p.userId !== me.agentId) $('c-typing').textContent = ''; });
    socket.on('read', function (p) {
      if (current && p.channelId === current.channelId && p.userId === current.visitorId && p.lastReadSeq > visitorReadSeq) { visitorReadSeq = p.lastReadSeq; renderSeen(); }
    });
    socket.on('member.added', function () { refreshList(); });
    socket.on('revoked', function () { signedOut(); });
  }

  // Session

  function signedOut() {
    me = null;
    current = null;
    clearInterval(pollTimer);
    if (socket) { socket.disconnect(); socket = null; }
    $('conversation').hidden = true;
    $('empty').hidden = false;
    show('signin');
  }

  function signedIn(session) {
    var first = !me;
    me = session;
    $('who-name').textContent = (session.agentName ? session.agentName + ' \u00b7 ' : '') + session.agentId;
    show('inbox');
    if (!first) return Promise.resolve();
    // New conversations reach no agent's socket (nobody is a member yet): the list is read again every few seconds.
    clearInterval(pollTimer);
    pollTimer = setInterval(function () { if (document.visibilityState === 'visible') loadList(); }, 5000);
    connect();
    return Promise.all([
      api('GET', '/inbox/api/inboxes').then(function (r) {
        if (!r.json || !r.json.success) return;
        var sel = $('f-inbox');
        r.json.data.inboxes.forEach(function (i) {
          inboxNames[i.id] = i.name;
          var o = document.createElement('option'); o.value = i.id; o.textContent = i.name; sel.appendChild(o);
        });
      }),
      api('GET', '/inbox/api/agents').then(function (r) { if (r.json && r.json.success) agents = r.json.data.agents; })
    ]).then(loadList);
  }

  function checkSession() {
    return api('GET', '/inbox/api/session').then(function (r) {
      return r.json && r.json.success && r.json.data.signedIn ? signedIn(r.json.data) : signedOut();
    });
  }

  $('signin-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var field = $('credential');
    var credential = field.value.trim();
    // The key leaves the page with this one request and is not kept anywhere: the field is emptied at once.
    field.value = '';
    $('signin-error').textContent = '';
    api('POST', '/inbox/session', { agentName: $('agent-name').value.trim() }, { authorization: 'Bearer ' + credential }).then(function (r) {
      if (r.json && r.json.success) return signedIn(r.json.data);
      $('signin-error').textContent = failed(r);
    });
  });
  $('logout').addEventListener('click', function () { api('POST', '/inbox/session/end').then(signedOut); });
  document.querySelectorAll('.tab').forEach(function (b) {
    b.addEventListener('click', function () {
      filter.status = b.dataset.status;
      document.querySelectorAll('.tab').forEach(function (x) { x.setAttribute('aria-pressed', x === b ? 'true' : 'false'); });
      loadList();
    });
  });
  $('f-assignee').addEventListener('change', function (ev) { filter.assignee = ev.target.value; loadList(); });
  $('f-inbox').addEventListener('change', function (ev) { filter.inboxId = ev.target.value; loadList(); });
  $('c-status').addEventListener('change', function (ev) { change({ status: ev.target.value }); });
  $('c-assignee').addEventListener('change', function (ev) { change({ assignee: ev.target.value || null }); });
  $('c-older').addEventListener('click', older);
  $('reply-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var text = $('reply').value.trim();
    if (!text || !current) return;
    $('reply').value = '';
    reply(text);
  });
  $('reply').addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); $('reply-form').requestSubmit(); }
  });
  $('reply').addEventListener('input', function () {
    if (!socket || !current) return;
    if (Date.now() - typingSentAt > 2500) { typingSentAt = Date.now(); socket.emit('typing.start', { channelId: current.channelId }); }
    clearTimeout(typingTimer);
    typingTimer = setTimeout(stopTyping, 4000);
  });
  document.addEventListener('visibilitychange', function () { if (document.visibilityState === 'visible') { markRead(); if (me) loadList(); } });
  void checkSession();
})();
`;
