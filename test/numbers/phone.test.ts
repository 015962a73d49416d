import t from 'tap';
import { getCountries, getCountryCallingCode, parsePhoneNumberFromString } from 'libphonenumber-js';
import examples from 'libphonenumber-js/examples.mobile.json';
import { normalizeNumber, parseNumber, readNumber } from '../../src/numbers/phone.js';

t.test('recipients normalise to international digits', async (t) => {
  t.equal(normalizeNumber('+233241234567'), '233241234567');
  t.equal(normalizeNumber('00233241234567'), '233241234567');
  t.equal(normalizeNumber('233241234567', { international: true }), '233241234567');
  t.equal(normalizeNumber('0241234567', { defaultCountry: 'GH' }), '233241234567', 'national in the default country');
  t.equal(normalizeNumber('233241234567', { defaultCountry: 'GH' }), '233241234567', 'international digits without a plus');
  t.equal(normalizeNumber('+1 (415) 555-2671'), '14155552671', 'punctuation ignored');
  t.equal(normalizeNumber('0241234567'), null, 'national without a country');
  t.equal(normalizeNumber('+99912345'), null, 'no such country code');
  t.equal(normalizeNumber('hello'), null);
  t.equal(normalizeNumber(''), null);
});

t.test('remembered answers are the parsed ones, and a result read as international is itself', async (t) => {
  const cases: Array<[string, { international?: boolean; defaultCountry?: string | null }]> = [];
  for (const [country, national] of Object.entries(examples as Record<string, string>)) {
    cases.push([national, { defaultCountry: country }], ['0' + national, { defaultCountry: country }], [national, { international: true }], [national, {}]);
  }
  let checked = 0;
  for (let round = 0; round < 2; round++) {
    for (const [raw, opts] of cases) {
      const out = normalizeNumber(raw, opts);
      if (out !== parseNumber(raw, opts)) t.fail(`${raw} ${JSON.stringify(opts)}: remembered ${out}, parsed ${parseNumber(raw, opts)}`);
      if (out !== null && parseNumber(out, { international: true }) !== out) t.fail(`${out} does not read back as itself`);
      checked++;
    }
  }
  t.ok(checked > 800, `${checked} answers checked, first asked and then remembered`);
  t.equal(normalizeNumber('0241234567', { defaultCountry: 'GH' }), '233241234567');
  t.equal(normalizeNumber('0241234567', {}), null, 'the country is part of what is remembered');
});

t.test('international numbers read as the full parser reads them, for every calling code', async (t) => {
  // parseNumber validates most international numbers without the parser's free-text search; the parser itself is
  // the oracle: random digits after every calling code (with and without a national prefix), and every example.
  const oracle = (e164: string): string | null => {
    const p = parsePhoneNumberFromString(e164);
    return p?.isValid() ? p.number.slice(1) : null;
  };
  const codes = [...new Set(getCountries().map((c) => getCountryCallingCode(c)))];
  let seed = 20261122;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  const numbers: string[] = [];
  for (const code of codes) {
    for (let k = 0; k < 300; k++) {
      let digits = '';
      const length = 4 + random(11);
      for (let i = 0; i < length; i++) digits += String(random(10));
      const number = code + (random(5) === 0 ? '0' : '') + digits;
      if (number.length <= 17) numbers.push(number); // longer is refused before any parsing
    }
  }
  for (const [country, national] of Object.entries(examples as Record<string, string>)) {
    const code = getCountryCallingCode(country as Parameters<typeof getCountryCallingCode>[0]);
    numbers.push(code + national, code + '0' + national);
  }
  let valid = 0;
  let mismatches = 0;
  for (const digits of numbers) {
    const expected = oracle('+' + digits);
    if (expected !== null) valid++;
    const got = parseNumber(digits, { international: true });
    if (got !== expected && mismatches++ < 10) t.fail(`+${digits}: ${got}, the parser says ${expected}`);
  }
  t.equal(mismatches, 0, `${numbers.length} numbers, ${valid} of them valid, read alike`);
  t.ok(valid > 4000, 'enough valid numbers to mean something');
  // Shared calling codes take the parser's country choice: +358 18 is Åland, whose plan has no 5-digit numbers.
  t.equal(parseNumber('+35818703', {}), null, 'a number valid for Finland but not for Åland, where it belongs');
  t.equal(parseNumber('+358187031', {}), '358187031');
  t.equal(parseNumber('+4407700900123', {}), oracle('+4407700900123'), 'a national prefix after the code');
});

t.test('readNumber: what normalizeNumber accepts is valid; the rest is possible, digits or nothing', async (t) => {
  // Valid numbers read exactly as normalizeNumber reads them.
  t.same(readNumber('+233241234567'), { digits: '233241234567', grade: 'valid' });
  t.same(readNumber('0241234567', { defaultCountry: 'GH' }), { digits: '233241234567', grade: 'valid' });
  t.same(readNumber('4670000000', { defaultCountry: 'DE' }), { digits: '494670000000', grade: 'valid' }, 'a valid national reading still comes first');
  // A North American test number and Kannel's default destination: known calling code, possible length, not valid.
  t.same(readNumber('15555550100', { international: true }), { digits: '15555550100', grade: 'possible' });
  t.same(readNumber('15555550100'), { digits: '15555550100', grade: 'possible' }, 'TON 0: it looks international');
  t.same(readNumber('4670000000'), { digits: '4670000000', grade: 'possible' });
  t.same(readNumber('4670000000', { defaultCountry: 'GH' }), { digits: '4670000000', grade: 'possible' }, 'international before a national reading');
  t.same(readNumber('+1 (555) 555-0100'), { digits: '15555550100', grade: 'possible' }, 'punctuation ignored');
  t.same(readNumber('0015555550100'), { digits: '15555550100', grade: 'possible' }, '00 is international');
  // Not international (0 starts no calling code): national in the default country when possible there.
  t.same(readNumber('0101234567', { defaultCountry: 'GH' }), { digits: '233101234567', grade: 'possible' });
  t.same(readNumber('0612345678'), { digits: '0612345678', grade: 'digits' }, 'national without a country: digits only');
  t.same(readNumber('99912345678'), { digits: '99912345678', grade: 'digits' }, 'no such calling code');
  t.same(readNumber('123', { international: true }), { digits: '123', grade: 'digits' }, '+1 23: too short for +1');
  t.same(readNumber('4412'), { digits: '4412', grade: 'digits' }, 'too short for +44');
  // Not numbers at all.
  for (const raw of ['hello', '12', '', '12345678901234567890', '1234567890123456', '+', '0044', '12a45678']) t.equal(readNumber(raw), null, `${JSON.stringify(raw)} is no number`);
  // Remembered answers are the computed ones.
  t.same(readNumber('4670000000'), { digits: '4670000000', grade: 'possible' });
  t.same(readNumber('0612345678', { defaultCountry: 'FR' }), { digits: '33612345678', grade: 'valid' }, 'the country is part of what is remembered');
});
