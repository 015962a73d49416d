import { CommandId, commandName, isResponseId, type CommandName } from './constants.js';
import { SmppDecodeError, SmppEncodeError } from './errors.js';
import type { Pdu, PduInput } from './pdu.js';
import { SCHEMA, type DestAddress, type FieldKind, type UnsuccessSme } from './schema.js';
import { TLV_BY_NAME, TLV_BY_TAG, type RawTlv, type Tlvs } from './tlv.js';

export const HEADER_LENGTH = 16;
/** Large enough for a 64 KiB message_payload plus a full submit_sm body. */
export const DEFAULT_MAX_PDU_LENGTH = 64 * 1024 + 1024;

const EMPTY_BUFFER = Buffer.alloc(0);

// Schema rows flattened once into parallel arrays: the hot loops index arrays instead of destructuring tuples.
interface Layout {
  names: string[];
  kinds: FieldKind[];
}
const LAYOUT = new Map<CommandName, Layout>();
for (const [name, fields] of Object.entries(SCHEMA)) {
  LAYOUT.set(name as CommandName, {
    names: fields.map((f) => f[0]),
    kinds: fields.map((f) => f[1]),
  });
}

/**
 * SMPP v3.4: a response with a non-zero command_status carries no body. Ferry encodes it that way (as the
 * `smpp` package does); the decoder still reads a body when a vendor sends one.
 */
function bodyOmitted(commandId: number, status: number): boolean {
  return status !== 0 && isResponseId(commandId);
}

// ---------------------------------------------------------------- sizes

function cstringSize(v: unknown): number {
  return (typeof v === 'string' ? latin1Length(v) : 0) + 1;
}

function latin1Length(s: string): number {
  // Latin-1 is one octet per UTF-16 unit; characters above U+00FF are rejected when written.
  return s.length;
}

function fieldSize(kind: FieldKind, v: unknown): number {
  switch (kind) {
    case 'u8':
      return 1;
    case 'cstring':
      return cstringSize(v);
    case 'sm':
      return 1 + (v ? (v as Buffer).length : 0);
    case 'dests': {
      let n = 1;
      for (const d of (v as DestAddress[] | undefined) ?? []) {
        n += d.dest_flag === 2 ? 1 + cstringSize(d.dl_name) : 3 + cstringSize(d.destination_addr);
      }
      return n;
    }
    case 'unsuccess': {
      let n = 1;
      for (const u of (v as UnsuccessSme[] | undefined) ?? []) n += 2 + cstringSize(u.destination_addr) + 4;
      return n;
    }
  }
}

function tlvsSize(tlvs: Tlvs): number {
  let n = 0;
  for (const key in tlvs) {
    const value = (tlvs as Record<string, unknown>)[key];
    if (value === undefined) continue;
    if (key === 'raw') {
      for (const r of value as RawTlv[]) n += 4 + r.value.length;
      continue;
    }
    const def = TLV_BY_NAME.get(key);
    if (!def) throw new SmppEncodeError(`unknown TLV name ${key}`);
    switch (def.kind) {
      case 'u8': n += 5; break;
      case 'u16': n += 6; break;
      case 'u32': n += 8; break;
      case 'cstring': n += 4 + cstringSize(value); break;
      case 'octets': n += 4 + (value as Buffer).length; break;
    }
  }
  return n;
}

type SmInput = PduInput & { command: 'submit_sm' | 'deliver_sm' };

// submit_sm/deliver_sm dominate traffic: their bodies are sized and written with direct property access.
function smBodyLength(p: SmInput): number {
  return (
    12 + // the eleven 1-octet fields and sm_length
    cstringSize(p.service_type) +
    cstringSize(p.source_addr) +
    cstringSize(p.destination_addr) +
    cstringSize(p.schedule_delivery_time) +
    cstringSize(p.validity_period) +
    (p.short_message ? p.short_message.length : 0)
  );
}

