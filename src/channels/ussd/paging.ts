import { gsm7Length } from '../../smpp/text/gsm7.js';

/** A USSD screen holds at most 182 GSM-7 characters (3GPP TS 23.038 / 24.090). */
export const MAX_SCREEN_CHARS = 182;
export const MORE_KEY = '98';
export const BACK_KEY = '0';
const MORE_LINE = `${MORE_KEY} More`;
const BACK_LINE = `${BACK_KEY} Back`;

/** Characters a screen costs: GSM-7 septets (extension characters count two), or UTF-16 units outside GSM-7. */
export function screenLength(text: string): number {
  const n = gsm7Length(text);
  return n < 0 ? text.length : n;
}

/** Cuts a line longer than `max` at word boundaries where it can, else hard. */
function splitLongLine(line: string, max: number): string[] {
  const out: string[] = [];
  let rest = line;
  while (screenLength(rest) > max) {
    let cut = max;
    while (cut > 0 && screenLength(rest.slice(0, cut)) > max) cut--;
    const space = rest.lastIndexOf(' ', cut);
    if (space > max / 2) cut = space;
    out.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest.length || !out.length) out.push(rest);
  return out;
}

/**
 * Splits a screen into pages of at most 182 characters. A page followed by another ends with "98 More"; a page after
 * the first ends with "0 Back". Lines (an option is one line) are never split unless one alone is too long, so every
 * option shows whole on some page. One page when the text fits.
 */
export function paginate(text: string, max = MAX_SCREEN_CHARS): string[] {
  if (screenLength(text) <= max) return [text];
  // The footer of a middle page is the longest: budget for it on every page, so any page fits whatever follows it.
  const footer = `\n${MORE_LINE}\n${BACK_LINE}`;
  const budget = max - screenLength(footer);
  const lines = text.split('\n').flatMap((l) => splitLongLine(l, budget));
  const bodies: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const line of lines) {
    const add = screenLength(line) + (current.length ? 1 : 0);
    if (current.length && size + add > budget) {
      bodies.push(current.join('\n'));
      current = [];
      size = 0;
    }
    size += screenLength(line) + (current.length ? 1 : 0);
    current.push(line);
  }
  if (current.length) bodies.push(current.join('\n'));
  return bodies.map((body, i) => {
    const foot: string[] = [];
    if (i < bodies.length - 1) foot.push(MORE_LINE);
    if (i > 0) foot.push(BACK_LINE);
    return foot.length ? `${body}\n${foot.join('\n')}` : body;
  });
}
