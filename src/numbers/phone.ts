import { getCountries, getCountryCallingCode, parsePhoneNumberFromString, PhoneNumber, type CountryCode } from 'libphonenumber-js';
import { trimOldest } from '../util/trim-oldest.js';

const DIGITS = /^\+?[0-9]{3,17}$/;
/** International digits (E.164: at most 15), with the leading '+' or '00' taken off. */
const E164_DIGITS = /^[0-9]{3,15}$/;

// Parsing with libphonenumber's metadata is the costly step, and numbers recur (an OTP and its SMS, lists, retries).
const RECENT_MAX = 10_000;
const recent = new Map<string, string | null>();

/**
 * A recipient as international digits without '+', or null when it is not a valid number.
 * `international` (SMPP dest_addr_ton 1, or a leading '+' / '00') says the digits carry the country code;
 * otherwise the number is read as national in `defaultCountry` first, then as international, because many
 * clients send international digits without saying so.
 */
export function normalizeNumber(raw: string, opts: { international?: boolean; defaultCountry?: string | null } = {}): string | null {
  // The international reading does not depend on the country.
  const key = (opts.international ? '+' : (opts.defaultCountry ?? '')) + '|' + raw;
  const known = recent.get(key);
  if (known !== undefined) return known;
  const out = parseNumber(raw, opts);
  recent.set(key, out);
  // The result read as international digits is itself (E.164 parses back to itself): an OTP's SMS, sent to the
  // number its request normalised, needs no second parse.
  if (out !== null) recent.set('+|' + out, out);
  trimOldest(recent, RECENT_MAX);
  return out;
}

/** normalizeNumber without its memory of recent answers. */
export function parseNumber(raw: string, opts: { international?: boolean; defaultCountry?: string | null }): string | null {
  let s = raw.replace(/[\s().-]/g, '');
  if (!DIGITS.test(s) && !(s.startsWith('00') && DIGITS.test(s.slice(2)))) return null;
  if (s.startsWith('00')) s = '+' + s.slice(2);
  if (s.startsWith('+') || opts.international) return valid(s.startsWith('+') ? s : '+' + s);
  if (opts.defaultCountry) {
    const national = parsePhoneNumberFromString(s, opts.defaultCountry.toUpperCase() as CountryCode);
    if (national?.isValid()) return national.number.slice(1);
  }
  return valid('+' + s);
}

/*
 * Calling codes that several countries share (+1, +7, +44, ...). For those the parser picks the country from the
 * national number and validates against that country's plan, which a number built from its calling code alone does
 * not do (it checks the code's main country), so they always take the parser.
 */
const SHARED_CALLING_CODES: ReadonlySet<string> = (() => {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const country of getCountries()) {
    const code = getCountryCallingCode(country);
    if (seen.has(code)) shared.add(code);
    seen.add(code);
  }
  return shared;
})();

function valid(e164: string): string | null {
  // Fast path for a calling code of one country: split the digits into code and national number and validate those,
  // skipping the parser's search of free text (3 to 5 times the cost). The parser still decides anything this does
  // not accept: it may also strip a national prefix written after the code (+233 024...), which this never does.
  const direct = directlyValid(e164);
  if (direct !== null) return direct;
  const p = parsePhoneNumberFromString(e164);
  return p?.isValid() ? p.number.slice(1) : null;
}

function directlyValid(e164: string): string | null {
  let p: PhoneNumber;
  try {
    p = new PhoneNumber(e164 as `+${string}`);
  } catch {
    return null; // no such calling code, or nothing after it
  }
  if (SHARED_CALLING_CODES.has(p.countryCallingCode)) return null;
  return p.isValid() ? p.number.slice(1) : null;
}

/**
 * How well a recipient was read: `valid` (libphonenumber's validity for its country, what normalizeNumber accepts),
 * `possible` (a readable calling code and a length possible for it, the number plan's other checks left to the
 * carrier), `digits` (3–15 digits, nothing more known).
 */
export type NumberGrade = 'valid' | 'possible' | 'digits';

export interface NumberReading {
  /** International digits without '+'. */
  digits: string;
  grade: NumberGrade;
}

const LENIENT_MAX = 2_000;
const lenient = new Map<string, NumberReading | null>();

/**
 * A recipient read as leniently as any validation policy allows, with how well it was read; null when it is not a
 * number at all (letters, fewer than 3 or more than 15 digits). The caller decides which grade its policy needs
 * (number-validation.ts). A number normalizeNumber accepts is read exactly as it reads it (grade `valid`); otherwise:
 * - international (`international`, a leading '+' or '00'): `possible` when its calling code is known and its length
 *   possible for it, else `digits`;
 * - not said to be international (SMPP TON 0, unknown): international when the digits look international (a known
 *   calling code and a possible length for it), else national in `defaultCountry` when possible there (a leading
 *   trunk '0' never starts a calling code), else `digits` as they are.
 */
export function readNumber(raw: string, opts: { international?: boolean; defaultCountry?: string | null } = {}): NumberReading | null {
  const valid = normalizeNumber(raw, opts);
  if (valid !== null) return { digits: valid, grade: 'valid' };
  const key = (opts.international ? '+' : (opts.defaultCountry ?? '')) + '|' + raw;
  const known = lenient.get(key);
  if (known !== undefined) return known;
  const out = readLeniently(raw, opts);
  lenient.set(key, out);
  trimOldest(lenient, LENIENT_MAX);
  return out;
}

function readLeniently(raw: string, opts: { international?: boolean; defaultCountry?: string | null }): NumberReading | null {
  let s = raw.replace(/[\s().-]/g, '');
  let international = !!opts.international;
  if (s.startsWith('+')) {
    s = s.slice(1);
    international = true;
  } else if (s.startsWith('00')) {
    s = s.slice(2);
    international = true;
  }
  if (!E164_DIGITS.test(s)) return null;
  const asInternational = possible(parsePhoneNumberFromString('+' + s));
  if (asInternational) return { digits: asInternational, grade: 'possible' };
  if (!international && opts.defaultCountry) {
    const national = possible(parsePhoneNumberFromString(s, opts.defaultCountry.toUpperCase() as CountryCode));
    if (national) return { digits: national, grade: 'possible' };
  }
  return { digits: s, grade: 'digits' };
}

function possible(p: PhoneNumber | undefined): string | null {
  if (!p?.isPossible()) return null;
  const digits = p.number.slice(1);
  return E164_DIGITS.test(digits) ? digits : null;
}
