/** RFC 3261 7.3.3 compact forms, plus k (Supported), s (Subject), e (Content-Encoding). */
const COMPACT: Record<string, string> = {
  v: 'via', f: 'from', t: 'to', i: 'call-id', m: 'contact', l: 'content-length', c: 'content-type',
  k: 'supported', s: 'subject', e: 'content-encoding', o: 'event', u: 'allow-events', r: 'refer-to', x: 'session-expires',
};

/** How Ferry writes a header name it knows; unknown names keep the sender's spelling. */
const CANONICAL: Record<string, string> = {
  'via': 'Via', 'from': 'From', 'to': 'To', 'call-id': 'Call-ID', 'cseq': 'CSeq', 'contact': 'Contact',
  'content-length': 'Content-Length', 'content-type': 'Content-Type', 'max-forwards': 'Max-Forwards',
  'route': 'Route', 'record-route': 'Record-Route', 'www-authenticate': 'WWW-Authenticate',
  'proxy-authenticate': 'Proxy-Authenticate', 'authorization': 'Authorization',
  'proxy-authorization': 'Proxy-Authorization', 'user-agent': 'User-Agent', 'allow': 'Allow',
  'supported': 'Supported', 'subject': 'Subject', 'content-encoding': 'Content-Encoding', 'accept': 'Accept',
  'expires': 'Expires', 'server': 'Server', 'require': 'Require', 'unsupported': 'Unsupported', 'event': 'Event',
  'allow-events': 'Allow-Events', 'refer-to': 'Refer-To', 'session-expires': 'Session-Expires', 'reason': 'Reason',
};

/** Headers whose comma-joined values are split into one entry each (RFC 3261 7.3.1). */
export const LIST_HEADERS: ReadonlySet<string> = new Set(['via', 'route', 'record-route', 'contact']);

/** Lower-case long form of a header name (compact forms expanded): the key all lookups use. */
export function headerKey(name: string): string {
  const lower = name.toLowerCase();
  return lower.length === 1 ? COMPACT[lower] ?? lower : lower;
}

export function canonicalName(name: string): string {
  const key = headerKey(name);
  return CANONICAL[key] ?? (name.length === 1 ? key : name);
}