function writeSmBody(p: SmInput, buf: Buffer, off: number): number {
  off = writeCstring(buf, off, p.service_type);
  off = writeU8(buf, off, p.source_addr_ton);
  off = writeU8(buf, off, p.source_addr_npi);
  off = writeCstring(buf, off, p.source_addr);
  off = writeU8(buf, off, p.dest_addr_ton);
  off = writeU8(buf, off, p.dest_addr_npi);
  off = writeCstring(buf, off, p.destination_addr);
  off = writeU8(buf, off, p.esm_class);
  off = writeU8(buf, off, p.protocol_id);
  off = writeU8(buf, off, p.priority_flag);
  off = writeCstring(buf, off, p.schedule_delivery_time);
  off = writeCstring(buf, off, p.validity_period);
  off = writeU8(buf, off, p.registered_delivery);
  off = writeU8(buf, off, p.replace_if_present_flag);
  off = writeU8(buf, off, p.data_coding);
  off = writeU8(buf, off, p.sm_default_msg_id);
  return writeField(buf, off, 'sm', p.short_message);
}

/** Exact encoded size of a PDU, so callers can write it into a pre-sized buffer. */
export function encodedLength(pdu: PduInput): number {
  const commandId = CommandId[pdu.command];
  if (commandId === undefined) throw new SmppEncodeError(`unknown command ${String(pdu.command)}`);
  if (bodyOmitted(commandId, pdu.command_status ?? 0)) return HEADER_LENGTH;
  if (pdu.command === 'submit_sm' || pdu.command === 'deliver_sm') {
    return HEADER_LENGTH + smBodyLength(pdu) + (pdu.tlvs ? tlvsSize(pdu.tlvs) : 0);
  }
  const layout = LAYOUT.get(pdu.command)!;
  const record = pdu as unknown as Record<string, unknown>;
  let n = HEADER_LENGTH;
  for (let i = 0; i < layout.names.length; i++) n += fieldSize(layout.kinds[i], record[layout.names[i]]);
  if (pdu.tlvs) n += tlvsSize(pdu.tlvs);
  return n;
}

// ---------------------------------------------------------------- encode

function writeCstring(buf: Buffer, off: number, v: unknown): number {
  if (typeof v === 'string' && v.length > 0) {
    const s = v;
    // Short ASCII strings dominate (addresses, ids): a char loop beats Buffer.write's dispatch for them.
    if (s.length < 48) {
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c > 0xff || c === 0) throw new SmppEncodeError(`C-Octet String cannot carry U+${c.toString(16)}`);
        buf[off++] = c;
      }
    } else {
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c > 0xff || c === 0) throw new SmppEncodeError(`C-Octet String cannot carry U+${c.toString(16)}`);
      }
      off += buf.write(s, off, 'latin1');
    }
  }
  buf[off++] = 0;
  return off;
}

function writeU8(buf: Buffer, off: number, v: unknown): number {
  const n = typeof v === 'number' ? v : 0;
  if (n < 0 || n > 0xff || !Number.isInteger(n)) throw new SmppEncodeError(`integer ${n} out of range for 1 octet`);
  buf[off] = n;
  return off + 1;
}

function writeField(buf: Buffer, off: number, kind: FieldKind, v: unknown): number {
  switch (kind) {
    case 'u8':
      return writeU8(buf, off, v);
    case 'cstring':
      return writeCstring(buf, off, v);
    case 'sm': {
      const sm = (v as Buffer | undefined) ?? EMPTY_BUFFER;
      if (sm.length > 254) throw new SmppEncodeError(`short_message is ${sm.length} octets; the limit is 254 (use message_payload)`);
      buf[off++] = sm.length;
      sm.copy(buf, off);
      return off + sm.length;
    }
    case 'dests': {
      const list = (v as DestAddress[] | undefined) ?? [];
      if (list.length > 254) throw new SmppEncodeError('submit_multi carries at most 254 destinations');
      buf[off++] = list.length;
      for (const d of list) {
        if (d.dest_flag === 2) {
          buf[off++] = 2;
          off = writeCstring(buf, off, d.dl_name);
        } else {
          buf[off++] = 1;
          off = writeU8(buf, off, d.dest_addr_ton);
          off = writeU8(buf, off, d.dest_addr_npi);
          off = writeCstring(buf, off, d.destination_addr);
        }
      }
      return off;
    }
    case 'unsuccess': {
      const list = (v as UnsuccessSme[] | undefined) ?? [];
      if (list.length > 255) throw new SmppEncodeError('too many unsuccess_sme entries');
      buf[off++] = list.length;
      for (const u of list) {
        off = writeU8(buf, off, u.dest_addr_ton);
        off = writeU8(buf, off, u.dest_addr_npi);
        off = writeCstring(buf, off, u.destination_addr);
        buf.writeUInt32BE(u.error_status_code >>> 0, off);
        off += 4;
      }
      return off;
    }
  }
}

