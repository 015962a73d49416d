import { messageStateFromStat } from './constants.js';

/** Fields of a delivery receipt's text, as SMSCs write it in deliver_sm short_message. */
export interface ReceiptFields {
  id: string;
  sub?: string;
  dlvrd?: string;
  submitDate?: Date;
  doneDate?: Date;
  stat?: string;
  /** message_state matching `stat`, when the word is known. */
  messageState?: number;
  err?: string;
  text?: string;
}

export interface FormatReceiptInput {
  id: string;
  stat: string;
  submitDate: Date;
  doneDate: Date;
  sub?: number;
  dlvrd?: number;
  err?: number | string;
  /** Original text; only its first 20 characters are written. */
  text?: string;
  /** Write YYMMDDhhmmss instead of YYMMDDhhmm. */
  dateSeconds?: boolean;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** Receipt date: YYMMDDhhmm (or with seconds) in UTC. */
export function formatReceiptDate(d: Date, seconds = false): string {
  const base =
    pad(d.getUTCFullYear() % 100, 2) + pad(d.getUTCMonth() + 1, 2) + pad(d.getUTCDate(), 2) + pad(d.getUTCHours(), 2) + pad(d.getUTCMinutes(), 2);
  return seconds ? base + pad(d.getUTCSeconds(), 2) : base;
}

/** Parses YYMMDDhhmm or YYMMDDhhmmss (UTC, years 2000–2099); undefined when malformed. Surrounding whitespace is ignored. */
export function parseReceiptDate(s: string): Date | undefined {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s.charCodeAt(a))) a++;
  while (b > a && isSpace(s.charCodeAt(b - 1))) b--;
  if (b - a !== 10 && b - a !== 12) return undefined;
  const yy = twoDigits(s, a);
  const mo = twoDigits(s, a + 2);
  const dd = twoDigits(s, a + 4);
  const hh = twoDigits(s, a + 6);
  const mi = twoDigits(s, a + 8);
  const ss = b - a === 12 ? twoDigits(s, a + 10) : 0;
  // twoDigits answers -1 for a non-digit, so one test per field covers both.
  if (yy < 0 || mo < 1 || mo > 12 || dd < 1 || dd > 31 || hh < 0 || hh > 23 || mi < 0 || mi > 59 || ss < 0 || ss > 59) return undefined;
  return new Date(Date.UTC(2000 + yy, mo - 1, dd, hh, mi, ss));
}

/** The ASCII digits at i and i + 1 as a number, or -1. */
function twoDigits(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/** What `\s` and String.prototype.trim take for whitespace. */
function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 0xa0) return false;
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** `id:… sub:001 dlvrd:001 submit date:… done date:… stat:DELIVRD err:000 text:…` */
export function formatReceipt(r: FormatReceiptInput): string {
  const delivered = r.stat.toUpperCase() === 'DELIVRD';
  const err = typeof r.err === 'string' ? r.err : pad(r.err ?? 0, 3);
  return (
    `id:${r.id} sub:${pad(r.sub ?? 1, 3)} dlvrd:${pad(r.dlvrd ?? (delivered ? 1 : 0), 3)}` +
    ` submit date:${formatReceiptDate(r.submitDate, r.dateSeconds)} done date:${formatReceiptDate(r.doneDate, r.dateSeconds)}` +
    ` stat:${r.stat} err:${err} text:${(r.text ?? '').slice(0, 20)}`
  );
}

// The keys parseReceipt knows, as keyAt reports them.
const enum Key {
  None,
  Id,
  Sub,
  Dlvrd,
  SubmitDate,
  DoneDate,
  Stat,
  Err,
  Text,
}

/** End of `word` (ASCII, lower case) at i in s, in any case; -1 when it is not there. */
function wordAt(s: string, i: number, word: string): number {
  if (i + word.length > s.length) return -1;
  for (let j = 0; j < word.length; j++) {
    let c = s.charCodeAt(i + j);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== word.charCodeAt(j)) return -1;
  }
  return i + word.length;
}

/** After a key's word: optional whitespace, then the colon. The index after the colon, or -1. */
function colonAfter(s: string, i: number): number {
  if (i < 0) return -1;
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return s.charCodeAt(i) === 58 ? i + 1 : -1;
}

/** `submit` or `done`, then `date` with one optional space or underscore between them. */
function dateKeyAt(s: string, i: number, first: string): number {
  let e = wordAt(s, i, first);
  if (e < 0) return -1;
  const c = s.charCodeAt(e);
  if (c === 32 || c === 95) e++;
  return colonAfter(s, wordAt(s, e, 'date'));
}

// keyAt's second answer, kept outside so the scan allocates nothing per key.
let keyEnd = -1;

