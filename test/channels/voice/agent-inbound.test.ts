// Inbound calls answered by an AI voice agent, through a whole daemon on both backends: the account routes one of
// its numbers to an agent (PUT /v1/voice/numbers/{number}); a caller (Ferry's own SIP and RTP stacks in this test,
// from the trunk's address) calls it; the agent answers with its first message, the caller presses 0, the model
// transfers; the caller's side refuses REFER, so Ferry calls the person through the trunk simulator and bridges.
// Also: an unrouted number is refused 404, a route removed stops answering.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { analyzeAudio } from '../../../src/audio/analysis.js';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { OpenAiChatSimulator } from '../../../src/sim/llm/openai-chat-simulator.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import { trunkCaller } from './helpers/trunk-caller.js';

t.setTimeout(240_000);

const OUR_NUMBER = '+233200000303';
const CALLER = '+14155550313';

const ESPEAK = spawnSync('espeak-ng', ['--version']).error === undefined;

t.test(`an agent answers calls to a routed number (${backendLabel})`, { skip: ESPEAK ? false : 'needs espeak-ng (Debian package) for the agent\'s voice' }, async (t) => {
  const model = new OpenAiChatSimulator({
    rules: [{ match: /pressed the key 0/i, reply: { text: 'Let me put you through.', toolCalls: [{ name: 'transfer', arguments: { destination: 'front-desk', reason: 'asked for a person' } }] } }],
    defaultReply: { text: 'How can I help?' },
  });
  await model.start();
  t.teardown(() => model.stop());

  const d = await startDaemon({
    // The stand-in model is on http://127.0.0.1 (a deployment's guard would refuse it).
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_VOICE_SIMULATOR: 'on',
    FERRY_VOICE_MEDIA_PORT_MIN: '48000',
    FERRY_VOICE_MEDIA_PORT_MAX: '48199',
    FERRY_VOICE_PRICES_INBOUND_PER_MINUTE: '0.01',
  });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'voice-inbound', ['voice:calls', 'voice:agents']);
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: OUR_NUMBER });
  await d.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });
  const voice = d.daemon.modules.service<VoiceModuleService>('voice');
  // The SIP port the daemon picked (port 0): a fixed port can be taken, e.g. as a Postgres connection's local port.
  const FERRY_SIP_PORT = voice.sipPort()!;

  const created = await call(d.api, 'POST', '/v1/voice/agents', {
    token,
    body: {
      name: 'Reception',
      systemPrompt: 'You answer calls for Acme. Transfer the caller when they ask for a person.',
      firstMessage: 'Hello, Acme reception.',
      voice: { locale: 'en-US' },
      llm: { provider: 'openai-compatible', model: 'test-model', baseUrl: model.baseUrl, apiKey: 'sk-test-not-a-real-key' },
      stt: { provider: 'pocketsphinx' },
      tools: [{ type: 'transfer', name: 'transfer', description: 'Hands the caller to a person.', destinations: [{ name: 'front-desk', description: 'the front desk', target: '+233207777001' }] }],
    },
  });
  t.equal(created.status, 201, created.text);
  const agentId = created.json.data.agentId as string;
  const routed = await call(d.api, 'PUT', `/v1/voice/numbers/${encodeURIComponent(OUR_NUMBER)}`, { token, body: { agentId } });
  t.equal(routed.status, 200, routed.text);

  const carrier = await trunkCaller(t, { ferrySipPort: FERRY_SIP_PORT, from: CALLER, mediaPorts: { min: 48200, max: 48299 } });
  const dial = async (to: string) => {
    const c = await carrier.call(to);
    return { ...c, ...(await c.outcome) };
  };

  await t.test('an unrouted number is refused 404', async (t) => {
    const attempt = await dial('+233200000399');
    t.same([attempt.answered, attempt.code], [false, 404]);
    await attempt.media.stop();
  });

  await t.test('the agent answers, greets, transfers on request; REFER refused, so Ferry bridges the person', async (t) => {
    const before = Date.now();
    const caller = await dial(OUR_NUMBER);
    t.ok(caller.answered, 'Ferry answered the call');
    const listed = await until(async () => (await call(d.api, 'GET', '/v1/voice/calls', { token })).json.data.calls, (calls) => calls[0]?.status === 'in-progress', 10_000);
    const view = listed[0];
    t.match(view, { direction: 'inbound', to: OUR_NUMBER, from: CALLER, agentId, status: 'in-progress' }, 'an inbound call of the account, with its agent');
    const transcript = async () => (await call(d.api, 'GET', `/v1/voice/calls/${view.callId}/transcript`, { token })).json.data;
    await until(transcript, (tr) => tr.lines.some((l: { role: string }) => l.role === 'agent'), 20_000);
    caller.media.sendDigits('0');
    const person = await until(
      async () => voice.simulator()?.calls().find((c) => c.to.endsWith('233207777001') && c.startedAt >= before),
      (c) => c !== undefined && c.state === 'answered',
      30_000,
    );
    t.ok(person, 'Ferry called the front desk through the trunk');
    const tr = await until(transcript, (x) => x.lines.some((l: { role: string; tool?: { ok: boolean } }) => l.role === 'tool' && l.tool!.ok), 30_000);
    t.ok(tr.lines.some((l: { event?: string }) => l.event === 'transfer-fallback'), 'the caller side refused REFER (it has no handler), so Ferry bridged');
    t.match(tr.lines[0], { role: 'agent', text: /Hello, Acme reception/ });
    caller.sip.bye();
    const ended = await until(async () => (await call(d.api, 'GET', `/v1/voice/calls/${view.callId}`, { token })).json.data, (c) => c.status === 'completed', 15_000);
    t.equal(ended.status, 'completed');
    t.ok(ended.cost > 0, `billed at the inbound price (${ended.cost})`);
    await until(async () => voice.simulator()!.call(person!.id)!, (c) => c.state !== 'answered', 10_000);
    t.equal(voice.simulator()!.call(person!.id)!.endedBy, 'caller', "the person's leg ended with the call");
    const { recording } = await caller.media.stop();
    const heard = analyzeAudio(recording ?? new Int16Array(0), 8000);
    t.ok(heard.nonSilentShare > 0.1, `the caller heard the agent (${(heard.nonSilentShare * 100).toFixed(0)}% of frames)`);
  });

  await t.test('an inbound call whose instance stopped before answering is failed, never dialled', async (t) => {
    // As if the instance that took the INVITE died right after storing it: its claim lapses at once.
    const orphan = await voice.voice.receive(account.id, { to: OUR_NUMBER, from: CALLER, agentId }, 1);
    const ended = await until(async () => (await call(d.api, 'GET', `/v1/voice/calls/${orphan.id}`, { token })).json.data, (c) => c.status !== 'queued', 10_000);
    t.match(ended, { status: 'failed', direction: 'inbound', error: { code: 'OWNER_LOST' } });
    t.notOk(voice.simulator()?.calls().some((c) => c.to.endsWith(OUR_NUMBER.slice(1))), 'nothing dialled our own number');
  });

  await t.test('a route removed stops answering', async (t) => {
    const removed = await call(d.api, 'PUT', `/v1/voice/numbers/${encodeURIComponent(OUR_NUMBER)}`, { token, body: { agentId: null } });
    t.equal(removed.status, 200, removed.text);
    const attempt = await dial(OUR_NUMBER);
    t.same([attempt.answered, attempt.code], [false, 404]);
    await attempt.media.stop();
  });
});
