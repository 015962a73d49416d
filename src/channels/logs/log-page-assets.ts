/**
 * The /logs page: one HTML document, its stylesheet and its script, served by the daemon (no build step, no inline
 * script, so the Content-Security-Policy can forbid any). Everything shown is set with textContent, never as HTML:
 * paths and user agents in the logs are the callers' text.
 */
export const LOG_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ferry · request logs</title>
<link rel="icon" href="/logs/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/logs/assets/logs.css">
<script src="/logs/assets/logs.js" defer></script>
</head>
<body>
<header>
  <h1>Ferry <span>request logs</span></h1>
  <div id="who" hidden><span id="who-key"></span> <button id="logout" type="button">Sign out</button></div>
</header>
<main>
  <section id="signin" hidden>
    <form id="signin-form" autocomplete="off">
      <h2>Sign in with an API key</h2>
      <p>The key needs the <code>logs:read</code> scope. It is sent once to open a session and is not kept by this page.</p>
      <label>API key <input id="credential" name="credential" type="password" placeholder="keyId:secret, or its base64 token" required></label>
      <button type="submit">Sign in</button>
      <p id="signin-error" role="alert"></p>
    </form>
  </section>
  <section id="logs" hidden>
    <form id="filters">
      <label>Status <select id="f-status"><option value="">any</option><option>2xx</option><option>3xx</option><option>4xx</option><option>5xx</option></select></label>
      <label>Method <select id="f-method"><option value="">any</option><option>GET</option><option>POST</option><option>PUT</option><option>PATCH</option><option>DELETE</option></select></label>
      <label>Path <input id="f-path" placeholder="/v1/sms"></label>
      <label>Key <input id="f-key" placeholder="ak_…"></label>
      <label>From <input id="f-from" type="datetime-local" step="1"></label>
      <label>To <input id="f-to" type="datetime-local" step="1"></label>
      <label>Request id <input id="f-request" placeholder="req_…"></label>
      <button type="submit" id="apply">Apply</button>
      <label class="tail"><input id="tail" type="checkbox"> Live tail</label>
    </form>
    <p id="status-line" aria-live="polite"></p>
    <table id="rows">
      <thead><tr><th>Time</th><th>Method</th><th>Path</th><th>Status</th><th>Latency</th><th>Key</th><th>Request id</th></tr></thead>
      <tbody></tbody>
    </table>
    <button id="older" type="button" hidden>Older</button>
    <aside id="detail" hidden>
      <h2>Request <span id="detail-id"></span> <button id="detail-close" type="button">Close</button></h2>
      <dl id="detail-fields"></dl>
      <h3>Request body</h3><pre id="detail-request"></pre>
      <h3>Response body</h3><pre id="detail-response"></pre>
    </aside>
  </section>
</main>
</body>
</html>
`;

/** The page's icon (else the browser asks for /favicon.ico, which nothing serves, and logs the 404 as an error). */
export const LOG_PAGE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#14324f"/><path d="M3 10h10l-2 3H5z" fill="#fff"/></svg>`;

