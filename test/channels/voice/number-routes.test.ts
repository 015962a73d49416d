// Routing inbound calls to AI voice agents, over real HTTP against a whole daemon, on both backends: the account's
// numbers listed with their agents, a route set, replaced and taken away, every refusal (a number the account does not
// own, another account's agent the same 404 as none, a path that is no number, the voice:agents scope), what an
// incoming call's lookup (NumberRouteStore.resolve) answers as routes, agents and numbers change, and the direction of
// an ordinary call. The agents' voice comes from a configured speech provider (no request reaches it); the call goes
// to the embedded trunk simulator.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CallStore } from '../../../src/channels/voice/call-store.js';
import { NumberRouteStore } from '../../../src/channels/voice/inbound/number-route-store.js';
import { newId } from '../../../src/util/ids.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';

t.setTimeout(180_000);

// Account A's numbers, B's, and one nobody owns. None ends in a simulator behaviour (…77, …88, …66, …99, …44).
const A1 = '14155550123';
const A2 = '14155550124';
const B1 = '14155550131';
const NOBODY = '14155550135';
// A short code of A's: no E.164 number, still one the account owns and may route.
const SHORT = '40400';

t.test(`voice number routes (${backendLabel})`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-voice-numbers-'));
  const configFile = join(dir, 'ferry.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      voice: {
        tts: { providers: [{ id: 'cloud', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'tts-provider-key', model: 'tts-1', voices: [{ locale: 'en-US', voice: 'nova', name: 'Nova' }] }] },
      },
    }),
  );
  const d = await startDaemon({ FERRY_CONFIG: configFile, FERRY_VOICE_SIMULATOR: 'on', FERRY_VOICE_MEDIA_PORT_MIN: '45800', FERRY_VOICE_MEDIA_PORT_MAX: '45999' });
  t.teardown(() => d.stop());
  const a = await accountWithKey(d, 'numbers-a');
  const b = await accountWithKey(d, 'numbers-b');
  const callsOnly = (await d.adminCall('POST', '/admin/keys', { account: 'numbers-a', scopes: ['voice:calls'] })).token as string;
  for (const n of [A1, A2, SHORT]) await d.adminCall('POST', `/admin/accounts/${a.account.id}/numbers`, { number: '+' + n });
  await d.adminCall('POST', `/admin/accounts/${b.account.id}/numbers`, { number: '+' + B1 });
  const api = (method: string, path: string, body?: unknown, token = a.token) => call(d.api, method, `/v1/voice${path}`, { token, body });
  const store = new NumberRouteStore({ db: d.daemon.db, accounts: d.daemon.accounts });

  const voices = (await api('GET', '/voices')).json.data.voices as Array<{ id: string; locale: string; engine: string }>;
  const nova = voices.find((v) => v.engine === 'cloud' && v.locale === 'en-US');
  t.ok(nova, 'the provider voice is in the catalogue');
  const newAgent = async (name: string, token = a.token) => {
    const r = await api('POST', '/agents', { name, systemPrompt: 'Answer briefly.', voice: { locale: 'en-US', voiceId: nova!.id }, llm: { provider: 'openai-compatible', model: 'm', baseUrl: 'https://llm.example.com/v1' } }, token);
    t.equal(r.status, 201, r.text.slice(0, 300));
    return r.json.data.agentId as string;
  };
  const desk = await newAgent('Front desk');
  const sales = await newAgent('Sales');
  const theirs = await newAgent('Theirs', b.token);

  await t.test("the account's numbers, each unrouted at first", async (t) => {
    const r = await api('GET', '/numbers');
    t.equal(r.status, 200, r.text);
    t.equal(r.json.code, 'VOICE_NUMBERS');
    t.same(r.json.data, { numbers: [{ number: '+' + A1, agentId: null, dialerIdentity: null }, { number: '+' + A2, agentId: null, dialerIdentity: null }, { number: '+' + SHORT, agentId: null, dialerIdentity: null }] });
    t.same((await api('GET', '/numbers', undefined, b.token)).json.data.numbers, [{ number: '+' + B1, agentId: null, dialerIdentity: null }], "B sees only its own");
    t.equal(await store.resolve(A1), null, 'no route: an incoming call is not answered');
  });

  await t.test('a route set, read three ways, replaced; what an incoming call resolves to', async (t) => {
    const set = await api('PUT', `/numbers/%2B${A1}`, { agentId: desk });
    t.equal(set.status, 200, set.text);
    t.equal(set.json.code, 'VOICE_NUMBER_UPDATED');
    t.same(set.json.data, { number: '+' + A1, agentId: desk, dialerIdentity: null });
    t.same((await api('GET', '/numbers')).json.data.numbers, [{ number: '+' + A1, agentId: desk, dialerIdentity: null }, { number: '+' + A2, agentId: null, dialerIdentity: null }, { number: '+' + SHORT, agentId: null, dialerIdentity: null }]);
    t.same((await api('GET', `/numbers/${A1}`)).json.data, { number: '+' + A1, agentId: desk, dialerIdentity: null }, 'the path takes the digits without +');
    t.same((await api('GET', `/numbers/+${A1}`)).json.data, { number: '+' + A1, agentId: desk, dialerIdentity: null }, 'or a literal +');
    t.same(await store.resolve(A1), { accountId: a.account.id, agentId: desk });
    t.same(await store.resolve('+' + A1), { accountId: a.account.id, agentId: desk }, 'with or without +');
    t.equal(await store.resolve(A2), null, 'the other number is still unrouted');

    const replaced = await api('PUT', `/numbers/%2B${A1}`, { agentId: sales });
    t.same(replaced.json.data, { number: '+' + A1, agentId: sales, dialerIdentity: null }, 'a second PUT replaces the route');
    t.same(await store.resolve(A1), { accountId: a.account.id, agentId: sales });
    t.match(await store.get(a.account.id, A1), { number: A1, accountId: a.account.id, agentId: sales });
    t.same((await store.list(a.account.id)).map((r) => r.number), [A1]);
    t.equal(await store.get(b.account.id, A1), null, "not B's route");

    const short = await api('PUT', `/numbers/${SHORT}`, { agentId: desk });
    t.same([short.status, short.json.data], [200, { number: '+' + SHORT, agentId: desk, dialerIdentity: null }], 'a short code of the account, as listed, is routed too');
    t.same(await store.resolve(SHORT), { accountId: a.account.id, agentId: desk });
    t.equal((await api('PUT', `/numbers/${SHORT}`, { agentId: null })).json.data.agentId, null);
    t.equal((await api('PUT', '/numbers/40401', { agentId: desk })).json.code, 'NUMBER_NOT_FOUND', "another short code is not the account's");
  });

  await t.test('refusals', async (t) => {
    const refused = async (what: string, r: Awaited<ReturnType<typeof api>>, status: number, code: string) => {
      t.equal(r.status, status, `${what}: HTTP ${status} (${r.text.slice(0, 200)})`);
      t.equal(r.json.code, code, `${what}: ${code}`);
      return r.json;
    };
    const other = await refused("another account's number", await api('PUT', `/numbers/%2B${B1}`, { agentId: desk }), 404, 'NUMBER_NOT_FOUND');
    t.same(other.data, { number: '+' + B1 });
    await refused('a number nobody owns', await api('PUT', `/numbers/%2B${NOBODY}`, { agentId: desk }), 404, 'NUMBER_NOT_FOUND');
    await refused('reading a number nobody owns', await api('GET', `/numbers/${NOBODY}`), 404, 'NUMBER_NOT_FOUND');
    await refused("unrouting another account's number", await api('PUT', `/numbers/${B1}`, { agentId: null }), 404, 'NUMBER_NOT_FOUND');
    const foreign = await refused("another account's agent", await api('PUT', `/numbers/${A2}`, { agentId: theirs }), 404, 'VOICE_AGENT_NOT_FOUND');
    const none = await refused('an agent that does not exist', await api('PUT', `/numbers/${A2}`, { agentId: 'agent_nope' }), 404, 'VOICE_AGENT_NOT_FOUND');
    t.equal(foreign.message, 'No such voice agent', 'the same answer as for an agent that does not exist');
    t.equal(none.message, foreign.message);
    const bad = await refused('a path that is no number', await api('PUT', '/numbers/not-a-number', { agentId: desk }), 400, 'VALIDATION_ERROR');
    t.same(bad.data.errors, [{ field: 'number', message: 'an E.164 number (+ and country code)' }]);
    await refused('a body without agentId', await api('PUT', `/numbers/${A2}`, {}), 400, 'VALIDATION_ERROR');
    await refused('a key without voice:agents', await api('PUT', `/numbers/${A2}`, { agentId: desk }, callsOnly), 403, 'INSUFFICIENT_SCOPE');
    t.equal((await api('GET', '/numbers', undefined, callsOnly)).status, 200, 'which may still list the numbers (voice:calls)');
    t.equal(await store.resolve(A2), null, 'nothing was routed by any of them');
    t.equal(await store.resolve(B1), null);
  });

  await t.test('a route to a deleted agent answers nothing', async (t) => {
    const temp = await newAgent('Temporary');
    t.equal((await api('PUT', `/numbers/${A2}`, { agentId: temp })).status, 200);
    t.same(await store.resolve(A2), { accountId: a.account.id, agentId: temp });
    t.equal((await api('DELETE', `/agents/${temp}`)).status, 200);
    t.equal(await store.resolve(A2), null, 'the lookup ignores it');
    t.same((await api('GET', `/numbers/${A2}`)).json.data, { number: '+' + A2, agentId: null, dialerIdentity: null }, 'and the number shows unrouted');
    t.equal((await api('PUT', `/numbers/${A2}`, { agentId: temp })).json.code, 'VOICE_AGENT_NOT_FOUND', 'a deleted agent cannot be routed to');
    t.same((await api('PUT', `/numbers/${A2}`, { agentId: desk })).json.data, { number: '+' + A2, agentId: desk, dialerIdentity: null }, 'another agent replaces it');
    t.same(await store.resolve(A2), { accountId: a.account.id, agentId: desk });
  });

  await t.test('a route taken away with agentId null, repeatably', async (t) => {
    const off = await api('PUT', `/numbers/%2B${A2}`, { agentId: null });
    t.equal(off.status, 200, off.text);
    t.same(off.json.data, { number: '+' + A2, agentId: null, dialerIdentity: null });
    t.equal(await store.resolve(A2), null);
    const again = await api('PUT', `/numbers/%2B${A2}`, { agentId: null });
    t.same([again.status, again.json.data], [200, { number: '+' + A2, agentId: null, dialerIdentity: null }], 'the same answer again');
    t.equal(await store.remove(a.account.id, A2), false, 'nothing left to remove');
  });

  await t.test('a number the operator takes from the account loses its route', async (t) => {
    t.same(await store.resolve(A1), { accountId: a.account.id, agentId: sales }, 'routed before');
    await d.adminCall('DELETE', `/admin/accounts/${a.account.id}/numbers/${A1}`);
    t.equal(await store.resolve(A1), null, 'no longer answered');
    t.same((await api('GET', '/numbers')).json.data.numbers.map((n: { number: string }) => n.number), ['+' + A2, '+' + SHORT], 'no longer listed');
    t.equal((await api('GET', `/numbers/${A1}`)).json.code, 'NUMBER_NOT_FOUND');
    t.equal((await api('PUT', `/numbers/${A1}`, { agentId: desk })).json.code, 'NUMBER_NOT_FOUND', 'nor routable');
    t.equal(await store.set(a.account.id, A1, { agentId: desk }), null, 'the store writes no route for it either');

    // Given to B: B's to route; A's old route did not come along.
    await d.adminCall('POST', `/admin/accounts/${b.account.id}/numbers`, { number: '+' + A1 });
    t.equal(await store.resolve(A1), null, 'the route went with the number');
    t.same((await api('GET', `/numbers/${A1}`, undefined, b.token)).json.data, { number: '+' + A1, agentId: null, dialerIdentity: null });
    t.same((await api('PUT', `/numbers/${A1}`, { agentId: theirs }, b.token)).json.data, { number: '+' + A1, agentId: theirs, dialerIdentity: null });
    t.same(await store.resolve(A1), { accountId: b.account.id, agentId: theirs });

    // The lookup asks the accounts who owns the number, whatever the routes table holds.
    const elsewhere = new NumberRouteStore({ db: d.daemon.db, accounts: { ownerOfNumber: async () => 'acc_someone_else' } });
    t.equal(await elsewhere.resolve(A1), null, 'a route of an account that does not own the number answers nothing');
  });

  await t.test("an ordinary call's direction", async (t) => {
    const placed = await api('POST', '/calls', { to: '+14155550486', from: '+' + A2, script: [{ pause: { seconds: 1 } }] });
    t.equal(placed.status, 202, placed.text.slice(0, 300));
    t.equal(placed.json.data.direction, 'outbound-api', 'placed by the API');
    const id = placed.json.data.callId as string;
    const ended = await until(async () => (await api('GET', `/calls/${id}`)).json.data, (c) => c.status === 'busy', 30_000);
    t.equal(ended.direction, 'outbound-api', 'and still once it ended (busy)');
    const { rows } = await d.daemon.db.query<{ direction: string }>(`SELECT direction FROM voice_calls WHERE id = $1`, [id]);
    t.equal(rows[0].direction, 'outbound', 'stored as outbound');
    await t.rejects(d.daemon.db.query(`UPDATE voice_calls SET direction = 'sideways' WHERE id = $1`, [id]), /voice_calls_direction/, 'no other direction is stored');

    // A call stored as inbound (what answering one does) shows so; it is put far from due so that nothing dials it.
    const calls = new CallStore(d.daemon.db);
    const inbound = await d.daemon.db.tx((q) =>
      calls.insert(q, {
        id: newId('call_'), accountId: a.account.id, to: A2, from: '14155550140', steps: [], statusCallback: null, statusCallbackEvents: [], ringTimeoutSeconds: 30,
        timeLimitSeconds: 60, machineDetection: 'off', reference: null, pricePerMinuteMicros: 0, heldSeconds: 0, direction: 'inbound', claimMs: 3_600_000,
      }),
    );
    t.equal(inbound.direction, 'inbound', 'the store reads it back');
    const shown = await api('GET', `/calls/${inbound.id}`);
    t.equal(shown.json.data.direction, 'inbound', 'the API shows it');
    await d.daemon.db.query(`UPDATE voice_calls SET status = 'canceled', ended_at = now() WHERE id = $1`, [inbound.id]);
  });

  await t.test('the OpenAPI document describes the routes', async (t) => {
    const doc = (await call(d.api, 'GET', '/v1/openapi.json')).json;
    // Paths are listed without /v1 (the document's server has it).
    const put = doc.paths['/voice/numbers/{number}']?.put;
    t.ok(put, 'PUT /v1/voice/numbers/{number}');
    t.match(put.description, /agentId: null/, 'its description says how to take a route away');
    t.ok(doc.paths['/voice/numbers']?.get, 'GET /v1/voice/numbers');
  });
});
