import { getCountries, getCountryCallingCode, parsePhoneNumberFromString, PhoneNumber, type CountryCode } from 'libphonenumber-js';
import { trimOldest } from '../../util/trim-oldest.js';

const DIGITS = /^\+?[0-9]{3,17}$/;

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
