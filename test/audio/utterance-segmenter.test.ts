// The segmenter alone, with a stand-in detector: frame k is filled with the value k + 1 and is speech when the
// pattern's k-th character is '#', so each test reads which frames an utterance's PCM holds and when events fired.
import t from 'tap';
import { UtteranceSegmenter, type SpeechDetector, type UtteranceInfo, type UtteranceSegmenterOptions } from '../../src/audio/utterance-segmenter.js';

interface Heard {
  /** [atMs, frames pushed when it fired] */
  starts: Array<[number, number]>;
  utterances: Array<{ info: UtteranceInfo; frames: number[]; at: number }>;
}

function patternDetector(pattern: string): SpeechDetector {
  return { isSpeech: (frame) => pattern[frame[0] - 1] === '#' };
}

function listen(segmenter: UtteranceSegmenter): Heard {
  const heard: Heard = { starts: [], utterances: [] };
  segmenter.on('speechStart', (atMs) => heard.starts.push([atMs, segmenter.elapsedMs / 20]));
  segmenter.on('utterance', (pcm, info) => {
    // Which frames: one value per 160 samples (each frame is constant).
    const frames: number[] = [];
    for (let i = 0; i < pcm.length; i += 160) frames.push(pcm[i] - 1);
    heard.utterances.push({ info, frames, at: segmenter.elapsedMs / 20 });
  });
  return heard;
}

function frameOf(k: number): Int16Array {
  return new Int16Array(160).fill(k + 1);
}

