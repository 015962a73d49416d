import { mkdtempSync, readdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CachedSpeechEngine } from '../../src/speech/cached-speech-engine.js';
import { SpeechCache, type SpeechCacheKey } from '../../src/speech/speech-cache.js';
import type { SpeechEngine, SynthesisRequest } from '../../src/speech/speech-engine.js';

const root = mkdtempSync(join(tmpdir(), 'ferry-speech-cache-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
const freshDir = (): string => join(root, `cache-${++folders}`);

const key = (text: string, extra: Partial<SpeechCacheKey> = {}): SpeechCacheKey => ({ engine: 'fake', voice: 'en-US', rate: undefined, text, ...extra });

/** A synthesizer that counts its calls and answers `samples` samples derived from the text, after a tick. */
function counting(samples = 800): { calls: () => number; synthesize: (text: string) => () => Promise<Int16Array> } {
  let calls = 0;
  return {
    calls: () => calls,
    synthesize: (text) => async () => {
      calls++;
      await new Promise((resolve) => setImmediate(resolve));
      return new Int16Array(samples).fill(text.length);
    },
  };
}

const audioFiles = (dir: string): string[] => readdirSync(dir).filter((n) => n.endsWith('.pcm')).sort();

t.test('ten concurrent requests for one key synthesize once', async (t) => {
  const cache = new SpeechCache({ dir: freshDir(), maxBytes: 1e6 });
  const fake = counting();
  const results = await Promise.all(Array.from({ length: 10 }, () => cache.get(key('hello'), fake.synthesize('hello'))));
  t.equal(fake.calls(), 1, 'one synthesis');
  t.ok(results.every((r) => r.length === 800 && r[0] === 5), 'all ten got the audio');
  results[0][0] = -1;
  t.equal((await cache.get(key('hello'), fake.synthesize('hello')))[0], 5, 'each caller has its own copy');
  t.equal(fake.calls(), 1, 'later requests are hits');
  await cache.get(key('hello', { rate: 120 }), fake.synthesize('hello'));
  await cache.get(key('hello', { voice: 'en-GB' }), fake.synthesize('hello'));
  await cache.get(key('hello', { engine: 'other' }), fake.synthesize('hello'));
  await cache.get(key('hello!'), fake.synthesize('hello!'));
  t.equal(fake.calls(), 5, 'engine, voice, rate and text each make a different entry');
});

t.test('the disk layer: another process sharing the folder reads what this one wrote', async (t) => {
  const dir = freshDir();
  const first = new SpeechCache({ dir, maxBytes: 1e6 });
  const fake = counting();
  await first.get(key('shared'), fake.synthesize('shared'));
  t.same(audioFiles(dir), [`${SpeechCache.hash(key('shared'))}.pcm`], 'one raw PCM file named by the key hash');
  t.equal(statSync(join(dir, audioFiles(dir)[0])).size, 1_600, '800 samples, 2 bytes each');
  t.same(readdirSync(dir).filter((n) => n.endsWith('.tmp')), [], 'no temp file left behind');
  const second = new SpeechCache({ dir, maxBytes: 1e6 });
  const read = await second.get(key('shared'), fake.synthesize('shared'));
  t.equal(fake.calls(), 1, 'a hit on disk');
  t.same(Array.from(read.subarray(0, 3)), [6, 6, 6]);
});

t.test('half-written and corrupt files are never served', async (t) => {
  const dir = freshDir();
  const cache = new SpeechCache({ dir, maxBytes: 1e6, memoryBytes: 0 });
  const fake = counting();
  await cache.get(key('seed'), fake.synthesize('seed'));
  const hash = SpeechCache.hash(key('partial'));
  // What a writer that died mid-write leaves: only its temp name, never the final one.
  writeFileSync(join(dir, `.${hash}.999.abcd1234.tmp`), Buffer.alloc(3));
  const fresh = await cache.get(key('partial'), fake.synthesize('partial'));
  t.equal(fake.calls(), 2, 'the temp file is not read');
  t.equal(fresh.length, 800);
  writeFileSync(join(dir, `${SpeechCache.hash(key('odd'))}.pcm`), Buffer.alloc(7));
  t.equal((await cache.get(key('odd'), fake.synthesize('odd'))).length, 800, 'an odd-sized file is dropped and replaced');
  t.equal(statSync(join(dir, `${SpeechCache.hash(key('odd'))}.pcm`)).size, 1_600);
});

t.test('the least recently used files go when the folder passes its bound', async (t) => {
  const dir = freshDir();
  let clock = 1_700_000_000_000;
  const cache = new SpeechCache({ dir, maxBytes: 5_400, memoryBytes: 0, now: () => (clock += 1_000) });
  const fake = counting(); // 1,600 bytes a file
  for (const text of ['a', 'b', 'c']) await cache.get(key(text), fake.synthesize(text));
  t.equal(audioFiles(dir).length, 3, '4,800 bytes: under the bound');
  await cache.get(key('a'), fake.synthesize('a'));
  t.equal(fake.calls(), 3, '"a" read from disk, which makes it the most recent');
  await cache.get(key('d'), fake.synthesize('d'));
  const left = audioFiles(dir);
  const names = (texts: string[]): string[] => texts.map((x) => `${SpeechCache.hash(key(x))}.pcm`).sort();
  t.same(left, names(['a', 'c', 'd']), '"b", used longest ago, is evicted; total back under 90 % of the bound');
  t.ok(left.reduce((sum, n) => sum + statSync(join(dir, n)).size, 0) <= 5_400 * 0.9);
  await cache.get(key('b'), fake.synthesize('b'));
  t.equal(fake.calls(), 5, 'an evicted entry is synthesized again');
});

t.test('the memory front serves without the disk, within its bound', async (t) => {
  const dir = freshDir();
  const cache = new SpeechCache({ dir, maxBytes: 1e6, memoryBytes: 4_000 });
  const fake = counting();
  await cache.get(key('one'), fake.synthesize('one'));
  for (const name of audioFiles(dir)) unlinkSync(join(dir, name));
  await cache.get(key('one'), fake.synthesize('one'));
  t.equal(fake.calls(), 1, 'served from memory though the file is gone');
  await cache.get(key('two'), fake.synthesize('two'));
  await cache.get(key('three'), fake.synthesize('three'));
  for (const name of audioFiles(dir)) unlinkSync(join(dir, name));
  await cache.get(key('one'), fake.synthesize('one'));
  t.equal(fake.calls(), 4, 'the oldest left memory when two more (4,800 bytes) came in');
});

t.test('a failed synthesis fails every waiter and is not cached', async (t) => {
  const cache = new SpeechCache({ dir: freshDir(), maxBytes: 1e6 });
  let calls = 0;
  const failing = async (): Promise<Int16Array> => {
    calls++;
    await new Promise((resolve) => setImmediate(resolve));
    throw new Error('engine down');
  };
  const results = await Promise.allSettled(Array.from({ length: 3 }, () => cache.get(key('x'), failing)));
  t.same(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
  t.equal(calls, 1);
  t.equal((await cache.get(key('x'), counting().synthesize('x'))).length, 800, 'the next request tries again');
});

t.test('a folder that cannot be written costs the cache, not the request', async (t) => {
  const blocker = join(root, 'a-file');
  writeFileSync(blocker, 'not a folder');
  const errors: unknown[] = [];
  const cache = new SpeechCache({ dir: join(blocker, 'cache'), maxBytes: 1e6, onError: (err) => errors.push(err) });
  t.equal((await cache.get(key('y'), counting().synthesize('y'))).length, 800);
  t.ok(errors.length >= 1, 'reported through onError');
  t.ok(errors.every((err) => (err as NodeJS.ErrnoException).code === 'ENOTDIR'));
});

t.test('CachedSpeechEngine puts an engine behind the cache', async (t) => {
  let calls = 0;
  const engine: SpeechEngine = {
    id: 'fake',
    available: async () => true,
    voices: async () => [],
    synthesize: async (request: SynthesisRequest) => {
      calls++;
      return new Int16Array(10).fill(request.text.length);
    },
  };
  const cached = new CachedSpeechEngine(engine, new SpeechCache({ dir: freshDir(), maxBytes: 1e6 }));
  t.equal(cached.id, 'fake');
  t.equal(await cached.available(), true);
  const first = await cached.synthesize({ text: 'abc', voice: 'en-US' });
  await cached.synthesize({ text: 'abc', voice: 'en-US' });
  t.equal(calls, 1);
  t.equal(first[0], 3);
});

t.test('a process that starts on a full folder counts what others wrote before evicting', async (t) => {
  const dir = freshDir();
  let clock = 1_700_000_000_000;
  const now = (): number => (clock += 1_000);
  const fake = counting();
  const first = new SpeechCache({ dir, maxBytes: 5_400, memoryBytes: 0, now });
  for (const text of ['a', 'b', 'c']) await first.get(key(text), fake.synthesize(text));
  const second = new SpeechCache({ dir, maxBytes: 5_400, memoryBytes: 0, now });
  await second.get(key('d'), fake.synthesize('d'));
  t.same(audioFiles(dir), ['b', 'c', 'd'].map((x) => `${SpeechCache.hash(key(x))}.pcm`).sort(), 'the oldest, written by the other, went');
});
