// Every admin action that changes something leaves one info line with the request id, the actor and what changed;
// reads and refused requests leave none, and no password, secret or token ever appears in the log.
import t from 'tap';
import { sanitiseActorName } from '../../src/admin/audit.js';
import { createLogger } from '../../src/log.js';
import { UpstreamStore } from '../../src/smpp/upstream/upstream-store.js';
import { call } from '../helpers/daemon.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { sampleMessage } from '../helpers/ledger-rows.js';
import { sim } from '../upstream/upstream-helpers.js';
import { startAdminApp } from './admin-app.js';

interface Line {
  level: string;
  msg: string;
  reqId?: string;
  event?: string;
  actor?: string;
  [k: string]: unknown;
}

t.test(`admin actions are logged with request id and actor, never a secret (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const smsc = await sim(t);

  const output: string[] = [];
  const log = createLogger('info', { write: (s: string) => void output.push(s) });
  const lines = (): Line[] => output.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);
  const audited = () => lines().filter((l) => l.event);

  const { base, token, writer, ledger } = await startAdminApp(t, db, smsc.port, { log, pricing: true });
  const headers = { authorization: `Bearer ${token}`, 'x-ferry-actor': 'cli:tester' };
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await call(base, method, path, { body, headers });
    if (!r.json?.success) throw new Error(`${method} ${path}: ${r.text}`);
    return r;
  };

  // Each action and the line it must leave: its event, its own fields, and the request id it answered with.
  const expected: Array<{ event: string; requestId: string; fields: Record<string, unknown> }> = [];
  const act = async (event: string, fields: Record<string, unknown>, method: string, path: string, body?: unknown) => {
    const r = await api(method, path, body);
    expected.push({ event, requestId: r.json.requestId, fields });
    return r.json.data;
  };

  const created = await act('account.created', { account: 'acme', currency: 'USD', smppSystemId: 'acme' }, 'POST', '/admin/accounts', { name: 'acme', smppPassword: 'Pw8sEcr' });
  t.equal(created.smpp.password, 'Pw8sEcr');
  await act('account.updated', { account: 'acme', maxTps: 10, creditLimit: 5, allowedRecipients: '2 entries' }, 'PATCH', '/admin/accounts/acme', {
    maxTps: 10,
    creditLimit: '5',
    allowedRecipients: ['4477*', '233*'],
  });
  await act('account.suspended', { account: 'acme', reason: 'unpaid invoice' }, 'POST', '/admin/accounts/acme/suspend', { reason: 'unpaid invoice' });
  await act('account.resumed', { account: 'acme' }, 'POST', '/admin/accounts/acme/resume');
  await act('account.credited', { account: 'acme', amount: 10, balance: 10, creditLimit: 5, currency: 'USD', reference: 'INV-7' }, 'POST', '/admin/accounts/acme/credit', {
    amount: 10,
    reference: 'INV-7',
  });
  await act('account.debited', { account: 'acme', amount: -12.5, balance: -2.5, currency: 'USD', reference: null }, 'POST', '/admin/accounts/acme/debit', { amount: '12.50' });
  const smpp = await act('account.smpp_credentials_set', { account: 'acme', systemId: 'acme', maxBinds: 3 }, 'POST', '/admin/accounts/acme/smpp-credentials', {
    password: 'Zq9xW2v',
    maxBinds: 3,
  });
  t.equal(smpp.password, 'Zq9xW2v');
  const key = await act('key.created', { accountId: created.id, environment: 'live', scopes: ['sms:send'] }, 'POST', '/admin/keys', { account: 'acme', scopes: ['sms:send'] });
  expected[expected.length - 1].fields.keyId = key.keyId;
  const rotated = await act('key.rotated', { keyId: key.keyId, accountId: created.id }, 'POST', `/admin/keys/${key.keyId}/rotate`, { graceSeconds: 30 });
  await act('key.revoked', { keyId: key.keyId, accountId: created.id }, 'POST', `/admin/keys/${key.keyId}/revoke`);
  await act('upstream.saved', { upstream: 'c', result: 'added', host: '127.0.0.1', port: smsc.port, systemId: 'ferry', passwordChanged: true }, 'PUT', '/admin/upstreams/c', {
    host: '127.0.0.1',
    port: smsc.port,
    systemId: 'ferry',
    password: 'UpS3cr!t',
  });
  await act('upstream.saved', { upstream: 'c', result: 'replaced', passwordChanged: false }, 'PUT', '/admin/upstreams/c', {
    host: '127.0.0.1',
    port: smsc.port,
    systemId: 'ferry',
    password: UpstreamStore.MASK,
    window: 5,
  });
  await act('upstream.removed', { upstream: 'c' }, 'DELETE', '/admin/upstreams/c');
  await act('route.switched', { rule: 'uk', upstream: 'b', previousOverride: null, before: ['a', 'b'], after: ['b', 'a'] }, 'POST', '/admin/routes/uk/switch', { upstream: 'b' });
  await act('route.cleared', { rule: 'uk', previousOverride: 'b', after: ['a', 'b'] }, 'DELETE', '/admin/routes/uk/switch');
  await act('pricing.replaced', { defaultPrice: 0.01, entries: 1 }, 'PUT', '/admin/pricing', { defaultPrice: 0.01, entries: [{ prefix: '44', price: 0.03 }] });
  await act('account.number_added', { account: 'acme', number: '447700900001' }, 'POST', '/admin/accounts/acme/numbers', { number: '447700900001' });
  await act('account.number_removed', { account: 'acme', number: '447700900001' }, 'DELETE', '/admin/accounts/acme/numbers/447700900001');
  const m = sampleMessage({ accountId: created.id });
  await writer.accept(m);
  await ledger.transition(m.id, 'delivered');
  await act('receipt.replayed', { messageId: m.id }, 'POST', `/admin/receipts/${m.id}/replay`);

  // Reads and refused requests log nothing of their own.
  await api('GET', '/admin/accounts/acme');
  await api('GET', '/admin/accounts');
  await api('GET', '/admin/routes');
  await api('GET', `/admin/messages/${m.id}`);
  t.equal((await call(base, 'POST', '/admin/accounts/acme/debit', { body: { amount: 100 }, headers })).json.code, 'CREDIT_LIMIT_EXCEEDED');
  t.equal((await call(base, 'POST', '/admin/accounts/acme/credit', { body: { amount: 1e308 }, headers })).json.code, 'INVALID_AMOUNT');
  t.equal((await call(base, 'POST', '/admin/routes/uk/switch', { body: { upstream: 'b' }, headers: { authorization: 'Bearer wrong' } })).status, 401);

  const got = audited();
  t.same(
    got.map((l) => l.event),
    expected.map((e) => e.event),
    'one line per action that changed something, in order, and none for reads or refusals',
  );
  for (const [i, e] of expected.entries()) {
    const line = got[i];
    if (!line) break;
    t.equal(line.level, 'info', `${e.event}: info`);
    t.equal(line.reqId, e.requestId, `${e.event}: the request id the response carried`);
    t.equal(line.actor, 'admin/cli:tester@127.0.0.1', `${e.event}: the actor`);
    t.match(line.msg, /^admin: /, `${e.event}: message`);
    t.match(line, e.fields, `${e.event}: its fields`);
  }

  const all = output.join('');
  for (const secret of ['Pw8sEcr', 'Zq9xW2v', 'UpS3cr!t', token, key.secret, key.token, rotated.secret, rotated.token]) {
    t.notOk(all.includes(secret), `no secret in the log (${String(secret).slice(0, 4)}…)`);
  }
  t.notMatch(all, /"password"/, 'no password field at all');

  // Without the header the actor is the token holder and the address; a hostile header is sanitised and bounded.
  await call(base, 'POST', '/admin/accounts/acme/resume', { headers: { authorization: `Bearer ${token}` } });
  t.equal(audited().at(-1)?.actor, 'admin@127.0.0.1');
  await call(base, 'POST', '/admin/accounts/acme/resume', { headers: { authorization: `Bearer ${token}`, 'x-ferry-actor': `cli:mallory\r\n{"level":"fatal"} ${'y'.repeat(500)}`.replace(/[\r\n]/g, ' ') } });
  const hostile = audited().at(-1)!.actor!;
  t.match(hostile, /^admin\/cli:mallory_level_:_fatal_y+@127\.0\.0\.1$/);
  t.ok(hostile.length <= 'admin/'.length + 64 + '@127.0.0.1'.length, 'bounded');
});

t.test('actor names are sanitised and bounded', async (t) => {
  t.equal(sanitiseActorName('cli:alice'), 'cli:alice');
  t.equal(sanitiseActorName('cli:Zoë Smith'), 'cli:Zo_Smith');
  t.equal(sanitiseActorName('  cli:bob\t'), 'cli:bob');
  t.equal(sanitiseActorName('a\nb\u0000c'), 'a_b_c');
  t.equal(sanitiseActorName('z'.repeat(1000)), 'z'.repeat(64));
  t.equal(sanitiseActorName('"""'), null);
  t.equal(sanitiseActorName(''), null);
  t.equal(sanitiseActorName(undefined), null);
  t.equal(sanitiseActorName(['cli:first', 'cli:second']), 'cli:first');
});