/** One character a 20 ms frame: '#' speech, anything else not. */
function run(pattern: string, options: UtteranceSegmenterOptions = {}): Heard {
  const segmenter = new UtteranceSegmenter(patternDetector(pattern), options);
  const heard = listen(segmenter);
  for (let k = 0; k < pattern.length; k++) segmenter.push(frameOf(k));
  return heard;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
const OPTIONS = { startMs: 80, endSilenceMs: 600, preRollMs: 100, maxUtteranceMs: 10_000 };

t.test('speech between silences: one start after startMs, one utterance after endSilenceMs, with its pre-roll', async (t) => {
  const heard = run('.'.repeat(10) + '#'.repeat(20) + '.'.repeat(40), OPTIONS);
  t.same(heard.starts, [[200, 14]], 'speech from 200 ms, reported at the 4th speech frame (80 ms)');
  t.equal(heard.utterances.length, 1);
  const [u] = heard.utterances;
  t.same(u.info, { startMs: 200, endMs: 600, reason: 'silence' });
  t.equal(u.at, 60, 'reported once 30 frames (600 ms) of silence followed the last speech frame');
  t.same(u.frames, range(5, 30), '100 ms (5 frames) of pre-roll, then the speech, without the trailing silence');
});

t.test('silence and clicks shorter than startMs: nothing', async (t) => {
  t.same(run('.'.repeat(200), OPTIONS), { starts: [], utterances: [] }, 'silence');
  t.same(run('..#...##....###...#.#.#..###.', OPTIONS), { starts: [], utterances: [] }, 'runs of 1-3 frames (under 80 ms)');
  const once = run('....####' + '.'.repeat(40), OPTIONS);
  t.equal(once.starts.length, 1, 'exactly 80 ms is enough');
  t.same(once.utterances[0].info, { startMs: 80, endMs: 160, reason: 'silence' });
});

t.test('pauses shorter than endSilenceMs stay inside one utterance; longer ones split it', async (t) => {
  const joined = run('#'.repeat(10) + '.'.repeat(29) + '#'.repeat(10) + '.'.repeat(31), OPTIONS);
  t.equal(joined.starts.length, 1);
  t.same(
    joined.utterances.map((u) => u.info),
    [{ startMs: 0, endMs: 980, reason: 'silence' }],
    'a 580 ms pause is inside the utterance',
  );
  t.same(joined.utterances[0].frames, range(0, 49), 'the pause is kept in the audio; there was no audio before the start');
  const split = run('#'.repeat(10) + '.'.repeat(30) + '#'.repeat(10) + '.'.repeat(31), OPTIONS);
  t.same(
    split.utterances.map((u) => u.info),
    [
      { startMs: 0, endMs: 200, reason: 'silence' },
      { startMs: 800, endMs: 1000, reason: 'silence' },
    ],
    'a 600 ms pause ends the first',
  );
  t.same(split.starts.map(([at]) => at), [0, 800]);
  t.same(split.utterances[1].frames, range(35, 50), 'the second has its own pre-roll');
});

t.test('an utterance is ended at maxUtteranceMs; continuing speech starts the next one without repeating audio', async (t) => {
  const heard = run('#'.repeat(200), { ...OPTIONS, maxUtteranceMs: 1000 });
  t.same(
    heard.utterances.map((u) => u.info),
    [0, 1000, 2000, 3000].map((startMs) => ({ startMs, endMs: startMs + 1000, reason: 'maxLength' })),
  );
  t.same(heard.utterances[0].frames, range(0, 50));
  t.same(heard.utterances[1].frames, range(50, 100), 'no pre-roll taken from the previous utterance');
  t.equal(heard.starts.length, 4);
});

t.test('write() splits audio of any length into the same frames', async (t) => {
  const pattern = '.'.repeat(7) + '#'.repeat(15) + '.'.repeat(35);
  const whole = run(pattern, OPTIONS);
  const all = new Int16Array(pattern.length * 160);
  for (let k = 0; k < pattern.length; k++) all.set(frameOf(k), k * 160);
  const segmenter = new UtteranceSegmenter(patternDetector(pattern), OPTIONS);
  const heard = listen(segmenter);
  // Packets of 80, 240 and 37 samples, as a far end with another ptime (or an odd one) would send.
  const sizes = [80, 240, 37];
  for (let at = 0, i = 0; at < all.length; i++) {
    const n = Math.min(sizes[i % sizes.length], all.length - at);
    segmenter.write(all.subarray(at, at + n));
    at += n;
  }
  t.same(heard.utterances.map((u) => [u.info, u.frames]), whole.utterances.map((u) => [u.info, u.frames]));
  t.same(heard.starts.map(([at]) => at), whole.starts.map(([at]) => at));
});

t.test('reset drops an utterance in progress; skip moves the clock; pushSilence ends speech without the detector', async (t) => {
  const pattern = '#'.repeat(20) + '.'.repeat(5) + '#'.repeat(10);
  const segmenter = new UtteranceSegmenter(patternDetector(pattern), OPTIONS);
  const heard = listen(segmenter);
  for (let k = 0; k < 20; k++) segmenter.push(frameOf(k));
  t.ok(segmenter.inUtterance);
  segmenter.reset();
  t.notOk(segmenter.inUtterance, 'dropped');
  segmenter.skip(5); // 100 ms not looked at
  for (let k = 25; k < 35; k++) segmenter.push(frameOf(k));
  const quiet = new Int16Array(160);
  for (let k = 0; k < 30; k++) segmenter.pushSilence(quiet);
  t.same(heard.starts.map(([at]) => at), [0, 500], 'the second start is placed after the skipped 100 ms');
  t.same(
    heard.utterances.map((u) => u.info),
    [{ startMs: 500, endMs: 700, reason: 'silence' }],
    'only the second utterance, ended by 600 ms of pushed silence',
  );
  t.same(heard.utterances[0].frames, range(25, 35), 'no pre-roll from before the reset');
});

t.test('the pre-roll is what the stream had: a start in the first frames takes the frames there are', async (t) => {
  const heard = run('..' + '#'.repeat(6) + '.'.repeat(30), { ...OPTIONS, preRollMs: 200 });
  t.same(heard.utterances[0].frames, range(0, 8));
  t.same(heard.utterances[0].info, { startMs: 40, endMs: 160, reason: 'silence' });
});

t.test('options are checked', async (t) => {
  const detector = patternDetector('');
  t.throws(() => new UtteranceSegmenter(detector, { startMs: -1 }), RangeError);
  t.throws(() => new UtteranceSegmenter(detector, { endSilenceMs: Number.NaN }), RangeError);
  t.throws(() => new UtteranceSegmenter(detector, { startMs: 200, maxUtteranceMs: 100 }), RangeError);
  t.throws(() => new UtteranceSegmenter(detector).push(new Int16Array(80)), RangeError, 'push takes whole 20 ms frames');
});
