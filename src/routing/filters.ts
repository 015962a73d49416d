/**
 * Route filters in the style of Jasmin's Filters: each one answers a single question about a message.
 * A rule matches when all of its filters match; a rule without filters matches everything.
 */

/** What routing looks at. OutboundMessage satisfies it; routing needs nothing else. */
export interface RouteInput {
  destination: string;
  accountId: string;
  source: string;
  priority: number;
}

export interface RouteFilter {
  matches(msg: RouteInput): boolean;
  /** Human-readable form for `ferry routes list` and logs. */
  describe(): string;
}

/** Destination starts with one of the prefixes (country or network codes); a leading '+' is ignored. */
export class PrefixFilter implements RouteFilter {
  // Prefixes grouped by length: a lookup is one Set probe per distinct length, however many prefixes there are.
  private readonly byLength = new Map<number, Set<string>>();
  private readonly lengths: number[];

  constructor(readonly prefixes: readonly string[]) {
    for (const p of prefixes) {
      const clean = p.startsWith('+') ? p.slice(1) : p;
      let set = this.byLength.get(clean.length);
      if (!set) this.byLength.set(clean.length, (set = new Set()));
      set.add(clean);
    }
    this.lengths = [...this.byLength.keys()].sort((a, b) => b - a);
  }

  matches(msg: RouteInput): boolean {
    const d = msg.destination;
    const offset = d.charCodeAt(0) === 0x2b /* + */ ? 1 : 0;
    for (const len of this.lengths) {
      if (d.length - offset < len) continue;
      if (this.byLength.get(len)!.has(d.substring(offset, offset + len))) return true;
    }
    return false;
  }

  describe(): string {
    return `prefix in [${this.prefixes.join(', ')}]`;
  }
}

/** The message belongs to one of the accounts. */
export class AccountFilter implements RouteFilter {
  private readonly accounts: Set<string>;

  constructor(accounts: readonly string[]) {
    this.accounts = new Set(accounts);
  }

  matches(msg: RouteInput): boolean {
    return this.accounts.has(msg.accountId);
  }

  describe(): string {
    return `account in [${[...this.accounts].join(', ')}]`;
  }
}

/**
 * The sender (source address) is one of the given ones, compared case-insensitively because alphanumeric
 * sender ids are written in any case; an entry ending in '*' matches every sender starting with the rest.
 */
export class SenderFilter implements RouteFilter {
  private readonly exact = new Set<string>();
  private readonly prefixes: string[] = [];

  constructor(readonly senders: readonly string[]) {
    for (const s of senders) {
      const lower = s.toLowerCase();
      if (lower.endsWith('*')) this.prefixes.push(lower.slice(0, -1));
      else this.exact.add(lower);
    }
  }

  matches(msg: RouteInput): boolean {
    const s = msg.source.toLowerCase();
    if (this.exact.has(s)) return true;
    for (const p of this.prefixes) if (s.startsWith(p)) return true;
    return false;
  }

  describe(): string {
    return `sender in [${this.senders.join(', ')}]`;
  }
}

/** The message's priority (SMPP priority_flag 0–3) is one of the given ones. */
export class PriorityFilter implements RouteFilter {
  private readonly mask: number;

  constructor(readonly priorities: readonly number[]) {
    let mask = 0;
    for (const p of priorities) mask |= 1 << p;
    this.mask = mask;
  }

  matches(msg: RouteInput): boolean {
    return (this.mask & (1 << msg.priority)) !== 0;
  }

  describe(): string {
    return `priority in [${this.priorities.join(', ')}]`;
  }
}

/** Filters for a rule's `match` block; empty lists are treated as absent (they would match nothing otherwise). */
export function filtersFromMatch(match: { prefix?: string[]; account?: string[]; sender?: string[]; priority?: number[] } | undefined): RouteFilter[] {
  const out: RouteFilter[] = [];
  if (!match) return out;
  // Cheapest and most selective first.
  if (match.priority?.length) out.push(new PriorityFilter(match.priority));
  if (match.account?.length) out.push(new AccountFilter(match.account));
  if (match.prefix?.length) out.push(new PrefixFilter(match.prefix));
  if (match.sender?.length) out.push(new SenderFilter(match.sender));
  return out;
}
