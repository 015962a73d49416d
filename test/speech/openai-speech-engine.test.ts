import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import t, { type Test } from 'tap';
import { analyzeAudio } from '../../src/audio/analysis.js';
import { OpenAiSpeechSimulator, type SimSpeechRequest } from '../../src/sim/speech/openai-speech-simulator.js';
import { SpeechBusyError, SpeechError, SpeechFailedError, SpeechInputError, SpeechUnavailableError } from '../../src/speech/errors.js';
import { OpenAiSpeechEngine, type OpenAiSpeechEngineOptions } from '../../src/speech/openai-speech-engine.js';
import { classifySpeechFailure, OPENAI_SPEECH_ERRORS, sanitiseDetail } from '../../src/speech/speech-errors-table.js';
import { findVoice } from '../../src/speech/voices.js';

const KEY = 'sk-ferry-test-3f9a1c0d7e5b42a8';
const TWI = 'Akwaaba, yɛfrɛ wo firi Ferry';

const sim = new OpenAiSpeechSimulator({ slowMs: 3_000 });
t.before(() => sim.start({ apiKey: KEY }));
t.teardown(() => sim.stop());

function engine(options: Partial<OpenAiSpeechEngineOptions> = {}): OpenAiSpeechEngine {
  return new OpenAiSpeechEngine({
    id: 'mms',
    baseUrl: sim.baseUrl,
    apiKey: KEY,
    model: 'mms-tts',
    voices: [
      { locale: 'tw-GH', voice: 'twi', name: 'Twi (MMS)', quality: 'natural' },
      { locale: 'ee-GH', voice: 'ewe', name: 'Ewe (MMS)', gender: 'male', quality: 'natural' },
    ],
    timeoutMs: 5_000,
    maxTextLength: 1_000,
    maxAudioBytes: 4 * 1024 * 1024,
    concurrency: 2,
    ...options,
  });
}

