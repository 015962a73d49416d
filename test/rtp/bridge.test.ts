// Bridging two sessions of the media engine: each far end (a bare UDP socket on 127.0.0.1 streaming a tone as RTP)
// hears the other's tone through Ferry, in its own codec, on a stream that goes on without a gap from before the bridge.
import { createSocket, type Socket } from 'node:dgram';
import t, { type Test } from 'tap';
import { dominantFrequency, rmsDbfs, toneDb } from '../../src/audio/analysis.js';
import { readTelephoneEvent, telephoneEventPackets, writeTelephoneEvent, type TelephoneEventPacket } from '../../src/rtp/dtmf.js';
import { decodeG711, encodeG711, FRAME_SAMPLES, PAYLOAD_TYPE, transcodingTable, type G711Codec } from '../../src/rtp/g711.js';
import { MediaEngine } from '../../src/rtp/media-engine.js';
import type { MediaHandle } from '../../src/rtp/media-handle.js';
import type { UnbridgeReason } from '../../src/rtp/media-worker.js';
import { RelayBuffer } from '../../src/rtp/relay-buffer.js';
import { decodeRtp, RTP_HEADER_LENGTH, writeRtpHeader } from '../../src/rtp/rtp-packet.js';
import { generateTone } from '../../src/rtp/tone.js';

// A port range of its own, away from other tests' servers.
const PORTS = { min: 44700, max: 44799 };
const FAR_DTMF_PT = 101;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for `check` (a bound on the wait, not a timing assertion). */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

interface Received {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  /** Decoded audio (G.711 payload types), else undefined. */
  pcm?: Int16Array;
  event?: TelephoneEventPacket;
}

/** A far end: streams a tone to Ferry every 20 ms (RFC 4733 keys in place of audio when asked), records what comes back. */
class FarEnd {
  readonly received: Received[] = [];
  private readonly socket: Socket = createSocket('udp4');
  private readonly tone: Int16Array;
  private timer: NodeJS.Timeout | undefined;
  private sequence = 1000;
  private timestamp = 50_000;
  private offset = 0;
  private readonly events: Array<{ fields: TelephoneEventPacket; timestamp: number }> = [];
  private target = 0;

  constructor(private readonly codec: G711Codec, frequency: number, private readonly dtmfPayloadType = FAR_DTMF_PT) {
    this.tone = generateTone([frequency], 1000);
    this.socket.on('message', (message) => {
      const p = decodeRtp(Buffer.from(message));
      if (!p) return;
      const entry: Received = { payloadType: p.payloadType, marker: p.marker, sequence: p.sequence, timestamp: p.timestamp, ssrc: p.ssrc };
      if (p.payloadType === 0 || p.payloadType === 8) {
        entry.pcm = new Int16Array(p.payloadLength);
        decodeG711(p.payloadType === 0 ? 'PCMU' : 'PCMA', p.buffer, entry.pcm, p.payloadOffset, p.payloadLength);
      } else entry.event = readTelephoneEvent(p.buffer, p.payloadOffset, p.payloadLength) ?? undefined;
      this.received.push(entry);
    });
  }

  async bind(): Promise<{ host: string; port: number }> {
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', resolve));
    return { host: '127.0.0.1', port: this.socket.address().port };
  }

  /** Starts streaming to Ferry's session on `port`. */
  start(port: number): void {
    this.target = port;
    this.timer = setInterval(() => this.sendFrame(), 20);
  }

  /** Stops sending (the far end goes quiet), keeps receiving. */
  quiet(): void {
    clearInterval(this.timer);
  }

  /** Sends `digit` as telephone-events, in place of the next audio frames. */
  press(digit: string): void {
    const timestamp = this.timestamp;
    for (const fields of telephoneEventPackets(digit, { durationMs: 100 })) this.events.push({ fields, timestamp });
  }

  close(): void {
    clearInterval(this.timer);
    this.socket.close();
  }

  /** Audio received from packet `from` on, in arrival order. */
  audio(from: number, to = this.received.length): Int16Array {
    const frames = this.received.slice(from, to).filter((r) => r.pcm);
    const out = new Int16Array(frames.length * FRAME_SAMPLES);
    frames.forEach((r, i) => out.set(r.pcm!, i * FRAME_SAMPLES));
    return out;
  }

