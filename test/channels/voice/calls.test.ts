// Voice calls end to end through a whole daemon and its embedded SIP trunk simulator, on both backends: a call is
// dialled, rings, is answered, hears Ferry's text-to-speech (the simulator records it), gathers DTMF, and ends with its
// status, history, events, billing and a signed status callback; busy, no-answer (ring timeout), a trunk failure,
// canceled while ringing, hung up while answered, the far end hanging up, and a bad audio file.
import { createHmac } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { encodeWav } from '../../../src/audio/index.js';
import { generateTone } from '../../../src/rtp/index.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { until } from '../../helpers/wait.js';

t.setTimeout(240_000);

const ESPEAK = spawnSync('espeak-ng', ['--version']).status === 0;
const FROM = '+233200000101';

t.test(`voice calls through the trunk simulator (${backendLabel})`, async (t) => {
  const d = await startDaemon({
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_VOICE_SIMULATOR: 'on',
    FERRY_VOICE_MEDIA_PORT_MIN: '43000',
    FERRY_VOICE_MEDIA_PORT_MAX: '43999',
    FERRY_VOICE_RING_TIMEOUT_SECONDS: '5',
    FERRY_VOICE_PRICES_DEFAULT_PER_MINUTE: '0.06',
  });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'voice-calls');
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  // Enough for several calls' holds at once: a call holds credit for up to its time limit until it ends.
  await d.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '100' });
  const rx = await WebhookReceiver.start();
  t.teardown(() => rx.close());
  const hook = await call(d.api, 'POST', '/v1/webhooks', { token, body: { url: rx.url, events: ['*'] } });
  t.equal(hook.status, 200, hook.text);
  const voice = d.daemon.modules.service<VoiceModuleService>('voice');

  const place = (body: Record<string, unknown>) => call(d.api, 'POST', '/v1/voice/calls', { token, body: { from: FROM, ...body } });
  const get = async (id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}`, { token })).json.data;
  const final = (id: string, ms = 30_000) => until(() => get(id), (c) => ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(c.status), ms);

  await t.test('answered: Ferry speaks, the far end hears non-silent speech, digits are gathered, the call completes and is billed', { skip: ESPEAK ? false : 'needs espeak-ng (Debian package espeak-ng)' }, async (t) => {
    const cb = await WebhookReceiver.start();
    t.teardown(() => cb.close());
    const r = await place({
      to: '+14155550177',
      script: [{ gather: { digits: 4, timeoutMs: 4000, prompt: { say: { text: 'Hello from Ferry. Please enter your code.', locale: 'en-US' } } } }, { say: { text: 'Thank you.' } }],
      statusCallback: cb.url,
      statusCallbackEvents: ['initiated', 'ringing', 'answered', 'completed'],
      reference: 'order-42',
    });
    t.equal(r.status, 202, r.text);
    t.equal(r.json.code, 'CALL_QUEUED');
    t.match(r.json.data, { status: 'queued', to: '+14155550177', from: FROM, reference: 'order-42', timeLimit: 3600 });
    const id = r.json.data.callId as string;
    const ended = await final(id);
    t.equal(ended.status, 'completed', JSON.stringify(ended));
    t.equal(ended.sipCode, 200);
    t.equal(ended.digits, '1234', 'the simulator pressed 1234# during the prompt: four digits gathered');
    t.equal(ended.trunk, 'simulator');
    t.ok(ended.duration >= 1, `lasted ${ended.duration} s`);
    t.equal(ended.billableSeconds, 60, 'billed a first minute');
    t.equal(ended.cost, 0.06);
    t.same(ended.history.map((h: { status: string }) => h.status), ['queued', 'initiated', 'ringing', 'in-progress', 'completed'], 'its history');
    const sim = await until(
      async () => voice.simulator()!.calls().find((c) => c.to.endsWith('14155550177') && c.audio !== null),
      (c) => c !== undefined,
    );
    t.ok(sim!.audio!.seconds >= 2, `the far end recorded ${sim!.audio!.seconds} s`);
    t.ok(sim!.audio!.nonSilentShare > 0.3, `and most of it is sound (${sim!.audio!.nonSilentShare})`);
    t.ok(sim!.audio!.rmsDbfs > -40, `at a speaking level (${sim!.audio!.rmsDbfs} dBFS)`);
    // Events in order, and the signed status callbacks.
    const events = await until(() => Promise.resolve(rx.received.filter((e) => e.json.data.callId === id).map((e) => e.json.type as string)), (e) => e.length >= 4);
    t.same(events, ['voice.call.initiated', 'voice.call.ringing', 'voice.call.answered', 'voice.call.completed'], 'events in order');
    const callbacks = await until(() => Promise.resolve(cb.received), (c) => c.length >= 4);
    t.same(callbacks.map((c) => c.json.type), ['call.initiated', 'call.ringing', 'call.answered', 'call.completed']);
    const secret = (await call(d.api, 'GET', '/v1/voice/settings', { token })).json.data.callbackSigningSecret as string;
    for (const c of callbacks) {
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const expected = 'v1,' + createHmac('sha256', key).update(`${c.headers['webhook-id']}.${c.headers['webhook-timestamp']}.${c.body}`).digest('base64');
      t.equal(c.headers['webhook-signature'], expected, `callback ${c.json.type} is signed with the account's voice callback secret`);
    }
    const balance = (await d.adminCall('GET', `/admin/accounts/${account.id}`)).balance;
    t.equal(balance, 99.94, 'the hold was settled: 100 − 0.06');
  });

  await t.test('busy, declined, unknown number, no answer within the ring time', async (t) => {
    const cases: Array<[string, string, number | null]> = [
      ['+14155550486', 'busy', 486],
      ['+14155550603', 'failed', 603],
      ['+14155550404', 'failed', 404],
      ['+14155550480', 'no-answer', 487],
    ];
    const ids: string[] = [];
    for (const [to] of cases) {
      const r = await place({ to, script: [{ pause: { seconds: 1 } }] });
      t.equal(r.status, 202, r.text);
      ids.push(r.json.data.callId);
    }
    for (let i = 0; i < cases.length; i++) {
      const c = await final(ids[i]);
      t.equal(c.status, cases[i][1], `${cases[i][0]} ends ${cases[i][1]}`);
      t.equal(c.sipCode, cases[i][2], `SIP ${cases[i][2]} kept`);
      t.equal(c.cost, 0, 'unanswered: nothing billed');
    }
    const noAnswer = await get(ids[3]);
    t.match(noAnswer.error, { code: 'RING_TIMEOUT' });
  });

  await t.test('canceled while ringing, hung up while answered, the far end hangs up', async (t) => {
    const ringing = await place({ to: '+14155550480', script: [{ pause: { seconds: 1 } }], timeoutSeconds: 60 });
    const rid = ringing.json.data.callId as string;
    await until(() => get(rid), (c) => c.status === 'ringing');
    const h = await call(d.api, 'POST', `/v1/voice/calls/${rid}/hangup`, { token });
    t.equal(h.status, 202, h.text);
    t.equal(h.json.data.hangupRequested, true);
    t.match(await final(rid), { status: 'canceled', sipCode: 487 });

    const talking = await place({ to: '+14155550123', script: [{ pause: { seconds: 30 } }] });
    const tid = talking.json.data.callId as string;
    await until(() => get(tid), (c) => c.status === 'in-progress');
    t.equal((await call(d.api, 'POST', `/v1/voice/calls/${tid}/hangup`, { token })).status, 202);
    const hung = await final(tid);
    t.match(hung, { status: 'completed', error: { code: 'HANGUP_REQUESTED' } });
    t.ok(hung.duration < 30, 'cut short');
    t.equal((await call(d.api, 'POST', `/v1/voice/calls/${tid}/hangup`, { token })).json.code, 'CALL_ALREADY_ENDED');

    const dropped = await place({ to: '+14155550555', script: [{ pause: { seconds: 30 } }] });
    const done = await final(dropped.json.data.callId);
    t.equal(done.status, 'completed', 'the far end hung up after 2 s');
    t.equal(done.error, null, 'a hang-up by the far end is no error');
    t.same(done.history.at(-1).detail.by, 'remote');
  });

  await t.test('machine detection, best effort: a short greeting is a person, a long one a machine', async (t) => {
    const human = await place({ to: '+14155550188', script: [{ pause: { seconds: 6 } }], machineDetection: 'detect' });
    const machine = await place({ to: '+14155550199', script: [{ pause: { seconds: 6 } }], machineDetection: 'detect' });
    const plain = await place({ to: '+14155550189', script: [{ pause: { seconds: 1 } }] });
    t.equal((await final(human.json.data.callId)).answeredBy, 'human', '1 s of sound, then quiet');
    t.equal((await final(machine.json.data.callId)).answeredBy, 'machine', '4 s of sound from the answer');
    t.equal((await final(plain.json.data.callId)).answeredBy, null, 'not asked: not guessed');
  });

  await t.test('a bad audio file fails the call before anyone is rung, with the reason', async (t) => {
    let body: Buffer = Buffer.from('this is not a wav file');
    const srv = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(body);
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    t.teardown(() => srv.close());
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/prompt.wav`;
    const r = await place({ to: '+14155550124', play: { url } });
    const c = await final(r.json.data.callId);
    t.equal(c.status, 'failed');
    t.equal(c.error.code, 'PLAYBACK_FAILED');
    t.match(c.error.message, /not a WAV file/);
    t.equal(c.initiatedAt, null, 'never dialled');
    // A real WAV plays: the far end hears its tone.
    body = encodeWav(generateTone([1000], 1500, 8000, 16000), 16000);
    const ok = await place({ to: '+14155550125', play: { url } });
    const played = await final(ok.json.data.callId);
    t.equal(played.status, 'completed');
    const sim = await until(async () => voice.simulator()!.calls().find((c) => c.to.endsWith('14155550125') && c.audio !== null), (c) => c !== undefined);
    t.ok(Math.abs(sim!.audio!.dominantFrequencyHz - 1000) < 30, `the far end heard 1 kHz (${sim!.audio!.dominantFrequencyHz} Hz)`);
  });
});
