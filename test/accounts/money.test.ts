// The money parser the admin API and the CLI share: exact decimal amounts to micro-units, with every refusal named.
import fc from 'fast-check';
import t from 'tap';
import { AmountError, amountToMicros, checkPlaces, currencyDecimals, formatMicros, MAX_MICROS, parseAmount } from '../../src/accounts/money.js';

function refusal(input: unknown, currency = 'USD', opts: { allowZero?: boolean; allowNegative?: boolean } = {}): { rule: string; message: string } | null {
  try {
    amountToMicros(input, currency, opts);
    return null;
  } catch (err) {
    if (!(err instanceof AmountError)) throw err;
    return { rule: err.rule, message: err.message };
  }
}

t.test('valid amounts become exact micro-units, from strings and from JSON numbers', async (t) => {
  const cases: Array<[unknown, number]> = [
    ['25', 25_000_000],
    [25, 25_000_000],
    ['0.1', 100_000],
    [0.1, 100_000],
    [0.07, 70_000],
    ['12.50', 12_500_000],
    ['1.', 1_000_000],
    ['.5', 500_000],
    [' 7 ', 7_000_000],
    ['+3', 3_000_000],
    ['1e3', 1_000_000_000],
    ['2.5E1', 25_000_000],
    ['1234567.89', 1_234_567_890_000],
    ['9007199254.74', 9_007_199_254_740_000],
  ];
  for (const [input, micros] of cases) t.equal(amountToMicros(input, 'USD'), micros, JSON.stringify(input));
  t.equal(amountToMicros('0.001', 'KWD'), 1000, 'three decimals in a currency that has them');
  t.equal(amountToMicros('100', 'JPY'), 100_000_000);
  t.equal(amountToMicros('0', 'USD', { allowZero: true }), 0, 'zero where it is allowed (a credit limit)');
  t.equal(amountToMicros('-5', 'USD', { allowNegative: true }), -5_000_000);
});

t.test('every refusal has its rule', async (t) => {
  const cases: Array<[unknown, string, string?]> = [
    [1e308, 'range'],
    ['1e308', 'range'],
    [1e21, 'range'],
    ['1e999999', 'range'],
    ['9007199254.740992', 'range'],
    ['9007199254.75', 'range'],
    ['-1e308', 'negative'],
    [Infinity, 'syntax'],
    [-Infinity, 'syntax'],
    [NaN, 'syntax'],
    ['Infinity', 'syntax'],
    ['NaN', 'syntax'],
    ['', 'syntax'],
    ['.', 'syntax'],
    ['1,5', 'syntax'],
    ['0x10', 'syntax'],
    ['1_000', 'syntax'],
    ['12 50', 'syntax'],
    ['5'.repeat(65), 'syntax'],
    [null, 'syntax'],
    [true, 'syntax'],
    [0, 'zero'],
    ['0', 'zero'],
    ['-0', 'zero'],
    ['0.000', 'zero'],
    ['0e5', 'zero'],
    [-5, 'negative'],
    ['-0.01', 'negative'],
    [0.0000001, 'decimals'],
    ['0.0000001', 'decimals'],
    ['1e-999999', 'decimals'],
    ['12.345', 'decimals'],
    [12.345, 'decimals'],
    ['9007199254.740991', 'decimals', 'the largest micro-unit amount still has six places, more than USD'],
  ];
  for (const [input, rule, why] of cases) t.equal(refusal(input)?.rule, rule, why ?? JSON.stringify(input) ?? String(input));
  t.match(refusal('1.5', 'JPY'), { rule: 'decimals', message: 'must be a whole number in JPY' });
  t.match(refusal('0.0001', 'KWD'), { rule: 'decimals', message: 'must have at most 3 decimal places in KWD' });
  t.match(refusal('0.001'), { rule: 'decimals', message: 'must have at most 2 decimal places in USD' });
  t.match(refusal('1e308'), { message: 'must be at most 9007199254.740991' });
  t.match(refusal('Infinity'), { message: /decimal number/ });
});

t.test('currency decimal places follow ISO 4217', async (t) => {
  t.equal(currencyDecimals('USD'), 2);
  t.equal(currencyDecimals('eur'), 2);
  t.equal(currencyDecimals('JPY'), 0);
  t.equal(currencyDecimals('BHD'), 3);
  t.equal(currencyDecimals('CLF'), 4);
  t.equal(currencyDecimals('ZZZ'), 2, 'an unknown code: two');
});

t.test('format and parse round-trip every amount of the money range (property)', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: -MAX_MICROS, max: MAX_MICROS }), (micros) => {
      const parsed = parseAmount(formatMicros(micros), { allowZero: true, allowNegative: true });
      return parsed.micros === micros;
    }),
    { numRuns: 2000 },
  );
  // Cents as a person types them or as JSON numbers: the same micro-units either way, never off by floating point.
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 900_719_925_474 }), (cents) => {
      const text = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
      return amountToMicros(text, 'USD') === cents * 10_000 && amountToMicros(Number(text), 'USD') === cents * 10_000;
    }),
    { numRuns: 2000 },
  );
  t.equal(formatMicros(-9_900_000_000), '-9900');
  t.equal(formatMicros(12_500_000), '12.5');
  t.equal(formatMicros(1), '0.000001');
  t.equal(formatMicros(MAX_MICROS), '9007199254.740991');
});

t.test('checkPlaces refuses an amount parsed with more places than micro-units hold', async (t) => {
  const p = parseAmount('0.0000001');
  t.same(p, { micros: null, places: 7 });
  t.throws(() => checkPlaces(p, 'CLF'), new AmountError('decimals', 'must have at most 4 decimal places in CLF'));
});
