import { SipParseError } from './errors.js';

/** `;name=value` parameters, names lower-cased (they are case-insensitive); a bare `;name` maps to null. */
export type SipParams = Record<string, string | null>;

const TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;

export function isToken(s: string): boolean {
  return TOKEN.test(s);
}

/**
 * Parses `;a=b;c;d="q"` (leading ';' optional). Quoted values keep their content unquoted. Throws SipParseError on
 * an empty or non-token name.
 */
export function parseParams(text: string, what: string): SipParams {
  const params: SipParams = Object.create(null) as SipParams;
  let s = text.trim();
  if (s === '') return params;
  if (s[0] === ';') s = s.slice(1);
  for (const raw of splitParams(s)) {
    const eq = raw.indexOf('=');
    const name = (eq < 0 ? raw : raw.slice(0, eq)).trim().toLowerCase();
    if (!isToken(name)) throw new SipParseError(`bad parameter name in ${what}`);
    if (eq < 0) {
      params[name] = null;
      continue;
    }
    let value = raw.slice(eq + 1).trim();
    if (value.startsWith('"')) {
      if (value.length < 2 || !value.endsWith('"')) throw new SipParseError(`unterminated quoted parameter in ${what}`);
      value = value.slice(1, -1).replace(/\\(.)/g, '$1');
    } else if (value === '') throw new SipParseError(`empty parameter value in ${what}`);
    params[name] = value;
  }
  return params;
}

/** Splits at ';' outside quotes. */
function splitParams(s: string): string[] {
  const out: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ';') {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

export function formatParams(params: SipParams): string {
  let out = '';
  for (const [k, v] of Object.entries(params)) out += v === null ? `;${k}` : `;${k}=${isToken(v) || /^[\w.:[\]-]+$/.test(v) ? v : `"${v.replace(/(["\\])/g, '\\$1')}"`}`;
  return out;
}
