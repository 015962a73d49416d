import { DataCoding } from '../constants.js';
import { SmppEncodeError } from '../errors.js';
import { decodeGsm7, encodeGsm7, isGsm7 } from './gsm7.js';

export interface EncodedText {
  dataCoding: number;
  bytes: Buffer;
}

/** UTF-16BE; astral characters travel as surrogate pairs, as every handset expects from "UCS-2". */
export function encodeUcs2(text: string): Buffer {
  const out = Buffer.from(text, 'utf16le');
  return out.swap16();
}

export function decodeUcs2(bytes: Uint8Array, start = 0, end = bytes.length): string {
  const even = end - ((end - start) & 1); // a dangling odd octet cannot be a character
  const copy = Buffer.allocUnsafe(even - start);
  copy.set(bytes.subarray(start, even));
  return copy.swap16().toString('utf16le');
}

function fitsLatin1(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0xff) return false;
  return true;
}

function fitsAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The data_coding Ferry uses for `text`: the preferred one when it can carry the text, else GSM-7, else UCS-2. */
export function chooseDataCoding(text: string, preferred?: number): number {
  if (preferred === DataCoding.UCS2) return DataCoding.UCS2;
  if (preferred === DataCoding.LATIN1 && fitsLatin1(text)) return DataCoding.LATIN1;
  if (preferred === DataCoding.IA5 && fitsAscii(text)) return DataCoding.IA5;
  return isGsm7(text) ? DataCoding.SMSC_DEFAULT : DataCoding.UCS2;
}

/** Encodes text as (data_coding, octets). data_coding 0 is GSM-7 unpacked (one septet per octet). */
export function encodeText(text: string, preferredCoding?: number): EncodedText {
  const dataCoding = chooseDataCoding(text, preferredCoding);
  return { dataCoding, bytes: encodeWith(text, dataCoding) };
}

/** Encodes with a fixed data_coding; characters the coding cannot carry become '?'. */
export function encodeWith(text: string, dataCoding: number): Buffer {
  switch (dataCoding) {
    case DataCoding.SMSC_DEFAULT:
      return encodeGsm7(text);
    case DataCoding.UCS2:
      return encodeUcs2(text);
    case DataCoding.LATIN1:
      return Buffer.from(text, 'latin1');
    case DataCoding.IA5: {
      const out = Buffer.from(text, 'latin1');
      for (let i = 0; i < out.length; i++) if (out[i] > 0x7f || text.charCodeAt(i) > 0x7f) out[i] = 0x3f; // '?'
      return out;
    }
    default:
      throw new SmppEncodeError(`data_coding ${dataCoding} is not a text coding Ferry encodes`);
  }
}

/** The alphabet a data_coding value selects, following SMPP 5.2.19 for 0x00–0x0F and GSM 03.38 groups above. */
export function alphabetOf(dataCoding: number): 'GSM-7' | 'IA5' | 'LATIN-1' | 'UCS-2' | 'BINARY' {
  if (dataCoding <= 0x0f) {
    switch (dataCoding) {
      case 0x00: return 'GSM-7';
      case 0x01: return 'IA5';
      case 0x03: return 'LATIN-1';
      case 0x08: return 'UCS-2';
      default: return 'BINARY';
    }
  }
  if (dataCoding < 0x40) {
    // General data coding group: bits 3..2 select the alphabet.
    const alphabet = (dataCoding >> 2) & 0x03;
    return alphabet === 0 ? 'GSM-7' : alphabet === 2 ? 'UCS-2' : 'BINARY';
  }
  if (dataCoding >= 0xc0 && dataCoding <= 0xdf) return 'GSM-7'; // message waiting, default alphabet
  if (dataCoding >= 0xe0 && dataCoding <= 0xef) return 'UCS-2'; // message waiting, UCS-2
  if (dataCoding >= 0xf0) return dataCoding & 0x04 ? 'BINARY' : 'GSM-7';
  return 'BINARY';
}

/** Decodes octets under a data_coding. Binary codings decode as Latin-1 so no octet is lost. */
export function decodeText(bytes: Uint8Array, dataCoding: number, start = 0, end = bytes.length): string {
  switch (alphabetOf(dataCoding)) {
    case 'GSM-7':
      return decodeGsm7(bytes, start, end);
    case 'UCS-2':
      return decodeUcs2(bytes, start, end);
    case 'IA5':
    case 'LATIN-1':
    case 'BINARY':
      return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1');
  }
}
