// The offer's codecs and the stream rewriting: pure functions, so this file never loads werift.
import t from 'tap';
import { chooseCodecs, offeredAudioCodecs, restrictAudioCodecs, WebRtcNegotiationError } from '../../src/webrtc/sdp-codecs.js';
import { RtpStreamRewriter } from '../../src/webrtc/stream-rewriter.js';

/** Chromium's audio offer (trimmed of candidates), as the browser dialer will send it. */
const CHROMIUM_OFFER = [
  'v=0',
  'o=- 2146658191554293060 2 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0',
  'a=msid-semantic: WMS s1',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126',
  'c=IN IP4 0.0.0.0',
  'a=ice-ufrag:pIjx',
  'a=ice-pwd:kyI6mNqXDa4zfX/uZeCkK+Cl',
  'a=fingerprint:sha-256 5A:71:78:2C:BA:94:CB:E7:5A:D8:1C:00:A4:B6:A7:77:91:B9:1B:EA:BD:25:A0:C7:72:0D:70:33:7A:F5:2C:69',
  'a=setup:actpass',
  'a=mid:0',
  'a=sendrecv',
  'a=rtcp-mux',
  'a=rtpmap:111 opus/48000/2',
  'a=rtcp-fb:111 transport-cc',
  'a=fmtp:111 minptime=10;useinbandfec=1',
  'a=rtpmap:63 red/48000/2',
  'a=fmtp:63 111/111',
  'a=rtpmap:9 G722/8000',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:13 CN/8000',
  'a=rtpmap:110 telephone-event/48000',
  'a=rtpmap:126 telephone-event/8000',
  'a=ssrc:3933520571 cname:1ouwQBqVRsZ8OBxC',
  '',
].join('\r\n');

t.test('a browser offer: PCMU by default, PCMA when preferred, telephone-event at 8 kHz only', async (t) => {
  const offered = offeredAudioCodecs(CHROMIUM_OFFER);
  t.same(
    offered.map((c) => `${c.payloadType} ${c.name}/${c.clockRate}`),
    ['111 opus/48000', '63 red/48000', '9 G722/8000', '0 PCMU/8000', '8 PCMA/8000', '13 CN/8000', '110 telephone-event/48000', '126 telephone-event/8000'],
  );
  t.same(chooseCodecs(offered, ['PCMU', 'PCMA'], true), { codec: 'PCMU', payloadType: 0, dtmfPayloadType: 126 });
  t.same(chooseCodecs(offered, ['PCMA', 'PCMU'], true), { codec: 'PCMA', payloadType: 8, dtmfPayloadType: 126 });
  t.same(chooseCodecs(offered, ['PCMU'], false), { codec: 'PCMU', payloadType: 0, dtmfPayloadType: undefined });
});

t.test('the narrowed offer keeps only the chosen types, and everything else as written', async (t) => {
  const narrowed = restrictAudioCodecs(CHROMIUM_OFFER, [8, 126]);
  const lines = narrowed.split('\r\n');
  t.ok(lines.includes('m=audio 9 UDP/TLS/RTP/SAVPF 8 126'));
  t.same(
    lines.filter((l) => /^a=(rtpmap|fmtp|rtcp-fb):/.test(l)),
    ['a=rtpmap:8 PCMA/8000', 'a=rtpmap:126 telephone-event/8000'],
  );
  for (const kept of ['a=ice-ufrag:pIjx', 'a=setup:actpass', 'a=ssrc:3933520571 cname:1ouwQBqVRsZ8OBxC', 'a=group:BUNDLE 0']) t.ok(lines.includes(kept), kept);
  t.ok(narrowed.endsWith('\r\n'));
});

t.test('static types without rtpmap lines count; an offer without G.711 or with video is refused', async (t) => {
  const bare = 'v=0\r\ns=-\r\nm=audio 4000 RTP/AVP 8 0\r\nc=IN IP4 127.0.0.1\r\n';
  t.same(chooseCodecs(offeredAudioCodecs(bare), ['PCMU', 'PCMA'], true), { codec: 'PCMU', payloadType: 0, dtmfPayloadType: undefined });
  const opusOnly = CHROMIUM_OFFER.replace(/ 9 0 8 13 110 126/, ' 110');
  t.throws(() => chooseCodecs(offeredAudioCodecs(opusOnly), ['PCMU', 'PCMA'], true), WebRtcNegotiationError);
  const withVideo = CHROMIUM_OFFER + 'm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n';
  t.throws(() => offeredAudioCodecs(withVideo), { name: 'WebRtcNegotiationError', message: /exactly one audio section \(it has: audio, video\)/ });
});

t.test('the rewriter keeps one SSRC and carries on across a new source, gaps and reordering', async (t) => {
  const rewriter = new RtpStreamRewriter(0x1234, 160);
  t.equal(rewriter.ssrc, 0x1234);
  // Source A near the sequence and timestamp wrap: 3 packets, the third lost, the fourth arrives late.
  const at = (k: number): number => (0xffffff00 + k * 160) >>> 0;
  const a = [rewriter.rewrite(111, 65534, at(0)), rewriter.rewrite(111, 65535, at(1)), rewriter.rewrite(111, 1, at(3)), rewriter.rewrite(111, 0, at(2))];
  t.same(
    a.map((p) => p.sourceChanged),
    [true, false, false, false],
  );
  const seq = (i: number): number => (a[i].sequence - a[0].sequence) & 0xffff;
  const ts = (i: number): number => (a[i].timestamp - a[0].timestamp) >>> 0;
  t.same([seq(1), seq(2), seq(3)], [1, 3, 2], 'gap and reordering kept');
  t.same([ts(1), ts(2), ts(3)], [160, 480, 320]);
  // Source B starts anywhere: it continues one packet after the newest out (a[2]), not after the late one.
  const b = rewriter.rewrite(222, 500, 90_000);
  t.ok(b.sourceChanged);
  t.equal(b.sequence, (a[2].sequence + 1) & 0xffff);
  t.equal(b.timestamp, (a[2].timestamp + 160) >>> 0);
  const b2 = rewriter.rewrite(222, 501, 90_160);
  t.same([b2.sequence, b2.timestamp, b2.sourceChanged], [(b.sequence + 1) & 0xffff, (b.timestamp + 160) >>> 0, false]);
});
