import { BlockList } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';

/**
 * Address ranges a reverse proxy or load balancer in front of Ferry usually connects from: RFC 1918 (10/8,
 * 172.16/12, 192.168/16), shared address space (100.64/10, carrier-grade NAT and some cloud load balancers) and IPv6
 * unique local addresses (fc00::/7). IPv4-mapped IPv6 forms (::ffff:10.0.0.1) match too.
 */
const PRIVATE = new BlockList();
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4');
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4');
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');

/** True for an address in the ranges above; loopback, link-local and public addresses are not. */
export function isPrivateAddress(ip: string): boolean {
  if (!ip) return false;
  // Most addresses are settled by their first characters, without parsing.
  const c = ip.charCodeAt(0);
  if (c === 0x31 /* 1 */) {
    if (!ip.startsWith('10.') && !ip.startsWith('172.') && !ip.startsWith('192.168.') && !ip.startsWith('100.')) return false;
    return PRIVATE.check(ip, 'ipv4');
  }
  if (ip.includes(':')) {
    const lower = ip.toLowerCase();
    if (!lower.startsWith('fc') && !lower.startsWith('fd') && !lower.startsWith('::ffff:')) return false;
    try {
      return PRIVATE.check(lower, 'ipv6');
    } catch {
      return false; // not an address BlockList can read
    }
  }
  return false;
}

/** The header that says a request came through a proxy, if any. */
export function forwardingHeader(headers: IncomingHttpHeaders): string | null {
  if (headers['x-forwarded-for'] !== undefined) return 'X-Forwarded-For';
  if (headers.forwarded !== undefined) return 'Forwarded';
  if (headers['x-real-ip'] !== undefined) return 'X-Real-IP';
  return null;
}

/**
 * With `http.trustProxy` off, Ferry tells clients apart by the connection's address. When that address is a proxy's,
 * every client behind it is one address: they share one auth-failure throttle (one client's failures throttle the
 * failed attempts of all) and appear as one address in the logs. Ferry cannot know at start-up where requests will
 * come from, so it says so, once per address, the first time a request looks proxied: it carries a forwarding header,
 * or comes from a private (non-loopback) address. At most `maxAddresses` addresses are remembered (and warned about).
 */
export class SharedAddressWarning {
  private readonly warned = new Set<string>();
  private full = false;

  constructor(
    private readonly log: Pick<Logger, 'warn'>,
    private readonly maxAddresses = 1000,
  ) {}

  /** Looks at one request's connection address and headers; logs the warning the first time an address qualifies. */
  check(address: string | undefined, headers: IncomingHttpHeaders): void {
    if (this.full || !address || this.warned.has(address)) return;
    const header = forwardingHeader(headers);
    if (header === null && !isPrivateAddress(address)) return;
    this.warned.add(address);
    if (this.warned.size >= this.maxAddresses) this.full = true;
    this.log.warn(
      { address, reason: header ? `the request carries ${header}` : 'a private network address', trustProxy: false },
      `requests come from ${address}, which looks like a reverse proxy, and http.trustProxy is false: every client behind it ` +
        `counts as this one address for auth-failure throttling (one client's failed attempts get the others' failed attempts ` +
        `refused with TOO_MANY_AUTH_FAILURES) and in the logs. If every request reaches Ferry through proxies you run, which ` +
        `append to X-Forwarded-For, list them in http.trustProxy (e.g. [${address}], FERRY_HTTP_TRUST_PROXY=${address}; CIDR blocks and ` +
        `the names loopback and private work too) so that each client is told apart by its own address` +
        (this.full ? `; ${this.maxAddresses} addresses reported, further ones are not` : ''),
    );
  }

  /** Addresses warned about so far. */
  get size(): number {
    return this.warned.size;
  }
}
