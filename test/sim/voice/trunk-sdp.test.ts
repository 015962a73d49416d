import sdpTransform from 'sdp-transform';
import t from 'tap';
import { buildAnswer, readOffer } from '../../../src/sim/voice/trunk-sdp.js';

const sdp = (lines: string[]) => ['v=0', 'o=x 1 1 IN IP4 10.0.0.1', 's=-', 'c=IN IP4 10.0.0.1', 't=0 0', ...lines, ''].join('\r\n');

t.test("the offer's first G.711, its event type and the audio line's address", async (t) => {
  t.same(readOffer(sdp(['m=audio 4000 RTP/AVP 9 8 0 96', 'c=IN IP4 10.0.0.2', 'a=rtpmap:9 G722/8000', 'a=rtpmap:96 telephone-event/8000'])), {
    ok: true, codec: 'PCMA', remote: { host: '10.0.0.2', port: 4000 }, dtmfPayloadType: 96,
  });
  t.same(readOffer(sdp(['m=audio 4000 RTP/AVP 0'])), { ok: true, codec: 'PCMU', remote: { host: '10.0.0.1', port: 4000 }, dtmfPayloadType: null }, 'static type without rtpmap; no events');
});

t.test('unusable offers are reasons', async (t) => {
  t.match(readOffer(sdp(['m=audio 4000 RTP/AVP 9', 'a=rtpmap:9 G722/8000'])), { ok: false, reason: /no G\.711/ });
  t.match(readOffer(sdp(['m=video 4000 RTP/AVP 96'])), { ok: false, reason: /no audio/ });
  t.match(readOffer(sdp(['m=audio 0 RTP/AVP 0'])), { ok: false, reason: /no audio/ }, 'a rejected stream (port 0)');
  t.match(readOffer(''), { ok: false });
});

t.test('the answer: one codec, telephone-event only when taken', async (t) => {
  const with101 = sdpTransform.parse(buildAnswer({ host: '127.0.0.1', port: 30000, sessionId: 7, codec: 'PCMA', dtmfPayloadType: 101 }));
  t.equal(with101.media[0].payloads, '8 101');
  t.same(with101.media[0].rtp.map((r) => r.codec), ['PCMA', 'telephone-event']);
  t.equal(with101.connection?.ip, '127.0.0.1');
  t.equal(with101.media[0].port, 30000);
  const without = sdpTransform.parse(buildAnswer({ host: '127.0.0.1', port: 30000, sessionId: 7, codec: 'PCMU', dtmfPayloadType: null }));
  t.equal(String(without.media[0].payloads), '0');
});
