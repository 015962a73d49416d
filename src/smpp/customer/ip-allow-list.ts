import net from 'node:net';

const IPV4_MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** The address a peer really has: IPv4-mapped IPv6 (a dual-stack listener's view of IPv4) as plain IPv4. */
export function plainAddress(address: string): string {
  const mapped = IPV4_MAPPED.exec(address);
  return mapped ? mapped[1] : address;
}

/**
 * The addresses an SMPP credential may bind from: IPv4/IPv6 addresses and CIDR ranges. An empty or absent list
 * allows every address; entries that are not addresses or ranges match nothing (so a typo never opens access).
 */
export class IpAllowList {
  private readonly list: net.BlockList | null;
  /** Entries that are neither an address nor a CIDR range. */
  readonly invalid: string[] = [];

  constructor(entries: readonly string[] | null) {
    if (!entries || entries.length === 0) {
      this.list = null;
      return;
    }
    this.list = new net.BlockList();
    for (const raw of entries) {
      if (!this.add(raw.trim())) this.invalid.push(raw);
    }
  }

  allows(address: string | undefined): boolean {
    if (!this.list) return true;
    if (!address) return false;
    const plain = plainAddress(address.replace(/%.*$/, ''));
    const family = net.isIP(plain);
    if (family === 0) return false;
    return this.list.check(plain, family === 4 ? 'ipv4' : 'ipv6');
  }

  private add(entry: string): boolean {
    const slash = entry.indexOf('/');
    const address = plainAddress(slash < 0 ? entry : entry.slice(0, slash));
    const family = net.isIP(address);
    if (family === 0) return false;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash < 0) {
      this.list!.addAddress(address, type);
      return true;
    }
    const prefixText = entry.slice(slash + 1);
    const prefix = Number(prefixText);
    if (!/^\d{1,3}$/.test(prefixText) || prefix > (family === 4 ? 32 : 128)) return false;
    this.list!.addSubnet(address, prefix, type);
    return true;
  }
}
