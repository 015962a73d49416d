import fc from 'fast-check';
import t from 'tap';
import { DataCoding, EsmClass } from '../../src/smpp/constants.js';
import { alphabetOf, decodeText, encodeText } from '../../src/smpp/text/encoding.js';
import { decodeGsm7, encodeGsm7, gsm7Length, GSM7_EXTENSION_CHARS, isGsm7 } from '../../src/smpp/text/gsm7.js';
import { Reassembler } from '../../src/smpp/text/reassembler.js';
import { countSegments, splitMessage } from '../../src/smpp/text/segments.js';
import { concatFromUdh, messageParts, parseUdh } from '../../src/smpp/text/udh.js';

const EMOJI = '\u{1F600}'; // one character, a surrogate pair in UTF-16

function partsText(split: ReturnType<typeof splitMessage>): string {
  return split.segments
    .map((s) => {
      const udh = split.esmClass & EsmClass.UDHI ? parseUdh(s)! : undefined;
      return decodeText(s, split.dataCoding, udh?.length ?? 0);
    })
    .join('');
}

t.test('GSM-7 basic and extension table', async (t) => {
  t.same([...encodeGsm7('@£$')], [0x00, 0x01, 0x02]);
  t.same([...encodeGsm7('^{}\\[~]|€')], [0x1b, 0x14, 0x1b, 0x28, 0x1b, 0x29, 0x1b, 0x2f, 0x1b, 0x3c, 0x1b, 0x3d, 0x1b, 0x3e, 0x1b, 0x40, 0x1b, 0x65]);
  t.equal(gsm7Length('a€'), 3, 'extension characters cost two septets');
  t.equal(GSM7_EXTENSION_CHARS.length, 10);
  t.notOk(isGsm7('ç'), 'ç is not in the default alphabet (only Ç is)');
  t.notOk(isGsm7('`'));
  t.equal(decodeGsm7(Buffer.from([0x1b, 0x41])), 'A', 'unknown extension code falls back to the basic character');
  t.equal(decodeGsm7(Buffer.from([0x41, 0x1b])), 'A ', 'a dangling escape is shown as a space');
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom(...'@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./09:;<=>?¡AZÄÖÑÜ§¿azäöñüà^{}\\[~]|€'.split('')), maxLength: 300 }), (s) => decodeGsm7(encodeGsm7(s)) === s),
  );
});

t.test('encodeText picks GSM-7, else UCS-2; honours a preferred coding that fits', async (t) => {
  t.equal(encodeText('Hello {world}').dataCoding, DataCoding.SMSC_DEFAULT);
  t.equal(encodeText('Привет').dataCoding, DataCoding.UCS2);
  t.equal(encodeText('ça va').dataCoding, DataCoding.UCS2);
  t.equal(encodeText('ça va', DataCoding.LATIN1).dataCoding, DataCoding.LATIN1);
  t.equal(encodeText('Привет', DataCoding.LATIN1).dataCoding, DataCoding.UCS2, 'falls back when Latin-1 cannot carry it');
  t.equal(encodeText('plain', DataCoding.IA5).dataCoding, DataCoding.IA5);
  const ucs = encodeText(`hi ${EMOJI}`);
  t.equal(ucs.bytes.length, 10, 'a surrogate pair is 4 octets');
  t.equal(decodeText(ucs.bytes, DataCoding.UCS2), `hi ${EMOJI}`);
  t.equal(decodeText(Buffer.from([0x00, 0x41, 0x00]), DataCoding.UCS2), 'A', 'odd trailing octet dropped');
  t.equal(decodeText(Buffer.from('caf\xe9', 'latin1'), DataCoding.LATIN1), 'café');
  t.equal(decodeText(Buffer.from('abc'), DataCoding.IA5), 'abc');
  t.equal(alphabetOf(0xf0), 'GSM-7');
  t.equal(alphabetOf(0xf4), 'BINARY');
  t.equal(alphabetOf(0x18), 'UCS-2');
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 100 }), (s) => {
      const { dataCoding, bytes } = encodeText(s);
      return decodeText(bytes, dataCoding) === s;
    }),
  );
});