  private sendFrame(): void {
    const packet = Buffer.alloc(RTP_HEADER_LENGTH + FRAME_SAMPLES);
    let length: number;
    const event = this.events.shift();
    if (event) {
      writeRtpHeader(packet, 0, event.fields.marker, this.dtmfPayloadType, this.sequence, event.timestamp, 0xfa4e11d);
      length = RTP_HEADER_LENGTH + writeTelephoneEvent(packet, RTP_HEADER_LENGTH, event.fields);
    } else {
      writeRtpHeader(packet, 0, false, PAYLOAD_TYPE[this.codec], this.sequence, this.timestamp, 0xfa4e11d);
      encodeG711(this.codec, this.tone.subarray(this.offset, this.offset + FRAME_SAMPLES), packet, RTP_HEADER_LENGTH);
      this.offset = (this.offset + FRAME_SAMPLES) % this.tone.length;
      length = packet.length;
    }
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + FRAME_SAMPLES) >>> 0;
    this.socket.send(packet.subarray(0, length), this.target, '127.0.0.1');
  }
}

async function farEnd(t: Test, codec: G711Codec, frequency: number, dtmfPayloadType?: number): Promise<{ far: FarEnd; remote: { host: string; port: number } }> {
  const far = new FarEnd(codec, frequency, dtmfPayloadType);
  t.teardown(() => far.close());
  return { far, remote: await far.bind() };
}

function reasons(handle: MediaHandle): UnbridgeReason[] {
  const out: UnbridgeReason[] = [];
  handle.on('unbridged', (reason) => out.push(reason));
  return out;
}

/** One stream without a gap: a single SSRC, sequence numbers one apart, timestamps one frame apart (audio packets). */
function assertContinuous(t: Test, received: Received[], what: string): void {
  const ssrcs = new Set(received.map((r) => r.ssrc));
  t.equal(ssrcs.size, 1, `${what}: one SSRC`);
  const seqGaps = received.filter((r, i) => i > 0 && r.sequence !== ((received[i - 1].sequence + 1) & 0xffff));
  t.equal(seqGaps.length, 0, `${what}: sequence numbers without a gap (${received.length} packets)`);
  const audio = received.filter((r) => r.pcm);
  const tsGaps = audio.filter((r, i) => i > 0 && ((r.timestamp - audio[i - 1].timestamp) >>> 0) !== FRAME_SAMPLES * ((r.sequence - audio[i - 1].sequence) & 0xffff));
  t.equal(tsGaps.length, 0, `${what}: timestamps advance a frame per packet`);
}

/** The received audio after the bridge settled: its dominant frequency and level. */
function assertHears(t: Test, pcm: Int16Array, frequency: number, what: string): void {
  const dominant = dominantFrequency(pcm, 8000);
  t.ok(Math.abs(dominant - frequency) < 5, `${what}: hears ${frequency} Hz (dominant ${dominant.toFixed(1)} Hz)`);
  t.ok(rmsDbfs(pcm) > -25, `${what}: at speech level (${rmsDbfs(pcm).toFixed(1)} dBFS)`);
}

