import { invalidField } from '../../../http/errors.js';

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** When an inbox answers: per weekday, ranges of local wall-clock time in its IANA time zone. */
export interface BusinessHours {
  timezone: string;
  /** A day left out (or an empty list) is closed all day. Each range is [from, to), 'HH:MM', to may be '24:00'. */
  days: Partial<Record<Weekday, Array<[string, string]>>>;
}

const TIME = /^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$/;
const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** The JSON schema of `businessHours` (the shape; checkBusinessHours checks the rest). */
export const businessHoursSchema = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['timezone', 'days'],
  description:
    "when agents answer, in the inbox's time zone: `{timezone: 'Europe/Berlin', days: {mon: [['09:00', '17:00']], ...}}`; a day left out is closed; " +
    'a range ends before its `to` (24:00 for midnight; a night shift is two ranges on two days). null: always open',
  properties: {
    timezone: { type: 'string', minLength: 1, maxLength: 64, description: 'an IANA time zone (Africa/Accra, America/New_York, UTC)' },
    days: {
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(
        WEEKDAYS.map((d) => [
          d,
          {
            type: 'array',
            maxItems: 8,
            items: { type: 'array', minItems: 2, maxItems: 2, items: { type: 'string', pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$' } },
          },
        ]),
      ),
    },
  },
} as const;

/** VALIDATION_ERROR for a zone Intl does not know or a range that ends before it starts. */
export function checkBusinessHours(h: BusinessHours | null | undefined): void {
  if (!h) return;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: h.timezone });
  } catch {
    throw invalidField('businessHours.timezone', 'not an IANA time zone');
  }
  for (const [day, ranges] of Object.entries(h.days)) {
    for (const [i, r] of (ranges ?? []).entries()) {
      if (!TIME.test(r[0]) || !TIME.test(r[1]) || minutes(r[0]) >= minutes(r[1])) {
        throw invalidField(`businessHours.days.${day}.${i}`, 'a range is [from, to] with from before to (HH:MM, to at most 24:00)');
      }
    }
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The weekday and minute of the day at `at` in the zone. */
function localTime(at: Date, timezone: string): { day: Weekday; minute: number } {
  let f = formats.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: timezone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    if (formats.size > 500) formats.clear();
    formats.set(timezone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  return { day: String(parts.weekday).slice(0, 3).toLowerCase() as Weekday, minute: Number(parts.hour) * 60 + Number(parts.minute) };
}

/** Whether the inbox answers at `at` (no hours: always). */
export function isOpen(h: BusinessHours | null, at: Date): boolean {
  if (!h) return true;
  const { day, minute } = localTime(at, h.timezone);
  return (h.days[day] ?? []).some(([from, to]) => minute >= minutes(from) && minute < minutes(to));
}
