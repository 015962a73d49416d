// Ferry's voice calls heard by an independent softphone: a whole daemon (trunk from a config file, simulator off) calls
// baresip, which answers by itself and records what it hears; Ferry says a sentence by text-to-speech and hangs up.
// The recording is measured twice, by sox and by src/audio, and must hold seconds of speech-level sound.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { analyzeAudio, decodeWav } from '../../../src/audio/index.js';
import { hasCommand, startBaresip } from '../../helpers/baresip.js';
import { accountWithKey, call, startDaemon } from '../../helpers/daemon.js';
import { backendLabel } from '../../helpers/env.js';
import { until } from '../../helpers/wait.js';
import { freePort } from '../../sip/sipp.js';

t.setTimeout(180_000);

const MISSING = ['baresip', 'sox', 'espeak-ng'].filter((c) => !hasCommand(c));
const SKIP = MISSING.length ? `needs ${MISSING.join(', ')} (Debian packages baresip, sox, espeak-ng)` : false;
const FROM = '+233200000301';
const TO = '+14155550188';
const TEXT = 'This is a test of Ferry voice calls. One two three four five.';
const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];

/** `sox <file> -n stat`: the figures it prints on stderr, by name ("Length (seconds)", "RMS     amplitude", …). */
function soxStat(file: string): Record<string, number> {
  const r = spawnSync('sox', [file, '-n', 'stat'], { encoding: 'utf8', timeout: 30_000 });
  const figures: Record<string, number> = {};
  for (const line of r.stderr.split('\n')) {
    const m = /^([A-Za-z][A-Za-z ()]+?):\s+(-?[0-9.]+)\s*$/.exec(line);
    if (m) figures[m[1].replace(/\s+/g, ' ')] = Number(m[2]);
  }
  return figures;
}

t.test(`a call to baresip: it hears Ferry's speech (${backendLabel})`, { skip: SKIP }, async (t) => {
  const sipPort = await freePort();
  const callee = await startBaresip({ sipPort, rtpPorts: { min: 45800, max: 45999 }, user: TO });
  t.teardown(async () => {
    await callee.stop();
    callee.cleanup();
  });
  const configFile = join(tmpdir(), `ferry-voice-baresip-${process.pid}-${Date.now()}.json`);
  const trunk = { name: 'baresip', host: '127.0.0.1', port: sipPort, transport: 'udp', optionsIntervalSeconds: 0 };
  writeFileSync(configFile, JSON.stringify({ voice: { simulator: 'off', trunks: [trunk] } }));
  t.teardown(() => rmSync(configFile, { force: true }));
  const d = await startDaemon({
    FERRY_CONFIG: configFile,
    FERRY_VOICE_SIMULATOR: 'off',
    FERRY_VOICE_MEDIA_PORT_MIN: '45400',
    FERRY_VOICE_MEDIA_PORT_MAX: '45799',
  });
  t.teardown(() => d.stop());
  const { account, token } = await accountWithKey(d, 'voice-baresip');
  await d.adminCall('POST', `/admin/accounts/${account.id}/numbers`, { number: FROM });
  await d.adminCall('POST', `/admin/accounts/${account.id}/credit`, { amount: '10' });

  const placed = await call(d.api, 'POST', '/v1/voice/calls', { token, body: { from: FROM, to: TO, say: { text: TEXT, locale: 'en-US' } } });
  t.equal(placed.status, 202, 'the call is queued', { response: placed.text });
  const id = placed.json.data.callId as string;
  const ended = await until(async () => (await call(d.api, 'GET', `/v1/voice/calls/${id}`, { token })).json.data, (c) => FINAL.includes(c.status), 60_000);
  t.equal(ended.status, 'completed', 'baresip answered and Ferry hung up after speaking', { call: ended, baresip: callee.output().slice(-3000) });
  t.equal(ended.sipCode, 200);
  t.equal(ended.trunk, 'baresip');
  t.equal(ended.history.at(-1).detail.by, 'ferry', 'Ferry ended the call at the end of its script');

  // baresip closes (and so finishes) its recordings when it stops.
  const log = await callee.stop();
  const heard = callee.recordings('dec');
  t.equal(heard.length, 1, 'one recording of what baresip received', { files: heard, baresip: log.slice(-3000) });
  if (heard.length !== 1) return;

  // What espeak-ng alone makes of the text at Ferry's rate: the length the call should have carried.
  const reference = join(tmpdir(), `ferry-voice-baresip-ref-${process.pid}.wav`);
  t.teardown(() => rmSync(reference, { force: true }));
  spawnSync('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', reference, TEXT], { timeout: 30_000 });
  const expected = soxStat(reference)['Length (seconds)'];
  t.ok(expected > 2, `espeak-ng says the text in ${expected} s`);

  const sox = soxStat(heard[0]);
  t.comment(`sox stat of baresip's recording: ${JSON.stringify(sox)}`);
  const length = sox['Length (seconds)'];
  t.ok(length >= expected * 0.8 && length <= expected + 5, `sox: baresip recorded ${length} s (the speech is ${expected} s)`);
  t.ok(sox['RMS amplitude'] > 0.01, `sox: RMS amplitude ${sox['RMS amplitude']} (silence is 0)`);
  t.ok(sox['Maximum amplitude'] > 0.1, `sox: maximum amplitude ${sox['Maximum amplitude']}`);

  const wav = decodeWav(readFileSync(heard[0]), { maxBytes: 64 * 1024 * 1024, maxDurationSeconds: 600 });
  const a = analyzeAudio(wav.pcm, wav.sampleRate);
  t.comment(`analyzeAudio of baresip's recording: ${JSON.stringify(a)} (${wav.sampleRate} Hz, ${wav.encoding})`);
  t.ok(Math.abs(a.durationSeconds - length) < 0.1, `src/audio and sox agree on the length (${a.durationSeconds} s)`);
  const sound = a.nonSilentShare * a.durationSeconds;
  t.ok(sound >= 2, `at least 2 s of it is sound (${sound.toFixed(2)} s, ${(a.nonSilentShare * 100).toFixed(0)}%)`);
  t.ok(a.rmsDbfs > -40, `at a speaking level (${a.rmsDbfs.toFixed(1)} dBFS)`);
  t.ok(a.peakDbfs > -20, `with speech peaks (${a.peakDbfs.toFixed(1)} dBFS)`);
});