t.test('the relay buffer: whole frames out, a bounded backlog, transcoding on the way in', async (t) => {
  const relay = new RelayBuffer();
  const frame = (value: number) => new Uint8Array(FRAME_SAMPLES).fill(value);
  const out = new Uint8Array(RTP_HEADER_LENGTH + FRAME_SAMPLES);
  t.notOk(relay.read(out, RTP_HEADER_LENGTH), 'nothing waiting: no frame');
  // Two 10 ms packets make one 20 ms frame.
  relay.write(frame(1), 0, 80, null);
  t.notOk(relay.read(out, RTP_HEADER_LENGTH), 'half a frame is not a frame');
  relay.write(frame(2), 0, 80, null);
  t.ok(relay.read(out, RTP_HEADER_LENGTH));
  t.same([out[RTP_HEADER_LENGTH], out[RTP_HEADER_LENGTH + 79], out[RTP_HEADER_LENGTH + 80], out[RTP_HEADER_LENGTH + 159]], [1, 1, 2, 2]);
  t.equal(relay.buffered, 0);
  // A burst of nine frames (180 ms) is cut back to the newest two.
  for (let i = 10; i < 19; i++) relay.write(frame(i), 0, FRAME_SAMPLES, null);
  t.equal(relay.buffered, 2 * FRAME_SAMPLES, 'backlog cut to 40 ms');
  t.equal(relay.dropped, 7 * FRAME_SAMPLES);
  t.ok(relay.read(out, RTP_HEADER_LENGTH) && out[RTP_HEADER_LENGTH] === 17, 'the newest audio is kept');
  relay.skipFrame();
  t.equal(relay.buffered, 0, 'a skipped slot drops a frame');
  // Written many times over its size, reading as it goes: it wraps and never grows.
  let wrong = 0;
  for (let i = 0; i < 500; i++) {
    relay.write(frame(i & 0xff), 0, FRAME_SAMPLES, null);
    if (!relay.read(out, RTP_HEADER_LENGTH) || out[RTP_HEADER_LENGTH] !== (i & 0xff) || out[RTP_HEADER_LENGTH + 159] !== (i & 0xff)) wrong++;
  }
  t.equal(wrong, 0, '500 frames through the ring, each whole and in order');
  t.equal(relay.buffered, 0);
  // μ-law in, A-law out: the same sound, through linear.
  const tone = generateTone([440], 20);
  const mulaw = new Uint8Array(FRAME_SAMPLES);
  encodeG711('PCMU', tone, mulaw);
  relay.write(mulaw, 0, FRAME_SAMPLES, transcodingTable('PCMU', 'PCMA'));
  relay.read(out, 0);
  const fromMulaw = new Int16Array(FRAME_SAMPLES);
  const fromAlaw = new Int16Array(FRAME_SAMPLES);
  decodeG711('PCMU', mulaw, fromMulaw);
  decodeG711('PCMA', out, fromAlaw, 0, FRAME_SAMPLES);
  const worst = Math.max(...Array.from(fromMulaw, (v, i) => Math.abs(v - fromAlaw[i]) / Math.max(128, Math.abs(v))));
  t.ok(fromAlaw.some((v, i) => v !== fromMulaw[i]), 'requantized, not copied');
  t.ok(worst < 0.07, `each sample within A-law's step (worst ${(worst * 100).toFixed(1)}%)`);
  t.equal(transcodingTable('PCMA', 'PCMA'), null, 'same codec: copied as is');
});

