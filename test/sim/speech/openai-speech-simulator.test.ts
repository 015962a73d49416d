import t from 'tap';
import { analyzeAudio } from '../../../src/audio/analysis.js';
import { decodeWav } from '../../../src/audio/wav.js';
import { OpenAiSpeechSimulator } from '../../../src/sim/speech/openai-speech-simulator.js';

const KEY = 'sim-key-0123456789';
const LIMITS = { maxBytes: 64 * 1024 * 1024, maxDurationSeconds: 120, streamedLength: true };

const sim = new OpenAiSpeechSimulator({ slowMs: 2_000 });
t.before(() => sim.start({ apiKey: KEY }));
t.teardown(() => sim.stop());

function speak(body: unknown, init: { key?: string | null; raw?: string; signal?: AbortSignal } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key !== null) headers.authorization = `Bearer ${init.key ?? KEY}`;
  const request = { method: 'POST', headers, body: init.raw ?? JSON.stringify(body), signal: init.signal };
  return fetch(`${sim.baseUrl}/audio/speech`, request);
}

async function errorOf(response: Response): Promise<{ message: string; type: string; code: string | null; param: string | null }> {
  if (response.headers.get('content-type') !== 'application/json') throw new Error(`not JSON: ${response.headers.get('content-type')}`);
  const body = (await response.json()) as { error: { message: string; type: string; code: string | null; param: string | null } };
  return body.error;
}

const OK = { model: 'mms-tts', voice: 'twi', input: 'Akwaaba, yɛfrɛ wo firi Ferry', response_format: 'wav' };

t.test('a WAV at 24 kHz, non-silent, about 70 ms a character, not the same for every text', async (t) => {
  const response = await speak(OK);
  t.equal(response.status, 200);
  t.equal(response.headers.get('content-type'), 'audio/wav');
  const wav = decodeWav(new Uint8Array(await response.arrayBuffer()), { ...LIMITS, streamedLength: false });
  t.equal(wav.sampleRate, 24_000);
  const analysis = analyzeAudio(wav.pcm, wav.sampleRate);
  const letters = OK.input.replace(/\s/g, '').length;
  t.ok(analysis.durationSeconds > letters * 0.06 && analysis.durationSeconds < letters * 0.07 + 0.5, `${analysis.durationSeconds} s`);
  t.ok(analysis.nonSilentShare > 0.6, `${analysis.nonSilentShare} of the frames are sound`);
  t.ok(analysis.dominantFrequencyHz >= 100 && analysis.dominantFrequencyHz <= 800, `voice-like pitch ${analysis.dominantFrequencyHz} Hz`);

  const longer = await speak({ ...OK, input: `${OK.input} ${OK.input}` });
  const long = decodeWav(new Uint8Array(await longer.arrayBuffer()), LIMITS);
  t.ok(long.pcm.length > wav.pcm.length * 1.8, 'twice the text, about twice the audio');

  const faster = await speak({ ...OK, speed: 2 });
  const fast = decodeWav(new Uint8Array(await faster.arrayBuffer()), LIMITS);
  t.ok(fast.pcm.length < wav.pcm.length * 0.6, 'speed 2 speaks in about half the time');
});

t.test('response_format pcm: raw 16-bit little-endian at the same rate', async (t) => {
  const wav = decodeWav(new Uint8Array(await (await speak(OK)).arrayBuffer()), LIMITS);
  const response = await speak({ ...OK, response_format: 'pcm' });
  t.equal(response.status, 200);
  t.equal(response.headers.get('content-type'), 'audio/pcm');
  const bytes = Buffer.from(await response.arrayBuffer());
  t.equal(bytes.length, wav.pcm.length * 2);
  t.equal(bytes.readInt16LE(2_000), wav.pcm[1_000], 'the same samples without the header');
});

t.test('the key: missing or wrong is 401 in OpenAI error shape', async (t) => {
  for (const key of [null, 'wrong-key', `${KEY}x`]) {
    const response = await speak(OK, { key });
    t.equal(response.status, 401, `key ${String(key)}`);
    const error = await errorOf(response);
    t.equal(error.code, 'invalid_api_key');
    t.equal(error.type, 'invalid_request_error');
  }
  const entry = sim.requests.at(-1)!;
  t.equal(entry.authorized, false);
  t.equal(entry.status, 401);
});

t.test('the body is validated: 400 naming the parameter', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['no input', { ...OK, input: undefined }, 'input'],
    ['empty input', { ...OK, input: '' }, 'input'],
    ['input over 4096', { ...OK, input: 'a'.repeat(4_097) }, 'input'],
    ['no model', { ...OK, model: undefined }, 'model'],
    ['unknown voice', { ...OK, voice: 'alloy' }, 'voice'],
    ['mp3 (the default format)', { ...OK, response_format: undefined }, 'response_format'],
    ['unknown format', { ...OK, response_format: 'ogg' }, 'response_format'],
    ['speed out of range', { ...OK, speed: 9 }, 'speed'],
  ];
  for (const [name, body, param] of cases) {
    const response = await speak(body);
    t.equal(response.status, 400, name);
    t.equal((await errorOf(response)).param, param, `${name} names ${param}`);
  }
  const unknownVoice = await speak({ ...OK, voice: 'alloy' });
  t.match((await errorOf(unknownVoice)).message, /'twi', 'ewe'/, 'the message lists the voices');
  const badJson = await speak(null, { raw: '{"input": ' });
  t.equal(badJson.status, 400);
  t.match((await errorOf(badJson)).message, /could not parse the JSON/);
});

