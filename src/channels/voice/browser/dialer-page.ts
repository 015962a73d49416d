/**
 * The dialer page's HTML, style and script, served by dialer-routes.ts. Plain browser JavaScript (no framework): it
 * signs in (a token in the URL fragment, or an API key exchanged once for a token; the key is never kept), registers
 * over SIP on a WebSocket with JsSIP, and places calls whose audio Ferry terminates and relays to a trunk.
 */

export const DIALER_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ferry dialer</title><link rel="stylesheet" href="/dialer/dialer.css"></head>
<body>
<main>
  <header><h1>Ferry dialer</h1><span id="identity"></span></header>
  <section id="signin" hidden>
    <p>Sign in with an API key that has the <code>voice:calls</code> scope. The key is exchanged for a short-lived dialer token and not kept.</p>
    <form id="signin-form">
      <label>API key <input id="apikey" type="password" autocomplete="off" placeholder="key_id:secret" required></label>
      <button type="submit">Sign in</button>
    </form>
    <p id="signin-error" class="error" role="alert"></p>
  </section>
  <section id="phone" hidden>
    <p id="status" role="status" aria-live="polite">Connecting…</p>
    <div id="incoming" hidden>
      <span id="incoming-from"></span>
      <button id="answer" type="button">Answer</button>
      <button id="decline" type="button">Decline</button>
    </div>
    <form id="dial-form">
      <input id="number" inputmode="tel" autocomplete="off" placeholder="+14155550100" aria-label="Number to call">
      <button id="call" type="submit">Call</button>
    </form>
    <div id="keypad" aria-label="Keypad">
      <button type="button" data-key="1">1</button><button type="button" data-key="2">2</button><button type="button" data-key="3">3</button>
      <button type="button" data-key="4">4</button><button type="button" data-key="5">5</button><button type="button" data-key="6">6</button>
      <button type="button" data-key="7">7</button><button type="button" data-key="8">8</button><button type="button" data-key="9">9</button>
      <button type="button" data-key="*">*</button><button type="button" data-key="0">0</button><button type="button" data-key="#">#</button>
    </div>
    <div id="controls">
      <button id="mute" type="button" disabled>Mute</button>
      <button id="hangup" type="button" disabled>Hang up</button>
      <button id="signout" type="button">Sign out</button>
    </div>
    <h2>Calls</h2>
    <ol id="log"></ol>
  </section>
