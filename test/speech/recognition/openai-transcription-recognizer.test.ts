import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import t, { type Test } from 'tap';
import { OpenAiTranscriptionSimulator, type SimTranscriptionRequest } from '../../../src/sim/speech/openai-transcription-simulator.js';
import { SpeechBusyError, SpeechError, SpeechFailedError, SpeechInputError, SpeechUnavailableError } from '../../../src/speech/errors.js';
import { OpenAiTranscriptionRecognizer, type OpenAiTranscriptionOptions } from '../../../src/speech/recognition/openai-transcription-recognizer.js';
import { ScriptedRecognizer } from '../../../src/speech/recognition/scripted-recognizer.js';
import { classifyTranscriptionFailure, OPENAI_TRANSCRIPTION_ERRORS } from '../../../src/speech/recognition/transcription-errors-table.js';

const KEY = 'sk-ferry-stt-9c2e4b7a1d3f5e60';
/** Half a second of a 300 Hz tone at 8 kHz: audio to upload (the simulator hears it as scripted). */
const UTTERANCE = new Int16Array(4_000).map((_, i) => Math.round(5_000 * Math.sin((2 * Math.PI * 300 * i) / 8_000)));

const sim = new OpenAiTranscriptionSimulator();
t.before(() => sim.start({ apiKey: KEY }));
t.teardown(() => sim.stop());

function recognizer(options: Partial<OpenAiTranscriptionOptions> = {}): OpenAiTranscriptionRecognizer {
  return new OpenAiTranscriptionRecognizer({ id: 'whisper', baseUrl: sim.baseUrl, apiKey: KEY, model: 'whisper-1', locales: ['en-US', 'fr-FR'], timeoutMs: 3_000, ...options });
}

async function observe<T>(run: () => Promise<T>): Promise<{ requests: SimTranscriptionRequest[]; result: T | undefined; error: unknown }> {
  const before = sim.requests.length;
  let result: T | undefined;
  let error: unknown;
  try {
    result = await run();
  } catch (err) {
    error = err;
  }
  return { requests: sim.requests.slice(before), result, error };
}

function checkError(t: Test, error: unknown, type: typeof SpeechError, retryable: boolean): SpeechError {
  t.type(error, type);
  const err = error as SpeechError;
  t.equal(err.retryable, retryable, `${err.name} retryable: ${retryable}`);
  for (const printed of [err.message, String(err.stack), inspect(err, { depth: 10 })]) t.notOk(printed.includes(KEY), 'no key in the error');
  return err;
}

t.test('json: the transcript, with language from the locale and the hints as prompt', async (t) => {
  sim.script('I want to talk to a person');
  const { requests, result } = await observe(() => recognizer().recognize({ pcm: UTTERANCE, locale: 'en-US', hints: ['Ferry', 'transfer'] }));
  t.equal(result?.text, 'I want to talk to a person');
  t.ok(result!.engineMs >= 0);
  t.equal(result?.confidence, undefined, 'json gives no confidence');
  t.match(requests, [{ authorized: true, model: 'whisper-1', language: 'en', prompt: 'Ferry, transfer', responseFormat: 'json', fileName: 'utterance.wav', sampleRate: 8_000, audioSeconds: 0.5, heardBy: 'script', status: 200 }]);
  const extra = requests[0].headerNames.filter((name) => name.startsWith('x-stainless') || name.startsWith('openai-'));
  t.same(extra, [], 'no SDK telemetry headers');
});

t.test('text and verbose_json answers', async (t) => {
  sim.script('Bonjour', 'hello again');
  const text = await recognizer({ responseFormat: 'text' }).recognize({ pcm: UTTERANCE, locale: 'fr-FR' });
  t.equal(text.text, 'Bonjour', 'the trailing newline of a text answer is not part of it');
  const verbose = await recognizer({ responseFormat: 'verbose_json' }).recognize({ pcm: UTTERANCE, locale: 'en' });
  t.equal(verbose.text, 'hello again');
  t.ok(verbose.confidence! > 0.8 && verbose.confidence! < 0.82, `confidence ${verbose.confidence} = e^-0.2`);
  const silent = await recognizer().recognize({ pcm: UTTERANCE, locale: 'en-US' });
  t.equal(silent.text, '', 'nothing scripted and no recognizer: heard as silence');
});

