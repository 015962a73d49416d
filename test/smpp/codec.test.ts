import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { decodePdu, encodedLength, encodePdu, HEADER_LENGTH } from '../../src/smpp/codec.js';
import { CommandId, CommandStatus } from '../../src/smpp/constants.js';
import { SmppDecodeError, SmppEncodeError } from '../../src/smpp/errors.js';
import { FrameReader } from '../../src/smpp/frame-reader.js';
import { ALL_COMMANDS, anyPduArb, pduArb } from './fixtures/arbitraries.js';

t.test('decode(encode(x)) = x for every PDU type', async (t) => {
  for (const command of ALL_COMMANDS) {
    fc.assert(
      fc.property(pduArb(command, { rawTlvs: true }), (pdu) => {
        const bytes = encodePdu(pdu);
        if (bytes.length !== encodedLength(pdu) || bytes.readUInt32BE(0) !== bytes.length) return false;
        return isDeepStrictEqual(decodePdu(bytes), pdu);
      }),
      { numRuns: 150 },
    );
    t.pass(`${command} round-trips`);
  }
});

t.test('a known body with TLVs has the expected bytes', async (t) => {
  const bytes = encodePdu({
    command: 'submit_sm_resp',
    sequence_number: 0x01020304,
    message_id: 'ab',
  });
  t.equal(bytes.toString('hex'), '00000013' + '80000004' + '00000000' + '01020304' + '616200');
  const withTlv = encodePdu({ command: 'deliver_sm_resp', sequence_number: 1, tlvs: { message_state: 2 } });
  t.equal(withTlv.subarray(HEADER_LENGTH).toString('hex'), '00' + '0427' + '0001' + '02');
});

t.test('error responses carry no body; a vendor body is still read', async (t) => {
  const bytes = encodePdu({ command: 'submit_sm_resp', command_status: CommandStatus.ESME_RTHROTTLED, sequence_number: 9, message_id: 'ignored' });
  t.equal(bytes.length, HEADER_LENGTH);
  const decoded = decodePdu(bytes);
  t.equal(decoded.command, 'submit_sm_resp');
  t.equal((decoded as { message_id: string }).message_id, '');
  const vendor = Buffer.concat([bytes, Buffer.from('x1\0')]);
  vendor.writeUInt32BE(vendor.length, 0);
  t.equal((decodePdu(vendor) as { message_id: string }).message_id, 'x1');
});

t.test('encoder refuses what SMPP cannot carry', async (t) => {
  t.throws(() => encodePdu({ command: 'submit_sm', short_message: Buffer.alloc(255) }), SmppEncodeError);
  t.throws(() => encodePdu({ command: 'submit_sm', source_addr: 'Ω' }), SmppEncodeError);
  t.throws(() => encodePdu({ command: 'submit_sm', esm_class: 256 }), SmppEncodeError);
  t.doesNotThrow(() => encodePdu({ command: 'submit_sm', short_message: Buffer.alloc(254) }));
});

t.test('decoder on random bytes throws nothing but SmppDecodeError', async (t) => {
  const onlyOwnErrors = (bytes: Uint8Array): boolean => {
    try {
      decodePdu(Buffer.from(bytes));
      return true;
    } catch (err) {
      return err instanceof SmppDecodeError;
    }
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 400 }), onlyOwnErrors), { numRuns: 3000 });
  // Random bytes rarely form a plausible header, so also damage valid PDUs: keep the header, corrupt the body.
  fc.assert(
    fc.property(anyPduArb(), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }), fc.nat(), (pdu, flips, cut) => {
      const bytes = Buffer.from(encodePdu(pdu));
      for (const [pos, value] of flips) bytes[HEADER_LENGTH + (pos % Math.max(1, bytes.length - HEADER_LENGTH))] = value;
      const length = HEADER_LENGTH + (cut % (bytes.length - HEADER_LENGTH + 1));
      const truncated = bytes.subarray(0, length);
      truncated.writeUInt32BE(length, 0); // a consistent, shorter command_length
      return onlyOwnErrors(bytes) && onlyOwnErrors(truncated);
    }),
    { numRuns: 3000 },
  );
  t.pass('no foreign exception escaped');
});

t.test('decoder error codes', async (t) => {
  const code = (b: Buffer): string | undefined => {
    try {
      decodePdu(b);
      return undefined;
    } catch (err) {
      return (err as SmppDecodeError).code;
    }
  };
  t.equal(code(Buffer.alloc(8)), 'TRUNCATED');
  const h = Buffer.alloc(16);
  h.writeUInt32BE(8, 0);
  t.equal(code(h), 'INVALID_COMMAND_LENGTH');
  h.writeUInt32BE(0xffffffff, 0);
  t.equal(code(h), 'INVALID_COMMAND_LENGTH');
  h.writeUInt32BE(16, 0);
  h.writeUInt32BE(0x00000999, 4);
  h.writeUInt32BE(77, 12);
  t.equal(code(h), 'UNKNOWN_COMMAND_ID');
  const unterminated = Buffer.concat([Buffer.alloc(16), Buffer.from('abc')]);
  unterminated.writeUInt32BE(19, 0);
  unterminated.writeUInt32BE(CommandId.submit_sm_resp, 4);
  t.equal(code(unterminated), 'UNTERMINATED_CSTRING');
});

t.test('frame reader cuts any chunking of a stream into the same PDUs', async (t) => {
  fc.assert(
    fc.property(fc.array(anyPduArb({ tlvs: false }), { minLength: 1, maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 30 }), (pdus, cuts) => {
      const stream = Buffer.concat(pdus.map((p) => encodePdu(p)));
      const got: unknown[] = [];
      const reader = new FrameReader((buf, off) => {
        got.push(decodePdu(buf, off));
        return true;
      }, 70_000);
      let pos = 0;
      let i = 0;
      while (pos < stream.length) {
        const n = cuts[i++ % cuts.length];
        reader.push(stream.subarray(pos, pos + n));
        pos += n;
      }
      return isDeepStrictEqual(got, pdus) && reader.buffered === 0;
    }),
    { numRuns: 300 },
  );
  t.pass('chunking never changes the frames');
});

t.test('frame reader rejects an impossible command_length', async (t) => {
  const reader = new FrameReader(() => true, 1000);
  const bad = Buffer.alloc(16);
  bad.writeUInt32BE(5000, 0);
  t.throws(() => reader.push(bad), SmppDecodeError);
  const tiny = new FrameReader(() => true, 1000);
  const small = Buffer.alloc(16);
  small.writeUInt32BE(3, 0);
  t.throws(() => tiny.push(small), SmppDecodeError);
});
