// A relay customer's `play` on a real call through a whole daemon and its embedded trunk simulator, on both backends:
// the audio is fetched through the SSRF-guarded client from a local file server and played in turn with the relay's
// text (the far end's recording holds the file's tone), a source that cannot be had is recorded as `play-failed` while
// the call goes on, and the caller speaking over the audio stops it (barge-in) as it stops speech.
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { encodeWav } from '../../../src/audio/wav.js';
import type { VoiceModuleService } from '../../../src/channels/voice/index.js';
import { OpenAiTranscriptionSimulator } from '../../../src/sim/speech/openai-transcription-simulator.js';
import { RelayCustomer } from '../../../src/sim/voice/relay-customer.js';
import { EspeakSynthesizer } from '../../../src/speech/espeak-synthesizer.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';

t.setTimeout(180_000);

const ESPEAK = spawnSync('espeak-ng', ['--version']).error === undefined;
const FROM = '+233200000131';
const TONE_HZ = 1000;

/** `seconds` of a sine at half of full scale, 8 kHz. */
function tone(hz: number, seconds: number): Int16Array {
  return Int16Array.from({ length: Math.round(seconds * 8000) }, (_, i) => Math.round(16000 * Math.sin((2 * Math.PI * hz * i) / 8000)));
}

type Line = { role: string; text?: string; event?: string; detail?: Record<string, unknown> };

