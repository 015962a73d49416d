import { SipParseError } from './errors.js';
import { formatParams, isToken, parseParams, type SipParams } from './params.js';
import { parseHostPort } from './uri.js';

/** One Via value. `transport` is upper-case (UDP, TCP, TLS, …). rport is true when present without a value. */
export interface Via {
  protocol: string;
  transport: string;
  host: string;
  port?: number;
  params: SipParams;
  branch?: string;
  received?: string;
  rport?: number | true;
}

export const BRANCH_MAGIC = 'z9hG4bK';

export function parseVia(text: string): Via {
  // sent-protocol allows LWS around the slashes (RFC 4475 3.1.1.1)
  const m = /^\s*([A-Za-z0-9\-.!%*_+`'~]+)\s*\/\s*([A-Za-z0-9\-.!%*_+`'~]+)\s*\/\s*([A-Za-z0-9\-.!%*_+`'~]+)\s+(.*)$/s.exec(text);
  if (!m) throw new SipParseError('bad Via sent-protocol');
  const protocol = `${m[1].toUpperCase()}/${m[2]}`;
  if (protocol !== 'SIP/2.0') throw new SipParseError('Via is not SIP/2.0');
  const rest = m[4].trim();
  const semi = rest.indexOf(';');
  const sentBy = (semi < 0 ? rest : rest.slice(0, semi)).replace(/\s+/g, '');
  const hp = parseHostPort(sentBy, 'Via');
  const params = semi < 0 ? (Object.create(null) as SipParams) : parseParams(rest.slice(semi), 'Via');
  const via: Via = { protocol, transport: m[3].toUpperCase(), host: hp.host, params };
  if (hp.port !== undefined) via.port = hp.port;
  const branch = params.branch;
  if (branch !== undefined) {
    if (branch === null || !isToken(branch)) throw new SipParseError('bad Via branch');
    via.branch = branch;
  }
  if (typeof params.received === 'string') via.received = params.received;
  if ('rport' in params) {
    const r = params.rport;
    if (r === null) via.rport = true;
    else if (/^\d{1,5}$/.test(r)) via.rport = Number(r);
    else throw new SipParseError('bad Via rport');
  }
  return via;
}

export function formatVia(via: { transport: string; host: string; port?: number; params: SipParams }): string {
  const host = via.host.includes(':') ? `[${via.host}]` : via.host;
  return `SIP/2.0/${via.transport.toUpperCase()} ${host}${via.port === undefined ? '' : ':' + via.port}${formatParams(via.params)}`;
}
