import fc from 'fast-check';
import t from 'tap';
import { messageStateFromStat } from '../../src/smpp/constants.js';
import { parseReceipt, parseReceiptDate, type ReceiptFields } from '../../src/smpp/receipt.js';

/*
 * parseReceipt is a hand-written scanner (every receipt of every upstream goes through it). The reference below is the
 * rule it implements, written with regular expressions: a key (any case, `submit date|submit_date|submitdate`,
 * whitespace allowed before the colon) starts the text or follows whitespace not taken by the key before it; its
 * value runs to the next key, trimmed; `text:` runs to the end as sent; the first `id:` counts, other keys the last.
 */
const KEY = /(?:^|\s)(id|sub|dlvrd|submit[ _]?date|done[ _]?date|stat|err|text)\s*:/gi;

function referenceDate(s: string): Date | undefined {
  const m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?$/.exec(s.trim());
  if (!m) return undefined;
  const [yy, mo, dd, hh, mi, ss] = m.slice(1).map((v) => (v === undefined ? 0 : Number(v)));
  if (mo < 1 || mo > 12 || dd < 1 || dd > 31 || hh > 23 || mi > 59 || ss > 59) return undefined;
  return new Date(Date.UTC(2000 + yy, mo - 1, dd, hh, mi, ss));
}

function reference(text: string): ReceiptFields | undefined {
  const found: Array<{ key: string; valueStart: number; keyStart: number }> = [];
  KEY.lastIndex = 0;
  for (let m = KEY.exec(text); m; m = KEY.exec(text)) {
    const key = m[1].toLowerCase().replace(/[ _]/g, '');
    found.push({ key, valueStart: m.index + m[0].length, keyStart: m.index });
    if (key === 'text') break;
  }
  const out: Partial<ReceiptFields> = {};
  for (let i = 0; i < found.length; i++) {
    const { key, valueStart } = found[i];
    const raw = text.slice(valueStart, i + 1 < found.length ? found[i + 1].keyStart : text.length);
    const value = key === 'text' ? raw : raw.trim();
    if (key === 'id') out.id ??= value;
    else if (key === 'sub') out.sub = value;
    else if (key === 'dlvrd') out.dlvrd = value;
    else if (key === 'submitdate') out.submitDate = referenceDate(value);
    else if (key === 'donedate') out.doneDate = referenceDate(value);
    else if (key === 'stat') {
      out.stat = value.toUpperCase();
      out.messageState = messageStateFromStat(value);
    } else if (key === 'err') out.err = value;
    else out.text = value;
  }
  if (!out.id) return undefined;
  for (const k of Object.keys(out) as Array<keyof ReceiptFields>) if (out[k] === undefined) delete out[k];
  return out as ReceiptFields;
}

/** Dates as numbers, so two results compare by value. */
function plain(r: ReceiptFields | undefined): Record<string, unknown> | undefined {
  if (!r) return r;
  const o: Record<string, unknown> = { ...r };
  if (r.submitDate) o.submitDate = r.submitDate.getTime();
  if (r.doneDate) o.doneDate = r.doneDate.getTime();
  return o;
}

/** A result as one comparable string: keys sorted, dates as numbers. */
function canonical(r: ReceiptFields | undefined): string {
  const o = plain(r);
  return o ? JSON.stringify(Object.keys(o).sort().map((k) => [k, o[k]])) : 'undefined';
}

/** A text as an assertion name: escaped, so TAP sees one line whatever the text holds. */
const shown = (s: string) => JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

// Receipt-like text: keys in any case and spelling, every kind of whitespace, near-keys, digits, colons, free text.
const SPACES = [' ', ' ', ' ', '\t', '\n', '\r\n', '\u00a0', '\u2003', '\u3000', '\ufeff', '\u2028', ''];
const KEYS = ['id', 'sub', 'dlvrd', 'submit date', 'submit_date', 'submitdate', 'submit-date', 'submit  date', 'done date', 'done_date', 'donedate', 'stat', 'err', 'text', 'ids', 'su', 'stats', 'dat', 'date'];
const randomCase = (s: string) => fc.array(fc.boolean(), { minLength: s.length, maxLength: s.length }).map((up) => [...s].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''));
const piece = fc.oneof(
  fc.tuple(fc.constantFrom(...SPACES), fc.constantFrom(...KEYS).chain(randomCase), fc.constantFrom('', ' ', '\t', '\u00a0'), fc.constantFrom(':', ':', ';', '')).map((p) => p.join('')),
  fc.constantFrom(...SPACES),
  fc.stringMatching(/^[0-9]{8,14}$/),
  fc.constantFrom('DELIVRD', 'undeliv', 'Expired', 'ENROUTE', 'weird', '000', '034', '0000ABCD', ':', '::', 'é', 'ſtat:', 'K'),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 4 }),
);
// Most start like a receipt, so the id is there and the rest of the rule is exercised.
const receiptText = fc
  .tuple(fc.constantFrom('', 'id:', 'ID:', ' id :', 'id:0A1b ', 'Id:12345 sub:001'), fc.array(piece, { maxLength: 24 }))
  .map(([head, ps]) => head + ps.join(''));

t.test('parseReceipt reads every text as the rule says (generated receipts, the regular-expression reference as oracle)', async (t) => {
  let withId = 0;
  fc.assert(
    fc.property(receiptText, (text) => {
      const want = canonical(reference(text));
      if (want !== 'undefined') withId++;
      return canonical(parseReceipt(text)) === want;
    }),
    { numRuns: 20_000, endOnFailure: true },
  );
  t.pass('20,000 generated texts read alike');
  t.ok(withId > 5_000, `many generated texts had an id (${withId})`);
});

t.test('parseReceipt on the edges of the rule', async (t) => {
  const cases = [
    'id:1a stat:DELIVRD',
    ' id:1a',
    'xid:1 id:2',
    'id:stat:DELIVRD',
    'id: stat:DELIVRD id:7',
    'id:5 stat :delivrd err:\u00a0001\u00a0',
    'ID:5\u3000STAT:Expired\ttext:  keep  spaces  ',
    'id:1 submit date: 2403050907 done date:240305090799',
    'id:1 submit date:2403050907 submit date:x',
    'id:1 submit _date:2403050907',
    'id:1 submitdate:2402310907',
    'id:1 stat:DELIVRD stat:whatever',
    'id:1 text:',
    'id:',
    '',
    ':id:1',
    'id:1\u2028sub:002\u2029dlvrd:001',
  ];
  for (const text of cases) t.equal(canonical(parseReceipt(text)), canonical(reference(text)), shown(text));
  t.same(plain(parseReceipt('id:5 stat :delivrd err:\u00a0001\u00a0')), { id: '5', stat: 'DELIVRD', messageState: messageStateFromStat('DELIVRD'), err: '001' });
});

t.test('parseReceiptDate against the reference', async (t) => {
  fc.assert(
    fc.property(
      fc.oneof(fc.stringMatching(/^\s{0,2}[0-9]{9,13}\s{0,2}$/), fc.string({ maxLength: 14 }), fc.stringMatching(/^[0-9]{2}(0[0-9]|1[0-3])[0-3][0-9][0-2][0-9][0-6][0-9]([0-6][0-9])?$/)),
      (s) => parseReceiptDate(s)?.getTime() === referenceDate(s)?.getTime(),
    ),
    { numRuns: 20_000, endOnFailure: true },
  );
  t.pass('20,000 generated dates read alike');
});
