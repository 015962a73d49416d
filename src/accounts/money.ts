/** Money is stored as integer micro-units; the API speaks decimal numbers. */
export const MICROS = 1_000_000;

/**
 * The largest magnitude of an amount, a balance or a credit limit, in micro-units: 9,007,199,254.740991 of the
 * currency. Balances are bigint in the database but JS numbers in the daemon, exact up to 2^53 − 1.
 */
export const MAX_MICROS = Number.MAX_SAFE_INTEGER;

/**
 * JSON schema of an amount in the admin API: a JSON number, or a decimal string (exact, e.g. "12.50"). parseAmount
 * checks the rest (finite, positive, within the money range, the currency's decimal places).
 */
export const AMOUNT_SCHEMA = { anyOf: [{ type: 'number' }, { type: 'string', minLength: 1, maxLength: 64 }] } as const;

export function toMicros(amount: number): number {
  return Math.round(amount * MICROS);
}

export function fromMicros(micros: number): number {
  return Math.round(micros) / MICROS;
}

// ISO 4217 minor units of the currencies that do not have two; every other code (and an unknown one) has two.
const MINOR_UNITS: Record<string, number> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4,
};

/** Decimal places an amount in this currency may have (ISO 4217 minor units). */
export function currencyDecimals(currency: string): number {
  return MINOR_UNITS[currency.toUpperCase()] ?? 2;
}

/** Why an amount was refused; `message` completes a sentence starting with the field's name. */
export type AmountRule = 'syntax' | 'zero' | 'negative' | 'range' | 'decimals';

export class AmountError extends Error {
  override readonly name = 'AmountError';
  constructor(
    readonly rule: AmountRule,
    message: string,
  ) {
    super(message);
  }
}

/** A parsed amount: exact micro-units (null when it has more than 6 decimal places) and its decimal places. */
export interface ParsedAmount {
  micros: number | null;
  places: number;
}

// A plain decimal with an optional exponent: what a person types and what JSON.stringify writes for a number.
const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,6}))?$/;
const TEN = 10n;

/**
 * Parses an amount exactly (no binary floating point in between): a decimal string such as "12.50" or "1e3", or a
 * JSON number (read back through its shortest decimal form). Refuses what is not a finite decimal, zero (unless
 * `allowZero`), negatives (unless `allowNegative`) and magnitudes beyond MAX_MICROS; more decimal places than a
 * currency has are checked by `checkPlaces`, which knows the currency.
 */
export function parseAmount(input: unknown, opts: { allowZero?: boolean; allowNegative?: boolean } = {}): ParsedAmount {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) throw new AmountError('syntax', `must be a finite number, got ${String(input)}`);
    text = String(input);
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    throw new AmountError('syntax', 'must be a number');
  }
  const m = text.length <= 64 ? DECIMAL.exec(text) : null;
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) {
    throw new AmountError('syntax', `must be a decimal number such as 12.50, got ${JSON.stringify(text.slice(0, 64))}`);
  }
  const negative = m[1] === '-';
  const fraction = m[3] ?? '';
  // value = coefficient × 10^-scale
  let digits = (m[2] + fraction).replace(/^0+/, '');
  let scale = fraction.length - Number(m[4] ?? 0);
  if (digits === '') {
    if (!opts.allowZero) throw new AmountError('zero', 'must be greater than zero');
    return { micros: 0, places: 0 };
  }
  if (negative && !opts.allowNegative) throw new AmountError('negative', 'must be positive');
  while (scale > 0 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    scale--;
  }
  const max = formatMicros(MAX_MICROS);
  // Fewer than 10 digits before the decimal point: below 10^9, well inside the range. More than 10: beyond it. Exactly
  // 10: compared exactly (the scale is then at most 54, as the text is at most 64 characters).
  const intDigits = digits.length - scale;
  if (intDigits > 10) throw new AmountError('range', `must be at most ${max}`);
  const coefficient = BigInt(digits);
  if (intDigits === 10) {
    // |value| × 10^6 against MAX_MICROS, both sides scaled to integers.
    const left = scale >= 0 ? coefficient * TEN ** 6n : coefficient * TEN ** BigInt(6 - scale);
    const right = scale >= 0 ? BigInt(MAX_MICROS) * TEN ** BigInt(scale) : BigInt(MAX_MICROS);
    if (left > right) throw new AmountError('range', `must be at most ${max}`);
  }
  const places = Math.max(0, scale);
  if (places > 6) return { micros: null, places };
  const micros = Number(coefficient * TEN ** BigInt(6 - scale));
  return { micros: negative ? -micros : micros, places };
}

/** The amount's micro-units, refusing more decimal places than the currency has. */
export function checkPlaces(amount: ParsedAmount, currency: string): number {
  const allowed = currencyDecimals(currency);
  if (amount.places > allowed || amount.micros === null) {
    throw new AmountError('decimals', allowed === 0 ? `must be a whole number in ${currency}` : `must have at most ${allowed} decimal places in ${currency}`);
  }
  return amount.micros;
}

/** parseAmount then checkPlaces: the micro-units of a valid amount in the currency. */
export function amountToMicros(input: unknown, currency: string, opts: { allowZero?: boolean; allowNegative?: boolean } = {}): number {
  return checkPlaces(parseAmount(input, opts), currency);
}

/** Micro-units as a plain decimal string ("-9900", "12.5"), never in exponent notation. */
export function formatMicros(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(Math.round(micros));
  const whole = Math.floor(abs / MICROS);
  const frac = String(abs % MICROS).padStart(6, '0').replace(/0+$/, '');
  return `${sign}${whole}${frac ? '.' + frac : ''}`;
}
