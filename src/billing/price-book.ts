import { toMicros } from '../accounts/money.js';

/** One price: per segment, in the account's currency units, for destinations starting with `prefix`. */
export interface PriceEntry {
  /** Destination prefix (country or network code); '' matches everything. */
  prefix: string;
  /** Per segment, in currency units (e.g. 0.015). */
  price: number;
  /** Only for messages routed by this rule (optional): a costlier route can carry its own price. */
  route?: string;
}

export interface PriceTable {
  /** Per segment when no entry matches; null: such messages are free (unpriced). */
  defaultPrice: number | null;
  entries: PriceEntry[];
}

export interface Quote {
  unitMicros: number;
  totalMicros: number;
}

/**
 * Prices by longest destination prefix, a route-specific entry winning over a general one of the same length.
 * Lookups walk the prefixes of the destination (at most 15 map probes), whatever the size of the table.
 */
export class PriceBook {
  private byPrefix = new Map<string, { any?: number; routes?: Map<string, number> }>();
  private defaultMicros: number | null = null;
  private current: PriceTable = { defaultPrice: null, entries: [] };

  constructor(table?: PriceTable) {
    if (table) this.replace(table);
  }

  replace(table: PriceTable): void {
    const byPrefix = new Map<string, { any?: number; routes?: Map<string, number> }>();
    for (const e of table.entries) {
      if (!/^[0-9]{0,15}$/.test(e.prefix)) throw new Error(`price prefix ${e.prefix}: digits only`);
      if (!(e.price >= 0)) throw new Error(`price for ${e.prefix}: must be ≥ 0`);
      let slot = byPrefix.get(e.prefix);
      if (!slot) byPrefix.set(e.prefix, (slot = {}));
      if (e.route) (slot.routes ??= new Map()).set(e.route, toMicros(e.price));
      else slot.any = toMicros(e.price);
    }
    this.byPrefix = byPrefix;
    this.defaultMicros = table.defaultPrice === null ? null : toMicros(table.defaultPrice);
    this.current = { defaultPrice: table.defaultPrice, entries: table.entries.map((e) => ({ ...e })) };
  }

  table(): PriceTable {
    return { defaultPrice: this.current.defaultPrice, entries: this.current.entries.map((e) => ({ ...e })) };
  }

  /** Unit price in micros for a destination (international digits) and the route rule that would carry it. */
  unitMicros(destination: string, route?: string | null): number {
    for (let len = Math.min(15, destination.length); len >= 0; len--) {
      const slot = this.byPrefix.get(destination.substring(0, len));
      if (!slot) continue;
      const r = route ? slot.routes?.get(route) : undefined;
      if (r !== undefined) return r;
      if (slot.any !== undefined) return slot.any;
    }
    return this.defaultMicros ?? 0;
  }

  quote(destination: string, segments: number, route?: string | null): Quote {
    const unitMicros = this.unitMicros(destination, route);
    return { unitMicros, totalMicros: unitMicros * segments };
  }
}
