// The voice agents API over real HTTP against a whole daemon, on both backends: an agent's round trip (create, read,
// list, change into new versions, an old version read back, delete while a call's version stays loadable), its keys
// sealed in the database row and absent from answers, request logs and the daemon's log, every class of refusal with
// the field it names, the voice:agents scope, two accounts kept apart, idempotent creation, paging, and the MCP tools.
// The voice catalogue comes from a configured speech provider (no request reaches it), so no program need be installed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { accountWithKey, call, LogLines, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';

t.setTimeout(180_000);

const LLM_KEY = 'sk-agent-llm-fake-7d1e4b';
const LLM_KEY_2 = 'sk-agent-llm-fake-second-93af';
const STT_KEY = 'sk-agent-stt-fake-51c0aa';

/** An agent using every part: the model with its key, cloud speech-to-text with its key, each kind of tool. */
function fullAgent(name = 'Front desk') {
  return {
    name,
    systemPrompt: 'You are the front desk of {{company}}. Help {{ callerName }} briefly.',
    firstMessage: 'Hello {{callerName}}, this is {{company}}. How can I help?',
    voice: { locale: 'en-US', voiceId: 'nova' },
    language: 'en-US',
    llm: { provider: 'openai-compatible', model: 'gpt-4.1-mini', baseUrl: 'https://llm.example.com/v1', apiKey: LLM_KEY, temperature: 0.3, maxTokens: 300 },
    stt: { provider: 'openai-compatible', model: 'whisper-1', baseUrl: 'https://stt.example.com/v1', apiKey: STT_KEY },
    tools: [
      {
        type: 'transfer',
        name: 'transfer_to_human',
        description: 'When the caller asks for a person',
        mode: 'warm',
        destinations: [
          { name: 'sales', description: 'buying something', target: '+14155550100' },
          { name: 'support', description: 'a problem with an order', target: 'sip:support@pbx.example.com' },
        ],
      },
      { type: 'end_call' },
      {
        type: 'webhook',
        name: 'order_status',
        description: 'Looks up an order',
        url: 'https://hooks.example.com/order',
        parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
        timeoutMs: 4000,
      },
      { type: 'send_sms', from: '+14155550111' },
    ],
    maxDurationSeconds: 900,
    silenceTimeoutSeconds: 20,
    endCallPhrases: ['goodbye', 'goodbye'],
    failure: { message: 'Sorry, let me get you a person.', then: { transfer: 'support' } },
    variables: { company: 'Acme', callerName: 'there' },
    metadata: { team: 'cx', tier: 2 },
  };
}

