// A /logs session lives no longer than its key's right to open one: revoke the key, expire it, remove its logs:read
// scope or suspend its account, and the next page API call answers 401 and an open live tail ends. With Postgres (and
// Redis) two daemons share the store: the key is changed through instance A, the session is held on instance B.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { call, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { backendLabel, DATABASE_URL } from '../../helpers/env.js';

/** A live tail opened with a session cookie; `closed` settles when the server ends the stream (with its events). */
async function openTail(base: string, cookie: string, ms = 20_000) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const res = await fetch(`${base}/logs/api/tail`, { headers: { cookie, accept: 'text/event-stream' }, signal: ac.signal });
  if (res.status !== 200) throw new Error(`tail answered ${res.status}`);
  const reader = res.body!.getReader();
  const closed = (async () => {
    const events: string[] = [];
    let buf = '';
    const dec = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return { ended: true, events };
        buf += dec.decode(value, { stream: true });
        for (const m of buf.matchAll(/^event: (\w+)$/gm)) events.push(m[1]);
        buf = buf.slice(buf.lastIndexOf('\n\n') + 2);
      }
    } catch {
      return { ended: false, events }; // aborted: the server never ended it
    } finally {
      clearTimeout(timer);
    }
  })();
  return { closed, abort: () => ac.abort() };
}

t.test(`a /logs session ends with its key (${backendLabel}${DATABASE_URL ? ', two instances' : ''})`, async (t) => {
  const secret = randomBytes(32).toString('base64');
  const a = await startDaemon({ FERRY_SECURITY_SECRET_KEY: secret });
  t.teardown(() => a.stop());
  // B holds the sessions; A is where keys and accounts are changed (the same daemon on the embedded database).
  let b: TestDaemon = a;
  if (DATABASE_URL) {
    b = await startDaemon({
      FERRY_SECURITY_SECRET_KEY: secret,
      DATABASE_URL: a.reuse.env.DATABASE_URL,
      ...(a.reuse.env.FERRY_REDIS_KEY_PREFIX ? { FERRY_REDIS_KEY_PREFIX: a.reuse.env.FERRY_REDIS_KEY_PREFIX } : {}),
    });
    t.teardown(() => b.stop());
  }

  let n = 0;
  /** A fresh account and key with a session open on B and a live tail held there. */
  const session = async () => {
    const name = `acct${++n}`;
    const account = await a.adminCall('POST', '/admin/accounts', { name });
    const key = await a.adminCall('POST', '/admin/keys', { account: name, scopes: ['logs:read', 'sms:send'] });
    const r = await call(b.api, 'POST', '/logs/session', { headers: { authorization: `Bearer ${key.token}` } });
    if (r.status !== 200) throw new Error(r.text);
    const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0];
    t.equal((await call(b.api, 'GET', '/logs/api/requests', { headers: { cookie } })).status, 200, `${name}: the session works`);
    const tail = await openTail(b.api, cookie);
    t.teardown(tail.abort);
    return { name, accountId: account.id as string, keyId: key.keyId as string, cookie, tail };
  };

  const ended = async (t: Test, s: Awaited<ReturnType<typeof session>>) => {
    for (const path of ['/logs/api/requests', `/logs/api/requests/req_${'0'.repeat(26)}`, '/logs/api/tail']) {
      const r = await call(b.api, 'GET', path, { headers: { cookie: s.cookie } });
      t.equal(r.status, 401, `${path}: 401`);
      t.equal(r.json?.code, 'LOGS_SESSION_REQUIRED', path);
    }
    const state = await call(b.api, 'GET', '/logs/api/session', { headers: { cookie: s.cookie } });
    t.same([state.json.code, state.json.data], ['LOGS_NO_SESSION', { signedIn: false }], 'the page is told it is signed out');
    const tail = await s.tail.closed;
    t.ok(tail.ended, 'the open live tail is closed by the server');
    t.ok(tail.events.includes('end'), 'with an end event');
  };

  t.test('the key revoked (admin API)', async (t) => {
    const s = await session();
    await a.adminCall('POST', `/admin/keys/${s.keyId}/revoke`);
    await ended(t, s);
  });

  t.test('the key expired', async (t) => {
    const s = await session();
    await a.daemon.db.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [s.keyId]);
    await ended(t, s);
  });

  t.test('logs:read removed from the key', async (t) => {
    const s = await session();
    await a.daemon.db.query(`UPDATE api_keys SET scopes = $2 WHERE id = $1`, [s.keyId, ['sms:send']]);
    await ended(t, s);
  });

  t.test('the account suspended (admin API)', async (t) => {
    const s = await session();
    await a.adminCall('POST', `/admin/accounts/${s.name}/suspend`, { reason: 'test' });
    await ended(t, s);
  });

  t.test('a session whose key is still good lives on', async (t) => {
    const s = await session();
    t.equal((await call(b.api, 'GET', '/logs/api/session', { headers: { cookie: s.cookie } })).json.data.signedIn, true);
    s.tail.abort();
  });
});
