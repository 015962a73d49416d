import { parseCSeq, type CSeq } from './cseq.js';
import { SipParseError } from './errors.js';
import { headerKey, LIST_HEADERS } from './header-names.js';
import { SipHeaders } from './headers.js';
import { MAX_HEADER_VALUE, MAX_HEADERS, MAX_MESSAGE_BYTES } from './limits.js';
import { parseNameAddr, type NameAddr } from './name-addr.js';
import { hasUnbalanced, splitTopLevel } from './split.js';
import { parseUri } from './uri.js';
import { parseVia, type Via } from './via.js';

export interface SipRequest {
  readonly kind: 'request';
  method: string;
  uri: string;
  headers: SipHeaders;
  body: string;
}

export interface SipResponse {
  readonly kind: 'response';
  status: number;
  reason: string;
  headers: SipHeaders;
  body: string;
}

export type SipMessage = SipRequest | SipResponse;

export interface ParseOptions {
  /** Refuse a message larger than this many octets (default 64 KiB). */
  maxBytes?: number;
  /** From a stream: Content-Length is mandatory (RFC 3261 18.3). */
  stream?: boolean;
}

const TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;
const SIP_VERSION = 'SIP/2.0';
const CRLF = '\r\n';

/**
 * Parses one SIP message. Throws SipParseError (and nothing else) for anything malformed; work is linear in the
 * input, which is capped at maxBytes.
 */
export function parseMessage(input: Buffer | string, options: ParseOptions = {}): SipMessage {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const maxBytes = options.maxBytes ?? MAX_MESSAGE_BYTES;
  if (buf.length > maxBytes) throw new SipParseError(`message larger than ${maxBytes} octets`);
  let start = 0;
  while (start + 1 < buf.length && buf[start] === 0x0d && buf[start + 1] === 0x0a) start += 2; // RFC 3261 7.5
  let headerEnd = buf.indexOf('\r\n\r\n', start, 'latin1');
  let bodyStart = headerEnd + 4;
  if (headerEnd < 0) {
    headerEnd = buf.indexOf('\n\n', start, 'latin1'); // bare-LF senders
    bodyStart = headerEnd + 2;
  }
  if (headerEnd < 0) throw new SipParseError('no blank line after the headers');

  const lines = unfold(buf.toString('utf8', start, headerEnd).split(/\r?\n/));
  const startLine = lines[0];
  if (startLine === undefined || startLine === '') throw new SipParseError('empty start line');
  if (lines.length - 1 > MAX_HEADERS) throw new SipParseError(`more than ${MAX_HEADERS} headers`);

  const headers = new SipHeaders();
  for (let i = 1; i < lines.length; i++) addHeaderLine(headers, lines[i]);

  const contentLength = readContentLength(headers);
  const available = buf.length - bodyStart;
  let body: string;
  if (contentLength === undefined) {
    if (options.stream) throw new SipParseError('no Content-Length on a stream transport');
    body = buf.toString('utf8', bodyStart);
  } else {
    if (contentLength > available) throw new SipParseError('Content-Length larger than the message');
    body = buf.toString('utf8', bodyStart, bodyStart + contentLength);
  }

  if (startLine.startsWith('SIP/')) return checkResponse(parseStatusLine(startLine, headers, body));
  const request = parseRequestLine(startLine, headers, body);
  try {
    checkRequest(request);
  } catch (err) {
    if (err instanceof SipParseError) throw new SipParseError(err.reason, request);
    throw err;
  }
  return request;
}

function unfold(raw: string[]): string[] {
  const out: string[] = [];
  for (const line of raw) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && out.length > 1) out[out.length - 1] += ' ' + line.trim();
    else if (line.startsWith(' ') || line.startsWith('\t')) throw new SipParseError('continuation line without a header');
    else out.push(line);
  }
  return out;
}

function addHeaderLine(headers: SipHeaders, line: string): void {
  const colon = line.indexOf(':');
  if (colon < 0) throw new SipParseError('header line without a colon');
  const name = line.slice(0, colon).trimEnd();
  if (!TOKEN.test(name)) throw new SipParseError('bad header name');
  const value = line.slice(colon + 1).trim();
  if (value.length > MAX_HEADER_VALUE) throw new SipParseError('header value too long');
  if (LIST_HEADERS.has(headerKey(name)) && value !== '*') {
    if (hasUnbalanced(value)) throw new SipParseError(`unbalanced quotes or <> in ${name}`);
    const parts = splitTopLevel(value);
    if (parts.length === 0) throw new SipParseError(`empty ${name}`);
    for (const part of parts) {
      headers.append(name, part);
      if (headers.size > MAX_HEADERS) throw new SipParseError(`more than ${MAX_HEADERS} headers`);
    }
  } else headers.append(name, value);
}