export const LOG_PAGE_CSS = `
:root { font-family: system-ui, sans-serif; color: #1d2430; background: #f6f7f9; }
header { display: flex; justify-content: space-between; align-items: center; padding: 0.6rem 1.2rem; background: #14324f; color: #fff; }
header h1 { font-size: 1.2rem; margin: 0; } header h1 span { font-weight: 400; opacity: 0.8; }
main { padding: 1rem 1.2rem; }
form#filters { display: flex; flex-wrap: wrap; gap: 0.6rem; align-items: end; margin-bottom: 0.6rem; }
label { display: flex; flex-direction: column; font-size: 0.8rem; gap: 0.2rem; }
label.tail { flex-direction: row; align-items: center; gap: 0.3rem; }
input, select, button { font: inherit; padding: 0.25rem 0.4rem; }
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; }
/* Fixed columns that wrap long paths and ids: the table never grows wider than the window. */
table { border-collapse: collapse; width: 100%; table-layout: fixed; background: #fff; font-size: 0.85rem; }
th, td { text-align: left; padding: 0.3rem 0.5rem; border-bottom: 1px solid #e3e6ea; overflow-wrap: anywhere; vertical-align: top; }
th:nth-child(1) { width: 11.5rem; } th:nth-child(2) { width: 5.5rem; } th:nth-child(4) { width: 4.5rem; } th:nth-child(5) { width: 5.5rem; }
th:nth-child(6) { width: 15.5rem; } th:nth-child(7) { width: 18rem; }
tbody tr { cursor: pointer; } tbody tr:hover { background: #eef3f8; }
tr.new { animation: flash 1.5s; } @keyframes flash { from { background: #fff6c2; } to { background: transparent; } }
td.s2 { color: #17753a; } td.s4 { color: #b45309; font-weight: 600; } td.s5 { color: #b91c1c; font-weight: 600; }
#signin-form { max-width: 28rem; background: #fff; padding: 1rem 1.2rem; border: 1px solid #dde1e6; }
#signin-form label { margin-bottom: 0.6rem; }
#signin-error { color: #b91c1c; }
aside#detail { margin-top: 1rem; background: #fff; border: 1px solid #dde1e6; padding: 0.6rem 1rem; scroll-margin-top: 0.5rem; }
pre { white-space: pre-wrap; word-break: break-all; background: #f3f4f6; padding: 0.5rem; font-size: 0.8rem; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.2rem 1rem; font-size: 0.85rem; }
dd { margin: 0; overflow-wrap: anywhere; }
dt { font-weight: 600; }
h2 button { font-size: 0.8rem; vertical-align: middle; }
`;

