import t from 'tap';
import { SentenceChunker } from '../../src/llm/sentence-chunker.js';

/** Feeds `text` in pieces of `size` characters; returns what came out along the way, and what flush() added. */
function feed(chunker: SentenceChunker, text: string, size: number): { streamed: string[]; flushed: string[] } {
  const streamed: string[] = [];
  for (let at = 0; at < text.length; at += size) streamed.push(...chunker.push(text.slice(at, at + size)));
  return { streamed, flushed: chunker.flush() };
}

t.test('splits on . ! ? ; and line breaks followed by space, whatever the delta sizes', async (t) => {
  const text = 'Welcome to Ferry. How can I help you today? We are open; come by any time!\nGoodbye for now';
  const expected = ['Welcome to Ferry.', 'How can I help you today?', 'We are open;', 'come by any time!', 'Goodbye for now'];
  for (const size of [1, 3, 7, text.length]) {
    const { streamed, flushed } = feed(new SentenceChunker({ minLength: 5 }), text, size);
    t.same([...streamed, ...flushed], expected, `deltas of ${size}`);
    t.same(flushed, ['Goodbye for now'], `deltas of ${size}: only the unfinished rest waits for flush`);
  }
});

t.test('a terminator at the end of a delta waits: it may be a decimal point or an abbreviation', async (t) => {
  const chunker = new SentenceChunker({ minLength: 5 });
  t.same(chunker.push('The total is 3.'), []);
  t.same(chunker.push('14 euros. Thanks'), ['The total is 3.14 euros.']);
  t.same(chunker.push('. '), ['Thanks.']);
  t.same(chunker.flush(), []);
});

t.test('pieces shorter than the minimum join the next sentence', async (t) => {
  const { streamed, flushed } = feed(new SentenceChunker({ minLength: 12 }), 'Hi. Dr. Smith is here. Ok. ', 4);
  t.same(streamed, ['Hi. Dr. Smith is here.'], 'short pieces waited for more');
  t.same(flushed, ['Ok.'], 'the end of the answer flushes whatever is left, however short');
});

t.test('closing quotes and brackets stay with their sentence; ellipses and ?! end once', async (t) => {
  const { streamed, flushed } = feed(new SentenceChunker({ minLength: 3 }), 'She said "Call me back." (Later.) Really?! Well… fine ', 2);
  t.same([...streamed, ...flushed], ['She said "Call me back."', '(Later.)', 'Really?!', 'Well…', 'fine']);
});

t.test('a run-on sentence is cut at a comma or a space past maxLength', async (t) => {
  const chunker = new SentenceChunker({ minLength: 5, maxLength: 40 });
  const out = chunker.push('first we go along the river, then across the bridge and up the hill to the old mill ');
  t.equal(out[0], 'first we go along the river,');
  for (const piece of out) t.ok(piece.length <= 40, `"${piece}" is at most 40 characters`);
  t.equal([...out, ...chunker.flush()].join(' '), 'first we go along the river, then across the bridge and up the hill to the old mill');
  t.same(new SentenceChunker({ minLength: 2, maxLength: 10 }).push('x'.repeat(25)), ['x'.repeat(10), 'x'.repeat(10)], 'one long word is cut too');
});

t.test('reset forgets what was held back; blank text gives nothing', async (t) => {
  const chunker = new SentenceChunker();
  t.same(chunker.push('This will never be spo'), []);
  chunker.reset();
  t.same(chunker.flush(), []);
  t.same(chunker.push('   \n  \n'), []);
  t.same(chunker.flush(), []);
});
