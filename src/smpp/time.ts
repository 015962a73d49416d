/**
 * SMPP time strings (v3.4 section 7.1.1): absolute `YYMMDDhhmmsstnnp` with tenths, a quarter-hour UTC offset and
 * its sign, and relative `YYMMDDhhmmss000R`.
 */

export interface RelativeTime {
  years: number;
  months: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

export type SmppTime =
  | { kind: 'absolute'; date: Date }
  | { kind: 'relative'; relative: RelativeTime; /** approximate length (years 365 d, months 30 d) */ ms: number; /** resolved against `now` with calendar arithmetic */ date: Date };

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const MONTH = 30 * DAY;
const YEAR = 365 * DAY;

/** Parses an SMPP time; undefined for '' (meaning "not set") and for malformed strings. */
export function parseSmppTime(s: string, now: Date = new Date()): SmppTime | undefined {
  const m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d)(\d{2})([+\-R])$/.exec(s);
  if (!m) return undefined;
  const [yy, mo, dd, hh, mi, ss, t, nn] = m.slice(1, 9).map(Number);
  const p = m[9];
  if (p === 'R') {
    const relative = { years: yy, months: mo, days: dd, hours: hh, minutes: mi, seconds: ss };
    const date = new Date(now.getTime());
    date.setUTCFullYear(date.getUTCFullYear() + yy, date.getUTCMonth() + mo, date.getUTCDate() + dd);
    date.setTime(date.getTime() + hh * HOUR + mi * MINUTE + ss * SECOND);
    return { kind: 'relative', relative, ms: relativeToMs(relative), date };
  }
  if (mo < 1 || mo > 12 || dd < 1 || dd > 31 || hh > 23 || mi > 59 || ss > 59 || nn > 48) return undefined;
  // The fields are local time at an offset of nn quarter hours ahead of (+) or behind (-) UTC.
  const local = Date.UTC(2000 + yy, mo - 1, dd, hh, mi, ss, t * 100);
  const offset = nn * 15 * MINUTE * (p === '+' ? 1 : -1);
  return { kind: 'absolute', date: new Date(local - offset) };
}

/** Formats an absolute time, written as local time `offsetQuarterHours` (−48..48) from UTC. */
export function formatSmppAbsolute(date: Date, offsetQuarterHours = 0): string {
  const q = Math.max(-48, Math.min(48, Math.trunc(offsetQuarterHours)));
  const d = new Date(date.getTime() + q * 15 * MINUTE);
  return (
    pad(d.getUTCFullYear() % 100) + pad(d.getUTCMonth() + 1) + pad(d.getUTCDate()) +
    pad(d.getUTCHours()) + pad(d.getUTCMinutes()) + pad(d.getUTCSeconds()) +
    String(Math.floor(d.getUTCMilliseconds() / 100)) + pad(Math.abs(q)) + (q < 0 ? '-' : '+')
  );
}

/** Approximate length of a relative time (years 365 days, months 30 days). */
export function relativeToMs(r: RelativeTime): number {
  return r.years * YEAR + r.months * MONTH + r.days * DAY + r.hours * HOUR + r.minutes * MINUTE + r.seconds * SECOND;
}

/** Formats a duration as a relative time, carrying days into months and years (30/365-day units) past 99. */
export function formatSmppRelative(ms: number): string {
  let rest = Math.max(0, Math.floor(ms / SECOND));
  const years = Math.min(99, Math.floor(rest / (YEAR / SECOND)));
  rest -= years * (YEAR / SECOND);
  const months = Math.floor(rest / (MONTH / SECOND));
  rest -= months * (MONTH / SECOND);
  const days = Math.floor(rest / (DAY / SECOND));
  rest -= days * (DAY / SECOND);
  const hours = Math.floor(rest / 3600);
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  const seconds = rest - minutes * 60;
  return pad(years) + pad(months) + pad(days) + pad(hours) + pad(minutes) + pad(seconds) + '000R';
}