</main>
<audio id="remote" autoplay></audio>
<script src="/dialer/jssip.js"></script>
<script src="/dialer/dialer.js"></script>
</body></html>
`;

export const DIALER_CSS = `
body { font: 15px/1.4 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
main { max-width: 420px; margin: 24px auto; background: #fff; border-radius: 10px; padding: 20px 24px; box-shadow: 0 1px 4px rgba(0,0,0,.12); }
header { display: flex; justify-content: space-between; align-items: baseline; }
h1 { font-size: 20px; margin: 0 0 12px; } h2 { font-size: 15px; margin: 18px 0 6px; }
#identity { color: #5a6270; font-size: 13px; }
#status { padding: 8px 10px; border-radius: 6px; background: #eef1f6; margin: 0 0 12px; }
#status[data-kind="ready"] { background: #e7f6ec; } #status[data-kind="live"] { background: #dff1ff; } #status[data-kind="error"] { background: #fdecec; }
#dial-form { display: flex; gap: 8px; } #number { flex: 1; font-size: 18px; padding: 8px; }
button { font-size: 15px; padding: 8px 14px; border-radius: 6px; border: 1px solid #c7ccd6; background: #fff; cursor: pointer; }
button[disabled] { opacity: .5; cursor: default; }
#call { background: #1f8b4c; color: #fff; border-color: #1f8b4c; } #hangup { background: #c62828; color: #fff; border-color: #c62828; }
#keypad { display: grid; grid-template-columns: repeat(3, 1fr); gap: 6px; margin: 12px 0; } #keypad button { font-size: 18px; padding: 10px; }
#controls { display: flex; gap: 8px; } #mute[aria-pressed="true"] { background: #ffe9b3; }
#log { padding-left: 20px; margin: 0; font-size: 13px; } #log li { margin: 2px 0; }
#incoming { display: flex; gap: 8px; align-items: center; margin: 0 0 12px; padding: 8px 10px; border-radius: 6px; background: #fff4d6; }
#incoming[hidden] { display: none; } #incoming-from { flex: 1; font-weight: 600; }
#answer { background: #1f8b4c; color: #fff; border-color: #1f8b4c; }
.error { color: #c62828; } label { display: block; margin: 8px 0; } #apikey { width: 100%; padding: 6px; }
`;

export const DIALER_SCRIPT = `(function () {
  'use strict';
  var TOKEN_KEY = 'ferry-dialer-token';
  var LOG_KEY = 'ferry-dialer-log';
  var $ = function (id) { return document.getElementById(id); };
  var ua = null, session = null, claims = null, answeredAt = 0, timer = null, current = null;

  function setStatus(text, kind) { $('status').textContent = text; $('status').dataset.kind = kind || ''; }
  function show(which) { $('signin').hidden = which !== 'signin'; $('phone').hidden = which !== 'phone'; }
  function claimsOf(token) {
    try { return JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))); } catch (e) { return null; }
  }
  function tokenFromPage() {
    var m = /(?:^|&)token=([^&]+)/.exec(location.hash.slice(1));
    if (m) { history.replaceState(null, '', location.pathname); sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1])); }
    return sessionStorage.getItem(TOKEN_KEY);
  }
  function readLog() { try { return JSON.parse(localStorage.getItem(LOG_KEY) || '[]'); } catch (e) { return []; } }
  function renderLog() {
    var list = $('log'); list.textContent = '';
    readLog().forEach(function (c) {
      var li = document.createElement('li');
      li.textContent = new Date(c.at).toLocaleTimeString() + '  ' + c.number + '  ' + c.outcome + (c.seconds ? ' (' + c.seconds + ' s)' : '');
      if (c.callId) li.title = c.callId;
      list.appendChild(li);
    });
  }
  function logCall(outcome) {
    if (!current) return;
    var entry = { at: current.at, number: current.number, outcome: outcome, seconds: answeredAt ? Math.round((Date.now() - answeredAt) / 1000) : 0, callId: current.callId };
    localStorage.setItem(LOG_KEY, JSON.stringify([entry].concat(readLog()).slice(0, 50)));
    current = null;
    renderLog();
  }
  function inCall(on) {
    $('call').disabled = on; $('hangup').disabled = !on; $('mute').disabled = !on;
    $('mute').setAttribute('aria-pressed', 'false'); $('mute').textContent = 'Mute';
    if (!on && timer) { clearInterval(timer); timer = null; }
  }
  function callIdFrom(response) { try { return response && response.getHeader('X-Ferry-Call-Id') || null; } catch (e) { return null; } }

  function start(token) {
    claims = claimsOf(token);
    if (!claims || claims.exp * 1000 <= Date.now()) { sessionStorage.removeItem(TOKEN_KEY); show('signin'); $('signin-error').textContent = claims ? 'The dialer token has expired: sign in again.' : ''; return; }
    show('phone'); renderLog(); inCall(false);
    $('identity').textContent = claims.idn + ' · +' + claims.frm;
    var url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/voice/dialer/sip?token=' + encodeURIComponent(token);
    ua = new JsSIP.UA({ sockets: [new JsSIP.WebSocketInterface(url)], uri: 'sip:' + claims.idn + '@' + location.hostname, register: true, session_timers: false, user_agent: 'Ferry dialer' });
    ua.on('connected', function () { setStatus('Connected, signing in…'); });
    ua.on('disconnected', function () { if (!session) setStatus('Disconnected from Ferry: reconnecting…', 'error'); });
    ua.on('registered', function () { if (!session) setStatus('Ready', 'ready'); });
    ua.on('registrationFailed', function (e) { setStatus('Not signed in: ' + (e.response ? e.response.status_code + ' ' + e.response.reason_phrase : e.cause), 'error'); });
    ua.on('newRTCSession', function (e) { if (e.originator === 'remote') incoming(e.session, e.request); });
    ua.start();
  }

  /** A call for this browser: shown with Answer and Decline; busy when already on a call. */
  function incoming(s, request) {
    if (session) { s.terminate({ status_code: 486, reason_phrase: 'Busy Here' }); return; }
    var from = s.remote_identity && s.remote_identity.uri ? s.remote_identity.uri.user : 'anonymous';
    session = s; answeredAt = 0;
    current = { at: Date.now(), number: from, callId: callIdFrom(request), incoming: true };
    $('incoming-from').textContent = 'Incoming call from ' + from;
    $('incoming').hidden = false;
    setStatus('Incoming call from ' + from, 'live');
    s.on('peerconnection', function (e) { attachAudio(e.peerconnection); });
    s.on('accepted', function () {
      $('incoming').hidden = true; inCall(true);
      answeredAt = Date.now();
      setStatus('In call with ' + from, 'live');
      timer = setInterval(function () { setStatus('In call with ' + from + ' · ' + Math.round((Date.now() - answeredAt) / 1000) + ' s', 'live'); }, 1000);
    });
    s.on('ended', function () { $('incoming').hidden = true; inCall(false); session = null; setStatus('Call ended', 'ready'); logCall('incoming, ended'); });
    s.on('failed', function (e) {
      $('incoming').hidden = true; inCall(false); session = null;
      var missed = e.cause === 'Canceled' || e.cause === 'Request Timeout';
      setStatus(missed ? 'Missed call from ' + from : 'Call not taken', 'ready'); logCall(missed ? 'missed' : 'incoming, declined');
    });
  }

  function attachAudio(pc) {
    pc.addEventListener('track', function (ev) { $('remote').srcObject = ev.streams[0] || new MediaStream([ev.track]); });
  }

  function call(number) {
    if (!/^\\+?[0-9]{3,15}$/.test(number)) { setStatus('Dial a number in E.164, e.g. +14155550100', 'error'); return; }
    if (number.charAt(0) !== '+') number = '+' + number;
    answeredAt = 0;
    current = { at: Date.now(), number: number, callId: null };
    setStatus('Calling ' + number + '…', 'live'); inCall(true);
    session = ua.call('sip:' + number + '@' + location.hostname, {
      mediaConstraints: { audio: true, video: false },
      pcConfig: { iceServers: [] },
      eventHandlers: {
        progress: function (e) { current && (current.callId = callIdFrom(e.response) || current.callId); setStatus('Ringing ' + number + '…', 'live'); },
        accepted: function (e) {
          current && (current.callId = callIdFrom(e.response) || current.callId);
          answeredAt = Date.now();
          setStatus('In call with ' + number, 'live');
          timer = setInterval(function () { setStatus('In call with ' + number + ' · ' + Math.round((Date.now() - answeredAt) / 1000) + ' s', 'live'); }, 1000);
        },
        ended: function () { inCall(false); session = null; setStatus('Call ended', 'ready'); logCall('ended'); },
        failed: function (e) {
          inCall(false); session = null;
          var why = e.message && e.message.status_code ? e.message.status_code + ' ' + e.message.reason_phrase : e.cause;
          setStatus('Call failed: ' + why, 'error'); logCall('failed: ' + why);
        },
      },
    });
    if (session.connection) attachAudio(session.connection);
    else session.on('peerconnection', function (e) { attachAudio(e.peerconnection); });
  }

  $('dial-form').addEventListener('submit', function (ev) { ev.preventDefault(); if (!session) call($('number').value.trim()); });
  $('hangup').addEventListener('click', function () { if (session) session.terminate(); });
  $('answer').addEventListener('click', function () {
    if (session && !session.isEstablished()) session.answer({ mediaConstraints: { audio: true, video: false }, pcConfig: { iceServers: [] } });
  });
  $('decline').addEventListener('click', function () { if (session && !session.isEstablished()) session.terminate({ status_code: 486, reason_phrase: 'Busy Here' }); });
  $('mute').addEventListener('click', function () {
    if (!session) return;
    var muted = $('mute').getAttribute('aria-pressed') === 'true';
    if (muted) session.unmute({ audio: true }); else session.mute({ audio: true });
    $('mute').setAttribute('aria-pressed', String(!muted)); $('mute').textContent = muted ? 'Mute' : 'Unmute';
  });
  Array.prototype.forEach.call(document.querySelectorAll('#keypad button'), function (b) {
    b.addEventListener('click', function () {
      var key = b.dataset.key;
      if (session && session.isEstablished()) session.sendDTMF(key, { transportType: 'RFC2833', duration: 160 });
      else $('number').value += key;
    });
  });
  $('signout').addEventListener('click', function () { sessionStorage.removeItem(TOKEN_KEY); if (ua) ua.stop(); ua = null; show('signin'); });
  $('signin-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    $('signin-error').textContent = '';
    fetch('/v1/voice/dialer/token', { method: 'POST', headers: { authorization: 'Basic ' + btoa($('apikey').value.trim()), 'content-type': 'application/json' }, body: '{}' })
      .then(function (res) { return res.json().then(function (body) { if (!res.ok) throw new Error(body.message || res.statusText); return body.data.token; }); })
      .then(function (token) { $('apikey').value = ''; sessionStorage.setItem(TOKEN_KEY, token); start(token); })
      .catch(function (err) { $('signin-error').textContent = 'Sign-in failed: ' + err.message; });
  });

  var token = tokenFromPage();
  if (token) start(token); else show('signin');
})();
`;