t.test('bridging', async (t) => {
  const engine = await MediaEngine.start({ workers: 2, portRange: PORTS });
  t.teardown(() => engine.close());

  await t.test('same codec: each far end hears the other; streams go on without a gap; playback stops', async (t) => {
    const { far: farA, remote: remoteA } = await farEnd(t, 'PCMU', 440);
    const { far: farB, remote: remoteB } = await farEnd(t, 'PCMU', 1000);
    const a = await engine.open({ codec: 'PCMU', remote: remoteA, continuous: true });
    const elsewhere = await engine.open({ codec: 'PCMU' }); // the other worker: the least loaded
    const b = await engine.open({ codec: 'PCMU', remote: remoteB, near: a });
    t.teardown(async () => {
      await Promise.all([a.stop(), b.stop(), elsewhere.stop()]);
    });
    await t.rejects(a.bridge(elsewhere), /same media worker/, 'a session of another worker is refused');
    await t.rejects(a.bridge(a), /itself/);
    const reasonsA = reasons(a);
    const reasonsB = reasons(b);
    farA.start(a.localPort);
    farB.start(b.localPort);

    // B plays a prompt, A streams silence: both far ends already receive a stream.
    b.play(generateTone([300], 10_000));
    const prompt = b.played();
    await until(() => farA.received.length >= 15 && farB.received.length >= 15, 5000, 'streams before the bridge');
    const bridgedSeen: MediaHandle[] = [];
    b.once('bridged', (peer) => bridgedSeen.push(peer));
    await a.bridge(b);
    t.equal(await prompt, 'interrupted', "B's prompt stopped when the bridge started");
    t.equal(a.bridgedWith, b);
    t.equal(b.bridgedWith, a);
    t.same(bridgedSeen, [a], "B's handle was told");
    await a.bridge(b); // again: nothing changes
    await b.bridge(a);
    const atA = farA.received.length;
    const atB = farB.received.length;
    await until(() => farA.received.length >= atA + 60 && farB.received.length >= atB + 60, 8000, 'bridged audio');

    // Ten frames to settle (packets in flight, the prompt's last frames), then 50 frames of the other side.
    assertHears(t, farB.audio(atB + 10, atB + 60), 440, "B's far end");
    assertHears(t, farA.audio(atA + 10, atA + 60), 1000, "A's far end");
    const bHeard = farB.audio(atB + 10, atB + 60);
    t.ok(toneDb(bHeard, 8000, 440) - toneDb(bHeard, 8000, 300) > 30, "B's far end: not B's prompt any more");
    t.ok(farB.received.slice(atB).every((r) => r.payloadType === 0), 'PCMU as negotiated');
    assertContinuous(t, farA.received, "A's stream (silence, then bridged)");
    assertContinuous(t, farB.received, "B's stream (prompt, then bridged)");
    t.equal(farB.received.filter((r) => r.marker).length, 1, "B's stream: one talkspurt (marker on its first packet only)");

    const third = await engine.open({ codec: 'PCMU', near: a });
    await t.rejects(third.bridge(a), /already bridged/, 'a bridged session is not bridged to a third');
    await third.stop();

    await b.unbridge();
    t.same(reasonsA, ['requested']);
    t.same(reasonsB, ['requested']);
    t.equal(a.bridgedWith, undefined);
    t.equal(b.bridgedWith, undefined);
    await b.unbridge(); // nothing to end
    t.same(reasonsB, ['requested'], 'no second event');
    const afterA = farA.received.length;
    await until(() => farA.received.length >= afterA + 15, 5000, "A's stream after the bridge");
    t.ok(rmsDbfs(farA.audio(afterA + 5)) < -60, 'A is back to silence (continuous)');
    assertContinuous(t, farA.received, "A's stream across the unbridge");
  });

  await t.test('PCMU and PCMA: transcoded both ways', async (t) => {
    const { far: farA, remote: remoteA } = await farEnd(t, 'PCMU', 440);
    const { far: farB, remote: remoteB } = await farEnd(t, 'PCMA', 1000);
    const a = await engine.open({ codec: 'PCMU', remote: remoteA, continuous: true });
    const b = await engine.open({ codec: 'PCMA', remote: remoteB, continuous: true, near: a });
    t.teardown(async () => {
      await Promise.all([a.stop(), b.stop()]);
    });
    farA.start(a.localPort);
    farB.start(b.localPort);
    await until(() => farA.received.length >= 10 && farB.received.length >= 10, 5000, 'streams before the bridge');
    await b.bridge(a);
    const atA = farA.received.length;
    const atB = farB.received.length;
    await until(() => farA.received.length >= atA + 60 && farB.received.length >= atB + 60, 8000, 'bridged audio');
    t.ok(farB.received.every((r) => r.payloadType === 8), "B's far end gets PCMA only");
    t.ok(farA.received.every((r) => r.payloadType === 0), "A's far end gets PCMU only");
    assertHears(t, farB.audio(atB + 10, atB + 60), 440, "B's far end (PCMU → PCMA)");
    assertHears(t, farA.audio(atA + 10, atA + 60), 1000, "A's far end (PCMA → PCMU)");
    assertContinuous(t, farA.received, "A's stream");
    assertContinuous(t, farB.received, "B's stream");
  });

  await t.test('RFC 4733 keys: reported where received, sent on as events of the other leg', async (t) => {
    const { far: farA, remote: remoteA } = await farEnd(t, 'PCMU', 440);
    const { far: farB, remote: remoteB } = await farEnd(t, 'PCMA', 1000, 96);
    const a = await engine.open({ codec: 'PCMU', remote: remoteA });
    const b = await engine.open({ codec: 'PCMA', remote: remoteB, dtmfPayloadType: 96, near: a });
    t.teardown(async () => {
      await Promise.all([a.stop(), b.stop()]);
    });
    const digitsA: string[] = [];
    const digitsB: string[] = [];
    a.on('digit', (d, source) => digitsA.push(`${d}:${source}`));
    b.on('digit', (d, source) => digitsB.push(`${d}:${source}`));
    farA.start(a.localPort);
    farB.start(b.localPort);
    await a.bridge(b);
    await sleep(200);
    farA.press('5');
    await sleep(300);
    farA.press('#');
    farB.press('7');
    const eventsAt = (far: FarEnd, pt: number) => far.received.filter((r) => r.payloadType === pt && r.event);
    await until(() => eventsAt(farB, 96).filter((r) => r.event!.end).length >= 6 && eventsAt(farA, 101).filter((r) => r.event!.end).length >= 3, 5000, 'relayed events');
    t.same(digitsA, ['5:rfc4733', '#:rfc4733'], 'A reports the keys its far end pressed');
    t.same(digitsB, ['7:rfc4733'], 'B reports the key its far end pressed');
    const toB = eventsAt(farB, 96);
    const keysToB = [...new Map(toB.map((r) => [r.timestamp, r.event!.event])).values()];
    t.same(keysToB, [5, 11], "B's far end gets 5 and # as events of its payload type (96)");
    t.notOk(farB.received.some((r) => r.payloadType === FAR_DTMF_PT), "…and none of A's payload type (101)");
    const keysToA = [...new Map(eventsAt(farA, 101).map((r) => [r.timestamp, r.event!.event])).values()];
    t.same(keysToA, [7], "A's far end gets 7 as an event of its payload type (101)");
    assertContinuous(t, farB.received, "B's stream through the events");
  });

  await t.test('a leg that stops or times out ends the bridge; the other goes on', async (t) => {
    const { far: farA, remote: remoteA } = await farEnd(t, 'PCMU', 440);
    const { far: farB, remote: remoteB } = await farEnd(t, 'PCMU', 1000);
    const { far: farC, remote: remoteC } = await farEnd(t, 'PCMU', 700);
    const before = engine.sessions;
    const a = await engine.open({ codec: 'PCMU', remote: remoteA, rtpTimeoutMs: 600 });
    const b = await engine.open({ codec: 'PCMU', remote: remoteB, near: a, continuous: true });
    const c = await engine.open({ codec: 'PCMU', remote: remoteC, near: a });
    const reasonsA = reasons(a);
    const reasonsB = reasons(b);
    const reasonsC = reasons(c);
    let timedOut = false;
    a.on('rtpTimeout', () => (timedOut = true));
    farA.start(a.localPort);
    farB.start(b.localPort);
    farC.start(c.localPort);

    await a.bridge(b);
    await sleep(300);
    farA.quiet();
    await until(() => reasonsA.length > 0, 5000, "A's timeout");
    t.ok(timedOut, 'A timed out');
    t.same(reasonsA, ['rtpTimeout']);
    t.same(reasonsB, ['peerRtpTimeout']);
    t.equal(b.bridgedWith, undefined);

    // B is free again: bridged to C, then C hangs up.
    await b.bridge(c);
    const atB = farB.received.length;
    await until(() => farB.received.length >= atB + 40, 5000, 'C heard at B');
    assertHears(t, farB.audio(atB + 10, atB + 40), 700, "B's far end, bridged to C");
    await c.stop();
    t.same(reasonsC, ['stopped']);
    t.same(reasonsB, ['peerRtpTimeout', 'peerStopped']);
    t.equal(b.bridgedWith, undefined);

    // B keeps running: its own prompt reaches its far end, on the same stream.
    const prompt = b.played();
    const afterC = farB.received.length;
    b.play(generateTone([300], 600));
    t.equal(await prompt, 'finished');
    await until(() => farB.received.length >= afterC + 30, 5000, "B's prompt");
    assertHears(t, farB.audio(afterC + 2, afterC + 30), 300, "B's far end after the bridge");
    assertContinuous(t, farB.received, "B's stream through both bridges and the prompt");
    t.notOk(farC.received.length === 0, 'C had sent to its far end');

    await Promise.all([a.stop(), b.stop()]);
    t.equal(engine.sessions, before, 'every session stopped');
    await t.rejects(b.bridge(a), /stopped/, 'a stopped session cannot be bridged');
    await t.rejects(engine.open({ codec: 'PCMU', near: a }), /near/, '`near` must be open');
  });
});
