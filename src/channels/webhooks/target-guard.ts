import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: string };

type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

// Addresses a webhook must not reach from the gateway's network position (SSRF): loopback, private, link-local
// (cloud metadata), CGNAT, unique-local, multicast, reserved.
const BLOCKED = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2001:db8::', 32],
] as const) {
  BLOCKED.addSubnet(net, bits, 'ipv6');
}

function blocked(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  // IPv4-mapped (::ffff:10.0.0.1) is judged by its IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return BLOCKED.check(mapped[1], 'ipv4');
  return BLOCKED.check(address, 'ipv6');
}

/**
 * Decides whether Ferry may POST to a URL: https only and public addresses only, unless the operator allows private
 * targets (webhooks.allowPrivateTargets). Names are resolved on every check (create and each send), so a name that
 * later points inside the network is refused then; a rebinding between this lookup and the connection is not caught.
 */
export class TargetGuard {
  constructor(
    private readonly allowPrivate: boolean,
    private readonly lookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true }),
  ) {}

  async check(raw: string): Promise<TargetCheck> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { ok: false, reason: 'not a valid URL' };
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'only https URLs are accepted' };
    if (url.username || url.password) return { ok: false, reason: 'credentials in the URL are not accepted' };
    if (this.allowPrivate) return { ok: true, url };
    if (url.protocol !== 'https:') return { ok: false, reason: 'only https URLs are accepted' };
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    if (isIP(host)) addresses = [host];
    else {
      try {
        addresses = (await this.lookup(host)).map((a) => a.address);
      } catch {
        return { ok: false, reason: `host ${host} does not resolve` };
      }
    }
    if (!addresses.length) return { ok: false, reason: `host ${host} does not resolve` };
    if (addresses.some(blocked)) return { ok: false, reason: 'the target is a private, loopback or reserved address' };
    return { ok: true, url };
  }
}