t.test('checked before anything is sent: locale, key, audio', async (t) => {
  const { requests } = await observe(async () => {
    await t.rejects(recognizer().recognize({ pcm: UTTERANCE, locale: 'de-DE' }), SpeechInputError);
    await t.rejects(recognizer({ apiKey: '' }).recognize({ pcm: UTTERANCE, locale: 'en-US' }), SpeechUnavailableError);
    await t.rejects(recognizer({ maxSeconds: 0.1 }).recognize({ pcm: UTTERANCE, locale: 'en-US' }), /over the limit/);
    t.same((await recognizer().recognize({ pcm: new Int16Array(0), locale: 'en-US' })).text, '', 'no audio, nothing to hear');
  });
  t.equal(requests.length, 0);
  t.equal(await recognizer({ apiKey: '' }).available(), false);
  t.equal(await recognizer().available(), true);
  t.same(await recognizer({ locales: ['en-us', 'tw-gh'] }).locales(), ['en-US', 'tw-GH']);
});

t.test('a wrong key: 401 is SpeechUnavailableError, not retried', async (t) => {
  const wrong = 'sk-wrong-5d1c9e7f3a';
  const { requests, error } = await observe(() => recognizer({ apiKey: wrong }).recognize({ pcm: UTTERANCE, locale: 'en-US' }));
  const err = checkError(t, error, SpeechUnavailableError, false);
  t.match(err.message, /speech-to-text provider "whisper": the provider refused the key \(HTTP 401\)/);
  t.notOk(err.message.includes(wrong));
  t.equal(requests.length, 1, 'one request only');
});

t.test('429: retried after its Retry-After, a bounded number of times', async (t) => {
  sim.fail({ status: 429, retryAfterSeconds: 0, times: 1 });
  sim.script('after the wait');
  const once = await observe(() => recognizer().recognize({ pcm: UTTERANCE, locale: 'en-US' }));
  t.equal(once.result?.text, 'after the wait');
  t.same(once.requests.map((r) => r.status), [429, 200]);

  sim.fail({ status: 429, retryAfterSeconds: 0, times: 3 });
  const always = await observe(() => recognizer({ retries: 2 }).recognize({ pcm: UTTERANCE, locale: 'en-US' }));
  t.equal(checkError(t, always.error, SpeechBusyError, true).retryAfterMs, 0);
  t.same(always.requests.map((r) => r.status), [429, 429, 429], 'three attempts, then the caller decides');
  sim.fail({ status: 429, retryAfterSeconds: 30 });
  const long = await observe(() => recognizer({ retries: 2 }).recognize({ pcm: UTTERANCE, locale: 'en-US' }));
  t.equal(checkError(t, long.error, SpeechBusyError, true).retryAfterMs, 30_000);
  t.equal(long.requests.length, 1, 'a Retry-After over maxRetryWaitMs is left to the caller');
  sim.script('back to normal');
  t.equal((await recognizer().recognize({ pcm: UTTERANCE, locale: 'en-US' })).text, 'back to normal', 'no fault left over');
});

t.test('5xx: retryable SpeechFailedError; 400 about the audio: SpeechInputError, final', async (t) => {
  sim.fail({ status: 503, times: 2 });
  const broken = await observe(() => recognizer().recognize({ pcm: UTTERANCE, locale: 'en-US' }));
  checkError(t, broken.error, SpeechFailedError, true);
  t.same(broken.requests.map((r) => r.status), [503, 503]);
  sim.fail({ status: 400, message: 'Audio file might be corrupted or unsupported' });
  const bad = await observe(() => recognizer().recognize({ pcm: UTTERANCE, locale: 'en-US' }));
  t.match(checkError(t, bad.error, SpeechInputError, false).message, /Audio file might be corrupted or unsupported \(HTTP 400\)/);
  t.equal(bad.requests.length, 1);
  const unknownModel = new OpenAiTranscriptionSimulator({ models: ['gpt-4o-mini-transcribe'] });
  await unknownModel.start({ apiKey: KEY });
  t.teardown(() => unknownModel.stop());
  const error = await recognizer({ baseUrl: unknownModel.baseUrl }).recognize({ pcm: UTTERANCE, locale: 'en-US' }).catch((err: unknown) => err);
  t.match(checkError(t, error, SpeechInputError, false).message, /The model 'whisper-1' does not exist\. \(HTTP 404\)/);
});

