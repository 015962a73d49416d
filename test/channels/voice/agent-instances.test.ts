// AI voice agents across two instances on one Postgres and Redis: A runs every role but media (API, workers), B every
// role (the only dialler), both trunked to one SIP trunk simulator in this process. An agent made through A places a
// call through A that B carries: its first message is heard at the far end, a scripted caller utterance makes the
// model transfer the call, the transcript reads the same through either, and its events reach the webhook once each
// although both instances deliver webhooks. A hang-up asked through A ends an agent call on B (relayed over pub/sub),
// and an agent changed through A while B carries a call with it: that call keeps its version, a new one gets the next.
// Speech is the local OpenAI-compatible stand-ins' (text-to-speech tones, scripted speech-to-text, scripted model), so
// no Debian package is needed.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { OpenAiChatSimulator } from '../../../src/sim/llm/openai-chat-simulator.js';
import { OpenAiSpeechSimulator } from '../../../src/sim/speech/openai-speech-simulator.js';
import { OpenAiTranscriptionSimulator } from '../../../src/sim/speech/openai-transcription-simulator.js';
import { speechTones } from '../../../src/sim/speech/speech-tones.js';
import { VoiceTrunkSimulator } from '../../../src/sim/voice/trunk-simulator.js';
import { accountWithKey, call, startDaemon, startSecondInstance, type TestDaemon } from '../../helpers/daemon.js';
import { DATABASE_URL, REDIS_URL } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';

t.setTimeout(240_000);

const skip = DATABASE_URL && REDIS_URL ? false : 'two instances need DATABASE_URL and REDIS_URL (embedded storage is a single process)';
const FROM = '+233200000101';
const FRONT_DESK = '+233207000301';
const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
const AGENT_EVENTS = ['voice.agent.turn', 'voice.agent.tool', 'voice.agent.transfer'];
const KEY = 'sk-test-not-a-real-key';
// What the caller says: speech-like tones the media worker's voice activity detection cuts as one utterance.
const CALLER = speechTones('I want to talk to a person please', { sampleRate: 8000, msPerCharacter: 70, speed: 1, maxSeconds: 5 });

/** An assertion's name, with the answer's body when the status is not the one expected. */
const answered = (what: string, r: { status: number; text: string }) => (r.status < 300 ? what : `${what}: ${r.text}`);

interface Line {
  seq: number;
  role: string;
  text?: string;
  event?: string;
  latency?: unknown;
  tool?: { name: string; arguments: Record<string, unknown>; ok: boolean };
  detail?: Record<string, unknown>;
}

