// The media plane's listening side over real UDP on 127.0.0.1: the far end is another session of the engine (paced
// by its clock) or a bare socket; voice activity detection runs in the worker and its events reach the handle.
import { createSocket } from 'node:dgram';
import t, { type Test } from 'tap';
import type { UtteranceInfo } from '../../src/audio/utterance-segmenter.js';
import { decodeG711 } from '../../src/rtp/g711.js';
import { MediaEngine } from '../../src/rtp/media-engine.js';
import type { MediaHandle } from '../../src/rtp/media-handle.js';
import { decodeRtp } from '../../src/rtp/rtp-packet.js';
import { generateTone } from '../../src/rtp/tone.js';
import { speechTones } from '../../src/sim/speech/speech-tones.js';

const PORTS = { min: 44900, max: 44999 };
const LISTEN = { vadMode: 2 as const, startMs: 100, endSilenceMs: 600, maxUtteranceMs: 10_000, preRollMs: 200 };
const SPEECH = speechTones('talk to a person', { sampleRate: 8000, msPerCharacter: 70, speed: 1, maxSeconds: 3 });
const SPEECH_MS = SPEECH.length / 8;

/** Resolves `promise`, or rejects after `ms` (a bound on every wait, not a timing assertion). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

/** Deterministic noise of about ±`amplitude`. */
function noise(samples: number, amplitude: number, seed = 1): Int16Array {
  const out = new Int16Array(samples);
  let state = seed;
  for (let i = 0; i < samples; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = Math.round((state / 0x100000000 - 0.5) * 2 * amplitude);
  }
  return out;
}

/** Speech with the line's noise floor under it and around it (`beforeMs`, `afterMs`). */
function onLine(speech: Int16Array, beforeMs: number, afterMs: number): Int16Array {
  const out = new Int16Array(beforeMs * 8 + speech.length + afterMs * 8);
  out.set(speech, beforeMs * 8);
  const floor = noise(out.length, 40, 9);
  for (let i = 0; i < out.length; i++) out[i] = Math.max(-32768, Math.min(32767, out[i] + floor[i]));
  return out;
}

interface Heard {
  starts: number[];
  utterances: Array<{ pcm: Int16Array; info: UtteranceInfo }>;
}

function hear(handle: MediaHandle): Heard {
  const heard: Heard = { starts: [], utterances: [] };
  handle.on('speechStart', (atMs) => heard.starts.push(atMs));
  handle.on('utterance', (pcm, info) => heard.utterances.push({ pcm, info }));
  return heard;
}

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

