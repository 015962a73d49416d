import { SipParseError } from './errors.js';
import { formatParams, parseParams, type SipParams } from './params.js';
import { parseUri, type SipUri } from './uri.js';

/**
 * A From/To/Contact/Route value: optional display name, the URI (raw, and parsed when it is sip:/sips:) and the
 * header's own parameters (tag, expires, …), which sit outside the <…>.
 */
export interface NameAddr {
  display?: string;
  uri: string;
  sip?: SipUri;
  params: SipParams;
  tag?: string;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+\-.]*:/;

export function parseNameAddr(text: string): NameAddr {
  const s = text.trim();
  let display: string | undefined;
  let uri: string;
  let after: string;
  const lt = findUnquoted(s, '<');
  if (lt >= 0) {
    const gt = s.indexOf('>', lt);
    if (gt < 0) throw new SipParseError('unterminated <uri>');
    const head = s.slice(0, lt).trim();
    if (head.startsWith('"')) {
      if (head.length < 2 || !head.endsWith('"')) throw new SipParseError('unterminated display name');
      display = head.slice(1, -1).replace(/\\(.)/g, '$1');
    } else if (head !== '') {
      if (!/^[A-Za-z0-9\-.!%*_+`'~ \t]+$/.test(head)) throw new SipParseError('bad unquoted display name');
      display = head.replace(/\s+/g, ' ');
    }
    uri = s.slice(lt + 1, gt);
    after = s.slice(gt + 1).trim();
    if (after !== '' && !after.startsWith(';')) throw new SipParseError('junk after <uri>');
  } else {
    // addr-spec form: the URI cannot carry ';' params here, they belong to the header (RFC 3261 20.10)
    const semi = s.indexOf(';');
    uri = (semi < 0 ? s : s.slice(0, semi)).trimEnd();
    after = semi < 0 ? '' : s.slice(semi);
    if (uri.includes('?') || uri.includes(',')) throw new SipParseError('addr-spec with ? or , must be in <…>');
  }
  if (!SCHEME.test(uri) || /\s/.test(uri)) throw new SipParseError('bad URI in name-addr');
  const params = parseParams(after, 'name-addr');
  const out: NameAddr = { uri, params };
  if (display !== undefined) out.display = display;
  const scheme = uri.slice(0, uri.indexOf(':')).toLowerCase();
  if (scheme === 'sip' || scheme === 'sips') out.sip = parseUri(uri);
  const tag = params.tag;
  if (typeof tag === 'string') out.tag = tag;
  return out;
}

function findUnquoted(s: string, ch: string): number {
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ch) return i;
  }
  return -1;
}

export function formatNameAddr(addr: { display?: string; uri: string; params?: SipParams }): string {
  const display = addr.display === undefined ? '' : `"${addr.display.replace(/(["\\])/g, '\\$1')}" `;
  return `${display}<${addr.uri}>${addr.params ? formatParams(addr.params) : ''}`;
}

/** Accepts a bare URI or a name-addr as a caller writes it and returns a header value in name-addr form. */
export function toNameAddr(value: string): string {
  const v = value.trim();
  return v.includes('<') ? v : `<${v}>`;
}