/** The key starting at i (any case, whitespace allowed before its colon), with keyEnd after the colon; or Key.None. */
function keyAt(s: string, i: number): Key {
  let c = s.charCodeAt(i);
  if (c >= 65 && c <= 90) c += 32;
  let e = -1;
  switch (c) {
    case 105: // i
      if ((e = colonAfter(s, wordAt(s, i, 'id'))) >= 0) return (keyEnd = e), Key.Id;
      break;
    case 115: // s
      if ((e = colonAfter(s, wordAt(s, i, 'sub'))) >= 0) return (keyEnd = e), Key.Sub;
      if ((e = dateKeyAt(s, i, 'submit')) >= 0) return (keyEnd = e), Key.SubmitDate;
      if ((e = colonAfter(s, wordAt(s, i, 'stat'))) >= 0) return (keyEnd = e), Key.Stat;
      break;
    case 100: // d
      if ((e = colonAfter(s, wordAt(s, i, 'dlvrd'))) >= 0) return (keyEnd = e), Key.Dlvrd;
      if ((e = dateKeyAt(s, i, 'done')) >= 0) return (keyEnd = e), Key.DoneDate;
      break;
    case 101: // e
      if ((e = colonAfter(s, wordAt(s, i, 'err'))) >= 0) return (keyEnd = e), Key.Err;
      break;
    case 116: // t
      if ((e = colonAfter(s, wordAt(s, i, 'text'))) >= 0) return (keyEnd = e), Key.Text;
      break;
  }
  return Key.None;
}

/**
 * Parses receipt text tolerantly: key case, missing fields, 10- or 12-digit dates, `Text:`, `submit_date` or
 * `submitdate`; a key starts the text or follows whitespace, its value runs to the next key, and `text:` runs to the
 * end. Undefined when there is no `id:`. One pass over the text, no regular expression: every receipt of every
 * upstream goes through here.
 */
export function parseReceipt(text: string): ReceiptFields | undefined {
  let id: string | undefined;
  let sub: string | undefined;
  let dlvrd: string | undefined;
  let submitDate: Date | undefined;
  let doneDate: Date | undefined;
  let stat: string | undefined;
  let messageState: number | undefined;
  let err: string | undefined;
  let body: string | undefined;
  let key = Key.None;
  let valueStart = 0;
  const n = text.length;
  for (let i = 0; i <= n; i++) {
    // A key starts the text or follows whitespace; the scan resumes after a key's colon, so that whitespace is never
    // the key before it. At the end of the text the last value is closed.
    let next = Key.None;
    let keyStart = n;
    if (i < n) {
      if (i > 0 && !isSpace(text.charCodeAt(i - 1))) continue;
      next = keyAt(text, i);
      if (next === Key.None) continue;
      keyStart = i === 0 ? 0 : i - 1;
    }
    if (key !== Key.None) {
      const value = text.slice(valueStart, keyStart).trim();
      switch (key) {
        case Key.Id:
          id ??= value;
          break;
        case Key.Sub:
          sub = value;
          break;
        case Key.Dlvrd:
          dlvrd = value;
          break;
        case Key.SubmitDate:
          submitDate = parseReceiptDate(value);
          break;
        case Key.DoneDate:
          doneDate = parseReceiptDate(value);
          break;
        case Key.Stat:
          stat = value.toUpperCase();
          messageState = messageStateFromStat(value);
          break;
        case Key.Err:
          err = value;
          break;
      }
    }
    if (next === Key.None) break;
    valueStart = keyEnd;
    if (next === Key.Text) {
      // Free text may contain anything, including "stat:"; it is kept as sent.
      body = text.slice(valueStart);
      break;
    }
    key = next;
    i = valueStart - 1;
  }
  if (!id) return undefined;
  const out: ReceiptFields = { id };
  if (sub !== undefined) out.sub = sub;
  if (dlvrd !== undefined) out.dlvrd = dlvrd;
  if (submitDate !== undefined) out.submitDate = submitDate;
  if (doneDate !== undefined) out.doneDate = doneDate;
  if (stat !== undefined) out.stat = stat;
  if (messageState !== undefined) out.messageState = messageState;
  if (err !== undefined) out.err = err;
  if (body !== undefined) out.text = body;
  return out;
}

/** Canonical form of an upstream message id: trimmed, lower case, without leading zeros. */
export function normalizeMessageId(id: string): string {
  const s = id.trim().toLowerCase();
  const stripped = s.replace(/^0+/, '');
  return stripped === '' && s !== '' ? '0' : stripped;
}

/**
 * Every canonical form an id may take between a submit_sm_resp and its receipt: itself, and its hex↔decimal
 * conversion when it reads as a number (SMSCs answer in hex and report in decimal, or the reverse).
 */
export function messageIdVariants(id: string): string[] {
  const base = normalizeMessageId(id);
  const out = new Set<string>([base]);
  if (/^[0-9]+$/.test(base) && base.length <= 20) out.add(BigInt(base).toString(16));
  if (/^[0-9a-f]+$/.test(base) && base.length <= 16) out.add(BigInt('0x' + base).toString(10));
  return [...out];
}
