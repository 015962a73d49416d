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

/** Parses YYMMDDhhmm or YYMMDDhhmmss (UTC, years 2000–2099); undefined when malformed. */
export function parseReceiptDate(s: string): Date | undefined {
  const m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?$/.exec(s.trim());
  if (!m) return undefined;
  const [yy, mo, dd, hh, mi, ss] = m.slice(1).map((v) => (v === undefined ? 0 : Number(v)));
  if (mo < 1 || mo > 12 || dd < 1 || dd > 31 || hh > 23 || mi > 59 || ss > 59) return undefined;
  return new Date(Date.UTC(2000 + yy, mo - 1, dd, hh, mi, ss));
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

// Keys in any case, with "submit date", "submit_date" or "submitdate" spellings.
const KEY = /(?:^|\s)(id|sub|dlvrd|submit[ _]?date|done[ _]?date|stat|err|text)\s*:/gi;

/**
 * Parses receipt text tolerantly: key case, missing fields, 10- or 12-digit dates, `Text:`; values run to the
 * next known key, and `text:` runs to the end. Undefined when there is no `id:`.
 */
export function parseReceipt(text: string): ReceiptFields | undefined {
  const found: Array<{ key: string; valueStart: number; keyStart: number }> = [];
  KEY.lastIndex = 0;
  for (let m = KEY.exec(text); m; m = KEY.exec(text)) {
    const key = m[1].toLowerCase().replace(/[ _]/g, '');
    found.push({ key, valueStart: m.index + m[0].length, keyStart: m.index });
    if (key === 'text') break; // free text may contain anything, including "stat:"
  }
  const out: Partial<ReceiptFields> = {};
  for (let i = 0; i < found.length; i++) {
    const { key, valueStart } = found[i];
    const end = i + 1 < found.length ? found[i + 1].keyStart : text.length;
    const raw = text.slice(valueStart, end);
    const value = key === 'text' ? raw : raw.trim();
    switch (key) {
      case 'id': out.id ??= value; break;
      case 'sub': out.sub = value; break;
      case 'dlvrd': out.dlvrd = value; break;
      case 'submitdate': out.submitDate = parseReceiptDate(value); break;
      case 'donedate': out.doneDate = parseReceiptDate(value); break;
      case 'stat':
        out.stat = value.toUpperCase();
        out.messageState = messageStateFromStat(value);
        break;
      case 'err': out.err = value; break;
      case 'text': out.text = value; break;
    }
  }
  if (!out.id) return undefined;
  for (const k of Object.keys(out) as Array<keyof ReceiptFields>) if (out[k] === undefined) delete out[k];
  return out as ReceiptFields;
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
