import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { decodePdu, encodePdu } from '../../src/smpp/codec.js';
import type { CommandName } from '../../src/smpp/constants.js';
import { DataCoding } from '../../src/smpp/constants.js';
import type { Pdu } from '../../src/smpp/pdu.js';
import { SCHEMA } from '../../src/smpp/schema.js';
import { encodeText } from '../../src/smpp/text/encoding.js';
import { encodeGsm7, GSM7_EXTENSION_CHARS } from '../../src/smpp/text/gsm7.js';
import { ALL_COMMANDS, pduArb } from './fixtures/arbitraries.js';
import { ORACLE_TLV_EXCLUDE, ORACLE_TLV_RENAME, smpp } from './fixtures/oracle.js';

const TIME_FIELDS = new Set(['schedule_delivery_time', 'validity_period', 'final_date']);

function excludedTlvs(command: CommandName): string[] {
  // query_sm_resp has a mandatory message_state; the oracle cannot also carry the TLV of that name.
  return command === 'query_sm_resp' ? [...ORACLE_TLV_EXCLUDE, 'message_state'] : [...ORACLE_TLV_EXCLUDE];
}

/** Options for `new smpp.PDU(command, options)` describing the same PDU. */
function toOracleOptions(pdu: Pdu): Record<string, unknown> {
  const { command: _c, tlvs, ...rest } = pdu as Pdu & { tlvs?: Record<string, unknown> };
  const options: Record<string, unknown> = { ...rest };
  for (const [k, v] of Object.entries(tlvs ?? {})) if (k !== 'raw') options[ORACLE_TLV_RENAME[k] ?? k] = v;
  return options;
}

t.test('oracle: Ferry bytes equal the smpp package encoding for every PDU type', async (t) => {
  for (const command of ALL_COMMANDS) {
    fc.assert(
      fc.property(pduArb(command, { ascii: true, excludeTlvs: excludedTlvs(command) }), (pdu) => {
        const ours = encodePdu(pdu);
        const theirs: Buffer = new smpp.PDU(command, toOracleOptions(pdu)).toBuffer();
        return ours.equals(theirs);
      }),
      { numRuns: 100 },
    );
    t.pass(`${command}: byte for byte`);
  }
});

t.test('oracle: the smpp package decodes Ferry bytes to the same fields', async (t) => {
  for (const command of ALL_COMMANDS) {
    fc.assert(
      fc.property(pduArb(command, { ascii: true, errors: false, excludeTlvs: [...excludedTlvs(command), 'message_payload'] }), (pdu) => {
        const o = new smpp.PDU(encodePdu(pdu));
        if (o.command !== command || o.command_status !== pdu.command_status || o.sequence_number !== pdu.sequence_number) return false;
        for (const [name] of SCHEMA[command]) {
          if (TIME_FIELDS.has(name) || name === 'short_message') continue; // oracle turns these into Date / text
          const ours = (pdu as unknown as Record<string, unknown>)[name];
          let theirs = o[name];
          if (name === 'dest_address') theirs = (theirs as Array<Record<string, unknown>>).map((d) => ({ dest_flag: 'dl_name' in d ? 2 : 1, ...d }));
          if (!isDeepStrictEqual(ours, theirs) && !(Array.isArray(ours) && isDeepStrictEqual(ours.map((x) => ({ ...x })), theirs.map((x: object) => ({ ...x }))))) return false;
        }
        for (const [k, v] of Object.entries(pdu.tlvs ?? {})) {
          if (k === 'raw') continue;
          const theirs = o[ORACLE_TLV_RENAME[k] ?? k];
          if (Buffer.isBuffer(v) ? !v.equals(theirs) : v !== theirs) return false;
        }
        return true;
      }),
      { numRuns: 100 },
    );
    t.pass(`${command}: oracle reads Ferry's encoding`);
  }
});

t.test('oracle: Ferry decodes the smpp package encoding', async (t) => {
  for (const command of ALL_COMMANDS) {
    fc.assert(
      fc.property(pduArb(command, { ascii: true, excludeTlvs: excludedTlvs(command) }), (pdu) => {
        const theirs: Buffer = new smpp.PDU(command, toOracleOptions(pdu)).toBuffer();
        return isDeepStrictEqual(decodePdu(theirs), pdu);
      }),
      { numRuns: 60 },
    );
  }
  t.pass('all commands');
});

const gsmChar = fc.constantFrom(...('@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCXYZÄÖÑÜ§¿abcxyzäöñüà' + GSM7_EXTENSION_CHARS).split(''));

t.test('oracle: GSM-7 (with extension table), Latin-1 and UCS-2 text agree', async (t) => {
  fc.assert(
    fc.property(fc.string({ unit: gsmChar, maxLength: 160 }), (text) => {
      const ours = encodeGsm7(text);
      const theirs: Buffer = smpp.encodings.ASCII.encode(text);
      const pdu = new smpp.PDU(encodePdu({ command: 'submit_sm', data_coding: DataCoding.SMSC_DEFAULT, short_message: ours }));
      return ours.equals(theirs) && pdu.short_message.message === text;
    }),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 70 }), (text) => {
      // Lone surrogates are not text; handsets and iconv alike replace them.
      if (/[\ud800-\udfff]/.test(text.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) return true;
      const { dataCoding, bytes } = encodeText(text, DataCoding.UCS2);
      const pdu = new smpp.PDU(encodePdu({ command: 'deliver_sm', data_coding: dataCoding, short_message: bytes.subarray(0, 254) }));
      return bytes.length > 254 || pdu.short_message.message === text;
    }),
    { numRuns: 500 },
  );
  const latin = 'Grüße, señor: 5 € ist kein Latin-1, aber ¿qué?'.replace('€', 'E');
  const encoded = encodeText(latin, DataCoding.LATIN1);
  t.equal(encoded.dataCoding, DataCoding.LATIN1);
  t.equal(new smpp.PDU(encodePdu({ command: 'submit_sm', data_coding: 3, short_message: encoded.bytes })).short_message.message, latin);
});

t.test('oracle quirk: it labels GSM-7 bytes as data_coding 1 (IA5); Ferry says 0', async (t) => {
  const theirs: Buffer = new smpp.PDU('submit_sm', { destination_addr: '1', short_message: 'hello' }).toBuffer();
  const decoded = decodePdu(theirs);
  t.equal(decoded.command, 'submit_sm');
  t.equal((decoded as { data_coding: number }).data_coding, 1, 'smpp package auto-detect writes IA5 for GSM-7 text');
  t.equal(encodeText('hello').dataCoding, DataCoding.SMSC_DEFAULT);
  // And it ignores an explicit data_coding for the octets when given a string: the bytes stay GSM-7 for 0.
  const explicit: Buffer = new smpp.PDU('submit_sm', { destination_addr: '1', data_coding: 0, short_message: '{x}' }).toBuffer();
  t.same([...(decodePdu(explicit) as { short_message: Buffer }).short_message], [...encodeGsm7('{x}')]);
});