function writeTlvs(buf: Buffer, off: number, tlvs: Tlvs): number {
  for (const key in tlvs) {
    const value = (tlvs as Record<string, unknown>)[key];
    if (value === undefined) continue;
    if (key === 'raw') {
      for (const r of value as RawTlv[]) {
        buf.writeUInt16BE(r.tag, off);
        buf.writeUInt16BE(r.value.length, off + 2);
        r.value.copy(buf, off + 4);
        off += 4 + r.value.length;
      }
      continue;
    }
    const def = TLV_BY_NAME.get(key)!;
    buf.writeUInt16BE(def.tag, off);
    off += 2;
    switch (def.kind) {
      case 'u8':
        buf.writeUInt16BE(1, off);
        off = writeU8(buf, off + 2, value);
        break;
      case 'u16':
        buf.writeUInt16BE(2, off);
        buf.writeUInt16BE(value as number, off + 2);
        off += 4;
        break;
      case 'u32':
        buf.writeUInt16BE(4, off);
        buf.writeUInt32BE(value as number, off + 2);
        off += 6;
        break;
      case 'cstring': {
        const end = writeCstring(buf, off + 2, value);
        buf.writeUInt16BE(end - off - 2, off);
        off = end;
        break;
      }
      case 'octets': {
        const b = value as Buffer;
        if (b.length > 0xffff) throw new SmppEncodeError(`TLV ${key} longer than 65535 octets`);
        buf.writeUInt16BE(b.length, off);
        b.copy(buf, off + 2);
        off += 2 + b.length;
        break;
      }
    }
  }
  return off;
}

/**
 * Writes `pdu` into `buf` at `offset` (which must have `length` free octets, see `encodedLength`) and returns the
 * end offset. The session uses this to encode straight into its outgoing slab without an intermediate Buffer.
 */
export function encodePduInto(
  pdu: PduInput,
  buf: Buffer,
  offset: number,
  length = encodedLength(pdu),
  /** Overrides pdu.sequence_number, so the session need not copy the caller's object to number it. */
  sequenceNumber = pdu.sequence_number ?? 0,
): number {
  const commandId = CommandId[pdu.command];
  const status = pdu.command_status ?? 0;
  buf.writeUInt32BE(length, offset);
  buf.writeUInt32BE(commandId, offset + 4);
  buf.writeUInt32BE(status >>> 0, offset + 8);
  buf.writeUInt32BE(sequenceNumber >>> 0, offset + 12);
  let off = offset + HEADER_LENGTH;
  if (!bodyOmitted(commandId, status)) {
    if (pdu.command === 'submit_sm' || pdu.command === 'deliver_sm') {
      off = writeSmBody(pdu, buf, off);
    } else {
      const layout = LAYOUT.get(pdu.command)!;
      const record = pdu as unknown as Record<string, unknown>;
      for (let i = 0; i < layout.names.length; i++) off = writeField(buf, off, layout.kinds[i], record[layout.names[i]]);
    }
    if (pdu.tlvs) off = writeTlvs(buf, off, pdu.tlvs);
  }
  if (off - offset !== length) throw new SmppEncodeError(`encoded ${off - offset} octets, expected ${length}`);
  return off;
}

/** Encodes a PDU into a new Buffer. */
export function encodePdu(pdu: PduInput): Buffer {
  const length = encodedLength(pdu);
  const buf = Buffer.allocUnsafe(length);
  encodePduInto(pdu, buf, 0, length);
  return buf;
}

// ---------------------------------------------------------------- decode

const latin1Slice = (Buffer.prototype as unknown as { latin1Slice?: (start: number, end: number) => string }).latin1Slice;

/** Latin-1 text of buf[start, end); short strings are built directly, which beats toString's dispatch. */
function latin1(buf: Buffer, start: number, end: number): string {
  const n = end - start;
  if (n === 0) return '';
  if (n <= 12) {
    let s = '';
    for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]);
    return s;
  }
  return latin1Slice ? latin1Slice.call(buf, start, end) : buf.toString('latin1', start, end);
}

