// The pure parts of USSD: tree validation, paging (a property test: no screen over 182 characters, every option
// reachable by turning pages), the menu engine, service code routing helpers and the CON/END parser.
import fc from 'fast-check';
import t from 'tap';
import { MenuEngine, type HopContext } from '../../../src/channels/ussd/menu-engine.js';
import { menuScreen, unsafePattern, validateTree, type MenuTree } from '../../../src/channels/ussd/menu-tree.js';
import { MAX_SCREEN_CHARS, paginate, screenLength } from '../../../src/channels/ussd/paging.js';
import { canonicalCode, claimCandidates, prefilledInputs } from '../../../src/channels/ussd/service-code.js';
import { hopBody, parseAppAnswer, parseConEnd } from '../../../src/channels/ussd/webhook-app.js';

const TREE: MenuTree = {
  start: 'main',
  nodes: {
    main: { type: 'menu', text: 'Welcome', options: [{ key: '1', label: 'Balance', next: 'bal' }, { key: '2', label: 'Send', next: 'amount' }] },
    bal: { type: 'end', text: 'Your balance is 10 GHS' },
    amount: { type: 'input', text: 'Amount?', pattern: '[0-9]{1,5}', error: 'Digits only', var: 'amount', next: 'done' },
    done: { type: 'end', text: 'Sent {amount} GHS' },
  },
};

t.test('a good tree has no errors; each problem is named', async (t) => {
  t.same(validateTree(TREE), []);
  const bad: MenuTree = {
    start: 'main',
    nodes: {
      main: { type: 'menu', text: 'Héllo ₹', options: [{ key: '1', label: 'A', next: 'nowhere' }, { key: '1', label: 'B', next: 'end' }] },
      end: { type: 'end', text: 'x'.repeat(200) },
      lost: { type: 'end', text: 'never reached' },
      ask: { type: 'input', text: 'ok', pattern: '([', next: 'end' },
    },
  };
  const fields = validateTree(bad).map((e) => `${e.field}: ${e.message}`);
  t.match(fields.join('\n'), /tree\.nodes\.main\.next: names no node \(nowhere\)/);
  t.match(fields.join('\n'), /tree\.nodes\.main\.text: must be GSM-7/);
  t.match(fields.join('\n'), /duplicate key 1/);
  t.match(fields.join('\n'), /tree\.nodes\.end\.text: an end screen cannot page/);
  t.match(fields.join('\n'), /tree\.nodes\.lost: unreachable/);
  t.match(fields.join('\n'), /tree\.nodes\.ask\.pattern: not a valid regular expression/);
  t.match(validateTree({ start: 'x', nodes: { a: { type: 'end', text: 'a' } } })[0], { field: 'tree.start' });
  const paged: MenuTree = {
    start: 'm',
    nodes: { m: { type: 'menu', text: 'Pick', options: Array.from({ length: 20 }, (_, i) => ({ key: String(i === 0 ? 98 : i), label: `Option number ${i} is long`, next: 'e' })) }, e: { type: 'end', text: 'ok' } },
  };
  t.match(validateTree(paged).map((e) => e.message).join(), /key 98 is reserved/);
});

t.test('input patterns that could backtrack for ages are refused', async (t) => {
  for (const p of ['(a+)+', '(a|aa)*', '(\\d*){2,}', '(?:x+y?)+', '(a)\\1', '((ab)*)+']) t.ok(unsafePattern(p), `${p} refused`);
  for (const p of ['[0-9]{1,5}', '\\d{4}', '(233|0)[0-9]{9}', '[A-Z]+', '(ab)?c', '[(+)]+', 'yes|no']) t.equal(unsafePattern(p), null, `${p} accepted`);
  const tree: MenuTree = { start: 'a', nodes: { a: { type: 'input', text: 'x', pattern: '(a+)+$', next: 'b' }, b: { type: 'end', text: 'ok' } } };
  t.match(validateTree(tree)[0], { field: 'tree.nodes.a.pattern' });
});

