import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import t from 'tap';
import { decodeG711 } from '../../src/rtp/g711.js';
import { readTelephoneEvent } from '../../src/rtp/dtmf.js';
import { MediaEngine } from '../../src/rtp/media-engine.js';
import type { MediaHandle } from '../../src/rtp/media-handle.js';
import { decodeRtp, encodeRtp, type RtpPacket } from '../../src/rtp/rtp-packet.js';
import { dominantFrequency, generateDtmf, generateTone } from '../../src/rtp/tone.js';

// A port range of its own, away from other tests' servers.
const PORTS = { min: 41000, max: 41199 };

/** Resolves `promise`, or rejects after `ms` (a bound on every wait, not a timing assertion). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function collectDigits(handle: MediaHandle): string[] {
  const digits: string[] = [];
  handle.on('digit', (digit, source) => digits.push(`${digit}:${source}`));
  return digits;
}

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

t.test('two sessions exchange 2 s of 440 Hz and three digits through the engine', async (t) => {
  const engine = await MediaEngine.start({ workers: 2, portRange: PORTS });
  t.teardown(() => engine.close());
  const a = await engine.open({ codec: 'PCMU', record: { maxSeconds: 5 }, rtcpIntervalMs: 500 });
  const b = await engine.open({ codec: 'PCMU', record: { maxSeconds: 5 }, rtcpIntervalMs: 500, remote: { host: '127.0.0.1', port: a.localPort } });
  t.equal(a.localPort % 2, 0, 'even RTP port');
  t.not(a.localPort, b.localPort);
  a.setRemote({ host: '127.0.0.1', port: b.localPort });
  const digitsAtB = collectDigits(b);
  const digitsAtA = collectDigits(a);

  const toneA = generateTone([440], 2000);
  const toneB = generateTone([440], 2000, 6000);
  const done = Promise.all([a.played(), b.played()]);
  a.play(toneA);
  b.play(toneB);
  t.equal(toneA.length, 0, 'the samples were transferred, not copied');
  await within(done, 10_000, 'playbackDone');
  a.sendDigits('12#');
  await within(until(() => digitsAtB.length >= 3, 5000, 'digits'), 6000, 'digits');
  await sleep(300); // any repeat would arrive by now
  const [ra, rb] = await Promise.all([a.stop(), b.stop()]);

  t.same(digitsAtB, ['1:rfc4733', '2:rfc4733', '#:rfc4733'], 'each digit exactly once');
  t.same(digitsAtA, []);
  const eventPackets = 3 * 7;
  t.equal(ra.stats.packetsSent, 100 + eventPackets, 'A: 100 frames of 20 ms, then 7 event packets per digit');
  t.equal(rb.stats.packetsSent, 100);
  t.equal(rb.stats.packetsReceived, ra.stats.packetsSent, 'B got all A sent');
  t.equal(ra.stats.packetsReceived, rb.stats.packetsSent, 'A got all B sent');
  t.equal(rb.stats.bytesReceived, ra.stats.bytesSent);
  t.equal(rb.stats.bytesReceived, 100 * 160 + eventPackets * 4);
  t.equal(rb.stats.lost, 0, 'no gaps');
  t.equal(rb.stats.outOfOrder, 0, 'in sequence');
  t.equal(rb.stats.malformed, 0);
  t.equal(ra.stats.digitsSent, 3);
  t.equal(rb.stats.digitsReceived, 3);
  t.ok(rb.stats.rtcpReceived >= 1 && ra.stats.rtcpSent >= 1, 'RTCP went both ways');
  t.equal(ra.stats.remoteReport?.cumulativeLost, 0, "B's report on A's stream: nothing lost");
  t.equal(ra.stats.pacing.samples, ra.stats.packetsSent, 'every send was timed');
  t.ok(rb.stats.jitterMs >= 0 && Number.isFinite(rb.stats.jitterMs));

  for (const [name, recording] of [['B', rb.recording], ['A', ra.recording]] as const) {
    t.ok(recording, `${name} recorded`);
    t.equal(recording!.length, 16000, `${name}: 2 s of audio`);
    t.equal(dominantFrequency(recording!, 100, 2000, 10), 440, `${name}: the recording is the 440 Hz tone`);
  }
  // Same samples as a local G.711 round trip: nothing lost or reordered on the way.
  const expected = new Int16Array(160);
  const encoded = new Uint8Array(160);
  const { encodeG711 } = await import('../../src/rtp/g711.js');
  const reference = generateTone([440], 2000);
  let differing = 0;
  for (let f = 0; f < 100; f++) {
    encodeG711('PCMU', reference.subarray(f * 160, f * 160 + 160), encoded);
    decodeG711('PCMU', encoded, expected);
    for (let i = 0; i < 160; i++) if (rb.recording![f * 160 + i] !== expected[i]) differing++;
  }
  t.equal(differing, 0, "B's recording is A's audio, sample for sample");
});

t.test('what goes on the wire: sequence, timestamps, marker, payload types, RFC 4733 events', async (t) => {
  const engine = await MediaEngine.start({ portRange: PORTS });
  t.teardown(() => engine.close());
  const capture = createSocket('udp4');
  await new Promise<void>((resolve) => capture.bind(0, '127.0.0.1', resolve));
  t.teardown(() => capture.close());
  const packets: RtpPacket[] = [];
  capture.on('message', (m) => {
    const p = decodeRtp(Buffer.from(m));
    if (p) packets.push(p);
  });
  const handle = await engine.open({ codec: 'PCMA', dtmfPayloadType: 96, remote: { host: '127.0.0.1', port: capture.address().port } });
  handle.play(generateTone([1000], 100)); // 5 frames
  await within(handle.played(), 5000, 'first burst');
  await sleep(200); // a pause: the next burst starts a new talkspurt
  handle.play(generateTone([1000], 50)); // 2.5 frames → 3, the last padded
  await within(handle.played(), 5000, 'second burst');
  handle.sendDigits('7');
  await within(until(() => packets.length >= 5 + 3 + 7, 3000, 'packets'), 4000, 'packets');
  await sleep(100);
  const { stats } = await handle.stop();

  t.equal(packets.length, 15);
  t.equal(stats.packetsSent, 15);
  for (let i = 1; i < packets.length; i++) t.equal(packets[i].sequence, (packets[i - 1].sequence + 1) & 0xffff, `sequence ${i} follows`);
  const audio = packets.slice(0, 8);
  t.ok(audio.every((p) => p.payloadType === 8 && p.payloadLength === 160), 'PCMA, 160 octets');
  t.same(audio.map((p) => p.marker), [true, false, false, false, false, true, false, false], 'marker at each talkspurt start');
  for (let i = 1; i < 5; i++) t.equal((audio[i].timestamp - audio[i - 1].timestamp) >>> 0, 160, 'timestamp +160 per frame');
  t.ok((audio[5].timestamp - audio[4].timestamp) >>> 0 > 160, 'the pause shows as a timestamp gap');
  const last = new Int16Array(160);
  decodeG711('PCMA', audio[7].buffer, last, audio[7].payloadOffset, 160);
  t.ok(last.subarray(80).every((s) => Math.abs(s) <= 8), 'the short last frame is padded with silence');
  const events = packets.slice(8);
  t.ok(events.every((p) => p.payloadType === 96), 'the negotiated event payload type');
  t.ok(events.every((p) => p.timestamp === events[0].timestamp), 'one event: one timestamp');
  const fields = events.map((p) => readTelephoneEvent(p.buffer, p.payloadOffset, p.payloadLength)!);
  t.same(fields.map((f) => [f.event, f.duration, f.end]), [[7, 160, false], [7, 320, false], [7, 480, false], [7, 640, false], [7, 800, true], [7, 800, true], [7, 800, true]]);
  t.same(events.map((p) => p.marker), [true, false, false, false, false, false, false]);
});

t.test('symmetric RTP latches to the first source; malformed packets are counted; in-band digits', async (t) => {
  const engine = await MediaEngine.start({ portRange: PORTS });
  t.teardown(() => engine.close());
  const peer: Socket = createSocket('udp4');
  await new Promise<void>((resolve) => peer.bind(0, '127.0.0.1', resolve));
  t.teardown(() => peer.close());
  const handle = await engine.open({ codec: 'PCMU', symmetric: true, inbandDtmf: true, remote: { host: '127.0.0.1', port: 9 } });
  const digits = collectDigits(handle);
  const received: RtpPacket[] = [];
  peer.on('message', (m) => {
    const p = decodeRtp(Buffer.from(m));
    if (p) received.push(p);
  });
  peer.send(Buffer.from('not rtp'), handle.localPort, '127.0.0.1');
  // In-band keys as the peer's audio: 20 ms packets, sent in bursts of 5 (order and content are what count).
  const keys = generateDtmf('59');
  const out = Buffer.alloc(12 + 160);
  const payload = new Uint8Array(160);
  const { encodeG711 } = await import('../../src/rtp/g711.js');
  for (let f = 0; f * 160 < keys.length; f++) {
    encodeG711('PCMU', keys.subarray(f * 160, f * 160 + 160), payload);
    const length = encodeRtp({ marker: f === 0, payloadType: 0, sequence: f, timestamp: f * 160, ssrc: 99 }, payload, out);
    peer.send(Buffer.from(out.subarray(0, length)), handle.localPort, '127.0.0.1');
    if (f % 5 === 4) await sleep(10);
  }
  await within(until(() => digits.length >= 2, 3000, 'in-band digits'), 4000, 'in-band digits');
  handle.play(generateTone([440], 60));
  await within(handle.played(), 3000, 'reply');
  await within(until(() => received.length >= 3, 2000, 'latched reply'), 3000, 'latched reply');
  await sleep(100);
  const { stats } = await handle.stop();
  t.same(digits, ['5:inband', '9:inband']);
  t.equal(received.length, 3, 'the reply went to the latched source, not the signalled port');
  t.equal(stats.malformed, 1);
  t.equal(stats.packetsReceived, Math.ceil(keys.length / 160));
  t.equal(stats.lost, 0);
});

t.test('rtpTimeout fires when nothing arrives; stop is idempotent; ports are reused only when free', async (t) => {
  const engine = await MediaEngine.start({ portRange: { min: 41200, max: 41207 }, rtpTimeoutMs: 300 });
  t.teardown(() => engine.close());
  const quiet = await engine.open({ codec: 'PCMU' });
  await within(once(quiet, 'rtpTimeout'), 5000, 'rtpTimeout');
  t.pass('rtpTimeout after silence');
  const others = await Promise.all([engine.open({ codec: 'PCMU' }), engine.open({ codec: 'PCMA' }), engine.open({ codec: 'PCMA' })]);
  const ports = [quiet.localPort, ...others.map((h) => h.localPort)];
  t.same([...ports].sort(), [41200, 41202, 41204, 41206], 'four pairs in 41200-41207, none twice');
  await t.rejects(engine.open({ codec: 'PCMU' }), /no free RTP port/, 'the fifth finds none');
  const first = quiet.stop();
  t.equal(quiet.stop(), first, 'stop twice: one result');
  t.equal((await first).recording, undefined, 'no recording unless asked');
  const again = await engine.open({ codec: 'PCMU' });
  t.equal(again.localPort, quiet.localPort, 'the released pair is handed out again');
  t.throws(() => again.sendDigits('1x'), RangeError);
  await engine.close();
  const late = await again.stop();
  t.equal(late.stats.localPort, again.localPort, 'a session the engine closed still reports its stats');
});

t.test('open rejects when the host cannot be bound; the engine stays usable', async (t) => {
  const engine = await MediaEngine.start({ portRange: { min: 41210, max: 41215 }, host: '192.0.2.1' }); // TEST-NET-1: not ours
  t.teardown(() => engine.close());
  await t.rejects(engine.open({ codec: 'PCMU' }), /EADDRNOTAVAIL|address not available/i);
  t.equal(engine.sessions, 0);
  await t.rejects(engine.open({ codec: 'PCMU' }), /EADDRNOTAVAIL|address not available/i, 'its ports were given back');
});
