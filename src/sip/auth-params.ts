import { SipParseError } from './errors.js';
import { splitTopLevel } from './split.js';

/** `Digest a=b, c="d"`: the scheme and its params (names lower-case, quoted values unquoted). */
export function parseAuthParams(header: string): { scheme: string; params: Record<string, string> } {
  const s = header.trim();
  const sp = s.search(/\s/);
  if (sp <= 0) throw new SipParseError('auth header without parameters');
  const scheme = s.slice(0, sp);
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const part of splitTopLevel(s.slice(sp + 1))) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new SipParseError('bad auth parameter');
    const name = part.slice(0, eq).trim().toLowerCase();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"')) {
      if (value.length < 2 || !value.endsWith('"')) throw new SipParseError('unterminated quoted auth parameter');
      value = value.slice(1, -1).replace(/\\(.)/g, '$1');
    }
    params[name] = value;
  }
  return { scheme, params };
}

export function quote(value: string): string {
  return `"${value.replace(/(["\\])/g, '\\$1')}"`;
}
