// WebRTC's VAD (libfvad in WASM) through src/audio/vad.ts, and the segmenter driven by it: speech-like audio is
// speech, silence and faint noise are not; with espeak-ng installed, real synthetic speech too.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { wavToTelephonyPcm } from '../../src/audio/telephony-audio.js';
import { UtteranceSegmenter, type UtteranceInfo } from '../../src/audio/utterance-segmenter.js';
import { Vad } from '../../src/audio/vad.js';
import { speechTones } from '../../src/sim/speech/speech-tones.js';

const SPEECH = speechTones('hello I would like to talk to a person please', { sampleRate: 8000, msPerCharacter: 70, speed: 1, maxSeconds: 5 });

/** Deterministic noise of about ±`amplitude` (a linear congruential generator, so runs repeat). */
function noise(samples: number, amplitude: number, seed = 1): Int16Array {
  const out = new Int16Array(samples);
  let state = seed;
  for (let i = 0; i < samples; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = Math.round((state / 0x100000000 - 0.5) * 2 * amplitude);
  }
  return out;
}

/** `speech` over a line's noise floor: the noise runs under it and for the silences around it, as on a call. */
function onLine(speech: Int16Array, beforeMs: number, afterMs: number, amplitude = 40): Int16Array {
  const out = concat(new Int16Array(beforeMs * 8), speech, new Int16Array(afterMs * 8));
  const floor = noise(out.length, amplitude, 5);
  for (let i = 0; i < out.length; i++) out[i] = Math.max(-32768, Math.min(32767, out[i] + floor[i]));
  return out;
}

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Share of the 20 ms frames the VAD calls speech. */
function speechShare(vad: Vad, pcm: Int16Array): number {
  let speech = 0;
  const frames = Math.floor(pcm.length / 160);
  for (let f = 0; f < frames; f++) if (vad.isSpeech(pcm.subarray(f * 160, f * 160 + 160))) speech++;
  return speech / frames;
}

function segment(pcm: Int16Array, vad: Vad, startMs = 100): { starts: number[]; utterances: Array<{ info: UtteranceInfo; samples: number }> } {
  const segmenter = new UtteranceSegmenter(vad, { startMs, endSilenceMs: 600, preRollMs: 200 });
  const starts: number[] = [];
  const utterances: Array<{ info: UtteranceInfo; samples: number }> = [];
  segmenter.on('speechStart', (at) => starts.push(at));
  segmenter.on('utterance', (pcm, info) => utterances.push({ info, samples: pcm.length }));
  segmenter.write(pcm);
  return { starts, utterances };
}

t.test('speech-like audio is speech; silence and faint line noise are not', async (t) => {
  const vad = await Vad.create({ mode: 2 });
  t.teardown(() => vad.close());
  t.equal(vad.mode, 2);
  t.equal(speechShare(vad, new Int16Array(8000)), 0, 'digital silence');
  const fresh = await Vad.create({ mode: 2 });
  t.equal(speechShare(fresh, noise(16000, 60)), 0, 'a new line with noise at about -55 dBFS: the warm-up covers the first frames');
  fresh.close();
  const share = speechShare(vad, SPEECH);
  t.ok(share > 0.7, `speech-like bursts (${share.toFixed(2)} of the frames)`);
  vad.reset();
  t.equal(vad.mode, 2, 'reset keeps the mode');
  t.throws(() => vad.isSpeech(new Int16Array(100)), RangeError, 'not 10, 20 or 30 ms');
  t.equal(typeof vad.isSpeech(new Int16Array(80)), 'boolean', '10 ms frames are taken');
  t.equal(typeof vad.isSpeech(new Int16Array(240)), 'boolean', '30 ms frames are taken');
  vad.mode = 3;
  t.equal(vad.mode, 3);
  t.throws(() => (vad.mode = 4 as never), RangeError);
  await t.rejects(Vad.create({ mode: 7 as never }), RangeError);
  await t.rejects(Vad.create({ sampleRate: 11025 as never }), RangeError);
  const closed = await Vad.create();
  closed.close();
  closed.close();
  t.throws(() => closed.isSpeech(new Int16Array(160)), /after close/);
});

t.test('the segmenter on the real VAD: one utterance for speech between silences, none for noise', async (t) => {
  const vad = await Vad.create({ mode: 2 });
  t.teardown(() => vad.close());
  const heard = segment(onLine(SPEECH, 1000, 1500), vad);
  t.equal(heard.starts.length, 1, 'one speechStart');
  t.equal(heard.utterances.length, 1, 'one utterance');
  const [{ info, samples }] = heard.utterances;
  const speechMs = SPEECH.length / 8;
  t.ok(Math.abs(info.startMs - 1000) <= 100, `starts where the speech does (${info.startMs} ms)`);
  t.ok(Math.abs(info.endMs - (1000 + speechMs)) <= 200, `ends near where the speech does (${info.endMs} ms, speech to ${1000 + speechMs})`);
  t.ok(samples / 8 >= info.endMs - info.startMs && samples / 8 <= info.endMs - info.startMs + 200, 'its audio: the speech and up to 200 ms of pre-roll');
  t.same(segment(noise(8 * 3000, 60, 7), vad), { starts: [], utterances: [] }, '3 s of faint noise: nothing');
});

t.test('a noise floor that starts after digital silence is not an utterance at the default startMs', async (t) => {
  // libfvad calls the first 80 ms of a new noise floor speech in mode 2: just under the default 100 ms.
  const line = concat(new Int16Array(8000), noise(16000, 200, 3));
  const vad = await Vad.create({ mode: 2 });
  t.teardown(() => vad.close());
  t.same(segment(line, vad), { starts: [], utterances: [] });
  vad.reset();
  t.equal(segment(line, vad, 60).starts.length, 1, 'with startMs 60 the onset would count (so the check above can fail)');
});

const ESPEAK = spawnSync('espeak-ng', ['--version']).status === 0;

t.test('espeak-ng speech is one utterance', { skip: ESPEAK ? false : 'espeak-ng is not installed (apt-get install espeak-ng)' }, async (t) => {
  const wav = spawnSync('espeak-ng', ['--stdout', 'I want to talk to a person'], { maxBuffer: 4 << 20 });
  t.equal(wav.status, 0);
  const pcm = wavToTelephonyPcm(new Uint8Array(wav.stdout), { maxBytes: 4 << 20, maxDurationSeconds: 10, streamedLength: true });
  const vad = await Vad.create({ mode: 2 });
  t.teardown(() => vad.close());
  const heard = segment(onLine(pcm, 500, 1000), vad);
  t.equal(heard.starts.length, 1);
  t.equal(heard.utterances.length, 1, JSON.stringify(heard.utterances.map((u) => u.info)));
  const { info } = heard.utterances[0];
  t.ok(info.endMs - info.startMs >= 0.6 * (pcm.length / 8) && info.endMs - info.startMs <= pcm.length / 8 + 200, `about the sentence's length (${info.endMs - info.startMs} of ${pcm.length / 8} ms)`);
});
