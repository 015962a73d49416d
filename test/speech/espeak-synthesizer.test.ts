import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { analyzeAudio } from '../../src/audio/analysis.js';
import { encodeWav } from '../../src/audio/wav.js';
import { SpeechBusyError, SpeechFailedError, SpeechInputError, SpeechUnavailableError } from '../../src/speech/errors.js';
import { EspeakSynthesizer } from '../../src/speech/espeak-synthesizer.js';
import { VOICES_TABLE } from './fixtures/espeak-voices.js';

const hasEspeak = ((): boolean => {
  try {
    execFileSync('sh', ['-c', 'command -v espeak-ng'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const NEEDS_ESPEAK = hasEspeak ? {} : { skip: 'needs espeak-ng (Debian espeak-ng)' };

const dir = mkdtempSync(join(tmpdir(), 'ferry-espeak-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A stand-in espeak-ng: answers --version and --voices, and for a synthesis logs its argv and stdin, then runs
 * `body` (a shell fragment) and prints a 0.5 s WAV of a 440 Hz tone at 22,050 Hz.
 */
function fakeEspeak(name: string, body = ''): { binary: string; log: string } {
  const wav = join(dir, 'tone.wav');
  const tone = new Int16Array(11_025).map((_, i) => Math.round(8_000 * Math.sin((2 * Math.PI * 440 * i) / 22_050)));
  writeFileSync(wav, encodeWav(tone, 22_050));
  writeFileSync(join(dir, 'voices.txt'), VOICES_TABLE);
  const log = join(dir, `${name}.log`);
  const binary = join(dir, name);
  writeFileSync(
    binary,
    [
      '#!/bin/sh',
      'case "$1" in --version) echo "fake espeak-ng"; exit 0;; --voices) cat ' + join(dir, 'voices.txt') + '; exit 0;; esac',
      `echo "start $$ argv:$*" >> ${log}`,
      `cat > ${log}.$$.stdin`,
      body,
      `echo "end $$" >> ${log}`,
      `cat ${wav}`,
    ].join('\n'),
  );
  chmodSync(binary, 0o755);
  return { binary, log };
}

t.test('a missing program: available() is false and synthesis says to install espeak-ng', async (t) => {
  const engine = new EspeakSynthesizer({ binary: join(dir, 'no-such-espeak-ng') });
  t.equal(await engine.available(), false);
  await t.rejects(engine.synthesize({ text: 'hello', voice: 'en-US' }), SpeechUnavailableError);
  await t.rejects(engine.synthesize({ text: 'hello', voice: 'en-US' }), /install the Debian package espeak-ng/);
  await t.rejects(engine.voices(), SpeechUnavailableError);
});

t.test('the text goes on stdin, never in argv, and argv is fixed', async (t) => {
  const { binary, log } = fakeEspeak('argv');
  const engine = new EspeakSynthesizer({ binary });
  const text = '--voices -v fr "$(touch /tmp/x)" ; rm -rf /';
  const pcm = await engine.synthesize({ text, voice: 'en-US', rate: 170 });
  t.ok(pcm instanceof Int16Array);
  t.equal(pcm.length, 4_000, '0.5 s resampled to 8 kHz');
  t.ok(Math.abs(analyzeAudio(pcm, 8_000).dominantFrequencyHz - 440) < 2, 'the WAV from stdout, decoded and resampled');
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  t.equal(lines[0].replace(/^start \d+ /, ''), 'argv:-v gmw/en-US -s 170 -b 1 --stdin --stdout');
  const pid = /^start (\d+)/.exec(lines[0])?.[1];
  t.equal(readFileSync(`${log}.${pid}.stdin`, 'utf8'), text, 'stdin carries the text as given');
  await engine.synthesize({ text: 'a\u0000b\u001bc', voice: 'en-US' });
  const second = /^start (\d+)/.exec(readFileSync(log, 'utf8').trim().split('\n')[2])?.[1];
  t.equal(readFileSync(`${log}.${second}.stdin`, 'utf8'), 'a b c', 'control characters become spaces');
});

t.test('requests that cannot be spoken are refused before any process runs', async (t) => {
  const { binary, log } = fakeEspeak('refuse');
  const engine = new EspeakSynthesizer({ binary, maxTextLength: 20 });
  await t.rejects(engine.synthesize({ text: '', voice: 'en-US' }), SpeechInputError);
  await t.rejects(engine.synthesize({ text: ' \n\u0000 ', voice: 'en-US' }), /empty/);
  await t.rejects(engine.synthesize({ text: 'x'.repeat(21), voice: 'en-US' }), /21 characters, over the limit of 20/);
  await t.rejects(engine.synthesize({ text: 'hi', voice: 'en-US', rate: 1_000 }), /80–450 words a minute/);
  await t.rejects(engine.synthesize({ text: 'hi', voice: 'en-US', rate: Number.NaN }), SpeechInputError);
  await t.rejects(engine.synthesize({ text: 'hi', voice: 'tw-GH' }), /espeak-ng has no voice for "tw-GH"/);
  await t.rejects(engine.synthesize({ text: 42 as unknown as string, voice: 'en-US' }), SpeechInputError);
  t.throws(() => readFileSync(log), 'no synthesis process was started');
});

t.test('at most `concurrency` processes run at once; beyond the queue, SpeechBusyError', async (t) => {
  const { binary, log } = fakeEspeak('pool', 'sleep 0.2');
  const engine = new EspeakSynthesizer({ binary, concurrency: 2 });
  await Promise.all(Array.from({ length: 6 }, (_, i) => engine.synthesize({ text: `call ${i}`, voice: 'en-US' })));
  let running = 0;
  let most = 0;
  const events = readFileSync(log, 'utf8').trim().split('\n');
  for (const line of events) {
    running += line.startsWith('start') ? 1 : -1;
    most = Math.max(most, running);
  }
  t.equal(events.length, 12, 'six runs, each started and ended');
  t.ok(most <= 2, `never more than 2 at once (at most ${most})`);

  const single = new EspeakSynthesizer({ binary, concurrency: 1, maxQueued: 1 });
  const results = await Promise.allSettled(Array.from({ length: 3 }, () => single.synthesize({ text: 'x', voice: 'en-US' })));
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected'], 'one runs, one waits, one is refused');
  t.ok((results[2] as PromiseRejectedResult).reason instanceof SpeechBusyError);
});

t.test('a run that hangs is killed at the timeout; output past the cap is refused', async (t) => {
  const slow = new EspeakSynthesizer({ binary: fakeEspeak('hang', 'exec sleep 30').binary, timeoutMs: 300 });
  await t.rejects(slow.synthesize({ text: 'x', voice: 'en-US' }), /espeak-ng synthesis took over 300 ms/);
  const large = new EspeakSynthesizer({ binary: fakeEspeak('large').binary, maxOutputBytes: 10_000 });
  await t.rejects(large.synthesize({ text: 'x', voice: 'en-US' }), /wrote over 10000 bytes/);
  const failing = new EspeakSynthesizer({ binary: fakeEspeak('fail', 'echo "bad voice" >&2; exit 3').binary });
  await t.rejects(failing.synthesize({ text: 'x', voice: 'en-US' }), /espeak-ng synthesis exited with 3: bad voice/);
  const garbage = new EspeakSynthesizer({ binary: fakeEspeak('garbage', 'echo "usage: espeak-ng"; exit 0').binary });
  await t.rejects(garbage.synthesize({ text: 'x', voice: 'en-US' }), SpeechFailedError);
});

t.test('espeak-ng speaks a verification code: non-silent 8 kHz audio of plausible length', NEEDS_ESPEAK, async (t) => {
  const engine = new EspeakSynthesizer();
  t.equal(await engine.available(), true);
  const pcm = await engine.synthesize({ text: 'Your verification code is 4 2 7', voice: 'en-US' });
  const a = analyzeAudio(pcm, 8_000);
  t.ok(a.durationSeconds >= 1 && a.durationSeconds <= 5, `lasts ${a.durationSeconds.toFixed(2)} s`);
  t.ok(a.nonSilentShare > 0.5, `${(a.nonSilentShare * 100).toFixed(0)} % of 20 ms frames carry sound`);
  t.ok(a.rmsDbfs > -35, `level ${a.rmsDbfs.toFixed(1)} dBFS`);
  t.ok(a.dominantFrequencyHz > 60 && a.dominantFrequencyHz < 3_400, `strongest at ${a.dominantFrequencyHz.toFixed(0)} Hz, inside the voice band`);
  const slower = await engine.synthesize({ text: 'Your verification code is 4 2 7', voice: 'en-US', rate: 100 });
  t.ok(slower.length > pcm.length * 1.2, 'a lower rate speaks longer');
  const french = await engine.synthesize({ text: 'Votre code est 4 2 7', voice: 'fr-FR' });
  t.ok(analyzeAudio(french, 8_000).nonSilentShare > 0.5, 'fr-FR speaks too');
});

t.test('text that looks like options or markup is spoken, not obeyed', NEEDS_ESPEAK, async (t) => {
  const engine = new EspeakSynthesizer();
  for (const text of ['--help', '--voices', '-v fr --stdout x']) {
    const a = analyzeAudio(await engine.synthesize({ text, voice: 'en-US' }), 8_000);
    t.ok(a.durationSeconds > 0.3 && a.durationSeconds < 5 && a.nonSilentShare > 0.3, `"${text}" is spoken (${a.durationSeconds.toFixed(2)} s)`);
  }
  const plain = await engine.synthesize({ text: 'hi', voice: 'en-US' });
  const markup = await engine.synthesize({ text: '<speak>hi</speak>', voice: 'en-US' });
  t.ok(markup.length > plain.length * 1.5, 'SSML is off: the tags are read out, so it is longer than "hi"');
});
