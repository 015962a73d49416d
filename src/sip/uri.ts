import { SipParseError } from './errors.js';
import { formatParams, parseParams, type SipParams } from './params.js';

/** A sip: or sips: URI (RFC 3261 19.1). `user` is unescaped; `params` names are lower-case. */
export interface SipUri {
  scheme: 'sip' | 'sips';
  user?: string;
  password?: string;
  host: string;
  port?: number;
  params: SipParams;
  headers: Record<string, string>;
}

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;
const USER_CHARS = /^[A-Za-z0-9\-_.!~*'()&=+$,;?/%]+$/;
const PASSWORD_CHARS = /^[A-Za-z0-9\-_.!~*'()&=+$,%]*$/;

/** A port as SIP writes it: 1–5 digits, at most 65535. */
export function parsePort(text: string, what: string): number {
  if (!/^\d{1,5}$/.test(text)) throw new SipParseError(`bad port in ${what}`);
  const port = Number(text);
  if (port > 65535) throw new SipParseError(`port out of range in ${what}`);
  return port;
}

/** host[:port] with IPv6 in brackets; returns the host without brackets. */
export function parseHostPort(text: string, what: string): { host: string; port?: number } {
  let host: string;
  let rest: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) throw new SipParseError(`unterminated IPv6 reference in ${what}`);
    host = text.slice(1, close);
    if (!IPV6.test(host) || !host.includes(':')) throw new SipParseError(`bad IPv6 address in ${what}`);
    rest = text.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) throw new SipParseError(`junk after IPv6 address in ${what}`);
  } else {
    const colon = text.indexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    rest = colon < 0 ? '' : text.slice(colon);
    if (!HOSTNAME.test(host)) throw new SipParseError(`bad host in ${what}`);
  }
  if (rest === '') return { host };
  return { host, port: parsePort(rest.slice(1), what) };
}

function unescape(text: string, what: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    throw new SipParseError(`bad escape in ${what}`);
  }
}

/** Parses a sip:/sips: URI; anything else (tel:, spaces, bad host) throws SipParseError. */
export function parseUri(text: string): SipUri {
  const colon = text.indexOf(':');
  const scheme = colon < 0 ? '' : text.slice(0, colon).toLowerCase();
  if (scheme !== 'sip' && scheme !== 'sips') throw new SipParseError('not a sip: or sips: URI');
  let rest = text.slice(colon + 1);
  if (/[\s<>"]/.test(rest)) throw new SipParseError('illegal character in URI');

  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  const q = rest.indexOf('?');
  if (q >= 0) {
    for (const pair of rest.slice(q + 1).split('&')) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new SipParseError('bad URI header');
      headers[unescape(pair.slice(0, eq), 'URI header')] = unescape(pair.slice(eq + 1), 'URI header');
    }
    rest = rest.slice(0, q);
  }

  const uri: SipUri = { scheme, host: '', params: Object.create(null) as SipParams, headers };
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const pc = userinfo.indexOf(':');
    const user = pc < 0 ? userinfo : userinfo.slice(0, pc);
    if (user === '' || !USER_CHARS.test(user)) throw new SipParseError('bad user part in URI');
    uri.user = unescape(user, 'URI user');
    if (pc >= 0) {
      const password = userinfo.slice(pc + 1);
      if (!PASSWORD_CHARS.test(password)) throw new SipParseError('bad password in URI');
      uri.password = unescape(password, 'URI password');
    }
  }
  const semi = rest.indexOf(';');
  const hostport = semi < 0 ? rest : rest.slice(0, semi);
  if (semi >= 0) uri.params = parseParams(rest.slice(semi), 'URI');
  const hp = parseHostPort(hostport, 'URI');
  uri.host = hp.host;
  if (hp.port !== undefined) uri.port = hp.port;
  return uri;
}

const USER_SAFE = /[^A-Za-z0-9\-_.!~*'()&=+$,;?/]/g;

export function formatUri(uri: SipUri): string {
  let out = `${uri.scheme}:`;
  if (uri.user !== undefined) {
    out += uri.user.replace(USER_SAFE, (c) => encodeURIComponent(c));
    if (uri.password !== undefined) out += ':' + encodeURIComponent(uri.password);
    out += '@';
  }
  out += uri.host.includes(':') ? `[${uri.host}]` : uri.host;
  if (uri.port !== undefined) out += `:${uri.port}`;
  out += formatParams(uri.params);
  const hs = Object.entries(uri.headers);
  if (hs.length > 0) out += '?' + hs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  return out;
}