function readContentLength(headers: SipHeaders): number | undefined {
  const all = headers.getAll('content-length');
  if (all.length === 0) return undefined;
  if (all.some((v) => v !== all[0])) throw new SipParseError('conflicting Content-Length headers');
  if (!/^\d{1,9}$/.test(all[0])) throw new SipParseError('bad Content-Length');
  return Number(all[0]);
}

function parseStatusLine(line: string, headers: SipHeaders, body: string): SipResponse {
  const m = /^SIP\/(\S+) (\d{3}) ?(.*)$/.exec(line);
  if (!m) throw new SipParseError('bad status line');
  if (`SIP/${m[1]}`.toUpperCase() !== SIP_VERSION) throw new SipParseError('unsupported SIP version');
  const status = Number(m[2]);
  if (status < 100 || status > 699) throw new SipParseError('status code out of range');
  return { kind: 'response', status, reason: m[3], headers, body };
}

function parseRequestLine(line: string, headers: SipHeaders, body: string): SipRequest {
  const parts = line.split(' ');
  if (parts.length !== 3) throw new SipParseError('request line is not METHOD SP URI SP version');
  const [method, uri, version] = parts;
  if (!TOKEN.test(method)) throw new SipParseError('bad method');
  if (version.toUpperCase() !== SIP_VERSION) throw new SipParseError('unsupported SIP version');
  if (!/^[A-Za-z][A-Za-z0-9+\-.]*:\S+$/.test(uri)) throw new SipParseError('bad Request-URI');
  return { kind: 'request', method, uri, headers, body };
}

/** The headers every message needs (RFC 3261 8.1.1), each parseable. */
function checkCommon(msg: SipMessage): CSeq {
  const vias = msg.headers.getAll('via');
  if (vias.length === 0) throw new SipParseError('no Via');
  for (const v of vias) parseVia(v);
  for (const name of ['from', 'to']) {
    const values = msg.headers.getAll(name);
    if (values.length !== 1) throw new SipParseError(`need exactly one ${name} header`);
    parseNameAddr(values[0]);
  }
  const callIds = msg.headers.getAll('call-id');
  if (callIds.length !== 1 || !/^\S+$/.test(callIds[0])) throw new SipParseError('need exactly one Call-ID');
  const cseqs = msg.headers.getAll('cseq');
  if (cseqs.length !== 1) throw new SipParseError('need exactly one CSeq');
  return parseCSeq(cseqs[0]);
}

function checkRequest(req: SipRequest): void {
  const scheme = req.uri.slice(0, req.uri.indexOf(':')).toLowerCase();
  if (scheme === 'sip' || scheme === 'sips') parseUri(req.uri);
  const cseq = checkCommon(req);
  if (cseq.method !== req.method) throw new SipParseError('CSeq method does not match the request method');
  const mf = req.headers.get('max-forwards');
  if (mf !== undefined && (!/^\d{1,10}$/.test(mf) || Number(mf) > 255)) throw new SipParseError('bad Max-Forwards');
}

function checkResponse(res: SipResponse): SipResponse {
  checkCommon(res);
  return res;
}

/** Serializes with a Content-Length computed from the body (any Content-Length header given is ignored). */
export function serializeMessage(msg: SipMessage): Buffer {
  let head = msg.kind === 'request' ? `${msg.method} ${msg.uri} ${SIP_VERSION}${CRLF}` : `${SIP_VERSION} ${msg.status} ${msg.reason}${CRLF}`;
  for (const [name, value] of msg.headers.entries()) {
    if (name === 'Content-Length') continue;
    head += `${name}: ${value}${CRLF}`;
  }
  const bodyBytes = Buffer.byteLength(msg.body, 'utf8');
  head += `Content-Length: ${bodyBytes}${CRLF}${CRLF}`;
  if (bodyBytes === 0) return Buffer.from(head, 'utf8');
  return Buffer.from(head + msg.body, 'utf8');
}

// Accessors for the headers parseMessage has already checked (so they do not throw on a parsed message).

export function topVia(msg: SipMessage): Via {
  const v = msg.headers.get('via');
  if (v === undefined) throw new SipParseError('no Via');
  return parseVia(v);
}

export function cseqOf(msg: SipMessage): CSeq {
  return parseCSeq(msg.headers.get('cseq') ?? '');
}

export function fromOf(msg: SipMessage): NameAddr {
  return parseNameAddr(msg.headers.get('from') ?? '');
}

export function toOf(msg: SipMessage): NameAddr {
  return parseNameAddr(msg.headers.get('to') ?? '');
}

export function callIdOf(msg: SipMessage): string {
  return msg.headers.get('call-id') ?? '';
}
