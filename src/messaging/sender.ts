import { gsm7CharCost } from '../smpp/text/gsm7.js';

/**
 * The one sender ID rule, for every ingress (REST send and bulk, OTP `from`, SMPP source_addr) and every text that
 * states it (error messages, the OpenAPI document):
 *
 * - numeric: 1–15 digits, optionally after a leading '+' (dropped);
 * - alphanumeric: 1–11 characters, each a printable ASCII character of the GSM 7-bit default alphabet (letters,
 *   digits, space and ! " # $ % & ' ( ) * + , - . / : ; < = > ? @ _), at least one of them a letter, not starting or
 *   ending with a space.
 *
 * Eleven is what the originating address of an SMS holds in GSM 7-bit (TP-OA: 11 septets), so GSM's extension
 * characters ([ ] { } \ ^ ~ | €, two septets each) and characters outside its alphabet are refused: a network would
 * have to drop or replace them.
 */
export const MAX_ALPHANUMERIC_SENDER = 11;
export const MAX_NUMERIC_SENDER = 15;

/** The rule in words, for error messages and API descriptions. */
export const SENDER_RULE =
  `alphanumeric, 1–${MAX_ALPHANUMERIC_SENDER} GSM characters (letters, digits, space, common punctuation) with at least one letter, ` +
  `or numeric, 1–${MAX_NUMERIC_SENDER} digits with an optional leading +`;

const NUMERIC = new RegExp(`^\\+?[0-9]{1,${MAX_NUMERIC_SENDER}}$`);
const LETTER = /[A-Za-z]/;

/** Printable ASCII characters that are one septet of the GSM default alphabet. */
const ALPHANUMERIC_CHARS: ReadonlySet<number> = (() => {
  const out = new Set<number>();
  for (let c = 0x20; c <= 0x7e; c++) if (gsm7CharCost(c) === 1) out.add(c);
  return out;
})();

export type SenderKind = 'numeric' | 'alphanumeric';

/** Which kind of sender ID `raw` is under the rule, or null when it is not a valid one. */
export function senderKind(raw: string): SenderKind | null {
  if (raw.length === 0 || raw.length > MAX_NUMERIC_SENDER + 1) return null;
  if (NUMERIC.test(raw)) return 'numeric';
  if (raw.length > MAX_ALPHANUMERIC_SENDER || raw[0] === ' ' || raw[raw.length - 1] === ' ') return null;
  for (let i = 0; i < raw.length; i++) if (!ALPHANUMERIC_CHARS.has(raw.charCodeAt(i))) return null;
  return LETTER.test(raw) ? 'alphanumeric' : null;
}

export function isValidSender(raw: string): boolean {
  return senderKind(raw) !== null;
}

export interface Sender {
  source: string;
  ton: number;
  npi: number;
}

/**
 * A valid sender ID as it is sent on: numeric without its '+', alphanumeric as is; null when not valid. TON/NPI (when
 * absent or TON 0, "unknown") come from the shape: alphanumeric 5/0, short code (≤ 6 digits) 3/0, long number 1/1.
 */
export function normalizeSender(raw: string, ton?: number, npi?: number): Sender | null {
  const kind = senderKind(raw);
  if (!kind) return null;
  // TON 0 means "unknown": infer it (and its NPI) from the sender's shape, as SMSCs expect 5 for alphanumerics.
  if (ton === 0) {
    ton = undefined;
    npi = undefined;
  }
  if (kind === 'numeric') {
    const digits = raw.startsWith('+') ? raw.slice(1) : raw;
    const long = digits.length > 6;
    return { source: digits, ton: ton ?? (long ? 1 : 3), npi: npi ?? (long ? 1 : 0) };
  }
  return { source: raw, ton: ton ?? 5, npi: npi ?? 0 };
}

/** SMPP source_addr_ton 5: alphanumeric. */
const TON_ALPHANUMERIC = 5;
const TON_UNKNOWN = 0;

/**
 * Whether an SMPP source_addr is acceptable with its TON: the sender rule, with the shape the TON says. TON 0
 * (unknown) takes either kind; TON 5 (alphanumeric) an alphanumeric sender, or digits that fit one (at most 11);
 * every other TON a numeric sender.
 */
export function validSmppSource(addr: string, ton: number): boolean {
  const kind = senderKind(addr);
  if (!kind) return false;
  if (ton === TON_UNKNOWN) return true;
  if (ton === TON_ALPHANUMERIC) return kind === 'alphanumeric' || addr.length <= MAX_ALPHANUMERIC_SENDER;
  return kind === 'numeric';
}