t.test('a timeout: retryable SpeechFailedError, not retried (the caller is waiting)', async (t) => {
  sim.delay(2_000);
  const slow = await observe(() => recognizer({ timeoutMs: 300 }).recognize({ pcm: UTTERANCE, locale: 'en-US' }));
  t.match(checkError(t, slow.error, SpeechFailedError, true).message, /no answer within 300 ms \(timeout\)/);
  t.equal(slow.requests.length, 1);
  sim.script('on time');
  t.equal((await recognizer().recognize({ pcm: UTTERANCE, locale: 'en-US' })).text, 'on time', 'the next one is heard');
});

t.test('the recognizer does not show the key when printed', async (t) => {
  const stt = recognizer();
  t.notOk(inspect(stt, { depth: 10, showHidden: true }).includes(KEY));
  t.notOk(JSON.stringify(stt).includes(KEY));
});

t.test('the SDK is imported on first use only', async (t) => {
  const source = readFileSync(new URL('../../../src/speech/recognition/openai-transcription-recognizer.ts', import.meta.url), 'utf8');
  t.notMatch(source, /^import (?!type )[^;]*from 'openai'/m, 'no value import of openai at the top');
  t.match(source, /loadOpenAiSdk\(\)/, 'the SDK comes from the shared loader, on first use');
  const loader = readFileSync(new URL('../../../src/util/openai-compatible.ts', import.meta.url), 'utf8');
  t.notMatch(loader, /^import (?!type )[^;]*from 'openai'/m, 'which has no value import of openai at the top either');
  t.match(loader, /import\('openai'\)/);
});

t.test('the error table, row by row', async (t) => {
  const expected: Record<string, [typeof SpeechError, boolean]> = {
    '400': [SpeechInputError, false],
    '401': [SpeechUnavailableError, false],
    '403': [SpeechUnavailableError, false],
    '404': [SpeechInputError, false],
    '408': [SpeechFailedError, true],
    '409': [SpeechFailedError, true],
    '413': [SpeechInputError, false],
    '415': [SpeechInputError, false],
    '422': [SpeechInputError, false],
    '429': [SpeechBusyError, true],
    timeout: [SpeechFailedError, true],
    connection: [SpeechFailedError, true],
    unreadable: [SpeechFailedError, true],
    'too-large': [SpeechFailedError, false],
    '500': [SpeechFailedError, true],
    '418': [SpeechFailedError, false],
  };
  for (const code of Object.keys(OPENAI_TRANSCRIPTION_ERRORS)) t.ok(code in expected, `row ${code} is tested`);
  for (const [code, [type, retryable]] of Object.entries(expected)) {
    const err = classifyTranscriptionFailure({ engine: 'whisper', code: code as `${number}`, detail: `said ${KEY}`, secrets: [KEY] });
    t.ok(err instanceof type && err.retryable === retryable, `${code} → ${type.name}, retryable ${retryable}`);
    t.notOk(err.message.includes(KEY));
  }
});

t.test('ScriptedRecognizer: queued transcripts in order, then silence', async (t) => {
  const caller = new ScriptedRecognizer(['hello'], { locales: ['en-GB'] });
  caller.push('I want to talk to a person');
  t.equal(caller.pending, 2);
  t.equal((await caller.recognize({ pcm: UTTERANCE, locale: 'en-GB', hints: ['person'] })).text, 'hello');
  t.equal((await caller.recognize({ pcm: UTTERANCE, locale: 'en' })).text, 'I want to talk to a person');
  t.equal((await caller.recognize({ pcm: UTTERANCE, locale: 'en-GB' })).text, '');
  await t.rejects(caller.recognize({ pcm: UTTERANCE, locale: 'fr-FR' }), SpeechInputError);
  t.same(caller.requests.map((r) => [r.samples, r.locale, r.hints, r.text]), [
    [4_000, 'en-GB', ['person'], 'hello'],
    [4_000, 'en', undefined, 'I want to talk to a person'],
    [4_000, 'en-GB', undefined, ''],
  ]);
});