/** The requests the simulator received while `run` ran, and what `run` settled with. */
async function observe<T>(run: () => Promise<T>): Promise<{ requests: SimSpeechRequest[]; result: T | undefined; error: unknown }> {
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

/** Asserts `error` is a SpeechError of `type` and has no trace of the key, however it is printed. */
function checkError(t: Test, error: unknown, type: typeof SpeechError, retryable: boolean): SpeechError {
  t.type(error, type);
  const err = error as SpeechError;
  t.equal(err.retryable, retryable, `${err.name} retryable: ${retryable}`);
  for (const printed of [err.message, String(err.stack), inspect(err, { depth: 10 }), JSON.stringify(err)]) {
    t.notOk(printed.includes(KEY), 'the key appears nowhere in the error');
  }
  return err;
}

t.test('tw-GH: non-silent 8 kHz audio about as long as the text takes to say', async (t) => {
  const { requests, result: pcm } = await observe(() => engine().synthesize({ text: TWI, voice: 'tw-GH' }));
  t.type(pcm, Int16Array);
  const analysis = analyzeAudio(pcm!, 8_000);
  const letters = TWI.replace(/\s/g, '').length;
  t.ok(analysis.durationSeconds > letters * 0.06 && analysis.durationSeconds < letters * 0.07 + 0.5, `${analysis.durationSeconds} s`);
  t.ok(analysis.nonSilentShare > 0.6, `${analysis.nonSilentShare} of the frames are sound`);
  t.ok(analysis.rmsDbfs > -30, `level ${analysis.rmsDbfs} dBFS`);
  t.equal(requests.length, 1);
  t.match(requests[0], { authorized: true, model: 'mms-tts', voice: 'twi', input: TWI, responseFormat: 'wav', speed: undefined, status: 200 });

  const ewe = await observe(() => engine().synthesize({ text: 'Woezɔ', voice: 'ewe', rate: 300 }));
  t.match(ewe.requests, [{ voice: 'ewe', speed: 2 }], 'a voice by id; 300 words a minute is speed 2');
});

t.test('a 16 kHz server (as MMS-TTS servers answer) and a streamed WAV header decode the same way', async (t) => {
  const mms = new OpenAiSpeechSimulator({ sampleRate: 16_000 });
  await mms.start({ apiKey: KEY });
  t.teardown(() => mms.stop());
  const at24k = await engine().synthesize({ text: TWI, voice: 'tw-GH' });
  const at16k = await engine({ baseUrl: mms.baseUrl }).synthesize({ text: TWI, voice: 'tw-GH' });
  t.ok(Math.abs(at16k.length - at24k.length) <= 2, `${at16k.length} ≈ ${at24k.length} samples at 8 kHz`);
  const streamed = await engine().synthesize({ text: `[[chunked]] ${TWI}`, voice: 'tw-GH' });
  t.ok(Math.abs(streamed.length - at24k.length) <= 2, 'no Content-Length, data size 0xffffffff: the same audio');
});

t.test('the catalogue: the configured locales under the engine id, with their quality', async (t) => {
  const mms = engine();
  t.equal(await mms.available(), true);
  const voices = await mms.voices();
  t.same(voices, [
    { id: 'twi', locale: 'tw-GH', alsoServes: [{ locale: 'tw', priority: 5 }], name: 'Twi (MMS)', gender: 'unknown', engine: 'mms', quality: 'natural' },
    { id: 'ewe', locale: 'ee-GH', alsoServes: [{ locale: 'ee', priority: 5 }], name: 'Ewe (MMS)', gender: 'male', engine: 'mms', quality: 'natural' },
  ]);
  t.equal(findVoice(voices, 'tw')?.id, 'twi', 'plain "tw" finds the Twi voice');
  voices[0].alsoServes.push({ locale: 'xx', priority: 1 });
  t.equal((await mms.voices())[0].alsoServes.length, 1, 'callers get copies');

  const shared = engine({ voices: [{ locale: 'ak-GH', voice: 'twi', quality: 'robotic' }, { locale: 'tw-GH', voice: 'twi', quality: 'robotic' }] });
  t.match(await shared.voices(), [{ id: 'twi', locale: 'ak-GH', alsoServes: [{ locale: 'ak' }, { locale: 'tw-GH' }], quality: 'robotic' }]);
  t.equal((await shared.voices()).length, 1, 'one voice for two locales is one entry');
});

t.test('no key configured: unavailable, and nothing is sent', async (t) => {
  const keyless = engine({ apiKey: '' });
  t.equal(await keyless.available(), false);
  const { requests, error } = await observe(() => keyless.synthesize({ text: TWI, voice: 'tw-GH' }));
  checkError(t, error, SpeechUnavailableError, false);
  t.equal(requests.length, 0);
});

t.test('a wrong key: SpeechUnavailableError "provider refused the key", not retried', async (t) => {
  const wrongKey = 'sk-wrong-key-6b1e0a2f9c';
  const { requests, error } = await observe(() => engine({ apiKey: wrongKey }).synthesize({ text: TWI, voice: 'tw-GH' }));
  const err = checkError(t, error, SpeechUnavailableError, false);
  t.match(err.message, /speech provider "mms": the provider refused the key \(HTTP 401\)/);
  t.notOk(err.message.includes(wrongKey), 'nor the wrong key');
  t.match(requests, [{ authorized: false, status: 401 }]);
  t.equal(requests.length, 1);
});

t.test('an unknown voice: refused here, or by the provider with its message', async (t) => {
  const local = await observe(() => engine().synthesize({ text: TWI, voice: 'fr-FR' }));
  t.match(checkError(t, local.error, SpeechInputError, false).message, /has no voice for "fr-FR"/);
  t.equal(local.requests.length, 0, 'a locale the engine lacks never reaches the provider');

  const configured = engine({ voices: [{ locale: 'ak-GH', voice: 'fante', quality: 'natural' }] });
  const remote = await observe(() => configured.synthesize({ text: TWI, voice: 'ak-GH' }));
  const err = checkError(t, remote.error, SpeechInputError, false);
  t.match(err.message, /Invalid value for 'voice': "fante"\. Supported values are: 'twi', 'ewe'\. \(HTTP 400\)/);
  t.equal(remote.requests.length, 1);
});

t.test('text and rate are checked before anything is sent', async (t) => {
  const mms = engine({ maxTextLength: 20 });
  const { requests } = await observe(async () => {
    for (const request of [
      { text: '', voice: 'tw-GH' },
      { text: ' \u0000\u0007 ', voice: 'tw-GH' },
      { text: 'a'.repeat(21), voice: 'tw-GH' },
      { text: 'Akwaaba', voice: 'tw-GH', rate: 40 },
      { text: 'Akwaaba', voice: 'tw-GH', rate: Number.NaN },
    ]) {
      await t.rejects(mms.synthesize(request), SpeechInputError, JSON.stringify(request));
    }
  });
  t.equal(requests.length, 0);
});

t.test('429 then success: retried once after its Retry-After', async (t) => {
  const text = `[[429*1]] ${TWI}`;
  const { requests, result } = await observe(() => engine().synthesize({ text, voice: 'tw-GH' }));
  t.ok(result && result.length > 0, 'spoken');
  t.same(
    requests.map((r) => [r.input, r.status]),
    [
      [text, 429],
      [text, 200],
    ],
    'exactly 2 requests',
  );
});

t.test('429 every time: SpeechBusyError, retryable, with the provider\'s Retry-After', async (t) => {
  const always = await observe(() => engine().synthesize({ text: `[[429]] ${TWI}`, voice: 'tw-GH' }));
  const err = checkError(t, always.error, SpeechBusyError, true);
  t.equal(err.retryAfterMs, 1_000);
  t.equal(always.requests.length, 2, 'one retry, then the caller decides');

  const impatient = await observe(() => engine({ maxRetryWaitMs: 500 }).synthesize({ text: `[[429]] ${TWI}`, voice: 'tw-GH' }));
  t.equal(checkError(t, impatient.error, SpeechBusyError, true).retryAfterMs, 1_000);
  t.equal(impatient.requests.length, 1, 'a Retry-After over maxRetryWaitMs is left to the caller');

  const never = await observe(() => engine({ retries: 0 }).synthesize({ text: `[[429]] ${TWI}`, voice: 'tw-GH' }));
  t.equal(never.requests.length, 1, 'retries: 0');
});

t.test('5xx: SpeechFailedError, retryable, after one retry', async (t) => {
  const broken = await observe(() => engine().synthesize({ text: `[[500]] ${TWI}`, voice: 'tw-GH' }));
  t.match(checkError(t, broken.error, SpeechFailedError, true).message, /had an error .* \(HTTP 500\)/);
  t.same(broken.requests.map((r) => r.status), [500, 500]);

  const once = await observe(() => engine().synthesize({ text: `[[503*1]] ${TWI}`, voice: 'tw-GH' }));
  t.type(once.result, Int16Array, 'a passing 503 is retried to success');
  t.same(once.requests.map((r) => r.status), [503, 200]);
});

t.test('a timeout is a retryable SpeechFailedError, not retried here', async (t) => {
  const slow = await observe(() => engine({ timeoutMs: 300 }).synthesize({ text: `[[slow]] ${TWI}`, voice: 'tw-GH' }));
  t.match(checkError(t, slow.error, SpeechFailedError, true).message, /no complete answer within 300 ms \(timeout\)/);
  t.equal(slow.requests.length, 1);

  // Headers and half the audio, then nothing: the deadline covers reading the body, which the SDK's timeout does not.
  const stalled = await observe(() => engine({ timeoutMs: 300 }).synthesize({ text: `[[slow-body]] ${TWI}`, voice: 'tw-GH' }));
  t.match(checkError(t, stalled.error, SpeechFailedError, true).message, /\(timeout\)/);
  t.match(stalled.requests, [{ status: 200, completed: false }]);
});

t.test('oversized audio is refused, by Content-Length or while streaming', async (t) => {
  const declared = await observe(() => engine({ maxAudioBytes: 20_000 }).synthesize({ text: TWI, voice: 'tw-GH' }));
  t.match(checkError(t, declared.error, SpeechFailedError, false).message, /the audio is \d+ bytes, over the limit of 20000 \(too-large\)/);
  t.equal(declared.requests.length, 1, 'not retried');

  const endless = await observe(() => engine({ maxAudioBytes: 64 * 1024 }).synthesize({ text: `[[endless]] ${TWI}`, voice: 'tw-GH' }));
  t.match(checkError(t, endless.error, SpeechFailedError, false).message, /over the limit of 65536 bytes \(too-large\)/);
  const entry = endless.requests[0];
  // The simulator notices the cancelled stream and stops writing; bounded wait, no timing asserted.
  for (let i = 0; i < 200 && !entry.completed && (await stillWriting(entry)); i++);
  t.equal(entry.completed, false, 'reading stopped at the cap: the 32 MB stream never finished');
});

async function stillWriting(entry: SimSpeechRequest): Promise<boolean> {
  const before = entry.bytesSent;
  await new Promise((r) => setTimeout(r, 20));
  return entry.bytesSent !== before;
}

t.test('an answer that is not WAV: SpeechFailedError, not retried', async (t) => {
  const mp3 = await observe(() => engine().synthesize({ text: `[[mp3]] ${TWI}`, voice: 'tw-GH' }));
  t.match(checkError(t, mp3.error, SpeechFailedError, false).message, /the audio is unusable: not a WAV file \(unreadable\)/);
  t.equal(mp3.requests.length, 1);
});

t.test('a provider that repeats the key back: its message is kept, the key is not', async (t) => {
  const echo = await observe(() => engine().synthesize({ text: `[[echo]] ${TWI}`, voice: 'tw-GH' }));
  const err = checkError(t, echo.error, SpeechInputError, false);
  t.match(err.message, /Authorization: \[redacted\]/);
  t.equal(echo.requests[0].status, 400, 'the simulator did send the key back');
});

t.test('only the headers the API needs reach the provider, whatever OPENAI_* the host has', async (t) => {
  const saved = { org: process.env.OPENAI_ORG_ID, custom: process.env.OPENAI_CUSTOM_HEADERS };
  process.env.OPENAI_ORG_ID = 'org-of-someone-else';
  process.env.OPENAI_CUSTOM_HEADERS = 'X-Internal-Token: hush';
  t.teardown(() => {
    for (const [name, value] of [['OPENAI_ORG_ID', saved.org], ['OPENAI_CUSTOM_HEADERS', saved.custom]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  const { requests } = await observe(() => engine().synthesize({ text: TWI, voice: 'tw-GH' }));
  const names = new Set(requests[0].headerNames);
  for (const needed of ['authorization', 'content-type', 'accept']) t.ok(names.has(needed), `${needed} sent`);
  const extra = [...names].filter((name) => !['host', 'connection', 'content-length', 'accept', 'authorization', 'content-type', 'user-agent', 'accept-encoding', 'accept-language', 'sec-fetch-mode'].includes(name));
  t.same(extra, [], 'no X-Stainless-*, OpenAI-Organization or custom headers');
});

t.test('the engine itself does not show the key when printed', async (t) => {
  const mms = engine();
  t.notOk(inspect(mms, { depth: 10, showHidden: true }).includes(KEY));
  t.notOk(JSON.stringify(mms).includes(KEY));
});

t.test('connection failures: retryable, retried once', async (t) => {
  let accepted = 0;
  // Accepts each request and hangs up without a word.
  const rude = createServer((req) => {
    accepted++;
    req.socket.destroy();
  });
  await new Promise<void>((resolve) => rude.listen(0, '127.0.0.1', resolve));
  const port = (rude.address() as AddressInfo).port;
  const hungUp = await engine({ baseUrl: `http://127.0.0.1:${port}/v1` })
    .synthesize({ text: TWI, voice: 'tw-GH' })
    .catch((err: unknown) => err);
  t.match(checkError(t, hungUp, SpeechFailedError, true).message, /cannot reach the provider .* \(connection\)/);
  t.equal(accepted, 2, 'two attempts');
  await new Promise<void>((resolve) => rude.close(() => resolve()));

  // The same port, now with nobody listening.
  const refused = await engine({ baseUrl: `http://127.0.0.1:${port}/v1`, retries: 0 })
    .synthesize({ text: TWI, voice: 'tw-GH' })
    .catch((err: unknown) => err);
  t.match(checkError(t, refused, SpeechFailedError, true).message, /cannot reach the provider \(ECONNREFUSED\) \(connection\)/);
});

t.test('error bodies in other servers\' shapes still give the provider\'s words', async (t) => {
  const bodies = [
    [422, '{"detail":"Text contains unsupported characters"}', /Text contains unsupported characters \(HTTP 422\)/],
    [400, '{"error":"voice twi is not loaded"}', /voice twi is not loaded \(HTTP 400\)/],
    [404, 'model not found', /model not found \(HTTP 404\)/],
    [400, `{"error":{"message":"${'x'.repeat(50_000)}"}}`, /x{150,}… \(HTTP 400\)/],
  ] as const;
  let next = 0;
  const seen: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    const [status, body] = bodies[next++];
    seen.push(status);
    res.writeHead(status, { 'content-type': body.startsWith('{') ? 'application/json' : 'text/plain' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const mms = engine({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` });
  for (const [status, , message] of bodies) {
    const error = await mms.synthesize({ text: TWI, voice: 'tw-GH' }).catch((err: unknown) => err);
    t.match(checkError(t, error, SpeechInputError, false).message, message, `HTTP ${status}`);
  }
  t.same(seen, [422, 400, 404, 400]);
});

t.test('busy: past maxQueued waiting requests, refused at once', async (t) => {
  const mms = engine({ concurrency: 1, maxQueued: 1, timeoutMs: 500 });
  const first = mms.synthesize({ text: `[[slow]] ${TWI}`, voice: 'tw-GH' }).catch((err: unknown) => err);
  const second = mms.synthesize({ text: TWI, voice: 'tw-GH' });
  const third = await mms.synthesize({ text: TWI, voice: 'tw-GH' }).catch((err: unknown) => err);
  checkError(t, third, SpeechBusyError, true);
  checkError(t, await first, SpeechFailedError, true);
  t.type(await second, Int16Array, 'the queued one ran after');
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
    '422': [SpeechInputError, false],
    '429': [SpeechBusyError, true],
    timeout: [SpeechFailedError, true],
    connection: [SpeechFailedError, true],
    unreadable: [SpeechFailedError, false],
    'too-large': [SpeechFailedError, false],
    // Not listed: by status.
    '500': [SpeechFailedError, true],
    '502': [SpeechFailedError, true],
    '418': [SpeechFailedError, false],
  };
  for (const code of Object.keys(OPENAI_SPEECH_ERRORS)) t.ok(code in expected, `row ${code} is tested`);
  for (const [code, [type, retryable]] of Object.entries(expected)) {
    const err = classifySpeechFailure({ engine: 'mms', code: code as `${number}`, detail: `said ${KEY}`, secrets: [KEY] });
    t.ok(err instanceof type && err.retryable === retryable, `${code} → ${type.name}, retryable ${retryable}`);
    t.notOk(err.message.includes(KEY), `${code}: no key`);
  }
  const refused = classifySpeechFailure({ engine: 'mms', code: '401', detail: 'Incorrect API key provided: sk-abc***xyz', secrets: [KEY] });
  t.equal(refused.message, 'speech provider "mms": the provider refused the key (HTTP 401)', 'a fixed text, never the provider\'s');
});

t.test('provider messages are sanitised: one printable line, no tokens, bounded', async (t) => {
  t.equal(sanitiseDetail('bad\r\n\tvoice\u0000 "x"', []), 'bad voice "x"');
  t.equal(sanitiseDetail(`key ${KEY} rejected`, [KEY]), 'key [redacted] rejected');
  t.equal(sanitiseDetail('header Authorization: Bearer abc.def rejected', []), 'header Authorization: [redacted] rejected');
  t.equal(sanitiseDetail('other key sk-proj-AAAAbbbbCCCC1234 rejected', []), 'other key [redacted] rejected');
  const long = sanitiseDetail('y'.repeat(1_000), []);
  t.equal(long.length, 200);
  t.ok(long.endsWith('…'));
});
