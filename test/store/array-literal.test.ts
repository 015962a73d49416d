import { createRequire } from 'node:module';
import fc from 'fast-check';
import t from 'tap';
import { arrayLiteral } from '../../src/store/sql/array-literal.js';
import { testDb } from '../helpers/db.js';
import { backendLabel } from '../helpers/env.js';

// The driver's own conversion is the oracle: Postgres must receive the very same text.
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };

const tricky = ['', 'NULL', 'null', 'a,b', '{x}', 'say "hi"', 'back\\slash', '\\"', ' padded ', 'tab\there', 'line\nbreak', 'ünïcödé €', '😀', "it's"];

t.test('the same text as the driver for flat arrays of plain values', async (t) => {
  const cases: unknown[][] = [
    [],
    ['a', 'b'],
    tricky,
    [1, 2.5, -3, 0, 1e21, Number.MAX_SAFE_INTEGER],
    [true, false],
    [10n, -20n],
    [null, 'a', undefined, null],
    [null],
    [1, null, 3],
    ['msg_01', null, 'say "hi"'],
  ];
  for (const c of cases) t.equal(arrayLiteral(c), prepareValue(c), JSON.stringify(c, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)));
  const plain = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.double({ noNaN: false }), fc.boolean(), fc.constant(null), fc.constant(undefined));
  fc.assert(fc.property(fc.array(plain, { maxLength: 40 }), (arr) => arrayLiteral(arr) === prepareValue(arr)), { numRuns: 2000 });
});

t.test('arrays of anything else are left to the driver', async (t) => {
  t.equal(arrayLiteral([Buffer.from('ab')]), undefined);
  t.equal(arrayLiteral(['a', new Date(0)]), undefined);
  t.equal(arrayLiteral([['nested']]), undefined);
  t.equal(arrayLiteral([{ a: 1 }]), undefined);
});

t.test(`array parameters reach the database intact (${backendLabel})`, async (t) => {
  const tdb = await testDb();
  t.teardown(() => tdb.cleanup());
  const texts = [...tricky, null, 'plain'];
  const { rows } = await tdb.db.query<{ texts: (string | null)[]; ints: (number | null)[]; flags: boolean[]; n: number }>(
    `SELECT $1::text[] AS texts, $2::int8[] AS ints, $3::bool[] AS flags, cardinality($1::text[]) AS n`,
    [texts, [1, null, -7, 2 ** 40], [true, false]],
  );
  t.same(rows[0].texts, texts, 'text[] with quotes, backslashes, commas, braces, the word NULL and real nulls');
  t.same(rows[0].ints, [1, null, -7, 2 ** 40]);
  t.same(rows[0].flags, [true, false]);
  const plain = Array.from({ length: 500 }, (_, i) => `msg_${i}`);
  const back = await tdb.db.query<{ a: string[] }>(`SELECT $1::text[] AS a`, [plain]);
  t.same(back.rows[0].a, plain, 'a batch-sized array of plain ids');
});
