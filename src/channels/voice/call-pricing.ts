import { toMicros } from '../../accounts/money.js';
import { PriceBook, type PriceTable } from '../../billing/price-book.js';

/** How a call's seconds are billed: the first `minimumSeconds`, then in steps of `incrementSeconds` ("60/60", "1/1", "30/6"). */
export interface BillingIncrement {
  minimumSeconds: number;
  incrementSeconds: number;
}

/** Seconds billed for a call that lasted `seconds` once answered: an unanswered call (0 s) costs nothing. */
export function billableSeconds(seconds: number, inc: BillingIncrement): number {
  if (!(seconds > 0)) return 0;
  const s = Math.ceil(seconds);
  if (s <= inc.minimumSeconds) return inc.minimumSeconds;
  return inc.minimumSeconds + Math.ceil((s - inc.minimumSeconds) / inc.incrementSeconds) * inc.incrementSeconds;
}

/** The price of `billable` seconds at `perMinuteMicros` a minute, rounded up to a micro-unit. */
export function costMicros(perMinuteMicros: number, billable: number): number {
  return Math.ceil((perMinuteMicros * billable) / 60);
}

/**
 * The longest a call may last on `availableMicros`, in whole billing steps (0: not even the first increment fits), up to
 * `maxSeconds`. A free destination gets `maxSeconds`.
 */
export function affordableSeconds(perMinuteMicros: number, availableMicros: number, maxSeconds: number, inc: BillingIncrement): number {
  if (perMinuteMicros <= 0) return maxSeconds;
  if (costMicros(perMinuteMicros, inc.minimumSeconds) > availableMicros) return 0;
  const steps = Math.floor(((availableMicros * 60) / perMinuteMicros - inc.minimumSeconds) / inc.incrementSeconds);
  let seconds = inc.minimumSeconds + Math.max(0, steps) * inc.incrementSeconds;
  // Float rounding may overshoot by a step.
  while (seconds > inc.minimumSeconds && costMicros(perMinuteMicros, seconds) > availableMicros) seconds -= inc.incrementSeconds;
  return Math.min(seconds, maxSeconds);
}

/** Per-minute prices by destination prefix, the longest prefix winning (the SMS price book's lookup, a minute for a segment). */
export class VoicePrices {
  private readonly book = new PriceBook();

  /** Micro-units per minute of a call to one of an account's numbers (voice.prices.inboundPerMinute). */
  readonly inboundPerMinuteMicros: number;

  constructor(
    table: { defaultPerMinute: number | null; entries: ReadonlyArray<{ prefix: string; perMinute: number }>; inboundPerMinute?: number },
    readonly increment: BillingIncrement,
  ) {
    this.inboundPerMinuteMicros = toMicros(table.inboundPerMinute ?? 0);
    const t: PriceTable = { defaultPrice: table.defaultPerMinute, entries: table.entries.map((e) => ({ prefix: e.prefix, price: e.perMinute })) };
    this.book.replace(t);
  }

  /** Micro-units per minute to a destination in international digits (no '+'). */
  perMinuteMicros(destination: string): number {
    return this.book.unitMicros(destination.replace(/^\+/, ''));
  }
}
