import fc from 'fast-check';
import t from 'tap';
import { addTimestamp, decodeRtp, emptyRtpPacket, encodeRtp, nextSequence, rtpPayload, sequenceDelta, timestampDelta, writeRtpHeader } from '../../src/rtp/rtp-packet.js';

t.test('decode(encode(x)) = x for any header, CSRC list and payload', async (t) => {
  const out = Buffer.alloc(12 + 60 + 300 + 8);
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.integer({ min: 0, max: 127 }),
      fc.integer({ min: 0, max: 0xffff }),
      fc.integer({ min: 0, max: 0xffffffff }),
      fc.integer({ min: 0, max: 0xffffffff }),
      fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 15 }),
      fc.uint8Array({ maxLength: 300 }),
      fc.integer({ min: 0, max: 8 }),
      (marker, payloadType, sequence, timestamp, ssrc, csrc, payload, offset) => {
        const length = encodeRtp({ marker, payloadType, sequence, timestamp, ssrc, csrc }, payload, out, offset);
        const packet = decodeRtp(Buffer.from(out.subarray(offset, offset + length)));
        if (!packet) return false;
        return (
          packet.marker === marker &&
          packet.payloadType === payloadType &&
          packet.sequence === sequence &&
          packet.timestamp === timestamp &&
          packet.ssrc === ssrc &&
          JSON.stringify(packet.csrc ?? []) === JSON.stringify(csrc) &&
          Buffer.compare(rtpPayload(packet), Buffer.from(payload)) === 0
        );
      },
    ),
    { numRuns: 400 },
  );
  t.pass('round-trips');
});

t.test('a known header has the RFC 3550 bytes', async (t) => {
  const out = Buffer.alloc(12);
  writeRtpHeader(out, 0, true, 0, 0x1234, 0xdeadbeef, 0x01020304);
  t.equal(out.toString('hex'), '80' + '80' + '1234' + 'deadbeef' + '01020304');
  writeRtpHeader(out, 0, false, 101, 0xffff + 1, 0x100000000 + 5, 7);
  t.equal(out.toString('hex'), '80' + '65' + '0000' + '00000005' + '00000007', 'sequence and timestamp wrap when written');
});

t.test('the header extension is skipped and padding removed', async (t) => {
  // V=2 P=1 X=1 CC=1, PT 8; one CSRC; extension profile 0xbede with 2 words; payload 'abc'; 3 padding octets.
  const bytes = Buffer.from(
    'b1' + '08' + '0001' + '00000002' + '00000003' + '0000000a' + 'bede' + '0002' + '1122334455667788' + '616263' + '000003',
    'hex',
  );
  const packet = decodeRtp(bytes)!;
  t.ok(packet);
  t.same(packet.csrc, [10]);
  t.equal(packet.extensionProfile, 0xbede);
  t.equal(packet.padding, true);
  t.equal(rtpPayload(packet).toString(), 'abc');
});

t.test('malformed packets decode to null, never throw', async (t) => {
  t.equal(decodeRtp(Buffer.alloc(11)), null, 'short');
  t.equal(decodeRtp(Buffer.from('40000001000000020000000300', 'hex')), null, 'version 1');
  t.equal(decodeRtp(Buffer.from('82000001000000020000000300', 'hex')), null, 'CSRC count past the end');
  t.equal(decodeRtp(Buffer.from('90000001000000020000000300010005', 'hex')), null, 'extension past the end');
  t.equal(decodeRtp(Buffer.from('a000000100000002000000030000', 'hex')), null, 'padding count 0');
  t.equal(decodeRtp(Buffer.from('a0000001000000020000000309', 'hex')), null, 'padding beyond the payload');
  let nulls = 0;
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
      const packet = decodeRtp(Buffer.from(bytes));
      if (packet === null) nulls++;
      else if (packet.payloadOffset + packet.payloadLength > bytes.length || packet.payloadLength < 0) return false;
      return true;
    }),
    { numRuns: 2000 },
  );
  t.ok(nulls > 0, 'random bytes are mostly refused');
});

t.test('sequence and timestamp arithmetic across the wrap', async (t) => {
  t.equal(nextSequence(65535), 0);
  t.equal(nextSequence(65530, 10), 4);
  t.equal(sequenceDelta(65535, 0), 1);
  t.equal(sequenceDelta(0, 65535), -1);
  t.equal(sequenceDelta(100, 90), -10);
  t.equal(sequenceDelta(65500, 36), 72);
  t.equal(addTimestamp(0xffffff00, 0x200), 0x100);
  t.equal(timestampDelta(0xffffff00, 0x100), 0x200);
  t.equal(timestampDelta(0x100, 0xffffff00), -0x200);
  t.equal(timestampDelta(5, 5), 0);
});

t.test('encode refuses what RTP cannot carry', async (t) => {
  const out = Buffer.alloc(100);
  t.throws(() => encodeRtp({ marker: false, payloadType: 128, sequence: 0, timestamp: 0, ssrc: 0 }, new Uint8Array(1), out), RangeError);
  t.throws(() => encodeRtp({ marker: false, payloadType: 0, sequence: 0, timestamp: 0, ssrc: 0, csrc: new Array(16).fill(1) }, new Uint8Array(1), out), RangeError);
  t.throws(() => encodeRtp({ marker: false, payloadType: 0, sequence: 0, timestamp: 0, ssrc: 0 }, new Uint8Array(89), out), RangeError);
});

t.test('decoding into a reused packet object overwrites every field', async (t) => {
  const reused = emptyRtpPacket();
  const out = Buffer.alloc(40);
  let n = encodeRtp({ marker: true, payloadType: 8, sequence: 1, timestamp: 2, ssrc: 3, csrc: [4, 5] }, Buffer.from('xy'), out);
  t.equal(decodeRtp(Buffer.from(out.subarray(0, n)), reused), reused);
  t.same(reused.csrc, [4, 5]);
  n = encodeRtp({ marker: false, payloadType: 0, sequence: 9, timestamp: 8, ssrc: 7 }, Buffer.from('z'), out);
  decodeRtp(Buffer.from(out.subarray(0, n)), reused);
  t.same([reused.marker, reused.payloadType, reused.sequence, reused.timestamp, reused.ssrc, reused.csrc, rtpPayload(reused).toString()], [false, 0, 9, 8, 7, undefined, 'z']);
  t.equal(decodeRtp(Buffer.alloc(3), reused), null, 'a bad packet leaves null, whatever the object holds');
});