t.test('agent calls across two instances: placed through A, carried by B, read, delivered and hung up through either', { skip }, async (t) => {
  const model = new OpenAiChatSimulator({
    rules: [
      { match: /person/i, reply: { text: 'Of course. Let me put you through.', toolCalls: [{ name: 'transfer', arguments: { destination: 'front-desk', reason: 'asked for a person' } }] } },
      { match: /goodbye/i, reply: { text: 'Goodbye.', toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] } },
    ],
    defaultReply: { text: 'Sorry, I did not catch that.' },
  });
  await model.start();
  t.teardown(() => model.stop());
  const tts = new OpenAiSpeechSimulator({ voices: ['alloy'] });
  await tts.start({ apiKey: KEY });
  t.teardown(() => tts.stop());
  const stt = new OpenAiTranscriptionSimulator();
  await stt.start({ apiKey: KEY });
  t.teardown(() => stt.stop());
  const sim = new VoiceTrunkSimulator();
  await sim.start({ host: '127.0.0.1', port: 0, transport: 'udp', mediaPortRange: { min: 47700, max: 47799 } });
  t.teardown(() => sim.stop());

  const config = join(tmpdir(), `ferry-voice-agent-instances-${process.pid}.yaml`);
  writeFileSync(
    config,
    stringify({
      voice: {
        trunks: [{ name: 'far-end', host: '127.0.0.1', port: sim.port, transport: 'udp', maxCallsPerSecond: 100, optionsIntervalSeconds: 0 }],
        tts: { providers: [{ id: 'tones', baseUrl: tts.baseUrl, apiKey: KEY, model: 'tts-1', voices: [{ locale: 'en-US', voice: 'alloy', name: 'Alloy' }] }] },
      },
    }),
  );
  t.teardown(() => rmSync(config, { force: true }));
  const a = await startDaemon({
    FERRY_CONFIG: config,
    FERRY_VOICE_SIMULATOR: 'off',
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_HTTP_RATE_LIMIT_PER_KEY_PER_SECOND: '0',
    // B's claim renewal (every lease / 4) also picks up hang-ups asked elsewhere; this long a lease keeps it from
    // running within the test, so a call that ends on a hang-up asked through A was told over pub/sub.
    FERRY_VOICE_OWNER_LEASE_SECONDS: '600',
    // Instances sharing a database share the key API secrets are hashed and agent keys sealed with.
    FERRY_SECURITY_SECRET_KEY: randomBytes(32).toString('hex'),
    // Everything but media: A takes API calls and delivers webhooks, and dials nothing.
    FERRY_ROLE: 'api,smpp,workers,realtime',
    FERRY_VOICE_MEDIA_PORT_MIN: '47850',
    FERRY_VOICE_MEDIA_PORT_MAX: '47899',
  });
  // B on its own data folder, as a second machine would be, with every role: the only instance that dials.
  const b = await startSecondInstance(t, a, { FERRY_ROLE: 'all', FERRY_VOICE_MEDIA_PORT_MIN: '47800', FERRY_VOICE_MEDIA_PORT_MAX: '47849' }, 'ferry-voice-agent-b-');
  t.equal(a.daemon.modules.service<VoiceModuleService>('voice').dialer(), null, 'A runs no dialer');
  t.not(b.daemon.modules.service<VoiceModuleService>('voice').dialer(), null, 'B does');
  const bHolder = readFileSync(join(b.reuse.env.FERRY_DATA_DIR, 'voice-calls.holder'), 'utf8').trim();

  const { account, token } = await accountWithKey(a, 'voice-agent-instances');
  await a.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  const hook = await WebhookReceiver.start();
  t.teardown(() => hook.close());
  const subscribed = await call(a.api, 'POST', '/v1/webhooks', { token, body: { url: hook.url, events: [...AGENT_EVENTS, 'voice.call.completed'] } });
  t.equal(subscribed.status, 200, answered('webhook subscribed', subscribed));

  const agentBody = {
    name: 'Front desk',
    systemPrompt: 'You answer calls for {{company}}. Transfer the caller when they ask for a person.',
    firstMessage: 'Hello, this is {{company}}. How can I help?',
    voice: { locale: 'en-US' },
    language: 'en-US',
    llm: { provider: 'openai-compatible', model: 'test-model', baseUrl: model.baseUrl, apiKey: KEY },
    stt: { provider: 'openai-compatible', model: 'whisper-1', baseUrl: stt.baseUrl, apiKey: KEY },
    tools: [
      { type: 'transfer', name: 'transfer', description: 'Hands the caller to a person.', mode: 'blind', destinations: [{ name: 'front-desk', description: 'the front desk', target: FRONT_DESK }] },
      { type: 'end_call', name: 'end_call', description: 'Ends the call.' },
    ],
    variables: { company: 'Acme' },
    silenceTimeoutSeconds: 60,
  };
  const created = await call(a.api, 'POST', '/v1/voice/agents', { token, body: agentBody });
  t.equal(created.status, 201, answered('agent created through A', created));
  const agentId = created.json.data.agentId as string;

  const place = async (to: string, company: string) => {
    const r = await call(a.api, 'POST', '/v1/voice/calls', { token, body: { to, from: FROM, agentId, variables: { company } } });
    t.equal(r.status, 202, answered(`call to ${to} placed through A`, r));
    return r.json.data as { callId: string; agentId: string; agentVersion: number };
  };
  const get = async (d: TestDaemon, id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}`, { token })).json?.data;
  const final = (d: TestDaemon, id: string) => until(() => get(d, id), (c) => FINAL.includes(c?.status), 60_000);
  const transcript = async (d: TestDaemon, id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}/transcript`, { token })).json?.data as { callId: string; agentId: string; agentVersion: number; lines: Line[] };
  // The call's end is stored a moment before its transcript's last line ("end"): read a finished transcript after it.
  const finished = (d: TestDaemon, id: string) => until(() => transcript(d, id), (tr) => tr?.lines.some((l) => l.event === 'end'), 15_000);
  const greeted = (id: string) => until(() => transcript(a, id), (tr) => tr?.lines.some((l) => l.role === 'agent'), 30_000);
  const owner = async (id: string) => (await a.daemon.db.query<{ owner: string | null }>(`SELECT owner FROM voice_calls WHERE id = $1`, [id])).rows[0]?.owner;
  const farCall = (to: string) => until(() => Promise.resolve(sim.calls().filter((c) => c.to === to)), (c) => c.length > 0 && c[0].state === 'answered', 30_000).then((c) => c[0]);
  const farEnded = (to: string) => until(() => Promise.resolve(sim.calls().find((c) => c.to === to)!), (c) => c.state === 'ended', 15_000);
  const eventsOf = (id: string) => hook.received.filter((r) => r.json?.data?.callId === id);

  await t.test('placed through A, carried by B: first message, a scripted caller, the model transfers; the same through either', async (t) => {
    const placed = await place('+14155550301', 'Acme Travel');
    t.match(placed, { agentId, agentVersion: 1 }, 'placed with version 1');
    const id = placed.callId;
    const far = await farCall('+14155550301');
    t.equal(await owner(id), bHolder, 'B owns the call');
    await greeted(id);
    stt.script('I want to talk to a person');
    t.ok(sim.play(far.id, CALLER), 'the caller speaks once the greeting is over');
    const ended = await final(a, id);
    t.equal(ended.status, 'completed', JSON.stringify(ended.error));
    t.match(ended.error, { code: 'TRANSFERRED' }, 'ended by the transfer');
    t.match(ended, { agentId, agentVersion: 1 }, 'read through A: still version 1');
    t.equal(sim.calls().filter((c) => c.to === '+14155550301').length, 1, 'dialled once');
    const record = await farEnded('+14155550301');
    t.same(record.transfer, { to: FRONT_DESK, status: 200 }, 'the trunk was asked (REFER) to call the configured destination');
    t.ok(record.audio && record.audio.nonSilentShare > 0, `the far end heard the agent (${JSON.stringify(record.audio)})`);
    t.ok(tts.requests.some((q) => q.input === 'Hello, this is Acme Travel. How can I help?'), 'the first message, variables filled in, was synthesised');

    const fromA = await finished(a, id);
    const fromB = await transcript(b, id);
    t.same(fromA, fromB, 'the transcript reads the same through A and through B');
    t.match(fromA, { callId: id, agentId, agentVersion: 1 }, 'the transcript names the agent and version');
    const lines = fromA.lines;
    t.same(
      lines.map((l) => l.seq),
      lines.map((_, i) => i + 1),
      'its lines numbered in order, none missing',
    );
    t.match(lines[0], { role: 'agent', text: 'Hello, this is Acme Travel. How can I help?' }, 'the first message first');
    t.match(lines.find((l) => l.role === 'caller'), { text: 'I want to talk to a person', source: 'speech' }, 'the scripted caller heard');
    t.match(lines.find((l) => l.role === 'tool')?.tool, { name: 'transfer', arguments: { destination: 'front-desk' }, ok: true }, 'the tool call');
    t.match(lines.find((l) => l.event === 'transfer'), { detail: { destination: 'front-desk', ok: true } }, 'the transfer');
    t.match(lines.find((l) => l.event === 'end'), { detail: { reason: 'agent-ended', detail: { tool: 'transfer' } } }, 'the outcome');
    t.ok(stt.requests.some((r) => r.heardBy === 'script' && r.authorized), "B sent the caller's audio to the recogniser with its key");
    t.match(model.requests.at(-1)?.systemPrompt, /Acme Travel/, 'the model got the prompt with the call variables');

    // The events each line is sent as, once each, although A and B both deliver webhooks.
    const expected = lines.filter((l) => (l.role === 'agent' && l.latency) || l.role === 'tool' || l.event === 'transfer');
    t.ok(expected.some((l) => l.role === 'agent') && expected.some((l) => l.role === 'tool'), 'a turn and a tool call to be sent');
    await until(() => Promise.resolve(eventsOf(id).map((r) => r.json.type as string)), (k) => k.includes('voice.call.completed') && k.filter((x) => AGENT_EVENTS.includes(x)).length >= expected.length, 30_000);
    const agentEvents = eventsOf(id).filter((r) => AGENT_EVENTS.includes(r.json.type));
    t.same(
      agentEvents.map((r) => r.json.data.seq).sort((x: number, y: number) => x - y),
      expected.map((l) => l.seq),
      'one event per turn, tool call and transfer line',
    );
    t.match(agentEvents.find((r) => r.json.type === 'voice.agent.tool')?.json.data, { callId: id, role: 'tool', tool: { name: 'transfer', ok: true } }, 'voice.agent.tool carries the tool call');
    t.equal(agentEvents.filter((r) => r.json.type === 'voice.agent.turn').length, expected.filter((l) => l.role === 'agent').length, 'voice.agent.turn once per turn');
  });

  await t.test('a hang-up asked through A ends an agent call B carries', async (t) => {
    const { callId: id } = await place('+14155550302', 'Acme');
    await farCall('+14155550302');
    t.equal(await owner(id), bHolder, 'B owns the call');
    await greeted(id);
    const h = await call(a.api, 'POST', `/v1/voice/calls/${id}/hangup`, { token });
    t.equal(h.status, 202, answered('hang-up asked through A', h));
    const ended = await final(a, id);
    t.match(ended, { status: 'completed', error: { code: 'HANGUP_REQUESTED' } }, 'completed, HANGUP_REQUESTED');
    const far = await farEnded('+14155550302');
    t.equal(far.endedBy, 'caller', 'B sent the far end a BYE');
    t.ok(far.audio && far.audio.nonSilentShare > 0, 'after it heard the first message');
    const tr = await finished(a, id);
    t.match(tr.lines.find((l) => l.event === 'end'), { detail: { reason: 'caller-hangup' } }, 'the conversation ended with the call');
    t.same((await transcript(b, id)).lines, tr.lines, 'the same through B');
  });

  await t.test('an agent changed through A while B carries a call with it: that call keeps its version, a new one gets the next', async (t) => {
    const before = (await call(a.api, 'GET', `/v1/voice/agents/${agentId}`, { token })).json.data.currentVersion as number;
    const old = await place('+14155550303', 'Call One');
    t.equal(old.agentVersion, before, `placed with version ${before}`);
    const oldFar = await farCall('+14155550303');
    await greeted(old.callId);

    const patched = await call(a.api, 'PATCH', `/v1/voice/agents/${agentId}`, {
      token,
      body: { systemPrompt: 'Version two answers for {{company}}. Transfer the caller when they ask for a person.', firstMessage: 'Good day from {{company}}, version two speaking.' },
    });
    t.equal(patched.status, 200, answered('agent changed through A', patched));
    t.match(patched.json.data, { version: before + 1, currentVersion: before + 1 }, 'a new version');
    const fresh = await place('+14155550304', 'Call Two');
    t.equal(fresh.agentVersion, before + 1, 'a new call gets the new version');
    await farCall('+14155550304');
    t.equal(await owner(fresh.callId), bHolder, 'B carries the new call too');
    const freshTr = await greeted(fresh.callId);
    t.equal(freshTr.agentVersion, before + 1, "the new call's transcript names the new version");
    t.match(freshTr.lines[0], { role: 'agent', text: 'Good day from Call Two, version two speaking.' }, "the new call speaks the new version's first message");

    // The old call talks on with its own version: the model gets the old prompt.
    stt.script('That is all, goodbye');
    t.ok(sim.play(oldFar.id, CALLER), 'the caller on the old call speaks');
    const oldEnded = await final(a, old.callId);
    t.equal(oldEnded.status, 'completed', 'the old call completed');
    t.equal(oldEnded.error, null, 'ended by the agent (end_call), no error');
    t.equal(oldEnded.agentVersion, before, 'the call still shows the version it started with');
    const oldTr = await finished(a, old.callId);
    t.equal(oldTr.agentVersion, before, 'and so does its transcript');
    t.match(oldTr.lines[0], { role: 'agent', text: 'Hello, this is Call One. How can I help?' }, 'its first message was the old one');
    t.match(oldTr.lines.find((l) => l.role === 'tool')?.tool, { name: 'end_call', ok: true }, 'after the caller said goodbye, the model ended it');
    const asked = model.requests.filter((r) => r.systemPrompt?.includes('Call One'));
    t.ok(asked.length > 0, 'the model was asked for the old call');
    t.ok(
      asked.every((r) => r.systemPrompt!.startsWith('You answer calls for Call One')),
      'with the prompt of the version the call started with',
    );

    t.equal((await call(a.api, 'POST', `/v1/voice/calls/${fresh.callId}/hangup`, { token })).status, 202, 'the new call hung up through A');
    t.match(await final(a, fresh.callId), { status: 'completed', agentVersion: before + 1 }, 'ended, on the new version');
    await finished(a, fresh.callId);
  });

  await t.test('every agent event reached the webhook exactly once', async (t) => {
    const ids: string[] = (await call(a.api, 'GET', '/v1/voice/calls?limit=10', { token })).json.data.calls.map((c: { callId: string }) => c.callId);
    t.equal(ids.length, 4, 'the four calls');
    const toSend: string[] = [];
    for (const id of ids) {
      const tr = await finished(a, id);
      for (const l of tr.lines) if ((l.role === 'agent' && l.latency) || l.role === 'tool' || l.event === 'transfer') toSend.push(`${id}#${l.seq}`);
    }
    // Events of one call arrive in order: once each call's completion is in, so are its transcript's events.
    const completed = () => new Set(hook.received.filter((r) => r.json?.type === 'voice.call.completed').map((r) => r.json.data.callId as string));
    await until(() => Promise.resolve(completed()), (s) => ids.every((id) => s.has(id)), 30_000);
    const agentEvents = hook.received.filter((r) => AGENT_EVENTS.includes(r.json?.type));
    const sent = agentEvents.map((r) => `${r.json.data.callId}#${r.json.data.seq}`);
    t.same(sent.slice().sort(), toSend.slice().sort(), `each line to send was sent exactly once (${toSend.length} events), none twice`);
    const eventIds = hook.received.map((r) => String(r.json?.id));
    t.equal(new Set(eventIds).size, eventIds.length, `no event delivered twice (${eventIds.length} deliveries)`);
  });
});
