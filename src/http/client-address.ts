import { BlockList, isIP } from 'node:net';

/** Named ranges a trusted-proxy list may use besides addresses and CIDR blocks. */
export const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  // RFC 1918, shared address space (carrier-grade NAT, some cloud load balancers), IPv6 unique local addresses.
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'],
};

/**
 * What the old boolean form `http.trustProxy: true` is read as (with a start-up warning): the proxies a deployment
 * usually has, on the same machine or network. The config loader hands this very array over, so the daemon can tell.
 */
export const LEGACY_TRUST_PROXY: readonly string[] = Object.freeze(['loopback', 'private']);

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.1) as its IPv4 form; anything else as given. */
export function plainAddress(ip: string): string {
  return ip.length > 7 && ip.slice(0, 7).toLowerCase() === '::ffff:' && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}

/**
 * One X-Forwarded-For hop as an address, or null when it is none. Some proxies append a port (`203.0.113.5:4711`,
 * `[2001:db8::1]:4711`) or brackets; those are dropped.
 */
export function hopAddress(hop: string): string | null {
  let h = hop.trim();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end < 0) return null;
    h = h.slice(1, end);
  } else if (h.indexOf(':') > 0 && h.indexOf(':') === h.lastIndexOf(':') && h.includes('.')) {
    h = h.slice(0, h.indexOf(':'));
  }
  return isIP(h) ? plainAddress(h) : null;
}

/** The problem with one entry of a trusted-proxy list, or null when it is an address, a CIDR block or a named range. */
export function entryProblem(entry: string): string | null {
  const e = entry.trim();
  if (NAMED_RANGES[e]) return null;
  const [addr, bits, extra] = e.split('/');
  const v = isIP(addr ?? '');
  if (!v || extra !== undefined) return `${e} is not an address, a CIDR block or one of ${Object.keys(NAMED_RANGES).join(', ')}`;
  if (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > (v === 4 ? 32 : 128))) return `${e}: the prefix length is out of range`;
  return null;
}

/** Most hops read from the right: no chain of proxies one operator runs is longer. */
const MAX_HOPS = 30;

/**
 * The client address of a request: the socket's peer, or, when that peer is a trusted proxy, X-Forwarded-For read
 * from the right, each trusted proxy vouching for the hop before it; the first untrusted hop is the client. Hops
 * further left were written by the client (or an untrusted proxy) and are never believed, so a forged
 * `X-Forwarded-For: 1.2.3.4` from a client behind a trusted proxy changes nothing. A hop that is no address ends the
 * walk at the proxy that passed it on. The one implementation for the API (auth throttle, request logs, USSD
 * allow-lists, MCP) and the short link listener.
 */
export class ClientAddresses {
  private readonly trusted = new BlockList();
  /** Whether any proxy is trusted (when none, X-Forwarded-For is ignored). */
  readonly enabled: boolean;

  /** `entries`: addresses, CIDR blocks and named ranges (loopback, private); `setting` names the config key in errors. */
  constructor(entries: readonly string[], setting = 'http.trustProxy') {
    const list = entries.map((s) => s.trim()).filter(Boolean);
    for (const e of list) {
      const problem = entryProblem(e);
      if (problem) throw new Error(`${setting}: ${problem}`);
      for (const block of NAMED_RANGES[e] ?? [e]) {
        const [given, bits] = block.split('/');
        const addr = bits === undefined ? plainAddress(given) : given;
        const type = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
        if (bits !== undefined) this.trusted.addSubnet(addr, Number(bits), type);
        else this.trusted.addAddress(addr, type);
      }
    }
    this.enabled = list.length > 0;
  }

  /** Whether an address is a trusted proxy's (IPv4-mapped forms match their IPv4 entries). */
  isTrusted(ip: string | undefined): boolean {
    if (!this.enabled || !ip) return false;
    const a = plainAddress(ip);
    const v = isIP(a);
    return v !== 0 && this.trusted.check(a, v === 6 ? 'ipv6' : 'ipv4');
  }

  /** The client address of a connection from `peer` that carries `forwardedFor`; null when the peer is unknown. */
  of(peer: string | undefined, forwardedFor: string | string[] | undefined): string | null {
    if (!peer) return null;
    let ip = plainAddress(peer);
    if (!this.enabled || forwardedFor === undefined || !this.isTrusted(ip)) return ip;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = hops.length - 1, n = 0; i >= 0 && n < MAX_HOPS; i--, n++) {
      if (hops[i].trim() === '') continue;
      const hop = hopAddress(hops[i]);
      if (hop === null) return ip;
      ip = hop;
      if (!this.isTrusted(ip)) return ip;
    }
    return ip;
  }
}

/**
 * `http.trustProxy` as read from the config file or FERRY_HTTP_TRUST_PROXY: false (no proxy trusted), a list, or a
 * comma-separated string of addresses, CIDR blocks and named ranges. `true`, the old form that believed the leftmost
 * X-Forwarded-For, becomes LEGACY_TRUST_PROXY. Returns the value and the problems of its entries.
 */
export function normalizeTrustProxy(value: unknown): { value: false | string[]; problems: string[] } {
  if (value === false || value === undefined || value === null) return { value: false, problems: [] };
  if (value === true) return { value: LEGACY_TRUST_PROXY as string[], problems: [] };
  const list = (Array.isArray(value) ? value.map(String) : String(value).split(',')).map((s) => s.trim()).filter(Boolean);
  const problems = list.map(entryProblem).filter((p): p is string => p !== null).map((p) => `http.trustProxy: ${p}`);
  return { value: list.length ? list : false, problems };
}
