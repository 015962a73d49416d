import pg from 'pg';
import t from 'tap';
import { utcTimestampParser } from '../../src/store/sql/timestamp-parser.js';

// The driver's own parser, read before db.ts (imported below) installs the fast one: the oracle.
const driverParse = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ);
const parse = utcTimestampParser(driverParse);
const time = (v: unknown) => (v instanceof Date ? v.getTime() : v);

/** Postgres's text form of an instant plus `micros` in a UTC session (trailing zeros of the fraction cut, as Postgres does). */
function pgText(ms: number, micros: number): string {
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const frac = (iso.slice(20, 23) + String(micros).padStart(3, '0')).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac ? '.' + frac : ''}+00`;
}

t.test('reads what the driver reads, for every shape of the UTC form', async (t) => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const cases: string[] = ['2026-11-21 23:29:01+00', '2026-11-21 23:29:01.5+00', '2026-11-21 23:29:01.12+00', '2000-02-29 00:00:00.000001+00', '0100-01-01 00:00:00+00', '9999-12-31 23:59:59.999999+00'];
  for (let i = 0; i < 5000; i++) {
    const ms = Math.floor(-58e12 + rand() * 310e12); // years 132 to 9999
    cases.push(pgText(ms, Math.floor(rand() * 1000)));
    cases.push(pgText(ms - (ms % 1000), 0));
  }
  let differ = 0;
  for (const c of cases) if (time(parse(c)) !== time(driverParse(c))) differ++;
  t.equal(differ, 0, `${cases.length} texts read alike`);
});

t.test('other forms go to the driver', async (t) => {
  for (const c of [
    '2026-11-21 23:29:01+01',
    '2026-11-21 23:29:01.25-05:30',
    '2026-11-21 23:29:01+05:45:30',
    '0099-01-01 00:00:00+00',
    '0001-01-01 00:00:00+00 BC',
    '12026-01-01 00:00:00+00',
    'infinity',
    '-infinity',
  ]) {
    t.same(time(parse(c)), time(driverParse(c)), c);
  }
});

t.test('timestamps read back from the database', async (t) => {
  const { testDb } = await import('../helpers/db.js');
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const texts = ['2026-11-21 23:29:01.123456+00', '2026-11-21 23:29:01+00', '1999-12-31 23:59:59.9+00', '2026-06-01 12:00:00+02'];
  const { rows } = await tdb.db.query<{ t: Date | string }>('SELECT unnest($1::timestamptz[]) AS t', [texts]);
  t.same(rows.map((r) => new Date(r.t).getTime()), texts.map((s) => time(driverParse(s))));
});
