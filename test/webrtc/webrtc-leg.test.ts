// Two werift peers in one process over real loopback ICE, DTLS and SRTP: a Node offerer stands in for the browser,
// Ferry's WebRtcLeg answers; the bridge relays to and from a plain RTP socket playing the trunk.
import { createSocket, type Socket } from 'node:dgram';
import t, { type Test } from 'tap';
import { analyzeAudio } from '../../src/audio/analysis.js';
import { telephoneEventPackets, writeTelephoneEvent, TELEPHONE_EVENT_LENGTH } from '../../src/rtp/dtmf.js';
import { decodeG711, encodeG711, FRAME_SAMPLES, type G711Codec } from '../../src/rtp/g711.js';
import { decodeRtp, encodeRtp, rtpPayload, sequenceDelta, type RtpPacket } from '../../src/rtp/rtp-packet.js';
import { generateTone } from '../../src/rtp/tone.js';
import { RtpBridge } from '../../src/webrtc/rtp-bridge.js';
import { WebRtcNegotiationError } from '../../src/webrtc/sdp-codecs.js';
import { WebRtcLeg, type WebRtcLegOptions, type WebRtcRtp } from '../../src/webrtc/webrtc-leg.js';
import { waitFor } from '../helpers/wait.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A connected pair: `browser` made the offer, `ferry` answered it. */
async function connectedPair(t: Test, options: WebRtcLegOptions = {}): Promise<{ browser: WebRtcLeg; ferry: WebRtcLeg; offerSdp: string; answerSdp: string }> {
  const { leg: browser, offerSdp } = await WebRtcLeg.offer();
  t.teardown(() => browser.close());
  const { leg: ferry, answerSdp } = await WebRtcLeg.answer(offerSdp, options);
  t.teardown(() => ferry.close());
  await browser.acceptAnswer(answerSdp);
  await Promise.all([browser.connected(), ferry.connected()]);
  return { browser, ferry, offerSdp, answerSdp };
}

function candidateAddresses(sdp: string): string[] {
  return [...sdp.matchAll(/^a=candidate:\S+ \d+ \S+ \d+ (\S+) (\d+) typ (\S+)/gm)].map((m) => `${m[1]} ${m[3]}`);
}

function candidatePort(sdp: string): number {
  const match = /^a=candidate:\S+ \d+ udp \d+ \S+ (\d+) typ host/m.exec(sdp);
  if (!match) throw new Error('no host candidate');
  return Number(match[1]);
}

/** 20 ms G.711 frames of a tone. */
function toneFrames(codec: G711Codec, frequency: number, frames: number): Buffer[] {
  const pcm = generateTone([frequency], (frames * FRAME_SAMPLES) / 8, 8000);
  const out: Buffer[] = [];
  for (let i = 0; i < frames; i++) {
    const frame = Buffer.alloc(FRAME_SAMPLES);
    encodeG711(codec, pcm.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES), frame);
    out.push(frame);
  }
  return out;
}

function decodeAll(codec: G711Codec, payloads: readonly Buffer[]): Int16Array {
  const pcm = new Int16Array(payloads.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const payload of payloads) offset += decodeG711(codec, payload, pcm.subarray(offset));
  return pcm;
}

function bindUdp(): Promise<Socket> {
  const socket = createSocket('udp4');
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve(socket));
  });
}

