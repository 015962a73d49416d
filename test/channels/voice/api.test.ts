// The voice calls API over real HTTP against a whole daemon, on both backends: what a call is refused for (shape,
// caller ID, an unknown voice, a balance short of the first increment) and what it is given (a balance covering part
// of the time limit is held and the call cut there), reading and listing an account's own calls, canceling a call
// still queued behind the account's concurrency limit, idempotent placing, the voice catalogue with a configured
// provider for Twi (its simulator speaking the OpenAI speech protocol), runtime trunks (password sealed) and the MCP tools.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { OpenAiSpeechSimulator } from '../../../src/sim/speech/openai-speech-simulator.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';

t.setTimeout(240_000);

const ESPEAK = spawnSync('espeak-ng', ['--version']).status === 0;
const PROVIDER_KEY = 'sk-test-fake-0000';

t.test(`voice calls API (${backendLabel})`, async (t) => {
  const tts = new OpenAiSpeechSimulator({ voices: ['twi', 'ewe'] });
  await tts.start({ apiKey: PROVIDER_KEY });
  t.teardown(() => tts.stop());
  const dir = mkdtempSync(join(tmpdir(), 'ferry-voice-api-'));
  const configFile = join(dir, 'ferry.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      voice: {
        simulator: 'on',
        media: { portMin: 44400, portMax: 44799 },
        maxConcurrentCallsPerAccount: 1,
        prices: { defaultPerMinute: 0.1, entries: [{ prefix: '1415', perMinute: 0.05 }], minimumSeconds: 30, incrementSeconds: 6 },
        tts: {
          providers: [
            {
              id: 'mms',
              baseUrl: tts.baseUrl,
              apiKey: PROVIDER_KEY,
              model: 'mms-tts',
              voices: [
                { locale: 'tw-GH', voice: 'twi', name: 'Twi', quality: 'natural' },
                { locale: 'ee-GH', voice: 'ewe', name: 'Ewe', quality: 'natural' },
              ],
            },
          ],
        },
      },
    }),
  );
  const d = await startDaemon({ FERRY_CONFIG: configFile });
  t.teardown(() => d.stop());
  const a = await accountWithKey(d, 'voice-a');
  const b = await accountWithKey(d, 'voice-b');
  const FROM = '+233200000201';
  await d.adminCall('POST', `/admin/accounts/${a.account.id}/numbers`, { number: FROM });
  await d.adminCall('POST', `/admin/accounts/${a.account.id}/credit`, { amount: '1' });
  const api = (method: string, path: string, body?: unknown, token = a.token, headers: Record<string, string> = {}) => call(d.api, method, `/v1/voice${path}`, { token, body, headers });
  const get = async (id: string, token = a.token) => (await api('GET', `/calls/${id}`, undefined, token)).json.data;
  const final = (id: string) => until(() => get(id), (c) => ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(c.status), 30_000);
  const balance = async () => (await d.adminCall('GET', `/admin/accounts/${a.account.id}`)).balance as number;
  const voice = d.daemon.modules.service<VoiceModuleService>('voice');

  await t.test('refusals: shape, caller ID, unknown voice, a balance short of the first increment', async (t) => {
    const bad = async (body: Record<string, unknown>, status: number, code: string, what: string, token = a.token) => {
      const r = await api('POST', '/calls', body, token);
      t.equal(r.status, status, `${what}: ${r.text.slice(0, 200)}`);
      t.equal(r.json.code, code, what);
      return r;
    };
    await bad({ to: '+14155550100', from: FROM }, 400, 'VALIDATION_ERROR', 'neither say, play nor script');
    await bad({ to: '+14155550100', from: FROM, say: { text: 'a' }, play: { url: 'https://example.com/a.wav' } }, 400, 'VALIDATION_ERROR', 'two of them');
    await bad({ to: 'not a number', from: FROM, say: { text: 'a' } }, 400, 'VALIDATION_ERROR', 'to is no number');
    await bad({ to: '+14155550100', from: FROM, script: [{ gather: { finishOnKey: 'x' } }] }, 400, 'VALIDATION_ERROR', 'a bad finishOnKey');
    await bad({ to: '+14155550100', from: FROM, play: { url: 'http://169.254.169.254/latest/meta-data' } }, 400, 'VALIDATION_ERROR', 'a metadata address to play (SSRF guard)');
    await bad({ to: '+14155550100', from: '+233200000999', say: { text: 'a' } }, 403, 'CALLER_ID_NOT_ALLOWED', 'a number the account does not own');
    await bad({ to: '+14155550100', from: FROM, say: { text: 'a' } }, 403, 'CALLER_ID_NOT_ALLOWED', "another account's number", b.token);
    await bad({ to: '+14155550100', from: FROM, say: { text: 'Akwaaba', locale: 'fr-CI', voice: 'nope/none' } }, 400, 'VOICE_NOT_AVAILABLE', 'an unknown voice id');
    // 0.1 a minute billed 30 s first: 0.05 is the least a call to +4420… can cost; the account has 1 and a credit limit of 0.
    await d.adminCall('POST', `/admin/accounts/${b.account.id}/numbers`, { number: '+233200000202' });
    await d.adminCall('POST', `/admin/accounts/${b.account.id}/credit`, { amount: '0.04' });
    const short = await bad({ to: '+442071234567', from: '+233200000202', say: { text: 'a' } }, 402, 'INSUFFICIENT_CREDIT', 'not even the first 30 s fit', b.token);
    t.match(short.json.data, { pricePerMinute: 0.1, minimumSeconds: 30 });
    t.equal((await d.adminCall('GET', `/admin/accounts/${b.account.id}`)).balance, 0.04, 'a refused call holds nothing');
  });

  await t.test('a balance covering part of the time limit: held in full, the call cut there, the rest released', async (t) => {
    const before = await balance();
    // 0.05 a minute to +1415…: 1.00 covers 1,200 s of the 3,600 asked; held: 1,200 s = 1.00.
    const r = await api('POST', '/calls', { to: '+14155550131', from: FROM, script: [{ pause: { seconds: 2 } }], timeLimit: 3600 });
    t.equal(r.status, 202, r.text);
    t.equal(r.json.data.pricePerMinute, 0.05);
    t.equal(await balance(), before - 1, 'what the balance allows is held at once');
    const c = await final(r.json.data.callId);
    t.equal(c.status, 'completed');
    t.equal(c.billableSeconds, 30, 'a few seconds bill the 30 s minimum');
    t.equal(c.cost, 0.025);
    t.equal(await balance(), before - 0.025, 'settled: the rest of the hold released');
    // Each call holds its whole time limit's price: enough credit for the calls below to run side by side.
    await d.adminCall('POST', `/admin/accounts/${a.account.id}/credit`, { amount: '100' });
  });

  await t.test("reading, listing and another account's calls", async (t) => {
    const placed: string[] = [];
    for (let i = 0; i < 3; i++) placed.push((await api('POST', '/calls', { to: `+1415555014${i}`, from: FROM, script: [{ hangup: {} }], reference: `r${i}` })).json.data.callId);
    for (const id of placed) await final(id);
    const page1 = await api('GET', '/calls?limit=2');
    t.equal(page1.status, 200, page1.text);
    t.equal(page1.json.data.calls.length, 2);
    t.same(page1.json.data.calls.map((c: { callId: string }) => c.callId), [placed[2], placed[1]], 'newest first');
    const page2 = await api('GET', `/calls?limit=2&cursor=${page1.json.data.nextCursor}`);
    t.equal(page2.json.data.calls[0].callId, placed[0], 'the cursor goes on where the page ended');
    t.equal((await api('GET', '/calls?to=%2B14155550141')).json.data.calls.length, 1, 'filtered by to');
    t.equal((await api('GET', `/calls/${placed[0]}`, undefined, b.token)).status, 404, "another account's call is not found");
    t.equal((await api('POST', `/calls/${placed[0]}/hangup`, undefined, b.token)).json.code, 'CALL_NOT_FOUND');
    t.equal((await api('GET', '/calls?cursor=garbage')).status, 400, 'a cursor the API did not give');
  });

  await t.test('a call queued behind the account limit is canceled at once; Idempotency-Key places once', async (t) => {
    const long = await api('POST', '/calls', { to: '+14155550150', from: FROM, script: [{ pause: { seconds: 30 } }] });
    const longId = long.json.data.callId as string;
    await until(() => get(longId), (c) => c.status === 'in-progress');
    const waiting = await api('POST', '/calls', { to: '+14155550151', from: FROM, say: { text: 'never said' } }, a.token, { 'idempotency-key': 'idem-1' });
    t.equal(waiting.status, 202);
    const again = await api('POST', '/calls', { to: '+14155550151', from: FROM, say: { text: 'never said' } }, a.token, { 'idempotency-key': 'idem-1' });
    t.equal(again.json.data.callId, waiting.json.data.callId, 'the same call for the same key');
    await new Promise((r) => setTimeout(r, 1500));
    t.equal((await get(waiting.json.data.callId)).status, 'queued', 'still queued: the account has one call up (maxConcurrentCallsPerAccount 1)');
    const canceled = await api('POST', `/calls/${waiting.json.data.callId}/hangup`);
    t.equal(canceled.status, 200, canceled.text);
    t.equal(canceled.json.code, 'CALL_CANCELED');
    t.match(await get(waiting.json.data.callId), { status: 'canceled', cost: 0, initiatedAt: null });
    await api('POST', `/calls/${longId}/hangup`);
    await final(longId);
    t.equal(voice.simulator()!.calls().filter((c) => c.to.endsWith('14155550151')).length, 0, 'the canceled call never reached the trunk');
  });

  await t.test('the voice catalogue: espeak-ng here, Twi and Ewe from the configured provider; a Twi call speaks through it', async (t) => {
    const r = await api('GET', '/voices');
    t.equal(r.status, 200, r.text);
    const voices = r.json.data.voices as Array<{ locale: string; engine: string; quality: string }>;
    t.match(voices.find((v) => v.locale === 'tw-GH'), { engine: 'mms', quality: 'natural' }, 'Twi from the provider');
    t.match(voices.find((v) => v.locale === 'ee-GH'), { engine: 'mms', quality: 'natural' });
    t.notOk(voices.some((v) => v.engine === 'espeak-ng' && /^(tw|ee)\b/.test(v.locale)), 'no espeak-ng voice passes for Twi or Ewe');
    if (ESPEAK) t.ok(voices.some((v) => v.locale === 'en-US' && v.engine === 'espeak-ng' && v.quality === 'robotic'), 'English from espeak-ng, said to be robotic');
    const placed = await api('POST', '/calls', { to: '+14155550160', from: FROM, say: { text: 'Akwaaba, yɛfrɛ wo firi Ferry.', locale: 'tw-GH' } });
    t.equal(placed.status, 202, placed.text);
    const c = await final(placed.json.data.callId);
    t.equal(c.status, 'completed');
    t.ok(tts.requests.some((q) => q.voice === 'twi' && String(q.input).startsWith('Akwaaba')), 'the provider was asked for Twi');
    t.notOk(JSON.stringify(await api('GET', '/voices')).includes(PROVIDER_KEY), 'the provider key is never shown');
    const heard = await until(async () => voice.simulator()!.calls().find((x) => x.to.endsWith('14155550160') && x.audio !== null), (x) => x !== undefined);
    t.ok(heard!.audio!.nonSilentShare > 0.3, `the far end heard the provider's audio (${heard!.audio!.nonSilentShare})`);
  });

  await t.test('runtime trunks: added with a sealed password, listed without it, removed', async (t) => {
    const put = await call(d.admin, 'PUT', '/admin/voice/trunks/carrier-a', { body: { host: '127.0.0.1', port: 5999, username: 'ferry', password: 'fake-trunk-password', priority: 5 }, headers: { authorization: `Bearer ${d.adminToken}` } });
    t.equal(put.status, 200, put.text);
    t.match(put.json.data, { name: 'carrier-a', host: '127.0.0.1', passwordSet: true, source: 'runtime' });
    t.notOk(put.text.includes('fake-trunk-password'), 'the password is not echoed');
    const stored = await d.daemon.db.query<{ config: unknown; password_sealed: string }>(`SELECT config, password_sealed FROM voice_trunks WHERE name = 'carrier-a'`);
    t.notOk(JSON.stringify(stored.rows[0]).includes('fake-trunk-password'), 'nor stored in clear');
    t.ok(stored.rows[0].password_sealed.length > 20, 'it is sealed');
    t.equal(voice.trunks.get('carrier-a')?.password, 'fake-trunk-password', 'the dialer gets it back');
    const list = await call(d.admin, 'GET', '/admin/voice/trunks', { headers: { authorization: `Bearer ${d.adminToken}` } });
    t.ok(list.json.data.trunks.some((x: { name: string }) => x.name === 'carrier-a'));
    const badPut = await call(d.admin, 'PUT', '/admin/voice/trunks/carrier-b', { body: { port: 70000 }, headers: { authorization: `Bearer ${d.adminToken}` } });
    t.equal(badPut.status, 400, 'a trunk without host or with a bad port is refused');
    const del = await call(d.admin, 'DELETE', '/admin/voice/trunks/carrier-a', { headers: { authorization: `Bearer ${d.adminToken}` } });
    t.equal(del.status, 200, del.text);
    t.equal(voice.trunks.get('carrier-a'), undefined);
  });

  await t.test('MCP tools: place_call, get_call, hangup_call', async (t) => {
    const client = new Client({ name: 'voice-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${d.api}/mcp`), { requestInit: { headers: { authorization: `Basic ${a.token}` } } }));
    t.teardown(() => client.close());
    const placed = await client.callTool({ name: 'place_call', arguments: { to: '+14155550170', from: FROM, script: [{ pause: { seconds: 1 } }] } });
    t.notOk(placed.isError, JSON.stringify(placed).slice(0, 300));
    const structured = (r: unknown) => (r as { structuredContent: Record<string, any> }).structuredContent;
    const callId = structured(placed).data.callId as string;
    t.match(callId, /^call_/);
    await final(callId);
    const got = await client.callTool({ name: 'get_call', arguments: { callId } });
    t.equal(structured(got).data.status, 'completed');
    const hung = await client.callTool({ name: 'hangup_call', arguments: { callId } });
    t.ok(hung.isError, 'hanging up an ended call is an error result');
  });
});
