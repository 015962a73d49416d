/**
 * GSM 03.38 default alphabet with its extension table, one septet per octet (unpacked), which is what
 * SMPP carries for data_coding 0. Lookups are flat typed arrays built once; encode and decode allocate
 * only their result.
 */

const BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';

/** Extension table: character → septet that follows the 0x1B escape. */
const EXTENSION: ReadonlyArray<readonly [string, number]> = [
  ['\f', 0x0a],
  ['^', 0x14],
  ['{', 0x28],
  ['}', 0x29],
  ['\\', 0x2f],
  ['[', 0x3c],
  ['~', 0x3d],
  [']', 0x3e],
  ['|', 0x40],
  ['€', 0x65],
];

export const GSM7_ESCAPE = 0x1b;
/** Characters that cost two septets. */
export const GSM7_EXTENSION_CHARS = EXTENSION.map(([c]) => c).join('');

const NOT_GSM = -1;
const EXT_FLAG = 0x100;

// UTF-16 unit → septet (0..127), EXT_FLAG|septet for extension characters, or NOT_GSM.
const ENCODE = new Int16Array(0x10000).fill(NOT_GSM);
for (let i = 0; i < BASIC.length; i++) if (i !== GSM7_ESCAPE) ENCODE[BASIC.charCodeAt(i)] = i;
for (const [c, septet] of EXTENSION) ENCODE[c.charCodeAt(0)] = EXT_FLAG | septet;

const DECODE_BASIC = new Uint16Array(128);
for (let i = 0; i < 128; i++) DECODE_BASIC[i] = BASIC.charCodeAt(i);
// The escape itself has no glyph; a lone escape decodes as a space, as handsets show it.
DECODE_BASIC[GSM7_ESCAPE] = 0x20;
const DECODE_EXT = new Int32Array(128).fill(-1);
for (const [c, septet] of EXTENSION) DECODE_EXT[septet] = c.charCodeAt(0);

/** Septets a text needs in GSM-7, or -1 when some character is outside the alphabet. */
export function gsm7Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const e = ENCODE[text.charCodeAt(i)];
    if (e === NOT_GSM) return -1;
    n += e & EXT_FLAG ? 2 : 1;
  }
  return n;
}

/** True when every character is in the GSM-7 basic or extension table. */
export function isGsm7(text: string): boolean {
  return gsm7Length(text) >= 0;
}

/** Septets for one UTF-16 unit: 1, 2 (extension) or -1 (not GSM-7). */
export function gsm7CharCost(code: number): number {
  const e = ENCODE[code];
  return e === NOT_GSM ? -1 : e & EXT_FLAG ? 2 : 1;
}

/**
 * Encodes into unpacked septets. Characters outside the alphabet become `replacement` (default '?'),
 * so callers who need exactness check `isGsm7` first.
 */
export function encodeGsm7(text: string, replacement = 0x3f): Buffer {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const e = ENCODE[text.charCodeAt(i)];
    n += e !== NOT_GSM && e & EXT_FLAG ? 2 : 1;
  }
  const out = Buffer.allocUnsafe(n);
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const e = ENCODE[text.charCodeAt(i)];
    if (e === NOT_GSM) out[o++] = replacement;
    else if (e & EXT_FLAG) {
      out[o++] = GSM7_ESCAPE;
      out[o++] = e & 0x7f;
    } else out[o++] = e;
  }
  return out;
}

// Decoding fills a reusable unit buffer and turns it into a string in bounded chunks (apply's argument limit).
let scratch = new Uint16Array(512);
const CHUNK = 8192;

function unitsToString(units: Uint16Array, n: number): string {
  if (n <= CHUNK) return String.fromCharCode.apply(null, units.subarray(0, n) as unknown as number[]);
  let s = '';
  for (let i = 0; i < n; i += CHUNK) s += String.fromCharCode.apply(null, units.subarray(i, Math.min(n, i + CHUNK)) as unknown as number[]);
  return s;
}

/** Decodes unpacked septets (high bit ignored). An escape before an unknown code yields the basic character. */
export function decodeGsm7(bytes: Uint8Array, start = 0, end = bytes.length): string {
  if (scratch.length < end - start) scratch = new Uint16Array(end - start);
  let n = 0;
  for (let i = start; i < end; i++) {
    const b = bytes[i] & 0x7f;
    if (b === GSM7_ESCAPE && i + 1 < end) {
      const next = bytes[++i] & 0x7f;
      const ext = DECODE_EXT[next];
      scratch[n++] = ext >= 0 ? ext : DECODE_BASIC[next];
    } else {
      scratch[n++] = DECODE_BASIC[b];
    }
  }
  return unitsToString(scratch, n);
}