t.test('bounded body: over 64 kB is 413', async (t) => {
  const response = await speak(null, { raw: JSON.stringify({ ...OK, input: 'a'.repeat(70 * 1024) }) });
  t.equal(response.status, 413);
});

t.test('other paths are 404, other methods 405', async (t) => {
  const other = await fetch(`${sim.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } });
  t.equal(other.status, 404);
  t.equal((await errorOf(other)).type, 'invalid_request_error');
  const get = await fetch(`${sim.baseUrl}/audio/speech`, { headers: { authorization: `Bearer ${KEY}` } });
  t.equal(get.status, 405);
  await get.arrayBuffer();
});

t.test('scripted faults by input prefix', async (t) => {
  const throttled = await speak({ ...OK, input: '[[429]] Akwaaba' });
  t.equal(throttled.status, 429);
  t.equal(throttled.headers.get('retry-after'), '1');
  t.equal((await errorOf(throttled)).code, 'rate_limit_exceeded');

  const broken = await speak({ ...OK, input: '[[500]] Akwaaba' });
  t.equal(broken.status, 500);
  t.equal((await errorOf(broken)).type, 'server_error');

  const once = { ...OK, input: '[[503*1]] Woezɔ' };
  t.equal((await speak(once)).status, 503, 'the first time');
  const second = await speak(once);
  t.equal(second.status, 200, 'then spoken');
  const spoken = decodeWav(new Uint8Array(await second.arrayBuffer()), LIMITS);
  const plain = decodeWav(new Uint8Array(await (await speak({ ...OK, input: 'Woezɔ' })).arrayBuffer()), LIMITS);
  t.equal(spoken.pcm.length, plain.pcm.length, 'the marker is not spoken');

  const echo = await speak({ ...OK, input: '[[echo]] hi' });
  t.equal(echo.status, 400);
  t.match((await errorOf(echo)).message, KEY, 'the careless server repeats the key');

  const chunked = await speak({ ...OK, input: '[[chunked]] Akwaaba' });
  t.equal(chunked.status, 200);
  t.equal(chunked.headers.get('content-length'), null, 'no Content-Length');
  const bytes = new Uint8Array(await chunked.arrayBuffer());
  t.equal(Buffer.from(bytes).readUInt32LE(40), 0xffffffff, 'a streamed WAV header, as OpenAI sends');
  t.ok(decodeWav(bytes, LIMITS).pcm.length > 0);

  const mp3 = await speak({ ...OK, input: '[[mp3]] hi' });
  t.equal(mp3.headers.get('content-type'), 'audio/mpeg');
  const notWav = new Uint8Array(await mp3.arrayBuffer());
  t.throws(() => decodeWav(notWav, LIMITS), /not a WAV file/);
});

t.test('faults by voice', async (t) => {
  const local = new OpenAiSpeechSimulator({ voiceFaults: { ewe: '503' } });
  await local.start({ apiKey: KEY });
  t.teardown(() => local.stop());
  const post = (voice: string): Promise<Response> =>
    fetch(`${local.baseUrl}/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...OK, voice }),
    });
  t.equal((await post('ewe')).status, 503);
  const twi = await post('twi');
  t.equal(twi.status, 200);
  await twi.arrayBuffer();
  t.same(
    local.requests.map((r) => [r.voice, r.status, r.fault]),
    [
      ['ewe', 503, '503'],
      ['twi', 200, undefined],
    ],
  );
});

t.test('[[slow]] answers nothing until the client gives up', async (t) => {
  const abort = new AbortController();
  const pending = speak({ ...OK, input: '[[slow]] hi' }, { signal: abort.signal }).catch((err: unknown) => err);
  // Wait until the simulator has the request, then leave.
  for (let i = 0; i < 200 && sim.requests.at(-1)?.fault !== 'slow'; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(sim.requests.at(-1)?.fault, 'slow');
  t.equal(sim.requests.at(-1)?.status, undefined, 'no answer yet');
  abort.abort();
  t.match(await pending, { name: 'AbortError' }, 'the client gave up without an answer');
});

t.test('[[endless]] streams until the client leaves', async (t) => {
  const response = await speak({ ...OK, input: '[[endless]] hi' });
  t.equal(response.status, 200);
  const reader = response.body!.getReader();
  let read = 0;
  for (let i = 0; i < 1_000 && read < 256 * 1024; i++) {
    const { done, value } = await reader.read();
    if (done) break;
    read += value.byteLength;
  }
  await reader.cancel();
  t.ok(read >= 256 * 1024, 'it keeps coming');
  const entry = sim.requests.at(-1)!;
  for (let i = 0; i < 200 && entry.bytesSent < 32 * 1024 * 1024 && !(await closed(entry)); i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  t.equal(entry.completed, false, 'the stream ended with the client, not by itself');
  t.ok(entry.bytesSent < 32 * 1024 * 1024);
});

/** The simulator stops writing once the client has gone: bytesSent stops growing. */
async function closed(entry: { bytesSent: number }): Promise<boolean> {
  const before = entry.bytesSent;
  await new Promise((r) => setTimeout(r, 20));
  return entry.bytesSent === before;
}
