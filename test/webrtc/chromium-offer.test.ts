// Headless chromium with a fake microphone makes the offer from a tiny page (signalling through page.evaluate);
// Ferry's WebRtcLeg answers with PCMU. Skipped, with one line, where Debian's chromium is not installed.
import t from 'tap';
import { analyzeAudio } from '../../src/audio/analysis.js';
import { decodeG711, encodeG711, FRAME_SAMPLES } from '../../src/rtp/g711.js';
import { generateTone } from '../../src/rtp/tone.js';
import { WebRtcLeg, type WebRtcRtp } from '../../src/webrtc/webrtc-leg.js';
import { launchBrowser } from '../helpers/browser.js';
import { waitFor } from '../helpers/wait.js';

/** Served by playwright's router, never by a socket; an http://127.0.0.1 page is a secure context (getUserMedia). */
const PAGE_URL = 'http://127.0.0.1:9/dialer';

/**
 * The tiny dialer: the browser's side of the call, driven through page.evaluate (it runs in the page, so it is
 * plain JavaScript here: the tests compile without the DOM library).
 */
const PAGE = `<!doctype html><title>dialer</title><script>
let pc;
async function makeOffer() {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  pc = new RTCPeerConnection();
  // Played out (headless: to no device), so the browser decodes what Ferry sends and its stats measure the level.
  pc.addEventListener('track', (event) => {
    const audio = new Audio();
    audio.srcObject = event.streams[0] ?? new MediaStream([event.track]);
    audio.play();
  });
  for (const track of stream.getAudioTracks()) pc.addTrack(track, stream);
  await pc.setLocalDescription(await pc.createOffer());
  // Non-trickle, as over SIP: wait for every candidate (bounded).
  await new Promise((resolve) => {
    if (pc.iceGatheringState === 'complete') resolve();
    pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
    setTimeout(resolve, 5000);
  });
  return pc.localDescription.sdp;
}
function acceptAnswer(sdp) {
  return pc.setRemoteDescription({ type: 'answer', sdp });
}
function pressKey(key) {
  pc.getSenders()[0].dtmf.insertDTMF(key, 100, 70);
}
async function audioStats() {
  const report = await pc.getStats();
  const inbound = [...report.values()].find((s) => s.type === 'inbound-rtp' && s.kind === 'audio');
  return {
    connectionState: pc.connectionState,
    packetsReceived: inbound?.packetsReceived ?? 0,
    totalAudioEnergy: inbound?.totalAudioEnergy ?? 0,
    codec: inbound ? report.get(inbound.codecId)?.mimeType : undefined,
  };
}
</script>`;

interface BrowserAudioStats {
  connectionState: string;
  packetsReceived: number;
  totalAudioEnergy: number;
  codec: string | undefined;
}

t.test('chromium offers, WebRtcLeg answers with PCMU: the fake microphone is heard, Ferry is heard back, keys arrive', async (t) => {
  const browser = await launchBrowser({ skip: (m) => t.plan(0, m), teardown: (fn) => t.teardown(fn) }, { fakeMedia: true });
  if (!browser) return;
  const page = await browser.newPage();
  await page.route(PAGE_URL, (route) => route.fulfill({ contentType: 'text/html', body: PAGE }));
  await page.goto(PAGE_URL);

  const offerSdp = await page.evaluate<string>('makeOffer()');
  t.match(offerSdp, /a=rtpmap:111 opus\/48000/, 'a real browser offer (opus first)');

  const { leg, answerSdp } = await WebRtcLeg.answer(offerSdp, { codecs: ['PCMU'] });
  t.teardown(() => leg.close());
  t.match(answerSdp, /^m=audio \d+ UDP\/TLS\/RTP\/SAVPF 0 \d+\r$/m, 'answered with PCMU and telephone-event only');
  t.equal(leg.codec, 'PCMU');
  const heard: WebRtcRtp[] = [];
  const digits: string[] = [];
  leg.on('rtp', (p) => heard.push(p));
  leg.on('dtmf', (d) => digits.push(d));
  await page.evaluate(`acceptAnswer(${JSON.stringify(answerSdp)})`);
  await leg.connected();
  t.comment(`chromium → Ferry connected ${leg.connectMs?.toFixed(0)} ms after the answer leg was created`);

  // Ferry talks for 1 s at the real pace (the browser's jitter buffer plays it out), while the browser's beep arrives.
  const tone = generateTone([440], 1000, 8000);
  let sent = 0;
  for (let i = 0; i < 50; i++) {
    const frame = Buffer.alloc(FRAME_SAMPLES);
    encodeG711('PCMU', tone.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES), frame);
    if (leg.sendRtp(frame, { timestamp: i * FRAME_SAMPLES, marker: i === 0 })) sent++;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.equal(sent, 50);
  await page.evaluate(`pressKey('5')`);
  await waitFor(() => heard.filter((p) => p.payloadType === 0).length >= 50 && digits.length > 0, 10_000, "the browser's audio and key");

  const audio = heard.filter((p) => p.payloadType === 0);
  const pcm = new Int16Array(audio.length * FRAME_SAMPLES);
  audio.forEach((p, i) => decodeG711('PCMU', p.payload, pcm.subarray(i * FRAME_SAMPLES)));
  const analysis = analyzeAudio(pcm, 8000);
  t.ok(analysis.nonSilentShare > 0.1, `the fake microphone's beep is heard (${(analysis.nonSilentShare * 100).toFixed(0)}% of frames, peak ${analysis.peakDbfs.toFixed(1)} dBFS)`);
  t.same(digits, ['5'], 'the keypad press arrives once');
  t.same(
    [...new Set(heard.map((p) => p.payloadType))].filter((pt) => pt !== 0 && pt !== leg.dtmfPayloadType),
    [],
    'only PCMU and telephone-event flow',
  );

  const stats = await page.evaluate<BrowserAudioStats>('audioStats()');
  t.equal(stats.connectionState, 'connected');
  t.equal(stats.codec, 'audio/PCMU');
  t.ok(stats.packetsReceived >= 40, `the browser received ${stats.packetsReceived} of Ferry's 50 packets`);
  t.ok(stats.totalAudioEnergy > 0, 'and played non-silent audio');
});