t.test('listening', async (t) => {
  const engine = await MediaEngine.start({ portRange: PORTS, preloadVad: true });
  t.teardown(() => engine.close());

  /** A listening session and a far end that sends to it. */
  async function pair(t: Test): Promise<{ listener: MediaHandle; speaker: MediaHandle; heard: Heard }> {
    const listener = await engine.open({ codec: 'PCMU', listen: LISTEN });
    const speaker = await engine.open({ codec: 'PCMU', remote: { host: '127.0.0.1', port: listener.localPort } });
    t.teardown(async () => {
      await speaker.stop();
      await listener.stop();
    });
    return { listener, speaker, heard: hear(listener) };
  }

  await t.test('three far ends at once: speech on a noisy line, noise alone, speech then nothing (DTX)', async (t) => {
    const [speech, hiss, dtx] = [await pair(t), await pair(t), await pair(t)];
    const utteranceOf = (p: { listener: MediaHandle }) => new Promise<void>((resolve) => p.listener.once('utterance', () => resolve()));
    const ended = Promise.all([utteranceOf(speech), utteranceOf(dtx)]);
    const played = Promise.all([speech.speaker.played(), hiss.speaker.played()]);
    speech.speaker.play(onLine(SPEECH, 500, 800));
    hiss.speaker.play(noise(8 * 1200, 60, 4));
    // Silence suppression: the far end sends nothing once it stops speaking.
    dtx.speaker.play(onLine(SPEECH, 300, 0));
    await within(ended, 10_000, 'utterances');
    await within(played, 5000, 'the rest of the noise');
    await sleep(200); // the last packets arrive

    const { starts, utterances } = speech.heard;
    t.equal(starts.length, 1, 'speech: one speechStart');
    t.ok(Math.abs(starts[0] - 500) <= 100, `the speech began about 500 ms in (${starts[0]})`);
    t.equal(utterances.length, 1, 'one utterance');
    const [{ pcm, info }] = utterances;
    t.equal(info.reason, 'silence');
    t.equal(info.startMs, starts[0]);
    const length = info.endMs - info.startMs;
    t.ok(length >= SPEECH_MS - 200 && length <= SPEECH_MS + 300, `about the speech's ${SPEECH_MS} ms (${length})`);
    t.equal(pcm.length / 8, length + LISTEN.preRollMs, 'its audio: the pre-roll and the speech');
    t.ok(pcm.buffer.byteLength === pcm.byteLength, 'the utterance owns its buffer (moved from the worker)');
    t.ok(rms(pcm.subarray(LISTEN.preRollMs * 8)) > 10 * rms(pcm.subarray(0, 100 * 8)), 'speech after the pre-roll, line noise in it');

    const { stats } = await hiss.listener.stop();
    t.ok(stats.packetsReceived >= 55, `noise: it arrived (${stats.packetsReceived} packets)`);
    t.same(hiss.heard, { starts: [], utterances: [] }, 'noise: no events');

    t.equal(dtx.heard.utterances.length, 1, 'DTX: the utterance ended without trailing packets');
    t.equal(dtx.heard.utterances[0].info.reason, 'silence');
    const dtxLength = dtx.heard.utterances[0].info.endMs - dtx.heard.utterances[0].info.startMs;
    t.ok(Math.abs(dtxLength - SPEECH_MS) <= 300, `DTX: about the speech (${dtxLength})`);
  });

  await t.test('listening(false) pauses detection; listening(true) resumes it', async (t) => {
    const { listener, speaker, heard } = await pair(t);
    listener.listening(false);
    speaker.play(onLine(SPEECH, 200, 300));
    await within(speaker.played(), 10_000, 'speech while paused');
    await sleep(200);
    t.same(heard, { starts: [], utterances: [] }, 'nothing while paused');
    listener.listening(true);
    const ended = new Promise<void>((resolve) => listener.once('utterance', () => resolve()));
    speaker.play(onLine(SPEECH, 200, 800));
    await within(ended, 10_000, 'utterance after resuming');
    t.equal(heard.starts.length, 1);
    t.equal(heard.utterances.length, 1);
    t.ok(heard.starts[0] >= 500 + SPEECH_MS, `offsets count the paused time (${heard.starts[0]} ms)`);
  });

  await t.test('interrupt(): queued audio stops at once and played() is released', async (t) => {
    const capture = createSocket('udp4');
    await new Promise<void>((resolve) => capture.bind(0, '127.0.0.1', resolve));
    t.teardown(() => capture.close());
    const energies: number[] = [];
    const frame = new Int16Array(160);
    capture.on('message', (m) => {
      const p = decodeRtp(Buffer.from(m));
      if (!p || p.payloadType !== 0) return;
      decodeG711('PCMU', p.buffer, frame, p.payloadOffset, p.payloadLength);
      energies.push(rms(frame));
    });
    const remote = { host: '127.0.0.1', port: capture.address().port };
    const player = await engine.open({ codec: 'PCMU', remote });
    t.throws(() => player.listening(true), /without `listen`/, 'listening() needs a session opened with listen');

    player.interrupt(); // nothing queued: no playbackDone
    const short = player.played();
    player.play(generateTone([440], 100));
    t.equal(await within(short, 5000, 'short prompt'), 'finished', 'a prompt that plays out is finished');

    const long = player.played();
    player.play(generateTone([440], 10_000)); // 500 frames
    await within(until(() => energies.length >= 5 + 20, 5000, 'the long prompt started'), 6000, 'long prompt');
    const atInterrupt = energies.length;
    player.interrupt();
    t.equal(await within(long, 5000, 'played() after interrupt'), 'interrupted', 'played() resolves: interrupted');
    await sleep(300); // 15 frames' time: anything still sent would arrive
    const { stats } = await player.stop();
    t.ok(energies.length - atInterrupt <= 3, `at most a few frames after the interrupt (${energies.length - atInterrupt})`);
    t.ok(stats.packetsSent < 100, `far from the 500 frames queued (${stats.packetsSent} sent)`);
    t.ok(energies.every((e) => e > 1000), 'every frame that went out was the tone');

    // Continuous: after the interrupt the stream goes on, as silence.
    energies.length = 0;
    const steady = await engine.open({ codec: 'PCMU', remote, continuous: true });
    steady.play(generateTone([440], 10_000));
    await within(until(() => energies.length >= 20, 5000, 'continuous prompt'), 6000, 'continuous prompt');
    steady.interrupt();
    const atSteady = energies.length;
    await within(until(() => energies.length >= atSteady + 20, 5000, 'silence after'), 6000, 'silence after');
    await steady.stop();
    const after = energies.slice(atSteady + 3);
    t.ok(after.length >= 15 && after.every((e) => e < 10), `silence follows the interrupt (${after.length} frames)`);
  });
});
