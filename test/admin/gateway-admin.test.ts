import t from 'tap';
import { createLogger } from '../../src/log.js';
import { UpstreamStore } from '../../src/smpp/upstream/upstream-store.js';
import { call } from '../helpers/daemon.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';
import { sampleMessage } from '../helpers/ledger-rows.js';
import { sim, waitFor } from '../upstream/upstream-helpers.js';
import { startAdminApp } from './admin-app.js';

t.test(`gateway admin API (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const { db } = tdb;
  const smsc = await sim(t);

  let owed = 0;
  const { base, token, fileUpstreams, upstreamStore, writer, router, pool, ledger, accounts } = await startAdminApp(t, db, smsc.port, { log: createLogger('silent'), onOwed: () => owed++ });
  const headers = { authorization: `Bearer ${token}` };
  const api = (method: string, path: string, body?: unknown) => call(base, method, path, { body, headers });

  t.test('the admin token guards the gateway routes', async (t) => {
    const r = await call(base, 'GET', '/admin/routes');
    t.equal(r.status, 401);
    t.equal(r.json.code, 'ADMIN_UNAUTHORIZED');
    const w = await call(base, 'POST', '/admin/routes/uk/switch', { body: { upstream: 'b' }, headers: { authorization: 'Bearer nope' } });
    t.equal(w.status, 401);
    t.same(router.overrides(), {}, 'nothing switched');
  });

  t.test('route switch and clear', async (t) => {
    const list = await api('GET', '/admin/routes');
    t.equal(list.status, 200);
    t.match(list.json, { success: true, code: 'ROUTES', data: [{ id: 'uk', upstreams: ['a', 'b'], override: null, effective: ['a', 'b'] }] });

    const sw = await api('POST', '/admin/routes/uk/switch', { upstream: 'b' });
    t.equal(sw.status, 200);
    t.match(sw.json.data, { ruleId: 'uk', previousOverride: null, before: ['a', 'b'], after: ['b', 'a'] });
    t.same(router.overrides(), { uk: 'b' });
    const again = await api('POST', '/admin/routes/uk/switch', { upstream: 'b' });
    t.equal(again.status, 200);
    t.match(again.json.message, /already/);
    t.equal(router.rule('uk').switches, 1, 'switching to the current override is not another switch');

    const unknownRule = await api('POST', '/admin/routes/nope/switch', { upstream: 'b' });
    t.equal(unknownRule.status, 404);
    t.equal(unknownRule.json.code, 'RULE_NOT_FOUND');
    const unknownUp = await api('POST', '/admin/routes/uk/switch', { upstream: 'zz' });
    t.equal(unknownUp.status, 400);
    t.equal(unknownUp.json.code, 'UNKNOWN_UPSTREAM');
    const noBody = await api('POST', '/admin/routes/uk/switch', {});
    t.equal(noBody.status, 400);
    t.equal(noBody.json.code, 'VALIDATION_ERROR');
    t.same(router.overrides(), { uk: 'b' }, 'failed requests change nothing');

    const clear = await api('DELETE', '/admin/routes/uk/switch');
    t.equal(clear.status, 200);
    t.match(clear.json.data, { ruleId: 'uk', previousOverride: 'b', after: ['a', 'b'] });
    t.same(router.overrides(), {});
    const clearAgain = await api('DELETE', '/admin/routes/uk/switch');
    t.equal(clearAgain.status, 200);
    t.match(clearAgain.json.message, /was not switched/);
    const clearUnknown = await api('DELETE', '/admin/routes/nope/switch');
    t.equal(clearUnknown.status, 404);
    t.equal(clearUnknown.json.code, 'RULE_NOT_FOUND');
  });

  t.test('runtime upstreams: add, unchanged, replace, list, remove', async (t) => {
    const body = { host: '127.0.0.1', port: smsc.port, systemId: 'ferry', password: 'sEcr3t!' };
    const added = await api('PUT', '/admin/upstreams/c', body);
    t.equal(added.status, 201);
    t.equal(added.json.code, 'UPSTREAM_SAVED');
    t.equal(added.json.data.result, 'added');
    t.equal(added.json.data.upstream.password, '********', 'password masked in the answer');
    t.equal(added.json.data.upstream.window, 50, 'config defaults applied');
    t.same(added.json.data.upstream.reconnect, { initialMs: 1000, maxMs: 60000 }, 'nested defaults applied');
    t.notMatch(added.text, /sEcr3t/);
    t.ok(pool.has('c'));
    await waitFor(() => pool.isUp('c'), 5000, 'c bound');

    const raw = await db.query<{ v: string }>(`SELECT value::text AS v FROM settings WHERE key = 'upstreams.runtime'`);
    t.notMatch(raw.rows[0].v, /sEcr3t/, 'the password is not stored in clear');
    t.match(raw.rows[0].v, /passwordEncrypted/);
    const loaded = await upstreamStore.load();
    t.equal(loaded.length, 1);
    t.equal(loaded[0].password, 'sEcr3t!', 'decrypts for the pool');
    t.same(loaded[0], pool.get('c')!.config, 'stored config is what the pool runs');

    const same = await api('PUT', '/admin/upstreams/c', { ...body, id: 'c' });
    t.equal(same.status, 200);
    t.equal(same.json.data.result, 'unchanged');
    const keptPw = await api('PUT', '/admin/upstreams/c', { ...body, password: '********' });
    t.equal(keptPw.json.data.result, 'unchanged', 'the mask keeps the stored password');
    const noPw = await api('PUT', '/admin/upstreams/c', { host: body.host, port: body.port, systemId: body.systemId });
    t.equal(noPw.json.data.result, 'unchanged', 'leaving the password out keeps it');

    const replaced = await api('PUT', '/admin/upstreams/c', { ...body, window: 20 });
    t.equal(replaced.status, 200);
    t.equal(replaced.json.data.result, 'replaced');
    t.equal(pool.get('c')!.config.window, 20);
    t.equal((await upstreamStore.get('c'))!.window, 20, 'stored');

    const mismatch = await api('PUT', '/admin/upstreams/c', { ...body, id: 'd' });
    t.equal(mismatch.status, 400);
    t.equal(mismatch.json.data.errors[0].field, 'id');
    const invalid = await api('PUT', '/admin/upstreams/c', { ...body, port: 'x', bogus: 1 });
    t.equal(invalid.status, 400);
    t.same(invalid.json.data.errors.map((e: { field: string }) => e.field).sort(), ['bogus', 'port']);
    const newNoPw = await api('PUT', '/admin/upstreams/d', { host: 'h', port: 1, systemId: 's' });
    t.equal(newNoPw.status, 400);
    t.equal(newNoPw.json.data.errors[0].field, 'password');
    const badId = await api('PUT', '/admin/upstreams/bad%20id', body);
    t.equal(badId.status, 400);
    t.notOk(pool.has('d'));

    const list = await api('GET', '/admin/upstreams');
    t.equal(list.status, 200);
    t.same(list.json.data.map((u: { id: string; source: string }) => [u.id, u.source]).sort(), [
      ['a', 'config'],
      ['b', 'config'],
      ['c', 'runtime'],
    ]);
    t.notMatch(list.text, /sEcr3t|"password"/, 'no passwords in the list');
    const one = await api('GET', '/admin/upstreams/c');
    t.equal(one.json.data.config.password, '********');
    t.equal(one.json.data.source, 'runtime');
    t.notMatch(one.text, /sEcr3t/);
    t.equal((await api('GET', '/admin/upstreams/zz')).status, 404);

    // A runtime upstream can take a route switch.
    t.equal((await api('POST', '/admin/routes/uk/switch', { upstream: 'c' })).status, 200);

    const refused = await api('DELETE', '/admin/upstreams/a');
    t.equal(refused.status, 409);
    t.equal(refused.json.code, 'UPSTREAM_IN_CONFIG');
    t.match(refused.json.message, /config file/);
    t.ok(pool.has('a'), 'config upstream kept');

    const removed = await api('DELETE', '/admin/upstreams/c');
    t.equal(removed.status, 200);
    t.equal(removed.json.code, 'UPSTREAM_REMOVED');
    t.same(removed.json.data.rules, ['uk'], 'names the rules that still point at it');
    t.notOk(pool.has('c'));
    t.same(await upstreamStore.ids(), []);
    const gone = await api('DELETE', '/admin/upstreams/c');
    t.equal(gone.status, 404);
    t.equal(gone.json.code, 'UPSTREAM_NOT_FOUND');
    await api('DELETE', '/admin/routes/uk/switch');
  });

  t.test('a runtime override of a config upstream, and putting the file entry back', async (t) => {
    const override = await api('PUT', '/admin/upstreams/b', { host: '127.0.0.1', port: smsc.port, systemId: 'ferry', window: 7 });
    t.equal(override.status, 200);
    t.equal(override.json.data.result, 'replaced');
    t.match(override.json.message, /overrides its config-file entry/);
    t.equal(pool.get('b')!.config.password, 'pw', 'password taken from the running config');
    t.equal(pool.get('b')!.config.window, 7);
    const list = await api('GET', '/admin/upstreams');
    t.equal(list.json.data.find((u: { id: string }) => u.id === 'b').source, 'runtime');
    t.same(UpstreamStore.merge(fileUpstreams, await upstreamStore.load()).map((u) => [u.id, u.window]), [
      ['a', 10],
      ['b', 7],
    ]);

    const reverted = await api('DELETE', '/admin/upstreams/b');
    t.equal(reverted.status, 200);
    t.equal(reverted.json.code, 'UPSTREAM_REVERTED');
    t.equal(pool.get('b')!.config.window, 10, 'config-file entry back');
    t.same(await upstreamStore.ids(), []);
    const again = await api('DELETE', '/admin/upstreams/b');
    t.equal(again.status, 409, 'now it is a plain config upstream');
  });

  t.test('message show', async (t) => {
    const missing = await api('GET', '/admin/messages/msg_nope');
    t.equal(missing.status, 404);
    t.equal(missing.json.code, 'MESSAGE_NOT_FOUND');

    const m = sampleMessage({ body: null, bodyBytes: Buffer.from([0xca, 0xfe]), dataCoding: 4 });
    await writer.accept(m);
    t.equal(await ledger.markSubmitted(m.id, 'a', 'uk', [{ partIndex: 0, upstreamMessageId: 'up-1' }]), 'changed');
    const found = await api('GET', `/admin/messages/${m.id}`);
    t.equal(found.status, 200);
    t.equal(found.json.code, 'MESSAGE');
    t.match(found.json.data.message, { id: m.id, status: 'submitted', bodyBytes: 'cafe', upstreamId: 'a', routeRule: 'uk' });
    t.same(found.json.data.history.map((e: { status: string }) => e.status), ['queued', 'submitted']);
    t.match(found.json.data.parts, [{ partIndex: 0, status: 'submitted', upstreamId: 'a', upstreamMessageId: 'up-1' }]);
  });

  t.test('receipt replay outcomes', async (t) => {
    const outboxRows = async (id: string) =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM smpp_outbox WHERE message_id = $1`, [id])).rows[0].n;

    const missing = await api('POST', '/admin/receipts/msg_nope/replay');
    t.equal(missing.status, 404);
    t.equal(missing.json.code, 'MESSAGE_NOT_FOUND');

    const smpp = sampleMessage({ registeredDelivery: 0 });
    await writer.accept(smpp);
    const notFinal = await api('POST', `/admin/receipts/${smpp.id}/replay`);
    t.equal(notFinal.status, 409);
    t.equal(notFinal.json.code, 'NOT_FINAL');

    await ledger.transition(smpp.id, 'delivered');
    t.equal(await outboxRows(smpp.id), 0, 'no receipt was asked for');
    const queued = await api('POST', `/admin/receipts/${smpp.id}/replay`);
    t.equal(queued.status, 200);
    t.equal(queued.json.code, 'RECEIPT_REPLAY_QUEUED');
    t.same(queued.json.data, { messageId: smpp.id, result: 'queued' });
    t.equal(await outboxRows(smpp.id), 1, 'receipt owed');
    t.equal(owed, 1, 'the outbox sender was woken');

    const rest = sampleMessage({ ingress: 'rest', customerSystemId: null });
    await writer.accept(rest);
    await ledger.transition(rest.id, 'delivered');
    const notSmpp = await api('POST', `/admin/receipts/${rest.id}/replay`);
    t.equal(notSmpp.status, 409);
    t.equal(notSmpp.json.code, 'NOT_SMPP');
    t.match(notSmpp.json.message, /webhook/);
    t.equal(owed, 1, 'nothing owed for refused replays');
  });

  t.test('account limits and numbers', async (t) => {
    t.equal((await api('POST', '/admin/accounts', { name: 'acme' })).status, 201);
    t.equal((await api('POST', '/admin/accounts', { name: 'other' })).status, 201);

    const upd = await api('PATCH', '/admin/accounts/acme', { maxTps: 50, defaultCountry: 'gb' });
    t.equal(upd.status, 200);
    t.match(upd.json.data, { name: 'acme', maxTps: 50, defaultCountry: 'GB' });
    const cleared = await api('PATCH', '/admin/accounts/acme', { maxTps: null });
    t.match(cleared.json.data, { maxTps: null, defaultCountry: 'GB' }, 'only the given field changes');
    t.equal((await api('PATCH', '/admin/accounts/acme', {})).status, 400, 'empty patch');
    t.equal((await api('PATCH', '/admin/accounts/acme', { maxTps: -1 })).status, 400);
    t.equal((await api('PATCH', '/admin/accounts/acme', { maxTps: 1.5 })).status, 400);
    t.equal((await api('PATCH', '/admin/accounts/acme', { defaultCountry: 'GBR' })).status, 400);
    const nobody = await api('PATCH', '/admin/accounts/nobody', { maxTps: 1 });
    t.equal(nobody.status, 404);
    t.equal(nobody.json.code, 'ACCOUNT_NOT_FOUND');

    t.same((await api('GET', '/admin/accounts/acme/numbers')).json.data, { account: 'acme', numbers: [] });
    const add = await api('POST', '/admin/accounts/acme/numbers', { number: '+447700900001' });
    t.equal(add.status, 201);
    t.same(add.json.data, { account: 'acme', numbers: ['447700900001'] });
    await api('POST', '/admin/accounts/acme/numbers', { number: '12345' });
    t.same((await api('GET', '/admin/accounts/acme/numbers')).json.data.numbers, ['12345', '447700900001']);
    t.equal(await accounts.ownerOfNumber('447700900001'), (await accounts.get('acme')).id);
    const taken = await api('POST', '/admin/accounts/other/numbers', { number: '447700900001' });
    t.equal(taken.status, 409);
    t.equal(taken.json.code, 'CONFLICT');
    t.equal((await api('POST', '/admin/accounts/acme/numbers', { number: 'abc' })).status, 400);
    t.equal((await api('GET', '/admin/accounts/nobody/numbers')).status, 404);

    const del = await api('DELETE', '/admin/accounts/acme/numbers/+447700900001');
    t.equal(del.status, 200);
    t.same(del.json.data.numbers, ['12345']);
    const delAgain = await api('DELETE', '/admin/accounts/acme/numbers/447700900001');
    t.equal(delAgain.status, 404);
    t.equal(delAgain.json.code, 'NUMBER_NOT_FOUND');
  });

  t.test('times are ISO 8601 strings, as elsewhere in the admin API', async (t) => {
    const isoTime = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    const m = sampleMessage({ scheduledAt: Date.now() + 3_600_000, expiresAt: Date.now() + 7_200_000 });
    await writer.accept(m);
    await ledger.transition(m.id, 'cancelled');
    const { message, history } = (await api('GET', `/admin/messages/${m.id}`)).json.data;
    for (const field of ['createdAt', 'updatedAt', 'finalAt', 'scheduledAt', 'expiresAt']) t.match(message[field], isoTime, `message.${field}`);
    t.equal(message.scheduledAt, new Date(m.scheduledAt!).toISOString(), 'the same instant');
    t.same(history.map((e: { status: string }) => e.status), ['scheduled', 'cancelled']);
    for (const e of history) t.match(e.at, isoTime, `history ${e.status}`);

    // A bind that cannot connect waits for its next attempt: that time too.
    t.equal((await api('PUT', '/admin/upstreams/dead', { host: '127.0.0.1', port: 1, systemId: 'ferry', password: 'pw' })).status, 201);
    t.teardown(() => api('DELETE', '/admin/upstreams/dead'));
    await waitFor(() => pool.get('dead')!.status().binds.some((b) => b.nextAttemptAt !== null), 5_000, 'dead upstream waiting');
    const dead = (await api('GET', '/admin/upstreams/dead')).json.data.status;
    t.match(dead.binds.find((b: { nextAttemptAt: string | null }) => b.nextAttemptAt !== null).nextAttemptAt, isoTime);
    t.equal(dead.pausedUntil, null);
    const listed = (await api('GET', '/admin/upstreams')).json.data.find((u: { id: string }) => u.id === 'dead');
    t.ok(listed.binds.every((b: { nextAttemptAt: string | null }) => b.nextAttemptAt === null || isoTime.test(b.nextAttemptAt)), 'in the list too');
  });
});
