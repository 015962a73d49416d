import { randomBytes } from 'node:crypto';
import t from 'tap';
import { call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

async function customer(d: TestDaemon, name: string, scopes: string | string[] = 'all') {
  const account = await d.adminCall('POST', '/admin/accounts', { name, defaultCountry: 'GH' });
  const key = await d.adminCall('POST', '/admin/keys', { account: name, scopes });
  return { accountId: account.id as string, keyId: key.keyId as string, token: key.token as string };
}

/** Signs in to the page with a key; returns the session cookie and CSRF token. */
async function signIn(base: string, token: string) {
  const r = await call(base, 'POST', '/logs/session', { headers: { authorization: `Bearer ${token}` } });
  const setCookie = r.headers.get('set-cookie') ?? '';
  return { r, setCookie, cookie: setCookie.split(';')[0], csrf: r.json?.data?.csrfToken as string };
}

/** Reads server-sent events from the tail until `want` holds or the time is up. */
async function tailUntil(base: string, cookie: string, want: (events: Array<{ event: string; data: any; id?: string }>) => boolean, ms = 10_000) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const events: Array<{ event: string; data: any; id?: string }> = [];
  try {
    const res = await fetch(`${base}/logs/api/tail`, { headers: { cookie, accept: 'text/event-stream' }, signal: ac.signal });
    if (res.status !== 200) throw new Error(`tail answered ${res.status}`);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let sep;
      while ((sep = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, sep);
        buf = buf.slice(sep + 2);
        const ev: { event: string; data: any; id?: string } = { event: 'message', data: null };
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) ev.event = line.slice(7);
          else if (line.startsWith('data: ')) ev.data = JSON.parse(line.slice(6));
          else if (line.startsWith('id: ')) ev.id = line.slice(4);
        }
        if (ev.data) events.push(ev);
      }
      if (want(events)) break;
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return events;
}

