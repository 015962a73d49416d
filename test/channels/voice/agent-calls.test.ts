// AI voice agents on real calls through a whole daemon and its embedded SIP trunk simulator, on both backends: the
// first message is spoken at answer; the caller's side is synthetic speech (espeak-ng saying "I want to talk to a
// person") recognised by pocketsphinx; the model (a local OpenAI-compatible stand-in answering by script) calls the
// transfer tool; the call is transferred by REFER to the configured destination. Also: a transfer the trunk refuses,
// a model that times out (the apology is spoken), and the transcript with latencies.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { OpenAiChatSimulator } from '../../../src/sim/llm/openai-chat-simulator.js';
import { RelayCustomer } from '../../../src/sim/voice/relay-customer.js';
import { OpenAiTranscriptionSimulator } from '../../../src/sim/speech/openai-transcription-simulator.js';
import { analyzeAudio } from '../../../src/audio/analysis.js';
import { generateTone } from '../../../src/rtp/tone.js';
import { EspeakSynthesizer } from '../../../src/speech/espeak-synthesizer.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';

t.setTimeout(240_000);

const installed = (program: string, arg = '--version') => spawnSync(program, [arg]).error === undefined;
const ESPEAK = installed('espeak-ng');
const POCKETSPHINX = installed('pocketsphinx_continuous', '-h');
const FROM = '+233200000101';