t.test(`a relay's play is fetched through the guard and heard on the call (${backendLabel})`, { skip: ESPEAK ? false : 'needs espeak-ng (Debian package)' }, async (t) => {
  const files = createServer((req, res) => {
    if (req.url === '/tone.wav') res.writeHead(200, { 'content-type': 'audio/wav' }).end(encodeWav(tone(TONE_HZ, 2), 8000));
    else if (req.url === '/long.wav') res.writeHead(200, { 'content-type': 'audio/wav' }).end(encodeWav(tone(TONE_HZ, 12), 8000));
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('no such file');
  });
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => files.close(() => resolve())));
  const filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;

  const stt = new OpenAiTranscriptionSimulator();
  await stt.start({ apiKey: 'stt-relay-play-not-a-real-key' });
  t.teardown(() => stt.stop());
  stt.script('hello');

  const d = await startDaemon({
    FERRY_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FERRY_VOICE_SIMULATOR: 'on',
    FERRY_VOICE_MEDIA_PORT_MIN: '47600',
    FERRY_VOICE_MEDIA_PORT_MAX: '47699',
    FERRY_VOICE_PRICES_DEFAULT_PER_MINUTE: '0.06',
  });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'voice-relay-play', ['voice:calls', 'voice:agents']);
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await d.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });
  const voice = d.daemon.modules.service<VoiceModuleService>('voice');

  const relayAgent = async (name: string, url: string) => {
    const created = await call(d.api, 'POST', '/v1/voice/agents', {
      token,
      body: {
        name,
        voice: { locale: 'en-US' },
        language: 'en-US',
        relay: { url },
        stt: { provider: 'openai-compatible', model: 'whisper-1', baseUrl: stt.baseUrl, apiKey: 'stt-relay-play-not-a-real-key' },
        silenceTimeoutSeconds: 30,
      },
    });
    t.equal(created.status, 201, created.text);
    return created.json.data.agentId as string;
  };
  const get = async (id: string) => (await call(d.api, 'GET', `/v1/voice/calls/${id}`, { token })).json.data;
  const final = (id: string) => until(() => get(id), (c) => ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(c.status), 60_000);
  const simCall = (to: string) => until(async () => voice.simulator()?.calls().find((c) => c.to.endsWith(to)), (c) => c !== undefined && c.state === 'answered', 20_000);
  const lines = async (id: string): Promise<Line[]> => (await call(d.api, 'GET', `/v1/voice/calls/${id}/transcript`, { token })).json.data.lines;
  const place = async (agentId: string, to: string) => {
    const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { to, from: FROM, agentId } });
    t.equal(placed.status, 202, placed.text);
    return placed.json.data.callId as string;
  };

  await t.test('played in turn with the text, looped; a missing file is recorded and the call goes on', async (t) => {
    const customer = new RelayCustomer({
      rules: [{ setup: true, reply: [{ play: `${filesUrl}/missing.wav` }, { say: 'Please listen.' }, { play: `${filesUrl}/tone.wav`, loop: 2 }] }],
    });
    const url = await customer.start();
    t.teardown(() => customer.stop());
    const id = await place(await relayAgent('Jukebox', url), '+14155550131');
    const sim = await simCall('14155550131');
    const tr = await until(() => lines(id), (ls) => ls.filter((l) => l.event === 'played').length >= 2, 30_000);
    t.equal((await get(id)).status, 'in-progress', 'the call is still up');
    await call(d.api, 'POST', `/v1/voice/calls/${id}/hangup`, { token });
    await final(id);
    t.comment(`transcript: ${JSON.stringify(tr)}`);
    const failed = tr.find((l) => l.event === 'play-failed');
    t.match(failed?.detail, { source: `${filesUrl}/missing.wav`, reason: /answered 404/ }, 'the missing file is recorded with the reason');
    const spoken = tr.findIndex((l) => l.role === 'agent' && /Please listen/.test(l.text ?? ''));
    const played = tr.map((l, i) => (l.event === 'played' ? i : -1)).filter((i) => i >= 0);
    t.ok(spoken >= 0, 'the text was spoken');
    t.equal(played.length, 2, 'the file played twice (loop: 2)');
    t.ok(played.every((i) => i > spoken), 'after the text, in the order the relay sent them');
    t.match(tr[played[0]].detail, { source: `${filesUrl}/tone.wav` });
    t.notOk(tr.some((l) => l.event === 'play-ignored'), 'nothing ignored');
    const record = await until(async () => voice.simulator()!.calls().find((c) => c.id === sim!.id), (c) => c?.audio !== null && c?.audio !== undefined, 10_000);
    const audio = record!.audio!;
    t.comment(`the far end's recording: ${JSON.stringify(audio)}`);
    t.ok(Math.abs(audio.dominantFrequencyHz - TONE_HZ) < 20, `the far end heard the file's ${TONE_HZ} Hz tone (${audio.dominantFrequencyHz} Hz)`);
    t.ok(audio.seconds * audio.nonSilentShare >= 3.5, `about 4 s of the tone and the words were heard (${(audio.seconds * audio.nonSilentShare).toFixed(1)} s of sound)`);
  });

  await t.test('the caller speaking over the audio stops it (barge-in), and the relay is told', async (t) => {
    const customer = new RelayCustomer({ rules: [{ setup: true, reply: [{ play: `${filesUrl}/long.wav` }] }], fallback: [{ end: null }] });
    const url = await customer.start();
    t.teardown(() => customer.stop());
    const caller = await new EspeakSynthesizer().synthesize({ text: 'Stop, I want to talk to a person', voice: 'en-US', rate: 120 });
    const id = await place(await relayAgent('Long jukebox', url), '+14155550132');
    const sim = await simCall('14155550132');
    // The file lasts 12 s: the caller cuts in two seconds after the answer.
    await new Promise((r) => setTimeout(r, 2000));
    t.ok(voice.simulator()!.play(sim!.id, caller), 'the caller speaks');
    const tr = await until(() => lines(id), (ls) => ls.some((l) => l.event === 'played'), 20_000);
    t.match(tr.find((l) => l.event === 'played')?.detail, { source: `${filesUrl}/long.wav`, interrupted: true }, 'the audio was cut off');
    const connection = await customer.connection(1);
    await connection.waitForFrame('interrupt', 1, 10_000).then(
      () => t.pass('the relay got an interrupt'),
      (err: Error) => t.fail(err.message),
    );
    await call(d.api, 'POST', `/v1/voice/calls/${id}/hangup`, { token });
    await final(id);
  });
});
