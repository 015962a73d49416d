import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { decodeWav } from '../../../src/audio/wav.js';
import { SpeechFailedError, SpeechInputError, SpeechUnavailableError } from '../../../src/speech/errors.js';
import { EspeakSynthesizer } from '../../../src/speech/espeak-synthesizer.js';
import { parseHypotheses, PocketsphinxRecognizer } from '../../../src/speech/recognition/pocketsphinx-recognizer.js';

function installed(program: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const hasPocketsphinx = installed('pocketsphinx_continuous') && existsSync('/usr/share/pocketsphinx/model/en-us/en-us.lm.bin');
const hasEspeak = installed('espeak-ng');

// Temp files go to a folder of this test's own, so "nothing is left behind" can be checked.
const scratch = mkdtempSync(join(tmpdir(), 'ferry-stt-test-'));
const savedTmp = process.env.TMPDIR;
process.env.TMPDIR = scratch;
t.teardown(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  rmSync(scratch, { recursive: true, force: true });
});
const leftovers = (): string[] => readdirSync(scratch).filter((name) => name.startsWith('ferry-pocketsphinx-'));

/** A stand-in program: copies the -infile WAV aside, logs argv, then runs `body` (a shell fragment). */
function fakeDecoder(name: string, body: string): { binary: string; dir: string } {
  const dir = mkdtempSync(join(scratch, `fake-${name}-`));
  const binary = join(dir, name);
  writeFileSync(
    binary,
    ['#!/bin/sh', '[ $# -eq 0 ] && exit 1', `echo "$@" > ${dir}/argv`, `cp "$2" ${dir}/heard.wav`, body].join('\n'),
  );
  chmodSync(binary, 0o755);
  return { binary, dir };
}

t.test('hypothesis lines become one utterance, without fillers or pronunciation marks', async (t) => {
  t.equal(parseHypotheses('i want to\nread(2) <sil> [NOISE] the bill\n'), 'i want to read the bill');
  t.equal(parseHypotheses('\n\n'), '');
});

t.test('en-US only, by locale', async (t) => {
  const stt = new PocketsphinxRecognizer();
  t.same(await stt.locales(), ['en-US']);
  await t.rejects(stt.recognize({ pcm: new Int16Array(800), locale: 'fr-FR' }), SpeechInputError);
  await t.rejects(stt.recognize({ pcm: new Int16Array(8_000 * 31), locale: 'en-US' }), /over the limit of 30 s/);
});

t.test('a missing program: unavailable, and the message says what to install', async (t) => {
  const stt = new PocketsphinxRecognizer({ binary: join(scratch, 'no-such-pocketsphinx') });
  t.equal(await stt.available(), false);
  await t.rejects(stt.recognize({ pcm: new Int16Array(800), locale: 'en-US' }), SpeechUnavailableError);
  const noModel = new PocketsphinxRecognizer({ binary: 'sh', modelDir: join(scratch, 'no-model') });
  t.equal(await noModel.available(), false, 'a missing model is unavailable too');
});

t.test('the program gets a 16 kHz WAV of the utterance, its output is the text, the temp files go', async (t) => {
  const model = mkdtempSync(join(scratch, 'model-'));
  // The recognizer checks these exist and links the acoustic model's files; the fake never reads them.
  execFileSync('sh', ['-c', `mkdir -p ${model}/en-us && for f in mdef means feat.params; do echo "-cmninit 1,2" > ${model}/en-us/$f; done && touch ${model}/en-us.lm.bin ${model}/cmudict-en-us.dict`]);
  const fake = fakeDecoder('decoder', 'echo "hello there"; echo "ferry"');
  const stt = new PocketsphinxRecognizer({ binary: fake.binary, modelDir: model });
  const tone = new Int16Array(8_000).map((_, i) => Math.round(6_000 * Math.sin((2 * Math.PI * 440 * i) / 8_000)));
  const result = await stt.recognize({ pcm: tone, locale: 'en-us', hints: ['ignored'] });
  t.equal(result.text, 'hello there ferry');
  t.ok(result.engineMs >= 0);
  const heard = decodeWav(readFileSync(join(fake.dir, 'heard.wav')), { maxBytes: 1e6, maxDurationSeconds: 5 });
  t.equal(heard.sampleRate, 16_000);
  t.ok(Math.abs(heard.pcm.length - 16_000) <= 2, `${heard.pcm.length} samples: one second at 16 kHz`);
  const argv = readFileSync(join(fake.dir, 'argv'), 'utf8');
  t.match(argv, /-lm \S+en-us\.lm\.bin -dict \S+cmudict-en-us\.dict -logfn \S+decoder\.log/);
  t.notMatch(argv, new RegExp(`-hmm ${model}/en-us `), 'a narrowband copy of the acoustic model, not the original');
  t.same(leftovers(), [], 'the temp folder is removed');
});

t.test('a run over its time or output cap is killed: SpeechFailedError, temp files removed', async (t) => {
  const model = mkdtempSync(join(scratch, 'model-'));
  execFileSync('sh', ['-c', `mkdir -p ${model}/en-us && echo x > ${model}/en-us/mdef && touch ${model}/en-us.lm.bin ${model}/cmudict-en-us.dict`]);
  const slow = fakeDecoder('slow', 'exec sleep 5');
  await t.rejects(
    new PocketsphinxRecognizer({ binary: slow.binary, modelDir: model, timeoutMs: 300, narrowband: false }).recognize({ pcm: new Int16Array(800), locale: 'en-US' }),
    { constructor: SpeechFailedError, message: /took over 300 ms/ },
  );
  const chatty = fakeDecoder('chatty', 'head -c 100000 /dev/zero | tr "\\0" a');
  await t.rejects(
    new PocketsphinxRecognizer({ binary: chatty.binary, modelDir: model, maxOutputBytes: 1_000, narrowband: false }).recognize({ pcm: new Int16Array(800), locale: 'en-US' }),
    /wrote over 1000 bytes/,
  );
  const failing = fakeDecoder('failing', 'echo "FATAL: bad model" >> "$(echo "$@" | sed "s/.*-logfn //")"; exit 1');
  await t.rejects(
    new PocketsphinxRecognizer({ binary: failing.binary, modelDir: model, narrowband: false }).recognize({ pcm: new Int16Array(800), locale: 'en-US' }),
    /exited with 1: FATAL: bad model/,
  );
  t.same(leftovers(), []);
});

const NEEDS_TOOLS = hasPocketsphinx && hasEspeak ? {} : { skip: 'needs pocketsphinx, pocketsphinx-en-us and espeak-ng (Debian)' };

t.test('espeak-ng says "I want to talk to a person"; pocketsphinx hears its words', NEEDS_TOOLS, async (t) => {
  const stt = new PocketsphinxRecognizer();
  t.equal(await stt.available(), true);
  // Rate 120: robotic speech at espeak-ng's slower pace is what this model hears best over 8 kHz.
  const pcm = await new EspeakSynthesizer().synthesize({ text: 'I want to talk to a person', voice: 'en-US', rate: 120 });
  const { text, engineMs } = await stt.recognize({ pcm, locale: 'en-US' });
  t.comment(`heard "${text}" from ${(pcm.length / 8_000).toFixed(2)} s of audio in ${Math.round(engineMs)} ms`);
  const words = text.split(' ');
  for (const word of ['want', 'talk']) t.ok(words.includes(word), `"${word}" heard in "${text}"`);

  const silence = await stt.recognize({ pcm: new Int16Array(8_000), locale: 'en-US' });
  t.equal(silence.text, '', 'a second of silence is heard as nothing');
  t.same(leftovers(), []);
});