t.test(`voice agents API (${backendLabel})`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-voice-agents-'));
  const configFile = join(dir, 'ferry.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      voice: {
        simulator: 'off',
        maxDurationSeconds: 3600,
        tts: {
          providers: [
            {
              id: 'cloud',
              baseUrl: 'http://127.0.0.1:9/v1',
              apiKey: 'tts-provider-key',
              model: 'tts-1',
              voices: [
                { locale: 'en-US', voice: 'nova', name: 'Nova' },
                { locale: 'fr-FR', voice: 'claire', name: 'Claire' },
              ],
            },
          ],
        },
      },
    }),
  );
  const logs = new LogLines();
  const d = await startDaemon({ FERRY_CONFIG: configFile, FERRY_LOGS_FLUSH_MS: '20', FERRY_LOG_LEVEL: 'debug' }, undefined, logs);
  t.teardown(() => d.stop());
  const a = await accountWithKey(d, 'agents-a');
  const b = await accountWithKey(d, 'agents-b');
  const api = (method: string, path: string, body?: unknown, token = a.token, headers: Record<string, string> = {}) => call(d.api, method, `/v1/voice${path}`, { token, body, headers });
  const agents = d.daemon.modules.service<VoiceModuleService>('voice').agents;

  const voices = (await api('GET', '/voices')).json.data.voices as Array<{ id: string; locale: string; engine: string }>;
  const nova = voices.find((v) => v.engine === 'cloud' && v.locale === 'en-US')!;
  const claire = voices.find((v) => v.engine === 'cloud' && v.locale === 'fr-FR')!;
  t.ok(nova && claire, 'the provider voices are in the catalogue');
  const agentBody = (name?: string) => {
    const body = fullAgent(name);
    body.voice.voiceId = nova.id;
    return body;
  };

  let agentId = '';
  let createRequestId = '';

  await t.test('create, read, list, change into versions, read an old one, delete', async (t) => {
    const created = await api('POST', '/agents', agentBody());
    t.equal(created.status, 201, created.text.slice(0, 500));
    t.equal(created.json.code, 'VOICE_AGENT_CREATED');
    createRequestId = created.json.requestId;
    const agent = created.json.data;
    agentId = agent.agentId;
    t.match(agentId, /^agent_[0-9a-z]{26}$/);
    t.match(agent, {
      name: 'Front desk',
      version: 1,
      currentVersion: 1,
      voice: { locale: 'en-US', voiceId: nova.id },
      language: 'en-US',
      llm: { provider: 'openai-compatible', model: 'gpt-4.1-mini', baseUrl: 'https://llm.example.com/v1', apiKeySet: true, temperature: 0.3, maxTokens: 300 },
      relay: null,
      stt: { provider: 'openai-compatible', model: 'whisper-1', baseUrl: 'https://stt.example.com/v1', apiKeySet: true },
      maxDurationSeconds: 900,
      silenceTimeoutSeconds: 20,
      failure: { message: 'Sorry, let me get you a person.', then: { transfer: 'support' } },
      variables: { company: 'Acme', callerName: 'there' },
      metadata: { team: 'cx', tier: 2 },
    });
    t.same(agent.endCallPhrases, ['goodbye'], 'the same phrase once');
    t.same(
      agent.tools.map((x: { type: string; name: string }) => [x.type, x.name]),
      [['transfer', 'transfer_to_human'], ['end_call', 'end_call'], ['webhook', 'order_status'], ['send_sms', 'send_sms']],
      'every tool, end_call and send_sms named by default',
    );
    t.match(agent.tools[0], { mode: 'warm', destinations: [{ name: 'sales', target: '+14155550100' }, { name: 'support', target: 'sip:support@pbx.example.com' }] });
    t.match(agent.tools[1].description, /Ends the call/, 'a default description the model reads');
    t.match(agent.tools[2], { url: 'https://hooks.example.com/order', timeoutMs: 4000, parameters: { required: ['orderId'] } });
    t.equal(agent.tools[3].from, '+14155550111');
    t.notOk(created.text.includes(LLM_KEY) || created.text.includes(STT_KEY), 'no key in the answer');
    t.notOk('apiKey' in agent.llm || 'apiKey' in agent.stt, 'no apiKey member at all');

    const got = await api('GET', `/agents/${agentId}`);
    t.equal(got.status, 200, got.text.slice(0, 300));
    t.same(got.json.data, agent, 'read back as created');
    const list = await api('GET', '/agents');
    t.same(list.json.data.agents.map((x: { agentId: string }) => x.agentId), [agentId]);

    const changed = await api('PATCH', `/agents/${agentId}`, { firstMessage: 'Hi, {{company}} here.', llm: { temperature: 0.9 }, metadata: { tier: null, region: 'eu' }, endCallPhrases: ['bye now'] });
    t.equal(changed.status, 200, changed.text.slice(0, 500));
    t.equal(changed.json.code, 'VOICE_AGENT_UPDATED');
    t.match(changed.json.data, { version: 2, currentVersion: 2, firstMessage: 'Hi, {{company}} here.', llm: { temperature: 0.9, model: 'gpt-4.1-mini', apiKeySet: true }, stt: { apiKeySet: true } });
    t.same(changed.json.data.metadata, { team: 'cx', region: 'eu' }, 'objects merge; null removes a member');
    t.same(changed.json.data.endCallPhrases, ['bye now'], 'arrays replace');
    t.equal(changed.json.data.tools.length, 4, 'what the patch does not name stays');

    const v1 = await api('GET', `/agents/${agentId}?version=1`);
    t.match(v1.json.data, { version: 1, currentVersion: 2, firstMessage: 'Hello {{callerName}}, this is {{company}}. How can I help?', llm: { temperature: 0.3 } });
    const missing = await api('GET', `/agents/${agentId}?version=9`);
    t.equal(missing.status, 404);
    t.equal(missing.json.code, 'VOICE_AGENT_NOT_FOUND');
    t.match(missing.json.message, /no version 9/);

    const loaded1 = await agents.load(a.account.id, agentId, 1);
    t.equal(loaded1.config.llm?.apiKey, LLM_KEY, 'the call loop gets the model key back');
    t.equal(loaded1.config.stt.apiKey, STT_KEY, 'and the speech-to-text key');
    t.equal((await agents.load(a.account.id, agentId)).version, 2, 'a new call starts with the current version');

    // A relay replaces the model; a changed model endpoint needs its key again.
    const relayed = await api('PATCH', `/agents/${agentId}`, { relay: { url: 'wss://relay.example.com/agent' } });
    t.equal(relayed.status, 200, relayed.text.slice(0, 300));
    t.match(relayed.json.data, { version: 3, llm: null, relay: { url: 'wss://relay.example.com/agent' } });
    const back = await api('PATCH', `/agents/${agentId}`, { llm: { provider: 'openai-compatible', model: 'm2', baseUrl: 'https://other.example.com/v1', apiKey: LLM_KEY_2 } });
    t.match(back.json.data, { version: 4, relay: null, llm: { model: 'm2', apiKeySet: true } });
    const moved = await api('PATCH', `/agents/${agentId}`, { llm: { baseUrl: 'https://elsewhere.example.net/v1' } });
    t.equal(moved.status, 400);
    t.equal(moved.json.code, 'VOICE_AGENT_INVALID', 'a stored key never follows a new endpoint');
    t.same(moved.json.data.errors.map((e: { field: string }) => e.field), ['llm.apiKey']);
    const keyless = await api('PATCH', `/agents/${agentId}`, { llm: { baseUrl: 'https://elsewhere.example.net/v1', apiKey: null } });
    t.match(keyless.json.data, { version: 5, llm: { baseUrl: 'https://elsewhere.example.net/v1', apiKeySet: false } });
    t.equal((await agents.load(a.account.id, agentId, 4)).config.llm?.apiKey, LLM_KEY_2, 'version 4 keeps its own key');
    const offline = await api('PATCH', `/agents/${agentId}`, { stt: { provider: 'pocketsphinx' } });
    t.equal(offline.status, 200, offline.text.slice(0, 300));
    t.same(offline.json.data.stt, { provider: 'pocketsphinx', model: null, baseUrl: null, apiKeySet: false }, 'another speech-to-text provider replaces stt whole, key and all');

    const versions = await api('GET', `/agents/${agentId}/versions?limit=2`);
    t.equal(versions.status, 200, versions.text.slice(0, 300));
    t.same(versions.json.data.versions.map((v: { version: number }) => v.version), [6, 5], 'newest first');
    const older = await api('GET', `/agents/${agentId}/versions?limit=10&cursor=${versions.json.data.nextCursor}`);
    t.same(older.json.data.versions.map((v: { version: number }) => v.version), [4, 3, 2, 1]);
    t.equal(older.json.data.nextCursor, null);

    const deleted = await api('DELETE', `/agents/${agentId}`);
    t.equal(deleted.status, 200, deleted.text);
    t.same(deleted.json.data, { agentId, deleted: true });
    t.equal((await api('GET', `/agents/${agentId}`)).json.code, 'VOICE_AGENT_NOT_FOUND');
    t.equal((await api('PATCH', `/agents/${agentId}`, { name: 'x' })).json.code, 'VOICE_AGENT_NOT_FOUND');
    t.equal((await api('DELETE', `/agents/${agentId}`)).status, 404, 'deleted once');
    t.same((await api('GET', '/agents')).json.data.agents, [], 'no longer listed');
    const kept = await agents.load(a.account.id, agentId, 2);
    t.match(kept, { version: 2, deleted: true }, 'a call that started with version 2 keeps it');
    await t.rejects(agents.load(a.account.id, agentId), { code: 'VOICE_AGENT_NOT_FOUND' }, 'no new call starts with a deleted agent');
  });

  await t.test('keys: sealed in the database, absent from request logs and the log', async (t) => {
    const { rows } = await d.daemon.db.query<Record<string, unknown>>(`SELECT * FROM voice_agent_versions WHERE agent_id = $1 ORDER BY version`, [agentId]);
    t.equal(rows.length, 6);
    const stored = JSON.stringify(rows);
    for (const key of [LLM_KEY, LLM_KEY_2, STT_KEY]) t.notOk(stored.includes(key), 'no key in clear in the rows');
    t.match(rows[0].llm_api_key_sealed, /^[A-Za-z0-9_.-]+:[^:]+:[^:]+:[^:]+$/, 'the model key is sealed');
    t.match(rows[0].stt_api_key_sealed, /^[A-Za-z0-9_.-]+:/, 'so is the speech-to-text key');
    t.not(rows[0].llm_api_key_sealed, rows[1].llm_api_key_sealed, 'each version seals afresh');
    t.equal(rows[4].llm_api_key_sealed, null, 'the version without a key has none');
    t.equal(rows[5].stt_api_key_sealed, null, 'nor the one with pocketsphinx');

    let log: { requestBody: string | null } | null = null;
    for (let i = 0; i < 200 && !log; i++) {
      const r = await call(d.api, 'GET', `/v1/logs/${createRequestId}`, { token: a.token });
      if (r.status === 200) log = r.json.data;
      else await new Promise((res) => setTimeout(res, 20));
    }
    t.ok(log, 'the create is in the request logs');
    const body = String(log?.requestBody);
    t.match(body, /Front desk/, 'the request body is kept');
    t.notOk(body.includes(LLM_KEY) || body.includes(STT_KEY), 'without the keys');
    t.match(body, /"apiKey":"\[redacted\]"/);
    t.ok(logs.lines.length > 0, 'the daemon logged');
    const logged = JSON.stringify(logs.lines);
    t.notOk(logged.includes(LLM_KEY) || logged.includes(LLM_KEY_2) || logged.includes(STT_KEY), 'no key in the daemon log');
  });

  await t.test('refusals: each class names its field', async (t) => {
    const refused = async (body: unknown, status: number, code: string, fields: string[], what: string, method = 'POST', path = '/agents') => {
      const r = await api(method, path, body);
      t.equal(r.status, status, `${what}: ${r.text.slice(0, 300)}`);
      t.equal(r.json.code, code, what);
      if (fields.length) t.same((r.json.data?.errors ?? []).map((e: { field: string }) => e.field), fields, `${what}: the fields`);
      return r;
    };
    const base = { name: 'r', systemPrompt: 'Be brief.', llm: { provider: 'openai-compatible', model: 'm', baseUrl: 'https://llm.example.com/v1' } };
    // the shape (the route schema)
    await refused({ ...base, colour: 'blue' }, 400, 'VALIDATION_ERROR', ['colour'], 'an unknown field');
    await refused({ systemPrompt: 'x', llm: base.llm }, 400, 'VALIDATION_ERROR', ['name'], 'no name');
    await refused({ ...base, tools: [{ type: 'end_call', name: 'hang up' }] }, 400, 'VALIDATION_ERROR', ['tools.0.name'], 'a tool name with a space');
    await refused({ ...base, tools: [{ type: 'webhook', name: 'w', description: 'd', url: 'https://h.example.com', timeoutMs: 20_000 }] }, 400, 'VALIDATION_ERROR', ['tools.0.timeoutMs'], 'a webhook timeout over 10 s');
    await refused({ ...base, language: 'english please' }, 400, 'VALIDATION_ERROR', ['language'], 'a language that is no BCP 47 tag');
    // rules across fields
    await refused({ ...base, relay: { url: 'wss://r.example.com' } }, 400, 'VOICE_AGENT_INVALID', ['relay'], 'both llm and relay');
    await refused({ name: 'r' }, 400, 'VOICE_AGENT_INVALID', ['llm'], 'neither llm nor relay');
    await refused({ name: 'r', llm: base.llm }, 400, 'VOICE_AGENT_INVALID', ['systemPrompt'], 'a model without a system prompt');
    await refused({ name: 'r', relay: { url: 'https://r.example.com' } }, 400, 'VOICE_AGENT_INVALID', ['relay.url'], 'a relay that is not a WebSocket');
    await refused({ ...base, llm: { ...base.llm, baseUrl: 'ftp://llm.example.com' } }, 400, 'VOICE_AGENT_INVALID', ['llm.baseUrl'], 'a model endpoint that is not http(s)');
    await refused({ ...base, llm: { ...base.llm, baseUrl: 'https://user:pw@llm.example.com/v1' } }, 400, 'VOICE_AGENT_INVALID', ['llm.baseUrl'], 'credentials in a URL');
    await refused({ ...base, tools: [{ type: 'end_call' }, { type: 'end_call' }] }, 400, 'VOICE_AGENT_INVALID', ['tools.1.name'], 'two tools of one name');
    await refused({ ...base, tools: [{ type: 'end_call', destinations: [{ name: 'x', description: 'x', target: '+14155550100' }] }] }, 400, 'VOICE_AGENT_INVALID', ['tools.0.destinations'], 'a field of another kind of tool');
    await refused({ ...base, tools: [{ type: 'transfer', name: 't', description: 'd' }] }, 400, 'VOICE_AGENT_INVALID', ['tools.0.destinations'], 'a transfer without destinations');
    await refused(
      { ...base, tools: [{ type: 'transfer', name: 't', description: 'd', destinations: [{ name: 'x', description: 'x', target: 'call my boss' }, { name: 'x', description: 'y', target: '+14155550100' }] }] },
      400,
      'VOICE_AGENT_INVALID',
      ['tools.0.destinations.0.target', 'tools.0.destinations.1.name'],
      'a target that is no number nor SIP URI, a destination named twice',
    );
    await refused({ ...base, tools: [{ type: 'webhook', name: 'w', url: 'https://h.example.com' }] }, 400, 'VOICE_AGENT_INVALID', ['tools.0.description'], 'a webhook tool without a description');
    await refused({ ...base, tools: [{ type: 'webhook', name: 'w', description: 'd', url: 'gopher://h.example.com' }] }, 400, 'VOICE_AGENT_INVALID', ['tools.0.url'], 'a webhook URL that is not http(s)');
    await refused({ ...base, tools: [{ type: 'webhook', name: 'w', description: 'd', url: 'https://h.example.com', parameters: { type: 'string' } }] }, 400, 'VOICE_AGENT_INVALID', ['tools.0.parameters'], 'parameters not of type object');
    await refused({ ...base, tools: [{ type: 'webhook', name: 'w', description: 'd', url: 'https://h.example.com', parameters: { type: 'object', properties: 5 } }] }, 400, 'VOICE_AGENT_INVALID', ['tools.0.parameters'], 'parameters that are no JSON Schema');
    const big = { type: 'object', properties: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`field${i}`, { type: 'string', description: 'x'.repeat(40) }])) };
    await refused({ ...base, tools: [{ type: 'webhook', name: 'w', description: 'd', url: 'https://h.example.com', parameters: big }] }, 400, 'VOICE_AGENT_INVALID', ['tools.0.parameters'], 'parameters over the size cap');
    await refused({ ...base, failure: { message: 'sorry', then: { transfer: 'nobody' } } }, 400, 'VOICE_AGENT_INVALID', ['failure.then.transfer'], 'a failure transfer to no configured destination');
    await refused({ ...base, systemPrompt: 'Hello {{first name}}' }, 400, 'VOICE_AGENT_INVALID', ['systemPrompt'], 'a placeholder that is no variable name');
    await refused({ ...base, maxDurationSeconds: 7200 }, 400, 'VOICE_AGENT_INVALID', ['maxDurationSeconds'], "longer than the server's voice.maxDurationSeconds");
    await refused({ ...base, stt: { provider: 'pocketsphinx', apiKey: 'k' } }, 400, 'VOICE_AGENT_INVALID', ['stt.apiKey'], 'a key for pocketsphinx');
    await refused({ ...base, stt: { provider: 'openai-compatible' } }, 400, 'VOICE_AGENT_INVALID', ['stt.model', 'stt.baseUrl'], 'cloud speech-to-text without model and endpoint');
    await refused({ ...base, voice: { locale: 'en-US', voiceId: claire.id } }, 400, 'VOICE_AGENT_INVALID', ['voice.voiceId'], 'a French voice for English');
    const many = await refused({ name: 'r', relay: { url: 'http://x' }, tools: [{ type: 'end_call' }, { type: 'end_call' }] }, 400, 'VOICE_AGENT_INVALID', ['relay.url', 'tools.1.name'], 'every problem at once');
    t.match(many.json.message, /relay\.url.*and 1 more/, 'the message names the first field');
    // the voice catalogue
    await refused({ ...base, voice: { locale: 'xx-YY' } }, 400, 'VOICE_NOT_AVAILABLE', [], 'a locale no engine speaks');
    await refused({ ...base, voice: { locale: 'en-US', voiceId: 'cloud/nope' } }, 400, 'VOICE_NOT_AVAILABLE', [], 'an unknown voice id');
    t.same((await api('GET', '/agents')).json.data.agents, [], 'nothing was stored');
    // a change is checked as a whole
    const ok = await api('POST', '/agents', base);
    t.equal(ok.status, 201, ok.text.slice(0, 300));
    t.match(ok.json.data, { voice: { locale: 'en-US', voiceId: null }, language: 'en-US', stt: { provider: 'pocketsphinx', apiKeySet: false }, maxDurationSeconds: 600, silenceTimeoutSeconds: 30, failure: { then: 'hangup' } }, 'the defaults');
    const id = ok.json.data.agentId as string;
    await refused({ systemPrompt: null }, 400, 'VOICE_AGENT_INVALID', ['systemPrompt'], 'a patch removing what the model needs', 'PATCH', `/agents/${id}`);
    await refused({}, 400, 'VALIDATION_ERROR', [], 'an empty patch', 'PATCH', `/agents/${id}`);
    t.equal((await api('GET', `/agents/${id}`)).json.data.version, 1, 'a refused change makes no version');
    await api('DELETE', `/agents/${id}`);
  });

  await t.test('the voice:agents scope; two accounts apart', async (t) => {
    const calls = await d.adminCall('POST', '/admin/keys', { account: 'agents-a', scopes: ['voice:calls'] });
    const denied = await api('POST', '/agents', agentBody('denied'), calls.token);
    t.equal(denied.status, 403);
    t.equal(denied.json.code, 'INSUFFICIENT_SCOPE');
    t.equal((await api('GET', '/agents', undefined, calls.token)).json.code, 'INSUFFICIENT_SCOPE');
    const managers = await d.adminCall('POST', '/admin/keys', { account: 'agents-a', scopes: ['voice:agents'] });
    const mine = await api('POST', '/agents', agentBody('Scoped'), managers.token);
    t.equal(mine.status, 201, 'voice:agents is enough');
    const id = mine.json.data.agentId as string;
    t.equal((await api('GET', `/agents/${id}`, undefined, calls.token)).json.code, 'INSUFFICIENT_SCOPE', 'reading needs it too');

    for (const [method, path, body] of [
      ['GET', `/agents/${id}`],
      ['GET', `/agents/${id}?version=1`],
      ['GET', `/agents/${id}/versions`],
      ['PATCH', `/agents/${id}`, { name: 'taken' }],
      ['DELETE', `/agents/${id}`],
    ] as Array<[string, string, unknown?]>) {
      const r = await api(method, path, body, b.token);
      t.equal(r.status, 404, `${method} ${path} from another account: 404, not 403`);
      t.equal(r.json.code, 'VOICE_AGENT_NOT_FOUND');
    }
    t.same((await api('GET', '/agents', undefined, b.token)).json.data.agents, [], "another account's list is its own");
    await t.rejects(agents.load(b.account.id, id), { code: 'VOICE_AGENT_NOT_FOUND' }, 'nor does its call loop load it');
    t.match((await api('GET', `/agents/${id}`)).json.data, { name: 'Scoped', version: 1 }, 'untouched by the other account');
    await api('DELETE', `/agents/${id}`);
  });

  await t.test('an Idempotency-Key creates once; paging and the name filter', async (t) => {
    const first = await api('POST', '/agents', agentBody('Idem'), a.token, { 'idempotency-key': 'agent-1' });
    t.equal(first.status, 201);
    const again = await api('POST', '/agents', agentBody('Idem'), a.token, { 'idempotency-key': 'agent-1' });
    t.equal(again.status, 201);
    t.equal(again.headers.get('idempotent-replayed'), 'true');
    t.equal(again.json.data.agentId, first.json.data.agentId, 'the same agent');
    t.equal((await api('GET', '/agents?name=Idem')).json.data.agents.length, 1, 'one agent made');
    const other = await api('POST', '/agents', agentBody('Idem 2'), a.token, { 'idempotency-key': 'agent-1' });
    t.equal(other.json.code, 'IDEMPOTENCY_KEY_REUSED');

    const made = [first.json.data.agentId as string];
    for (const name of ['Page 1', 'Page 2']) made.push((await api('POST', '/agents', agentBody(name))).json.data.agentId);
    const page1 = await api('GET', '/agents?limit=2');
    t.same(page1.json.data.agents.map((x: { agentId: string }) => x.agentId), [made[2], made[1]], 'newest first');
    const page2 = await api('GET', `/agents?limit=2&cursor=${page1.json.data.nextCursor}`);
    t.same(page2.json.data.agents.map((x: { agentId: string }) => x.agentId), [made[0]]);
    t.equal(page2.json.data.nextCursor, null);
    t.same((await api('GET', '/agents?name=Page%202')).json.data.agents.map((x: { name: string }) => x.name), ['Page 2']);
    t.equal((await api('GET', '/agents?cursor=garbage')).status, 400, 'a cursor the API did not give');
    t.equal((await api('GET', '/agents?limit=0')).status, 400);
  });

  await t.test('the speech-to-text engines and the locales each serves', async (t) => {
    const r = await api('GET', '/agents/recognizers');
    t.equal(r.status, 200, r.text);
    const installed = spawnSync('pocketsphinx_continuous', ['-h']).error === undefined;
    const offline = r.json.data.recognizers.find((x: { provider: string }) => x.provider === 'pocketsphinx');
    t.match(offline, { offline: true, available: installed, locales: installed ? ['en-US'] : [] }, `pocketsphinx ${installed ? 'installed' : 'not installed'} here, and said so`);
    t.match(r.json.data.recognizers.find((x: { provider: string }) => x.provider === 'openai-compatible'), { offline: false, available: true, locales: null });
  });

  await t.test('MCP tools: create_voice_agent, list_voice_agents', async (t) => {
    const client = new Client({ name: 'voice-agents-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${d.api}/mcp`), { requestInit: { headers: { authorization: `Basic ${b.token}` } } }));
    t.teardown(() => client.close());
    const structured = (r: unknown) => (r as { structuredContent: Record<string, any> }).structuredContent;
    const body = agentBody('From MCP');
    const created = await client.callTool({ name: 'create_voice_agent', arguments: { ...body, idempotencyKey: 'mcp-agent-1' } });
    t.notOk(created.isError, JSON.stringify(created).slice(0, 300));
    const agent = structured(created).data;
    t.match(agent, { name: 'From MCP', version: 1, llm: { apiKeySet: true } });
    t.notOk(JSON.stringify(created).includes(LLM_KEY), 'no key in the tool result');
    const replay = await client.callTool({ name: 'create_voice_agent', arguments: { ...body, idempotencyKey: 'mcp-agent-1' } });
    t.equal(structured(replay).data.agentId, agent.agentId, 'the idempotency key holds through MCP');
    const listed = await client.callTool({ name: 'list_voice_agents', arguments: { limit: 10 } });
    t.same(structured(listed).data.agents.map((x: { agentId: string }) => x.agentId), [agent.agentId], "the account's own agents only");
    const refused = await client.callTool({ name: 'create_voice_agent', arguments: { name: 'x', relay: { url: 'https://nope.example.com' } } });
    t.ok(refused.isError, 'a refused agent is an error result');
    t.match(JSON.stringify(refused), /VOICE_AGENT_INVALID/);

    const narrowKey = await d.adminCall('POST', '/admin/keys', { account: 'agents-b', scopes: ['voice:calls'] });
    const narrow = new Client({ name: 'voice-agents-narrow', version: '1.0.0' });
    await narrow.connect(new StreamableHTTPClientTransport(new URL(`${d.api}/mcp`), { requestInit: { headers: { authorization: `Basic ${narrowKey.token}` } } }));
    t.teardown(() => narrow.close());
    const names = (await narrow.listTools()).tools.map((x) => x.name);
    t.ok(names.includes('place_call'), 'a voice:calls key sees the call tools');
    t.notOk(names.includes('create_voice_agent') || names.includes('list_voice_agents'), 'but not the agent tools');
  });
});