t.test('paging: no screen over 182 characters, every line (option) whole on some page, More/Back footers', async (t) => {
  const line = fc.stringMatching(/^[A-Za-z0-9 .,]{0,120}$/);
  fc.assert(
    fc.property(fc.array(line, { minLength: 1, maxLength: 40 }), (lines) => {
      const text = lines.join('\n');
      const pages = paginate(text);
      for (const p of pages) if (screenLength(p) > MAX_SCREEN_CHARS) return false;
      if (pages.length === 1) return pages[0] === text;
      pages.forEach((p, i) => {
        if ((i < pages.length - 1) !== p.includes('98 More')) throw new Error('More footer');
        if ((i > 0) !== p.includes('0 Back')) throw new Error('Back footer');
      });
      const shown = pages.map((p) => p.split('\n'));
      for (const l of lines) if (l.length && !shown.some((s) => s.includes(l))) return false;
      return true;
    }),
    { numRuns: 300 },
  );
  // A menu with many options: every option key can be reached by turning pages.
  const options = Array.from({ length: 30 }, (_, i) => ({ key: String(i + 1), label: `Product ${i + 1} with a long description`, next: 'e' }));
  const pages = paginate(menuScreen({ type: 'menu', text: 'Choose a product', options }));
  t.ok(pages.length > 3);
  for (const o of options) t.ok(pages.some((p) => p.split('\n').includes(`${o.key}. ${o.label}`)), `option ${o.key} shown`);
  // One line longer than a screen is cut, never over 182.
  t.ok(paginate('word '.repeat(200)).every((p) => screenLength(p) <= MAX_SCREEN_CHARS));
});

t.test('the engine walks a tree: menu, invalid choice, input with pattern, variables', async (t) => {
  const hop: HopContext = { sessionId: 's', serviceCode: '*1#', phone: '233', networkCode: '', inputs: [] };
  const e = new MenuEngine(TREE, async () => ({ end: true, text: 'never' }));
  let s = await e.start(hop);
  t.equal(s.text, 'Welcome\n1. Balance\n2. Send');
  s = await e.input(s.position, '7', hop);
  t.equal(s.text, 'Invalid choice\nWelcome\n1. Balance\n2. Send');
  s = await e.input(s.position, '2', hop);
  t.equal(s.text, 'Amount?');
  s = await e.input(s.position, 'abc', hop);
  t.same([s.text, s.end], ['Digits only\nAmount?', false]);
  s = await e.input(s.position, '50', hop);
  t.same([s.text, s.end], ['Sent 50 GHS', true]);
});

t.test('a dynamic node asks the app; without next the app keeps the session', async (t) => {
  const calls: string[][] = [];
  const tree: MenuTree = { start: 'd', nodes: { d: { type: 'dynamic', url: 'https://app.example/ussd' } } };
  const e = new MenuEngine(tree, async (_u, _d, hop) => {
    calls.push([...hop.inputs]);
    return hop.inputs.length < 2 ? { end: false, text: `step ${hop.inputs.length}` } : { end: true, text: 'bye' };
  });
  const hop = (inputs: string[]): HopContext => ({ sessionId: 's', serviceCode: '*1#', phone: '233', networkCode: '', inputs });
  let s = await e.start(hop([]));
  t.equal(s.text, 'step 0');
  s = await e.input(s.position, 'a', hop(['a']));
  s = await e.input(s.position, 'b', hop(['a', 'b']));
  t.same([s.text, s.end], ['bye', true]);
  t.same(calls, [[], ['a'], ['a', 'b']]);
});

t.test('service codes: canonical form, longest-match candidates, pre-filled inputs', async (t) => {
  t.equal(canonicalCode('*384*12*3#'), '384*12*3');
  t.equal(canonicalCode('384'), '384');
  t.equal(canonicalCode('hello'), null);
  t.same(claimCandidates('384*12*3'), ['384*12*3', '384*12', '384']);
  t.same(prefilledInputs('384*12*3', '384*12'), ['3']);
  t.same(prefilledInputs('384', '384'), []);
});

t.test("CON/END answers and the Africa's Talking body", async (t) => {
  t.same(parseConEnd('CON Pick\n1. A'), { end: false, text: 'Pick\n1. A' });
  t.same(parseConEnd('END Bye'), { end: true, text: 'Bye' });
  t.equal(parseConEnd('Hello'), null);
  t.equal(parseConEnd('CONTINUE'), null);
  t.same(parseAppAnswer('{"end":false,"text":"x"}', 'application/json'), { end: false, text: 'x' });
  const b = hopBody('africastalking', { sessionId: 's1', serviceCode: '*384#', phone: '233201234567', networkCode: '62001', inputs: ['1', '2'] });
  t.same(Object.fromEntries(new URLSearchParams(b.body)), { sessionId: 's1', serviceCode: '*384#', phoneNumber: '233201234567', networkCode: '62001', text: '1*2' });
});
