import Fastify from 'fastify';
import t from 'tap';
import { generateTone } from '../../../src/rtp/index.js';
import { simAdminRoutes } from '../../../src/sim/voice/sim-admin-routes.js';
import { VoiceTrunkSimulator } from '../../../src/sim/voice/trunk-simulator.js';
import { dial, event, FAST, has, sleep, startCaller, until } from './helpers.js';

// Media ports of this file's own (the simulator test takes 42000-42399).
const CALLER_PORTS = { min: 42400, max: 42499 };
const SIM_PORTS = { min: 42500, max: 42599 };

const sim = new VoiceTrunkSimulator();
await sim.start({ mediaPortRange: SIM_PORTS, timers: FAST, transport: 'udp' });
t.teardown(() => sim.stop());
const caller = await startCaller(t, CALLER_PORTS);

let running: VoiceTrunkSimulator | null = sim;
const app = Fastify();
await app.register(simAdminRoutes, { simulator: () => running });
await app.ready();
t.teardown(() => app.close());

t.test('list, digits, bye and the recording of a call', async (t) => {
  const d = await dial(caller, sim, '+233201234567');
  await until(() => has(d.events, 'answered'), 5000, 'answer');
  const played = d.media.played();
  d.media.play(generateTone([1000], 500));
  await played;
  await sleep(200);

  const list = await app.inject({ method: 'GET', url: '/admin/sim/voice/calls' });
  t.equal(list.statusCode, 200);
  const body = list.json();
  t.match(body, { success: true, code: 'OK', data: { url: sim.url }, requestId: String });
  t.equal(body.data.calls.length, 1);
  const view = body.data.calls[0];
  t.match(view, { callId: d.call.callId, to: '+233201234567', from: '+233200000001', state: 'answered', transport: 'udp', codec: 'PCMU', status: 200, endedAt: null, audio: null });
  t.notOk('wav' in view, 'no audio bytes in the list');
  t.match(view.startedAt, /^\d{4}-\d\d-\d\dT/);

  const digits = await app.inject({ method: 'POST', url: `/admin/sim/voice/calls/${view.id}/digits`, payload: { digits: '12' } });
  t.equal(digits.statusCode, 200);
  t.equal(digits.json().data.digitsSent, '12');
  await until(() => d.digits.length >= 2, 5000, 'digits at the caller');
  t.same(d.digits, ['1:rfc4733', '2:rfc4733']);

  const bad = await app.inject({ method: 'POST', url: `/admin/sim/voice/calls/${view.id}/digits`, payload: { digits: 'x' } });
  t.equal(bad.statusCode, 400, 'not a DTMF key');

  const bye = await app.inject({ method: 'POST', url: `/admin/sim/voice/calls/${view.id}/bye` });
  t.equal(bye.statusCode, 200);
  await until(() => has(d.events, 'ended'), 5000, 'the BYE');
  t.same(event(d.events, 'ended')?.[1], { by: 'remote', reason: 'bye' });
  await sim.waitFor((c) => c.id === view.id && c.state === 'ended');

  const again = await app.inject({ method: 'POST', url: `/admin/sim/voice/calls/${view.id}/bye` });
  t.equal(again.statusCode, 409);
  t.match(again.json(), { success: false, code: 'CONFLICT' });

  const ended = (await app.inject({ method: 'GET', url: '/admin/sim/voice/calls' })).json().data.calls[0];
  t.match(ended, { state: 'ended', endedBy: 'trunk' });
  t.ok(Math.abs(ended.audio.dominantFrequencyHz - 1000) < 5, `dominant ${ended.audio.dominantFrequencyHz} Hz`);

  const wav = await app.inject({ method: 'GET', url: `/admin/sim/voice/calls/${view.id}/audio.wav` });
  t.equal(wav.statusCode, 200);
  t.equal(wav.headers['content-type'], 'audio/wav');
  t.equal(wav.rawPayload.subarray(0, 4).toString('latin1'), 'RIFF');
  t.equal(wav.rawPayload.subarray(8, 12).toString('latin1'), 'WAVE');
  t.equal(wav.rawPayload.length, 44 + Math.round(ended.audio.seconds * 8000) * 2);
  await d.media.stop();
});

t.test('404s: an unknown call, and no simulator at all', async (t) => {
  for (const [method, url] of [['GET', '/admin/sim/voice/calls/999/audio.wav'], ['POST', '/admin/sim/voice/calls/999/bye']] as const) {
    const res = await app.inject({ method, url });
    t.equal(res.statusCode, 404, `${method} ${url}`);
    t.match(res.json(), { success: false, code: 'NOT_FOUND', message: /999/, requestId: String });
  }
  const digits = await app.inject({ method: 'POST', url: '/admin/sim/voice/calls/999/digits', payload: { digits: '1' } });
  t.equal(digits.statusCode, 404);

  running = null;
  t.teardown(() => void (running = sim));
  for (const [method, url] of [['GET', '/admin/sim/voice/calls'], ['GET', '/admin/sim/voice/calls/1/audio.wav'], ['POST', '/admin/sim/voice/calls/1/bye']] as const) {
    const res = await app.inject({ method, url });
    t.equal(res.statusCode, 404, `${method} ${url} without a simulator`);
    const body = res.json();
    t.match(body, { success: false, code: 'NOT_FOUND', message: /does not run/ });
    t.match(body.requestId, /^req-/, "the request's id");
  }
});