export const LOG_PAGE_JS = `'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  let csrf = null;
  let cursor = null;
  let tail = null;
  let filter = {};

  async function api(method, url, opts) {
    const headers = Object.assign({ accept: 'application/json' }, (opts && opts.headers) || {});
    if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
    const res = await fetch(url, { method, headers, credentials: 'same-origin', body: opts && opts.body });
    let json = null;
    try { json = await res.json(); } catch (e) { json = null; }
    return { status: res.status, json };
  }

  function show(section) {
    $('signin').hidden = section !== 'signin';
    $('logs').hidden = section !== 'logs';
    $('who').hidden = section !== 'logs';
  }

  function statusClass(s) { return 's' + String(s).charAt(0); }

  function row(item, fresh) {
    const tr = document.createElement('tr');
    tr.dataset.requestId = item.requestId;
    if (fresh) tr.className = 'new';
    const cells = [new Date(item.at).toLocaleString(), item.method, item.path, String(item.status), item.latencyMs + ' ms', item.keyId || '—', item.requestId];
    cells.forEach((text, i) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (i === 3) td.className = statusClass(item.status);
      tr.appendChild(td);
    });
    tr.addEventListener('click', () => detail(item.requestId));
    return tr;
  }

  function readFilter() {
    const f = {};
    const set = (k, v) => { if (v) f[k] = v; };
    set('status', $('f-status').value);
    set('method', $('f-method').value);
    set('path', $('f-path').value.trim());
    set('keyId', $('f-key').value.trim());
    set('requestId', $('f-request').value.trim());
    if ($('f-from').value) f.from = new Date($('f-from').value).toISOString();
    if ($('f-to').value) f.to = new Date($('f-to').value).toISOString();
    return f;
  }

  function matches(item) {
    if (filter.status) {
      const s = String(item.status);
      if (/xx$/.test(filter.status) ? s.charAt(0) !== filter.status.charAt(0) : s !== filter.status) return false;
    }
    if (filter.method && item.method !== filter.method) return false;
    if (filter.path && item.path.indexOf(filter.path) !== 0) return false;
    if (filter.keyId && item.keyId !== filter.keyId) return false;
    if (filter.requestId && item.requestId !== filter.requestId) return false;
    if (filter.from && Date.parse(item.at) < Date.parse(filter.from)) return false;
    if (filter.to && Date.parse(item.at) > Date.parse(filter.to)) return false;
    return true;
  }

  async function load(more) {
    const q = new URLSearchParams(filter);
    if (more && cursor) q.set('cursor', cursor);
    const r = await api('GET', '/logs/api/requests?' + q.toString());
    if (r.status === 401) return signedOut();
    if (!r.json || !r.json.success) { $('status-line').textContent = (r.json && r.json.code + ': ' + r.json.message) || 'Error'; return; }
    const body = $('rows').tBodies[0];
    if (!more) body.textContent = '';
    r.json.data.items.forEach((it) => body.appendChild(row(it, false)));
    cursor = r.json.data.nextCursor;
    $('older').hidden = !cursor;
    $('status-line').textContent = body.rows.length + ' request' + (body.rows.length === 1 ? '' : 's') + ' shown';
  }

  async function detail(requestId) {
    const r = await api('GET', '/logs/api/requests/' + encodeURIComponent(requestId));
    if (!r.json || !r.json.success) return;
    const d = r.json.data;
    $('detail-id').textContent = d.requestId;
    const dl = $('detail-fields');
    dl.textContent = '';
    [['Time', d.at], ['Method', d.method], ['Path', d.path], ['Route', d.route], ['Status', String(d.status)], ['Error code', d.errorCode || '—'],
     ['Latency', d.latencyMs + ' ms'], ['Key', d.keyId || '—'], ['Client', d.clientIp || '—'], ['User agent', d.userAgent || '—'],
     ['Idempotency key', d.idempotencyKey || '—']].forEach(([k, v]) => {
      const dt = document.createElement('dt'); dt.textContent = k;
      const dd = document.createElement('dd'); dd.textContent = v;
      dl.appendChild(dt); dl.appendChild(dd);
    });
    const pretty = (s) => { if (!s) return '(none)'; try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; } };
    $('detail-request').textContent = pretty(d.requestBody);
    $('detail-response').textContent = pretty(d.responseBody);
    $('detail').hidden = false;
    // The detail sits below the rows (a page of them is tall): bring it into view.
    $('detail').scrollIntoView({ block: 'start' });
  }

  function startTail() {
    stopTail();
    tail = new EventSource('/logs/api/tail');
    tail.addEventListener('request', (ev) => {
      const item = JSON.parse(ev.data);
      if (!matches(item)) return;
      const body = $('rows').tBodies[0];
      if (body.querySelector('tr[data-request-id="' + CSS.escape(item.requestId) + '"]')) return;
      body.insertBefore(row(item, true), body.firstChild);
    });
    // The server ends a stream after a while (the browser would reconnect) or when the session ended (its key revoked).
    tail.addEventListener('end', () => { stopTail(); $('tail').checked = false; void checkSession(); });
    $('status-line').textContent = 'Live tail on';
  }

  function stopTail() {
    if (tail) { tail.close(); tail = null; }
  }

  function signedOut() {
    stopTail();
    csrf = null;
    show('signin');
  }

  async function signedIn(session) {
    csrf = session.csrfToken;
    $('who-key').textContent = session.keyId;
    show('logs');
    filter = readFilter();
    await load(false);
  }

  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const field = $('credential');
    const credential = field.value.trim();
    // The key leaves the page with this one request and is not kept anywhere: the field is emptied at once.
    field.value = '';
    $('signin-error').textContent = '';
    const r = await api('POST', '/logs/session', { headers: { authorization: 'Bearer ' + credential } });
    if (r.json && r.json.success) return signedIn(r.json.data);
    $('signin-error').textContent = r.json ? r.json.code + ': ' + r.json.message : 'Sign-in failed';
  });
  $('logout').addEventListener('click', async () => { await api('POST', '/logs/session/end'); signedOut(); });
  $('filters').addEventListener('submit', (ev) => { ev.preventDefault(); filter = readFilter(); void load(false); });
  $('older').addEventListener('click', () => void load(true));
  $('detail-close').addEventListener('click', () => { $('detail').hidden = true; });
  $('tail').addEventListener('change', (ev) => { if (ev.target.checked) startTail(); else stopTail(); });

  async function checkSession() {
    const r = await api('GET', '/logs/api/session');
    return r.json && r.json.success && r.json.data.signedIn ? signedIn(r.json.data) : signedOut();
  }
  void checkSession();
})();
`;