t.test('GSM-7 segment boundaries: 160 / 161 / 153 × n, escapes never split', async (t) => {
  t.equal(splitMessage('a'.repeat(160)).parts, 1);
  const s161 = splitMessage('a'.repeat(161));
  t.equal(s161.parts, 2);
  t.equal(s161.esmClass, EsmClass.UDHI);
  t.same(s161.segments.map((s) => s.length), [6 + 153, 6 + 8]);
  t.equal(splitMessage('a'.repeat(153 * 3)).parts, 3);
  t.equal(splitMessage('a'.repeat(153 * 3 + 1)).parts, 4);
  t.equal(splitMessage('€'.repeat(80)).parts, 1, '80 euro signs are exactly 160 septets');
  t.equal(splitMessage('€'.repeat(81)).parts, 2);
  // 152 plain septets then an escape pair: the pair must move whole to part 2.
  const edge = splitMessage('a'.repeat(152) + '€' + 'b'.repeat(10));
  t.equal(edge.segments[0].length, 6 + 152);
  t.equal(edge.segments[1][6], 0x1b);
  t.equal(partsText(edge), 'a'.repeat(152) + '€' + 'b'.repeat(10));
  const udh = parseUdh(edge.segments[1])!;
  t.same(concatFromUdh(udh), { reference: edge.reference, total: 2, seq: 2 });
});

t.test('UCS-2 segment boundaries: 70 / 71 / 67 × n, surrogate pairs never split', async (t) => {
  t.equal(splitMessage('я'.repeat(70)).parts, 1);
  t.equal(splitMessage('я'.repeat(71)).parts, 2);
  t.same(splitMessage('я'.repeat(71)).segments.map((s) => s.length), [6 + 134, 6 + 8]);
  t.equal(splitMessage('я'.repeat(67 * 2)).parts, 2);
  t.equal(splitMessage('я'.repeat(67 * 2 + 1)).parts, 3);
  const edge = splitMessage('я'.repeat(66) + EMOJI + 'я'.repeat(10));
  t.equal(edge.segments[0].length, 6 + 66 * 2, 'the pair moved to part 2');
  t.equal(partsText(edge), 'я'.repeat(66) + EMOJI + 'я'.repeat(10));
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 500 }), fc.boolean(), (s, sar) => {
      const split = splitMessage(s, { concat: sar ? 'sar' : 'udh' });
      const count = countSegments(s);
      const joined = sar ? split.segments.map((b) => decodeText(b, split.dataCoding)).join('') : partsText(split);
      return joined === s && count.segments === split.parts;
    }),
    { numRuns: 300 },
  );
});

t.test('SAR concatenation and countSegments', async (t) => {
  const s = splitMessage('x'.repeat(200), { concat: 'sar', reference: 0x1234 });
  t.equal(s.esmClass, 0);
  t.same(s.sar, [
    { sar_msg_ref_num: 0x1234, sar_total_segments: 2, sar_segment_seqnum: 1 },
    { sar_msg_ref_num: 0x1234, sar_total_segments: 2, sar_segment_seqnum: 2 },
  ]);
  t.same(s.segments.map((b) => b.length), [153, 47]);
  t.same(countSegments('hello'), { encoding: 'GSM-7', segments: 1, characters: 5, units: 5 });
  t.same(countSegments(`${EMOJI}a`), { encoding: 'UCS-2', segments: 1, characters: 2, units: 3 });
  t.same(countSegments('{'.repeat(81)), { encoding: 'GSM-7', segments: 2, characters: 81, units: 162 });
  t.throws(() => splitMessage('a'.repeat(153 * 3 + 1), { maxParts: 3 }));
});

t.test('incoming UDH/SAR parsing and reassembly', async (t) => {
  const split = splitMessage('z'.repeat(400), { reference: 7 });
  const r = new Reassembler({ maxPending: 2 });
  let whole: Buffer[] | undefined;
  for (const seg of [...split.segments].reverse()) {
    const parts = messageParts({ esm_class: EsmClass.UDHI, short_message: seg });
    t.equal(parts.concat?.via, 'udh');
    whole = r.add('src|dst|' + parts.concat!.reference, parts.concat!.total, parts.concat!.seq, parts.payload);
  }
  t.ok(whole);
  t.equal(whole!.map((b) => decodeText(b, 0)).join(''), 'z'.repeat(400));
  const sar = messageParts({ esm_class: 0, short_message: Buffer.from('ab'), tlvs: { sar_msg_ref_num: 3, sar_total_segments: 2, sar_segment_seqnum: 1 } });
  t.same(sar.concat, { reference: 3, total: 2, seq: 1, via: 'sar' });
  const payload = messageParts({ esm_class: 0, short_message: Buffer.alloc(0), tlvs: { message_payload: Buffer.from('long') } });
  t.equal(payload.payload.toString(), 'long');
  t.equal(parseUdh(Buffer.from([0x05, 0x00, 0x03, 0x01])), undefined, 'overrunning UDH is rejected');
  // Bounded: a third incomplete message evicts the oldest.
  r.add('a', 2, 1, Buffer.from('1'));
  r.add('b', 2, 1, Buffer.from('1'));
  r.add('c', 2, 1, Buffer.from('1'));
  t.equal(r.size, 2);
  t.equal(r.dropped, 1);
  t.equal(r.add('a', 2, 2, Buffer.from('2')), undefined, 'evicted message does not complete');
});