/** Decoder cursor; one per decode call keeps the decoder re-entrant. */
class Reader {
  pos: number;
  constructor(readonly buf: Buffer, start: number, readonly end: number, readonly commandId: number, readonly seq: number) {
    this.pos = start;
  }
  fail(code: 'TRUNCATED' | 'UNTERMINATED_CSTRING' | 'INVALID_FIELD', what: string): never {
    throw new SmppDecodeError(code, `${what} at offset ${this.pos}`, this.commandId, this.seq);
  }
  // Field readers return the zero value when the body ends exactly where the field would start: vendors omit
  // trailing fields (and whole bodies of error responses). Running out inside a field is an error.
  u8(): number {
    if (this.pos >= this.end) return 0;
    return this.buf[this.pos++];
  }
  /** An integer inside a structure, where ending early is always an error. */
  u8Strict(): number {
    if (this.pos >= this.end) this.fail('TRUNCATED', 'integer runs past command_length');
    return this.buf[this.pos++];
  }
  cstring(): string {
    const { buf, end } = this;
    const start = this.pos;
    if (start === end) return '';
    let i = start;
    while (i < end && buf[i] !== 0) i++;
    if (i >= end) this.fail('UNTERMINATED_CSTRING', 'C-Octet String without NUL');
    this.pos = i + 1;
    return latin1(buf, start, i);
  }
  sm(): Buffer {
    if (this.pos === this.end) return EMPTY_BUFFER;
    return this.octets(this.buf[this.pos++]);
  }
  octets(n: number): Buffer {
    if (this.pos + n > this.end) this.fail('TRUNCATED', 'octet string runs past command_length');
    // Copied, not sliced: a slice would pin the whole socket chunk for as long as the message lives.
    const out = Buffer.allocUnsafe(n);
    this.buf.copy(out, 0, this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

function strictCstring(r: Reader): string {
  if (r.pos >= r.end) r.fail('TRUNCATED', 'C-Octet String runs past command_length');
  return r.cstring();
}

function readField(r: Reader, kind: FieldKind): unknown {
  switch (kind) {
    case 'u8':
      return r.u8();
    case 'cstring':
      return r.cstring();
    case 'sm':
      return r.sm();
    case 'dests': {
      if (r.pos === r.end) return [];
      const count = r.u8Strict();
      const list: DestAddress[] = [];
      for (let i = 0; i < count; i++) {
        const flag = r.u8Strict();
        if (flag === 1) {
          const dest_addr_ton = r.u8Strict();
          const dest_addr_npi = r.u8Strict();
          list.push({ dest_flag: 1, dest_addr_ton, dest_addr_npi, destination_addr: strictCstring(r) });
        } else if (flag === 2) {
          list.push({ dest_flag: 2, dl_name: strictCstring(r) });
        } else {
          r.fail('INVALID_FIELD', `dest_flag ${flag}`);
        }
      }
      return list;
    }
    case 'unsuccess': {
      if (r.pos === r.end) return [];
      const count = r.u8Strict();
      const list: UnsuccessSme[] = [];
      for (let i = 0; i < count; i++) {
        const dest_addr_ton = r.u8Strict();
        const dest_addr_npi = r.u8Strict();
        const destination_addr = strictCstring(r);
        if (r.pos + 4 > r.end) r.fail('TRUNCATED', 'error_status_code');
        const error_status_code = r.buf.readUInt32BE(r.pos);
        r.pos += 4;
        list.push({ dest_addr_ton, dest_addr_npi, destination_addr, error_status_code });
      }
      return list;
    }
  }
}

function readTlvs(r: Reader): Tlvs {
  const tlvs: Record<string, unknown> = {};
  let raw: RawTlv[] | undefined;
  const { buf } = r;
  while (r.pos < r.end) {
    if (r.pos + 4 > r.end) r.fail('TRUNCATED', 'TLV header');
    const tag = (buf[r.pos] << 8) | buf[r.pos + 1];
    const len = (buf[r.pos + 2] << 8) | buf[r.pos + 3];
    r.pos += 4;
    if (r.pos + len > r.end) r.fail('TRUNCATED', `TLV 0x${tag.toString(16)} value`);
    const def = TLV_BY_TAG.get(tag);
    const valueStart = r.pos;
    let value: unknown;
    if (def && tlvs[def.name] === undefined) {
      switch (def.kind) {
        case 'u8': if (len === 1) value = buf[valueStart]; break;
        case 'u16': if (len === 2) value = (buf[valueStart] << 8) | buf[valueStart + 1]; break;
        case 'u32': if (len === 4) value = buf.readUInt32BE(valueStart); break;
        case 'cstring': {
          // Tolerate a missing terminator (some SMSCs omit it): the value ends with the TLV.
          let e = valueStart;
          const stop = valueStart + len;
          while (e < stop && buf[e] !== 0) e++;
          if (e === stop - 1 || (e === stop && len > 0)) value = buf.toString('latin1', valueStart, e);
          break;
        }
        case 'octets': value = r.octets(len); r.pos = valueStart; break;
      }
    }
    if (value !== undefined) tlvs[def!.name] = value;
    else (raw ??= []).push({ tag, value: r.octets(len) });
    r.pos = valueStart + len;
  }
  if (raw) tlvs.raw = raw;
  return tlvs as Tlvs;
}

/**
 * Reads the command_length at `offset` and checks it against the limits; returns it. Throws SmppDecodeError
 * for a length that can never be valid, which a session treats as fatal for its framing.
 */
export function readCommandLength(buf: Buffer, offset: number, maxLength = DEFAULT_MAX_PDU_LENGTH): number {
  const len = buf.readUInt32BE(offset);
  if (len < HEADER_LENGTH || len > maxLength) {
    throw new SmppDecodeError('INVALID_COMMAND_LENGTH', `command_length ${len} outside ${HEADER_LENGTH}..${maxLength}`);
  }
  return len;
}

/**
 * Decodes the PDU at `offset`. Throws only SmppDecodeError. Missing trailing body fields take their zero
 * value (vendors omit bodies of error responses); octet fields are copies, strings are Latin-1.
 */
export function decodePdu(buf: Buffer, offset = 0, maxLength = DEFAULT_MAX_PDU_LENGTH): Pdu {
  if (!Buffer.isBuffer(buf)) throw new SmppDecodeError('TRUNCATED', 'not a Buffer');
  if (offset < 0 || buf.length - offset < HEADER_LENGTH) throw new SmppDecodeError('TRUNCATED', 'fewer than 16 octets');
  const length = readCommandLength(buf, offset, maxLength);
  if (length > buf.length - offset) throw new SmppDecodeError('TRUNCATED', `command_length ${length} exceeds the ${buf.length - offset} octets given`);
  const commandId = buf.readUInt32BE(offset + 4);
  const status = buf.readUInt32BE(offset + 8);
  const seq = buf.readUInt32BE(offset + 12);
  const command = commandName(commandId);
  if (command === undefined) {
    throw new SmppDecodeError('UNKNOWN_COMMAND_ID', `unknown command_id 0x${commandId.toString(16)}`, commandId, seq);
  }
  const r = new Reader(buf, offset + HEADER_LENGTH, offset + length, commandId, seq);
  let pdu: Record<string, unknown>;
  // The hot commands are built as literals so every decoded PDU of a command shares one object shape.
  switch (command) {
    case 'submit_sm':
    case 'deliver_sm':
      pdu = {
        command,
        command_status: status,
        sequence_number: seq,
        service_type: r.cstring(),
        source_addr_ton: r.u8(),
        source_addr_npi: r.u8(),
        source_addr: r.cstring(),
        dest_addr_ton: r.u8(),
        dest_addr_npi: r.u8(),
        destination_addr: r.cstring(),
        esm_class: r.u8(),
        protocol_id: r.u8(),
        priority_flag: r.u8(),
        schedule_delivery_time: r.cstring(),
        validity_period: r.cstring(),
        registered_delivery: r.u8(),
        replace_if_present_flag: r.u8(),
        data_coding: r.u8(),
        sm_default_msg_id: r.u8(),
        short_message: r.sm(),
      };
      break;
    case 'submit_sm_resp':
    case 'deliver_sm_resp':
    case 'data_sm_resp':
      pdu = { command, command_status: status, sequence_number: seq, message_id: r.cstring() };
      break;
    case 'enquire_link':
    case 'enquire_link_resp':
    case 'unbind':
    case 'unbind_resp':
    case 'generic_nack':
      pdu = { command, command_status: status, sequence_number: seq };
      break;
    default: {
      pdu = { command, command_status: status, sequence_number: seq };
      const { names, kinds } = LAYOUT.get(command)!;
      for (let i = 0; i < names.length; i++) pdu[names[i]] = readField(r, kinds[i]);
    }
  }
  if (r.pos < r.end) pdu.tlvs = readTlvs(r);
  return pdu as unknown as Pdu;
}
