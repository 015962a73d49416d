import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** The address a POST must connect to: the one the guard checked (absent when private targets are allowed). */
export interface PinnedAddress {
  address: string;
  family: number;
}

export type TargetCheck = { ok: true; url: URL; pinned?: PinnedAddress } | { ok: false; reason: string };

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

/** How long a name's checked addresses are used before it is resolved again. */
/** `webhooks.allowPrivateTargets` as configured: yes, no, or decided from where the API listens. */
export type PrivateTargetsSetting = boolean | 'auto';

/**
 * Whether private and loopback webhook targets (and plain http) are allowed. `auto` allows them only on a
 * developer's machine: the embedded database, the API on a loopback address, no proxy in front (trustProxy off, no
 * publicUrl). Anything that looks deployed keeps the SSRF guard unless the operator turns it off by name.
 */
export function privateTargetsAllowed(
  setting: PrivateTargetsSetting,
  where: { httpHost: string; embeddedDatabase: boolean; trustProxy: boolean; publicUrl: string | null },
): { allowed: boolean; reason: string } {
  if (setting === true) return { allowed: true, reason: 'webhooks.allowPrivateTargets is true' };
  if (setting === false) return { allowed: false, reason: 'webhooks.allowPrivateTargets is false' };
  const host = where.httpHost.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || (isIP(host) !== 0 && (BLOCKED_LOOPBACK.check(host, isIP(host) === 6 ? 'ipv6' : 'ipv4')));
  if (!loopback) return { allowed: false, reason: `the API listens on ${where.httpHost}, not loopback only` };
  if (!where.embeddedDatabase) return { allowed: false, reason: 'a database server is configured (a deployment, not a developer machine)' };
  if (where.trustProxy || where.publicUrl) return { allowed: false, reason: 'the API is published through a proxy (http.trustProxy or http.publicUrl)' };
  return { allowed: true, reason: 'the API listens on loopback only with the embedded database' };
}

const BLOCKED_LOOPBACK = new BlockList();
BLOCKED_LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
BLOCKED_LOOPBACK.addAddress('::1', 'ipv6');

const CACHE_MS = 5000;
/** Names kept; past this the cache starts over (endpoints are few in practice). */
const MAX_CACHED = 10_000;

/**
 * Decides whether Ferry may POST to a URL: https only and public addresses only, unless the operator allows private
 * targets (webhooks.allowPrivateTargets). A name's addresses are checked when it is resolved, at most every 5 s per
 * name (on create and on sends), so a name that later points inside the network is refused within seconds; the POST
 * then connects to the address checked (`pinned`), so a name that changes between the check and the connection
 * (DNS rebinding) cannot lead it elsewhere. Resolving once per name, not once per delivery, also keeps every send off
 * libuv's small thread pool, where lookups queue behind each other.
 */
export class TargetGuard {
  private readonly cache = new Map<string, { at: number; addresses: { address: string; family: number }[] }>();

  constructor(
    private readonly allowPrivate: boolean,
    private readonly lookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true }),
    private readonly cacheMs = CACHE_MS,
    private readonly clock: () => number = Date.now,
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
    let addresses: { address: string; family: number }[];
    const family = isIP(host);
    if (family) addresses = [{ address: host, family }];
    else {
      try {
        addresses = await this.resolve(host);
      } catch {
        return { ok: false, reason: `host ${host} does not resolve` };
      }
    }
    if (!addresses.length) return { ok: false, reason: `host ${host} does not resolve` };
    if (addresses.some((a) => blocked(a.address))) return { ok: false, reason: 'the target is a private, loopback or reserved address' };
    return { ok: true, url, pinned: addresses[0] };
  }

  /** A name's addresses, as resolved within the last cacheMs (failures are not kept: the next check asks again). */
  private async resolve(host: string): Promise<{ address: string; family: number }[]> {
    const now = this.clock();
    const hit = this.cache.get(host);
    if (hit && now - hit.at < this.cacheMs) return hit.addresses;
    const addresses = await this.lookup(host);
    if (this.cache.size >= MAX_CACHED && !this.cache.has(host)) this.cache.clear();
    this.cache.set(host, { at: now, addresses });
    return addresses;
  }
}
