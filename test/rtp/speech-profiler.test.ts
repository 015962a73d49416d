// The far end's first speech, as answering-machine detection reads it: voiced stretches placed by RTP timestamp,
// pauses between words bridged, the window closed by time even when the far end goes quiet.
import t from 'tap';
import { MediaEngine } from '../../src/rtp/media-engine.js';
import { SpeechProfiler, type SpeechRun } from '../../src/rtp/speech-profiler.js';
import { generateTone } from '../../src/rtp/tone.js';

const frame = (loud: boolean) => (loud ? generateTone([400], 20, 8000) : new Int16Array(160));

function profile(pattern: string, windowMs = 5000): SpeechRun[] | null {
  // One character a 20 ms frame: '#' speech, '.' silence.
  const p = new SpeechProfiler(windowMs);
  let ts = 123_456;
  for (const c of pattern) {
    const f = frame(c === '#');
    const out = p.push(ts, f, f.length);
    if (out) return out;
    ts += 160;
  }
  return p.finish();
}

t.test('voiced runs, with pauses between words bridged', async (t) => {
  t.same(profile('.'.repeat(50)), [], 'silence: no runs');
  t.same(profile('#'.repeat(25) + '.'.repeat(100)), [[0, 500]], 'half a second of speech');
  t.same(profile('#'.repeat(10) + '.'.repeat(10) + '#'.repeat(10)), [[0, 600]], 'a 200 ms pause is inside one run');
  t.same(profile('#'.repeat(10) + '.'.repeat(25) + '#'.repeat(10)), [[0, 200], [700, 900]], 'a 500 ms pause splits runs');
  t.same(profile('#'.repeat(400), 1000), [[0, 1000]], 'the window closes the profile');
  const quiet = generateTone([400], 20, 30); // about -60 dBFS: line noise
  const p = new SpeechProfiler(1000);
  t.equal(p.push(0, quiet, quiet.length), null);
  t.same(p.finish(), [], 'faint noise is not speech');
});

t.test('through the engine: a far end that speaks 1 s then goes quiet is profiled when the window has passed', async (t) => {
  const engine = await MediaEngine.start({ portRange: { min: 41700, max: 41799 } });
  t.teardown(() => engine.close());
  const listener = await engine.open({ codec: 'PCMU', speechProfile: { windowMs: 2000 } });
  const speaker = await engine.open({ codec: 'PCMU', remote: { host: '127.0.0.1', port: listener.localPort } });
  const got = new Promise<SpeechRun[]>((resolve) => listener.once('speechProfile', resolve));
  speaker.play(generateTone([300], 1000, 8000));
  const runs = await got;
  t.equal(runs.length, 1, JSON.stringify(runs));
  t.ok(runs[0][1] - runs[0][0] >= 900 && runs[0][1] - runs[0][0] <= 1100, `one run of about a second (${JSON.stringify(runs)})`);
  await listener.stop();
  await speaker.stop();
});