t.test(`agents talk on calls through the trunk simulator (${backendLabel})`, { skip: ESPEAK && POCKETSPHINX ? false : 'needs espeak-ng, pocketsphinx and pocketsphinx-en-us (Debian packages)' }, async (t) => {
  const model = new OpenAiChatSimulator({
    rules: [
      // The offline recogniser hears espeak's "I want to talk to a person" as e.g. "i want to talk to other than" or,
      // on a loaded machine, "i wasn't at all to a burden": the stand-in model understands those as a person would.
      { match: /talk|person|human|agent|burden|wasn't at all|pressed the key 0/i, reply: { text: 'Of course. Let me put you through.', toolCalls: [{ name: 'transfer', arguments: { destination: 'front-desk', reason: 'asked for a person' } }], followUp: { text: 'Transferring you now.' } } },
    ],
    defaultReply: { text: 'Sorry, I did not catch that. How can I help?' },
  });
  await model.start();
  t.teardown(() => model.stop());

  const d = await startDaemon({
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_VOICE_SIMULATOR: 'on',
    FERRY_VOICE_MEDIA_PORT_MIN: '47000',
    FERRY_VOICE_MEDIA_PORT_MAX: '47399',
    FERRY_VOICE_PRICES_DEFAULT_PER_MINUTE: '0.06',
  });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'voice-agents', ['voice:calls', 'voice:agents']);
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await d.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });
  const voice = d.daemon.modules.service<VoiceModuleService>('voice');

  const agentBody = (overrides: Record<string, unknown> = {}) => ({
    name: 'Front desk',
    systemPrompt: 'You answer calls for {{company}}. Transfer the caller when they ask for a person.',
    firstMessage: 'Hello, this is {{company}}. How can I help?',
    voice: { locale: 'en-US' },
    language: 'en-US',
    llm: { provider: 'openai-compatible', model: 'test-model', baseUrl: model.baseUrl, apiKey: 'sk-test-not-a-real-key' },
    stt: { provider: 'pocketsphinx' },
    tools: [{ type: 'transfer', name: 'transfer', description: 'Hands the caller to a person.', mode: 'blind', destinations: [{ name: 'front-desk', description: 'the front desk, staffed 9 to 5', target: '+233207777001' }] }],
    variables: { company: 'Acme' },
    silenceTimeoutSeconds: 20,
    ...overrides,
  });
  const created = await call(d.api, 'POST', '/v1/voice/agents', { token, body: agentBody() });
  t.equal(created.status, 201, created.text);
  const agentId = created.json.data.agentId as string;
  const caller = await new EspeakSynthesizer().synthesize({ text: 'I want to talk to a person', voice: 'en-US', rate: 120 });

  const get = async (id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}`, { token })).json.data;
  const final = (id: string, ms = 60_000) => until(() => get(id), (c) => ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(c.status), ms);
  const simCall = (to: string) => until(async () => voice.simulator()?.calls().find((c) => c.to.endsWith(to)), (c) => c !== undefined && c.state === 'answered', 20_000);
  const transcript = async (id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}/transcript`, { token })).json.data;

  await t.test('the first message at answer, the caller asks for a person, the model transfers by REFER', async (t) => {
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550123', from: FROM, agentId, variables: { company: 'Acme Travel' } } });
    t.equal(placed.status, 202, placed.text);
    t.match(placed.json.data, { agentId, agentVersion: 1 });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550123');
    // The caller speaks once the greeting is over (a turn, not barge-in).
    await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    t.ok(voice.simulator()!.play(sim!.id, caller), 'the caller says its line');
    const ended = await final(id);
    t.equal(ended.status, 'completed', JSON.stringify(ended.error));
    t.match(ended.error, { code: 'TRANSFERRED' }, 'ended by the transfer');
    const record = voice.simulator()!.calls().find((c) => c.id === sim!.id)!;
    t.same(record.transfer, { to: '+233207777001', status: 200 }, 'the trunk was asked to call the configured destination');
    const tr = await transcript(id);
    const roles = tr.lines.map((l: { role: string }) => l.role);
    t.equal(tr.lines[0].role, 'agent', 'the first message came first');
    t.match(tr.lines[0].text, /Hello, this is Acme Travel/, 'with the call variable filled in');
    const heard = tr.lines.find((l: { role: string }) => l.role === 'caller');
    t.match(heard?.text, /talk|want|wasn't|burden|person/, `pocketsphinx heard the caller: "${heard?.text}"`);
    const tool = tr.lines.find((l: { role: string }) => l.role === 'tool');
    t.match(tool?.tool, { name: 'transfer', arguments: { destination: 'front-desk' }, ok: true });
    t.ok(roles.includes('event'), 'the transfer is an event of the transcript');
    t.match(tr.lines.find((l: { event?: string }) => l.event === 'end'), { detail: { reason: 'agent-ended', detail: { tool: 'transfer' } } }, 'the conversation ended with the transfer, not by silence');
    const turn = tr.lines.find((l: { latency?: unknown }) => l.latency);
    t.ok(turn, 'a turn with its latencies');
    t.ok(turn.latency.totalMs >= turn.latency.sttMs, `end of speech to first audio: ${JSON.stringify(turn.latency)}`);
    t.comment(`transcript: ${JSON.stringify(tr.lines)}`);
    const sent = model.requests.at(-1)!;
    t.match(sent.systemPrompt, /Acme Travel/, 'the model got the system prompt with the variables');
    t.ok(sent.tools?.some((tool: { function?: { name?: string } }) => tool.function?.name === 'transfer'), 'and the transfer tool');
  });

  /** The far end's received audio once its call ended (the simulator keeps it then), from its WAV (44-byte header, 16-bit 8 kHz mono). */
  const recording = (id: string) => {
    const wav = voice.simulator()!.call(id)!.wav();
    return analyzeAudio(new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length)), 8000);
  };
  const personCall = (after: number) =>
    until(async () => voice.simulator()!.calls().find((c) => c.to.endsWith('233207777001') && c.startedAt >= after), (c) => c !== undefined && c.state === 'answered', 30_000);

  await t.test('a trunk that refuses REFER: Ferry calls the person itself and bridges the caller to them', async (t) => {
    const before = Date.now();
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550144', from: FROM, agentId } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550144');
    await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    // From here on the caller presses keys (they reach the model as text): the turns do not hang on recognition.
    voice.simulator()!.sendDigits(sim!.id, '0');
    const person = await personCall(before);
    t.ok(person, 'Ferry called the configured destination through the trunk');
    const bridged = await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string; tool?: { ok: boolean } }) => l.role === 'tool' && l.tool!.ok), 30_000);
    t.ok(bridged.lines.some((l: { event?: string }) => l.event === 'transfer-fallback'), 'the refused REFER is in the transcript');
    t.match(bridged.lines.find((l: { role: string }) => l.role === 'tool').tool.result, { transferred: true, to: 'front-desk', mode: 'bridged' });
    // The caller talks (a 1 kHz tone, played out at the real pace) and the person hears it through the bridge;
    // nothing else plays to the person.
    t.ok(voice.simulator()!.play(sim!.id, generateTone([1000], 1500, 8000)), 'the caller talks');
    await new Promise((resolve) => setTimeout(resolve, 2500));
    t.equal((await get(id)).status, 'in-progress', 'the call lasts while the two talk');
    t.ok(voice.simulator()!.bye(person!.id), 'the person hangs up');
    const ended = await final(id);
    await until(async () => voice.simulator()!.call(person!.id)!, (c) => c.state !== 'answered', 10_000);
    const heard = await until(async () => recording(person!.id), (a) => a.durationSeconds > 0, 10_000);
    t.ok(heard.nonSilentShare > 0.05 && heard.dominantFrequencyHz > 900 && heard.dominantFrequencyHz < 1100, `the person heard the caller (${heard.dominantFrequencyHz.toFixed(0)} Hz, ${(heard.nonSilentShare * 100).toFixed(0)}% of frames)`);
    t.equal(ended.status, 'completed');
    t.match(ended.error, { code: 'TRANSFERRED' }, 'ended by the transfer');
    await until(async () => voice.simulator()!.call(sim!.id)!, (c) => c.state !== 'answered', 10_000);
    t.equal(voice.simulator()!.call(sim!.id)!.endedBy, 'caller', 'and the caller\'s leg was hung up by Ferry');
  });

  await t.test('a warm transfer: the person hears who is coming, then the two are bridged; the caller hanging up ends both', async (t) => {
    const warm = await call(d.api, 'POST', '/v1/voice/agents', {
      token,
      body: agentBody({ name: 'Warm desk', tools: [{ type: 'transfer', name: 'transfer', description: 'Hands the caller to a person.', mode: 'warm', destinations: [{ name: 'front-desk', description: 'the front desk', target: '+233207777001' }] }] }),
    });
    t.equal(warm.status, 201, warm.text);
    const before = Date.now();
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550212', from: FROM, agentId: warm.json.data.agentId } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550212');
    await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    voice.simulator()!.sendDigits(sim!.id, '0');
    const person = await personCall(before);
    const done = await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string; tool?: { ok: boolean } }) => l.role === 'tool' && l.tool!.ok), 45_000);
    t.match(done.lines.find((l: { role: string }) => l.role === 'tool').tool.result, { transferred: true, mode: 'warm' });
    t.ok(voice.simulator()!.bye(sim!.id), 'the caller hangs up');
    const ended = await final(id);
    t.equal(ended.status, 'completed');
    await until(async () => voice.simulator()!.call(person!.id)!, (c) => c.state !== 'answered', 10_000);
    t.equal(voice.simulator()!.call(person!.id)!.endedBy, 'caller', "Ferry hung up the person's leg with the call");
    const heard = await until(async () => recording(person!.id), (a) => a.durationSeconds > 0, 10_000);
    t.ok(heard.nonSilentShare > 0.2, `the person heard the summary first (${(heard.nonSilentShare * 100).toFixed(0)}% of frames)`);
  });

  await t.test('a person who does not answer a bridged transfer: the model hears it', async (t) => {
    const busy = await call(d.api, 'POST', '/v1/voice/agents', {
      token,
      body: agentBody({ name: 'Busy desk', tools: [{ type: 'transfer', name: 'transfer', description: 'Hands the caller to a person.', mode: 'warm', destinations: [{ name: 'front-desk', description: 'the front desk', target: '+233207777486' }] }] }),
    });
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550213', from: FROM, agentId: busy.json.data.agentId } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550213');
    await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    voice.simulator()!.sendDigits(sim!.id, '0');
    const failedTool = await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string; tool?: { ok: boolean } }) => l.role === 'tool' && !l.tool!.ok), 30_000);
    t.match(failedTool.lines.find((l: { role: string }) => l.role === 'tool').tool.result, { error: /could not be reached \(486/ }, 'the busy person reached the model');
    t.equal((await get(id)).status, 'in-progress', 'the caller is still with the agent');
    t.equal((await call(d.api, 'POST', `/v1/voice/calls/${id}/hangup`, { token })).status, 202);
    t.equal((await final(id)).status, 'completed');
  });

  await t.test('a model that does not answer in time: the apology is spoken and the call ends', async (t) => {
    model.rules.unshift({ match: /pressed the key 0/i, reply: { delayMs: 15_000, text: 'too late' } });
    t.teardown(() => void model.rules.shift());
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550155', from: FROM, agentId } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550155');
    await until(() => transcript(id), (tr) => tr.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    voice.simulator()!.sendDigits(sim!.id, '0');
    const ended = await final(id);
    t.equal(ended.status, 'completed');
    t.match(ended.error, { code: 'LLM_TIMEOUT' }, 'the failure is the call\'s reason');
    const tr = await transcript(id);
    t.ok(tr.lines.some((l: { role: string; text?: string }) => l.role === 'agent' && /trouble/.test(l.text ?? '')), 'the apology was spoken');
  });

  await t.test("webhook and send_sms tools: the customer's endpoint is called signed, the caller gets a text, end_call ends it", async (t) => {
    const hook = await WebhookReceiver.start();
    t.teardown(() => hook.close());
    const tools = [
      { type: 'webhook', name: 'lookup_order', description: 'Looks an order up.', url: hook.url, parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] }, timeoutMs: 5000 },
      { type: 'send_sms', name: 'text_me', description: 'Texts the caller.' },
      { type: 'end_call', name: 'end_call', description: 'Ends the call.' },
    ];
    const toolAgent = await call(d.api, 'POST', '/v1/voice/agents', { token, body: agentBody({ name: 'Orders', tools }) });
    t.equal(toolAgent.status, 201, toolAgent.text);
    model.rules.unshift({
      match: /pressed the key 5/i,
      reply: {
        toolCalls: [{ name: 'lookup_order', arguments: { order: '42' } }, { name: 'text_me', arguments: { message: 'Your order 42 ships today.' } }],
        followUp: { text: 'I sent you the details. Goodbye.', toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] },
      },
    });
    t.teardown(() => void model.rules.shift());
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550182', from: FROM, agentId: toolAgent.json.data.agentId } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550182');
    await until(() => transcript(id), (x) => x.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    voice.simulator()!.sendDigits(sim!.id, '5');
    const ended = await final(id);
    t.equal(ended.status, 'completed');
    t.equal(ended.error, null, 'ended by the agent, no error');
    t.equal(hook.received.length, 1, 'the webhook tool was called once');
    t.match(hook.received[0].json, { type: 'voice.agent.tool', tool: 'lookup_order', callId: id, arguments: { order: '42' } });
    t.match(hook.received[0].headers['webhook-signature'], /^v1,/, 'signed like webhooks');
    const tr = await transcript(id);
    const sms = tr.lines.find((l: { role: string; tool?: { name: string } }) => l.role === 'tool' && l.tool!.name === 'text_me');
    t.match(sms?.tool, { ok: true, result: { sent: true } });
    const admin = await d.adminCall('POST', '/admin/keys', { account: 'voice-agents', scopes: 'all' });
    const status = await call(d.api, 'GET', `/v1/sms/status/${sms.tool.result.messageId}`, { token: admin.token as string });
    t.equal(status.status, 200, 'the text is a message of the account');
    t.ok(tr.lines.some((l: { role: string; text?: string }) => l.role === 'agent' && /Goodbye/.test(l.text ?? '')), 'the last words were spoken before it ended');
  });

  await t.test('the caller speaking over the agent stops its playback (barge-in)', async (t) => {
    const long = await call(d.api, 'POST', '/v1/voice/agents', {
      token,
      body: agentBody({ name: 'Talkative', firstMessage: 'Hello, this is {{company}}. We have many offers today, on flights, on hotels, on cars and on whole holidays, and I would like to tell you about every one of them in turn.' }),
    });
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550162', from: FROM, agentId: long.json.data.agentId } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550162');
    // The greeting lasts seconds: the caller cuts in one second after the answer.
    await new Promise((r) => setTimeout(r, 1000));
    voice.simulator()!.play(sim!.id, caller);
    const tr = await until(() => transcript(id), (x) => x.lines.some((l: { role: string }) => l.role === 'caller'), 30_000);
    const greeting = tr.lines[0];
    t.equal(greeting.role, 'agent');
    t.equal(greeting.interrupted, true, 'the greeting was cut off');
    t.ok(tr.lines.some((l: { role: string }) => l.role === 'caller'), 'and the caller was heard');
    await call(d.api, 'POST', `/v1/voice/calls/${id}/hangup`, { token });
    await final(id);
  });

  await t.test('a relay customer runs the conversation over a WebSocket and hands the caller over', async (t) => {
    const customer = new RelayCustomer({
      rules: [{ dtmf: '0', reply: [{ say: 'Sure, one moment please.' }, { end: { transfer: 'front-desk' } }] }],
      fallback: [{ say: 'Could you say that again?' }],
    });
    const url = await customer.start();
    t.teardown(() => customer.stop());
    const relayAgent = await call(d.api, 'POST', '/v1/voice/agents', { token, body: agentBody({ name: 'Relay desk', llm: undefined, systemPrompt: undefined, relay: { url } }) });
    t.equal(relayAgent.status, 201, relayAgent.text);
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550172', from: FROM, agentId: relayAgent.json.data.agentId, variables: { company: 'Relay Co' } } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550172');
    await until(() => transcript(id), (x) => x.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    voice.simulator()!.sendDigits(sim!.id, '0');
    const ended = await final(id);
    t.match(ended.error, { code: 'TRANSFERRED' }, 'the relay handed the caller to the front desk');
    const connection = customer.connections[0];
    t.ok(connection, 'Ferry connected to the relay');
    const setup = connection.received.find((f) => f.type === 'setup');
    t.match(setup, { callId: id, direction: 'outbound', variables: { company: 'Relay Co' } }, 'and sent setup');
    t.ok(connection.received.some((f) => f.type === 'dtmf' && f.digit === '0'), 'then the key the caller pressed');
    const tr = await transcript(id);
    t.ok(tr.lines.some((l: { role: string; text?: string }) => l.role === 'agent' && /one moment/.test(l.text ?? '')), "the relay's words were spoken");
  });

  await t.test('speech-to-text from an OpenAI-compatible provider: what it hears goes to the model', async (t) => {
    const stt = new OpenAiTranscriptionSimulator();
    await stt.start({ apiKey: 'stt-test-not-a-real-key' });
    t.teardown(() => stt.stop());
    stt.script('I would like to talk to a person please');
    const sttAgent = await call(d.api, 'POST', '/v1/voice/agents', {
      token,
      body: agentBody({ name: 'Cloud ears', stt: { provider: 'openai-compatible', model: 'whisper-1', baseUrl: stt.baseUrl, apiKey: 'stt-test-not-a-real-key' } }),
    });
    t.equal(sttAgent.status, 201, sttAgent.text);
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550191', from: FROM, agentId: sttAgent.json.data.agentId } });
    const id = placed.json.data.callId as string;
    const sim = await simCall('14155550191');
    await until(() => transcript(id), (x) => x.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    voice.simulator()!.play(sim!.id, caller);
    const ended = await final(id);
    t.match(ended.error, { code: 'TRANSFERRED' });
    const heard = (await transcript(id)).lines.find((l: { role: string }) => l.role === 'caller');
    t.equal(heard?.text, 'I would like to talk to a person please', "the provider's transcript, as it gave it");
    t.ok(stt.requests.length >= 1 && stt.requests.every((r) => r.authorized), 'the provider got the audio with its key');
  });

  await t.test('an agent call is refused up front for an unknown agent, and a transcript is the account\'s own', async (t) => {
    const r = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550123', from: FROM, agentId: 'agent_00000000000000000000000000' } });
    t.equal(r.status, 404);
    t.equal(r.json.code, 'VOICE_AGENT_NOT_FOUND');
    const both = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to: '+14155550123', from: FROM, agentId, say: { text: 'hi' } } });
    t.equal(both.status, 400, 'an agent or a script, not both');
    const other = await accountWithKey(d, 'voice-agents-other', ['voice:calls']);
    const placed = (await call(d.api, 'GET', '/v1/voice/calls?limit=1', { token })).json.data.calls[0].callId as string;
    t.equal((await call(d.api, 'GET', `/v1/voice/calls/${placed}/transcript`, { token: other.token })).status, 404, "another account's call is not found");
  });
});