t.test(`the /logs page's API: sessions, CSRF, isolation, tail (${backendLabel})`, async (t) => {
  const d = await startDaemon({ FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => d.stop());
  const acme = await customer(d, 'acme');
  const other = await customer(d, 'other');
  const smsOnly = await customer(d, 'smsonly', ['sms:send']);

  t.test('the page is served with a strict CSP; its API needs a session', async (t) => {
    const page = await call(d.api, 'GET', '/logs');
    t.equal(page.status, 200);
    t.match(page.headers.get('content-type'), /text\/html/);
    t.match(page.headers.get('content-security-policy'), /script-src 'self'/);
    t.notMatch(page.text, /<script>[^<]/, 'no inline script');
    const js = await call(d.api, 'GET', '/logs/assets/logs.js');
    t.equal(js.status, 200);
    const none = await call(d.api, 'GET', '/logs/api/requests');
    t.equal(none.status, 401);
    t.equal(none.json.code, 'LOGS_SESSION_REQUIRED');
    const forged = await call(d.api, 'GET', '/logs/api/requests', { headers: { cookie: 'ferry_logs_session=forged' } });
    t.equal(forged.json.code, 'LOGS_SESSION_REQUIRED');
  });

  t.test('sign-in: the API key opens an HttpOnly SameSite=Strict session; the key is not in the cookie', async (t) => {
    const s = await signIn(d.api, acme.token);
    t.equal(s.r.status, 200, s.r.text);
    t.match(s.setCookie, /HttpOnly/);
    t.match(s.setCookie, /SameSite=Strict/);
    t.match(s.setCookie, /Path=\/logs/);
    t.notMatch(s.setCookie, acme.token);
    t.notMatch(s.setCookie, acme.keyId);
    t.ok(s.csrf);
    const { rows } = await d.daemon.db.query<{ token_hash: string }>('SELECT token_hash FROM log_sessions');
    t.notOk(rows.some((r) => s.cookie.includes(r.token_hash)), 'only a hash of the session token is stored');
    const bad = await signIn(d.api, Buffer.from(`${acme.keyId}:wrong`).toString('base64'));
    t.equal(bad.r.json.code, 'INVALID_CREDENTIALS');
    const scope = await signIn(d.api, smsOnly.token);
    t.equal(scope.r.json.code, 'INSUFFICIENT_SCOPE');
    t.equal(scope.setCookie, '');
  });

  t.test("a session sees its own account's logs only; sign-out needs the CSRF token", async (t) => {
    const sent = await call(d.api, 'GET', '/v1/account/balance', { token: acme.token });
    const theirs = await call(d.api, 'GET', '/v1/account/balance', { token: other.token });
    const s = await signIn(d.api, acme.token);
    const until = Date.now() + 10_000;
    let items: Array<{ requestId: string }> = [];
    while (Date.now() < until) {
      items = (await call(d.api, 'GET', '/logs/api/requests', { headers: { cookie: s.cookie } })).json.data.items;
      if (items.some((i) => i.requestId === sent.json.requestId)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    t.ok(items.some((i) => i.requestId === sent.json.requestId));
    t.notOk(items.some((i) => i.requestId === theirs.json.requestId));
    const detail = await call(d.api, 'GET', `/logs/api/requests/${sent.json.requestId}`, { headers: { cookie: s.cookie } });
    t.equal(detail.json.code, 'LOG_FOUND');
    const foreign = await call(d.api, 'GET', `/logs/api/requests/${theirs.json.requestId}`, { headers: { cookie: s.cookie } });
    t.equal(foreign.json.code, 'LOG_NOT_FOUND');
    const noCsrf = await call(d.api, 'POST', '/logs/session/end', { headers: { cookie: s.cookie } });
    t.equal(noCsrf.status, 403);
    t.equal(noCsrf.json.code, 'CSRF_TOKEN_INVALID');
    const wrongCsrf = await call(d.api, 'POST', '/logs/session/end', { headers: { cookie: s.cookie, 'x-csrf-token': (await signIn(d.api, acme.token)).csrf } });
    t.equal(wrongCsrf.json.code, 'CSRF_TOKEN_INVALID', "another session's token does not do");
    const end = await call(d.api, 'POST', '/logs/session/end', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
    t.equal(end.status, 200, end.text);
    t.match(end.headers.get('set-cookie'), /Max-Age=0/);
    const after = await call(d.api, 'GET', '/logs/api/requests', { headers: { cookie: s.cookie } });
    t.equal(after.json.code, 'LOGS_SESSION_REQUIRED');
  });

  t.test('the live tail streams new requests of the account as server-sent events', async (t) => {
    const s = await signIn(d.api, acme.token);
    let made: string | null = null;
    const events = await tailUntil(d.api, s.cookie, (evs) => {
      if (!made) {
        made = 'pending';
        void call(d.api, 'GET', '/v1/sms/status/msg_tail', { token: acme.token }).then((r) => (made = r.json.requestId));
        void call(d.api, 'GET', '/v1/account/balance', { token: other.token });
      }
      return evs.some((e) => e.data.requestId === made);
    });
    const mine = events.find((e) => e.data.requestId === made);
    t.ok(mine, 'the new request arrived on the tail');
    t.match(mine?.data, { method: 'GET', status: 404, errorCode: 'MESSAGE_NOT_FOUND' });
    t.ok(events.every((e) => e.data.keyId === acme.keyId), "never another account's");
  });
  t.test('a row numbered before one already sent, committed after it, still reaches the tail once', async (t) => {
    const s = await signIn(d.api, acme.token);
    const { rows } = await d.daemon.db.query<{ id: string | null }>('SELECT max(id) AS id FROM request_logs');
    const base = Number(rows[0].id ?? 0) + 100_000;
    const insert = (id: number, requestId: string) =>
      d.daemon.db.query(
        `INSERT INTO request_logs (id, request_id, at, method, route, path, product, status, latency_ms, key_id, account_id)
         VALUES ($1, $2, $3, 'GET', '/v1/account/balance', '/v1/account/balance', 'account', 200, 1, $4, $5)`,
        [id, requestId, Date.now(), acme.keyId, acme.accountId],
      );
    let step = 0;
    const events = await tailUntil(d.api, s.cookie, (evs) => {
      if (step === 0) {
        step = 1;
        void insert(base + 10, 'req_numbered_later').then(() => (step = 2));
      }
      if (step === 2 && evs.some((e) => e.data.requestId === 'req_numbered_later')) {
        step = 3;
        void insert(base + 5, 'req_numbered_earlier');
      }
      return evs.some((e) => e.data.requestId === 'req_numbered_earlier');
    });
    t.same(
      events.filter((e) => e.data.requestId.startsWith('req_numbered')).map((e) => e.data.requestId),
      ['req_numbered_later', 'req_numbered_earlier'],
      'both, each once',
    );
  });
});

t.test('a tail held on one instance shows requests another instance served', { skip: process.env.DATABASE_URL ? false : 'several instances share a Postgres server; the embedded database is one process' }, async (t) => {
  const secret = randomBytes(32).toString('base64');
  const a = await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret, FERRY_LOGS_FLUSH_MS: '20' });
  t.teardown(() => a.stop());
  const b = await startDaemon({
    FERRY_SECURITY_SECRET_KEY: secret,
    FERRY_LOGS_FLUSH_MS: '20',
    DATABASE_URL: a.reuse.env.DATABASE_URL,
    ...(a.reuse.env.FERRY_REDIS_KEY_PREFIX ? { FERRY_REDIS_KEY_PREFIX: a.reuse.env.FERRY_REDIS_KEY_PREFIX } : {}),
  });
  t.teardown(() => b.stop());
  const acme = await customer(a, 'acme');
  const s = await signIn(a.api, acme.token);
  let made: string | null = null;
  const events = await tailUntil(b.api, s.cookie, (evs) => {
    if (!made) {
      made = 'pending';
      void call(a.api, 'GET', '/v1/account/balance', { token: acme.token }).then((r) => (made = r.json.requestId));
    }
    return evs.some((e) => e.data.requestId === made);
  });
  t.ok(events.some((e) => e.data.requestId === made), 'session opened on A, tail on B, request served by A');
});