function canBind(port: number): Promise<boolean> {
  const socket = createSocket('udp4');
  return new Promise((resolve) => {
    socket.once('error', () => {
      socket.close();
      resolve(false);
    });
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}

t.test('a Node offerer and WebRtcLeg connect on loopback and exchange PCMU and a key press', async (t) => {
  const { browser, ferry, offerSdp, answerSdp } = await connectedPair(t);
  t.comment(`connected after ${ferry.connectMs?.toFixed(0)} ms (answer leg) / ${browser.connectMs?.toFixed(0)} ms (offer leg)`);
  t.same(candidateAddresses(offerSdp), ['127.0.0.1 host'], 'the offer: one host candidate on loopback');
  t.same(candidateAddresses(answerSdp), ['127.0.0.1 host'], 'the answer: one host candidate on loopback, no STUN');
  t.match(answerSdp, /^m=audio \d+ UDP\/TLS\/RTP\/SAVPF 0 101\r$/m);
  t.same([ferry.codec, ferry.payloadType, ferry.dtmfPayloadType], ['PCMU', 0, 101]);
  t.same([browser.codec, browser.payloadType, browser.dtmfPayloadType], ['PCMU', 0, 101]);

  const atFerry: WebRtcRtp[] = [];
  const atBrowser: WebRtcRtp[] = [];
  const digits: string[] = [];
  ferry.on('rtp', (p) => atFerry.push(p));
  ferry.on('dtmf', (d) => digits.push(d));
  browser.on('rtp', (p) => atBrowser.push(p));
  const frames = 25;
  for (let i = 0; i < frames; i++) {
    t.ok(browser.sendRtp(Buffer.alloc(FRAME_SAMPLES, i), { timestamp: 1000 + i * FRAME_SAMPLES, marker: i === 0 }) && ferry.sendRtp(Buffer.alloc(FRAME_SAMPLES, 0x80 + i), { timestamp: i * FRAME_SAMPLES }), `frame ${i} sent`);
    await sleep(5);
  }
  // Key 7 as RFC 4733 packets, repeats and end packets included: one `dtmf` event.
  for (const event of telephoneEventPackets('7', { durationMs: 60 })) {
    const payload = Buffer.alloc(TELEPHONE_EVENT_LENGTH);
    writeTelephoneEvent(payload, 0, event);
    browser.sendRtp(payload, { timestamp: 1000 + frames * FRAME_SAMPLES, marker: event.marker, payloadType: browser.dtmfPayloadType });
  }
  await waitFor(() => atFerry.length >= frames + 3 && atBrowser.length >= frames && digits.length > 0, 5000, 'packets both ways');
  const audio = atFerry.filter((p) => p.payloadType === 0);
  t.equal(audio.length, frames);
  t.same(
    audio.map((p) => p.payload[0]),
    Array.from({ length: frames }, (_, i) => i),
    'the payloads arrive as sent, in order',
  );
  t.same(
    audio.map((p) => p.timestamp - 1000),
    Array.from({ length: frames }, (_, i) => i * FRAME_SAMPLES),
  );
  t.ok(audio[0].marker);
  t.ok(audio.every((p, i) => i === 0 || sequenceDelta(audio[i - 1].sequence, p.sequence) === 1), 'consecutive sequence numbers');
  t.same(
    atBrowser.map((p) => p.payload[0]),
    Array.from({ length: frames }, (_, i) => 0x80 + i),
  );
  t.same(digits, ['7']);
  t.equal(new Set(atFerry.map((p) => p.ssrc)).size, 1, 'telephone-event shares the audio SSRC');
});

t.test('the answer takes the preferred codec and refuses an offer it cannot carry', async (t) => {
  const { browser, ferry, answerSdp } = await connectedPair(t, { codecs: ['PCMA', 'PCMU'] });
  t.match(answerSdp, /^m=audio \d+ UDP\/TLS\/RTP\/SAVPF 8 101\r$/m);
  t.same([ferry.codec, ferry.payloadType, browser.codec, browser.payloadType], ['PCMA', 8, 'PCMA', 8]);

  const { leg: opusOnly, offerSdp } = await WebRtcLeg.offer({ codecs: ['PCMU'] });
  t.teardown(() => opusOnly.close());
  await t.rejects(WebRtcLeg.answer(offerSdp, { codecs: ['PCMA'] }), WebRtcNegotiationError);
});

// A range of its own, away from other tests' media ports.
const PORTS = { min: 42300, max: 42399 };

t.test('the leg takes its port from the range, and close() ends it and releases the socket', async (t) => {
  const { browser, ferry, answerSdp } = await connectedPair(t, { portRange: PORTS });
  const port = candidatePort(answerSdp);
  t.ok(port >= PORTS.min && port <= PORTS.max, `port ${port} is in ${PORTS.min}-${PORTS.max}`);
  t.notOk(await canBind(port), 'the port is held while the leg is open');
  const states: string[] = [];
  ferry.on('state', (s) => states.push(s));
  await ferry.close();
  await ferry.close();
  t.same(states, ['closed'], "'closed' once");
  t.equal(ferry.state, 'closed');
  t.notOk(ferry.sendRtp(Buffer.alloc(FRAME_SAMPLES), { timestamp: 0 }), 'a closed leg sends nothing');
  t.ok(await canBind(port), 'the port is free after close');
  await browser.close();
  t.equal(browser.state, 'closed');
});

t.test('a leg that does not connect in time fails, then closes, and connected() rejects', async (t) => {
  const { leg: silent, offerSdp } = await WebRtcLeg.offer();
  t.teardown(() => silent.close());
  // The offerer never gets the answer, so ICE cannot complete.
  const { leg: ferry } = await WebRtcLeg.answer(offerSdp, { connectTimeoutMs: 300 });
  t.teardown(() => ferry.close());
  const states: string[] = [];
  ferry.on('state', (s) => states.push(s));
  await t.rejects(ferry.connected(), /failed before connecting/);
  await waitFor(() => ferry.state === 'closed', 5000, 'closed after failing');
  t.same(states, ['failed', 'closed']);
  t.equal(ferry.connectMs, undefined);
});

t.test('the bridge relays a 1 kHz tone to a plain RTP trunk and a 440 Hz tone back, one stream each way', async (t) => {
  const { browser, ferry } = await connectedPair(t);
  const trunk = await bindUdp();
  t.teardown(() => trunk.close());
  const trunkPackets: RtpPacket[] = [];
  trunk.on('message', (message) => {
    const packet = decodeRtp(message);
    if (packet) trunkPackets.push(packet);
  });
  const bridge = await RtpBridge.open(ferry, { remote: { address: '127.0.0.1', port: trunk.address().port }, codec: 'PCMU', dtmfPayloadType: 96 });
  t.teardown(() => bridge.close());
  const atBrowser: WebRtcRtp[] = [];
  browser.on('rtp', (p) => atBrowser.push(p));

  const frames = 50;
  const toTrunk = toneFrames('PCMU', 1000, frames);
  const toBrowser = toneFrames('PCMU', 440, frames);
  const trunkSsrcs = [0x1111, 0x2222];
  const out = Buffer.alloc(12 + FRAME_SAMPLES);
  for (let i = 0; i < frames; i++) {
    browser.sendRtp(toTrunk[i], { timestamp: 5000 + i * FRAME_SAMPLES });
    // The trunk changes its source halfway (as on hold and back): the browser must not see it.
    const half = i < frames / 2 ? 0 : 1;
    const length = encodeRtp({ marker: false, payloadType: 0, sequence: 100 + i + half * 3000, timestamp: 77_000 + i * FRAME_SAMPLES + half * 999_999, ssrc: trunkSsrcs[half] }, toBrowser[i], out);
    trunk.send(Buffer.from(out.subarray(0, length)), bridge.local.port, bridge.local.address);
    await sleep(5);
  }
  // A key press from the browser reaches the trunk under the trunk's telephone-event type.
  const key = Buffer.alloc(TELEPHONE_EVENT_LENGTH);
  writeTelephoneEvent(key, 0, telephoneEventPackets('3')[0]);
  browser.sendRtp(key, { timestamp: 5000 + frames * FRAME_SAMPLES, marker: true, payloadType: browser.dtmfPayloadType });
  await waitFor(() => trunkPackets.length >= frames + 1 && atBrowser.length >= frames, 5000, 'the tone both ways');

  const trunkAudio = trunkPackets.filter((p) => p.payloadType === 0);
  t.equal(trunkAudio.length, frames);
  const heard = analyzeAudio(decodeAll('PCMU', trunkAudio.map(rtpPayload)), 8000);
  t.ok(Math.abs(heard.dominantFrequencyHz - 1000) < 5, `the trunk hears ${heard.dominantFrequencyHz.toFixed(1)} Hz`);
  t.ok(heard.nonSilentShare > 0.95);
  t.equal(new Set(trunkPackets.map((p) => p.ssrc)).size, 1, 'the trunk sees one SSRC');
  t.ok(trunkAudio.every((p, i) => i === 0 || (sequenceDelta(trunkAudio[i - 1].sequence, p.sequence) === 1 && p.timestamp - trunkAudio[i - 1].timestamp === FRAME_SAMPLES)), 'and one continuous stream');
  const dtmf = trunkPackets.filter((p) => p.payloadType === 96);
  t.equal(dtmf.length, 1, 'the key press arrives as payload type 96');
  t.equal(dtmf[0]?.ssrc, trunkAudio[0].ssrc);

  const back = atBrowser.filter((p) => p.payloadType === 0);
  t.equal(back.length, frames);
  const browserHeard = analyzeAudio(decodeAll('PCMU', back.map((p) => p.payload)), 8000);
  t.ok(Math.abs(browserHeard.dominantFrequencyHz - 440) < 5, `the browser hears ${browserHeard.dominantFrequencyHz.toFixed(1)} Hz`);
  t.equal(new Set(back.map((p) => p.ssrc)).size, 1, 'the browser sees one SSRC across the trunk source change');
  t.ok(back.every((p, i) => i === 0 || ((p.timestamp - back[i - 1].timestamp) >>> 0) === FRAME_SAMPLES), 'with continuous timestamps');
  t.same(bridge.stats, { toTrunk: frames + 1, toLeg: frames, droppedFromLeg: 0, droppedFromTrunk: 0 });

  // A stranger's packet is dropped; after close nothing is relayed and the bridge's own socket is free.
  const port = bridge.local.port;
  await bridge.close();
  trunk.send(Buffer.from(out.subarray(0, 12 + FRAME_SAMPLES)), port, '127.0.0.1');
  browser.sendRtp(toTrunk[0], { timestamp: 5000 + (frames + 1) * FRAME_SAMPLES });
  await sleep(200);
  t.equal(trunkPackets.length, frames + 1, 'nothing reaches the trunk after close');
  t.ok(await canBind(port), "the bridge's socket is closed");
  t.equal(ferry.state, 'connected', 'the leg outlives the bridge');
});

t.test('the bridge drops what the trunk did not negotiate and packets from strangers', async (t) => {
  const { ferry } = await connectedPair(t);
  const trunk = await bindUdp();
  const stranger = await bindUdp();
  t.teardown(() => trunk.close());
  t.teardown(() => stranger.close());
  // The trunk is 127.0.0.2 as far as the bridge knows: 127.0.0.1 is a stranger.
  const bridge = await RtpBridge.open(ferry, { remote: { address: '127.0.0.2', port: trunk.address().port } });
  t.teardown(() => bridge.close());
  const out = Buffer.alloc(12 + FRAME_SAMPLES);
  const length = encodeRtp({ marker: false, payloadType: 0, sequence: 1, timestamp: 0, ssrc: 5 }, Buffer.alloc(FRAME_SAMPLES), out);
  stranger.send(out.subarray(0, length), bridge.local.port, '127.0.0.1');
  stranger.send(Buffer.from('not rtp'), bridge.local.port, '127.0.0.1');
  await waitFor(() => bridge.stats.droppedFromTrunk === 2, 5000, 'both dropped');
  t.same(bridge.stats, { toTrunk: 0, toLeg: 0, droppedFromLeg: 0, droppedFromTrunk: 2 });

  // Taking any source, PCMU goes through and comfort noise (type 13, not negotiated) does not.
  const open = await RtpBridge.open(ferry, { remote: { address: '127.0.0.2', port: trunk.address().port }, acceptAnySource: true });
  t.teardown(() => open.close());
  const noise = Buffer.alloc(13);
  encodeRtp({ marker: false, payloadType: 13, sequence: 2, timestamp: 160, ssrc: 5 }, Buffer.alloc(1), noise);
  stranger.send(noise, open.local.port, '127.0.0.1');
  stranger.send(out.subarray(0, length), open.local.port, '127.0.0.1');
  await waitFor(() => open.stats.toLeg + open.stats.droppedFromTrunk === 2, 5000, 'both handled');
  t.same(open.stats, { toTrunk: 0, toLeg: 1, droppedFromLeg: 0, droppedFromTrunk: 1 });
  await t.rejects(RtpBridge.open(ferry, { remote: { address: '127.0.0.1', port: 9 }, codec: 'PCMA' }), /does not transcode/);
});
