// fetch over the guarded client (what the openai SDK is given for a customer's model and speech-to-text): a real server
// on 127.0.0.1: a streamed body arrives piece by piece while the server still writes, request bodies (JSON, FormData as
// multipart), abort, the SSRF policy at each request (a name that points at loopback by the time of the request is
// refused: DNS rebinding), and the chat model streaming from the local OpenAI-compatible simulator through it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { OpenAiChatModel } from '../../src/llm/openai-chat-model.js';
import { GuardedFetchError, guardedFetch } from '../../src/security/guarded-fetch.js';
import type { Lookup } from '../../src/security/guarded-http.js';
import { TargetGuard } from '../../src/security/target-guard.js';
import { OpenAiChatSimulator } from '../../src/sim/llm/openai-chat-simulator.js';
import { OpenAiTranscriptionSimulator } from '../../src/sim/speech/openai-transcription-simulator.js';
import { OpenAiTranscriptionRecognizer } from '../../src/speech/recognition/openai-transcription-recognizer.js';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

const received: Received[] = [];
/** Releases the rest of the /slow stream once the test has read its first event. */
let releaseSlow: (() => void) | null = null;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
  if (req.url === '/slow') {
    // The first event now; the rest only when the reader has shown it got the first (the body is not buffered whole).
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: one\n\n');
    await new Promise<void>((resolve) => (releaseSlow = resolve));
    res.write('data: two\n\n');
    res.end('data: [DONE]\n\n');
    return;
  }
  if (req.url === '/hang') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: first\n\n');
    return; // never ends: the client aborts
  }
  if (req.url === '/empty') {
    res.writeHead(204).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'x-seen': 'yes' }).end(JSON.stringify({ method: req.method, bytes: chunks.reduce((n, c) => n + c.length, 0) }));
}

const server: Server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
let base = '';
let port = 0;
t.before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
t.teardown(() => {
  releaseSlow?.();
  server.closeAllConnections();
  server.close();
});

/** Names answered from a table (anything else does not resolve); the table can change between requests. */
function tableLookup(table: Record<string, string>): Lookup {
  return async (host) => {
    const address = table[host];
    if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return [{ address, family: 4 }];
  };
}

/** A developer's machine: private targets and http allowed. */
const devFetch = (lookup?: Lookup) => guardedFetch(new TargetGuard(true, lookup, 0).client(), { timeoutMs: 10_000 });

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

t.test('a streamed body arrives piece by piece, before the server has finished', async (t) => {
  const res = await devFetch()(`${base}/slow`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/event-stream');
  t.equal(res.url, `${base}/slow`);
  const reader = res.body!.getReader();
  const first = await reader.read();
  t.equal(Buffer.from(first.value!).toString(), 'data: one\n\n', 'the first event, while the server waits before writing the rest');
  releaseSlow!();
  let rest = '';
  for (let i = 0; i < 10; i++) {
    const next = await reader.read();
    if (next.done) break;
    rest += Buffer.from(next.value).toString();
  }
  t.equal(rest, 'data: two\n\ndata: [DONE]\n\n', 'then the rest, and the end');
});

t.test('request bodies: JSON (with its headers), bytes, FormData as multipart', async (t) => {
  const f = devFetch();
  const json = await f(`${base}/json`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: JSON.stringify({ hello: 'world' }) });
  t.same(await json.json(), { method: 'POST', bytes: 17 });
  t.equal(json.headers.get('x-seen'), 'yes', "the answer's headers");
  let got = received.at(-1)!;
  t.equal(got.body.toString(), '{"hello":"world"}');
  t.equal(got.headers['content-type'], 'application/json');
  t.equal(got.headers.authorization, 'Bearer k');
  t.equal(got.headers['content-length'], '17', 'sent with its length');

  await f(`${base}/bytes`, { method: 'PUT', body: new Uint8Array([1, 2, 3]) });
  t.same([...received.at(-1)!.body], [1, 2, 3]);

  const form = new FormData();
  form.append('model', 'whisper-1');
  form.append('file', new Blob([Buffer.from('RIFF-fake-wav')], { type: 'audio/wav' }), 'utterance.wav');
  const upload = await f(`${base}/audio/transcriptions`, { method: 'POST', body: form });
  t.equal(upload.status, 200);
  got = received.at(-1)!;
  const type = String(got.headers['content-type']);
  t.match(type, /^multipart\/form-data; boundary=/, 'a multipart upload');
  const text = got.body.toString();
  t.match(text, /name="model"\r\n\r\nwhisper-1/);
  t.match(text, /name="file"; filename="utterance.wav"\r\nContent-Type: audio\/wav\r\n\r\nRIFF-fake-wav/);
  t.equal(Number(got.headers['content-length']), got.body.length);

  const empty = await f(`${base}/empty`);
  t.equal(empty.status, 204);
  t.equal(empty.body, null, 'no body for a 204');
});

t.test('abort: before the request, and while the body streams', async (t) => {
  const f = devFetch();
  const early = new AbortController();
  early.abort();
  t.equal((await failure(f(`${base}/json`, { signal: early.signal }))).name, 'AbortError', 'an aborted signal never sends');

  const ctl = new AbortController();
  const res = await f(`${base}/hang`, { signal: ctl.signal });
  const reader = res.body!.getReader();
  t.equal(Buffer.from((await reader.read()).value!).toString(), 'data: first\n\n');
  ctl.abort();
  const err = await failure(reader.read());
  t.equal(err.name, 'AbortError', "reading stops with the signal's reason");

  // The guarded client's own whole-answer request takes the signal too (a relay's `play` fetched during a call).
  const http = new TargetGuard(true).client();
  const hung = new AbortController();
  const pending = http.request(`${base}/hang`, { timeoutMs: 10_000, maxBytes: 1024, signal: hung.signal });
  setTimeout(() => hung.abort(), 50);
  t.equal((await failure(pending)).name, 'AbortError', 'GuardedHttp.request ends with the signal');
});

t.test('the SSRF policy at each request', async (t) => {
  const strict = guardedFetch(new TargetGuard(false).client());
  const direct = await failure(strict(`https://127.0.0.1:${port}/json`));
  t.type(direct, TypeError, "a fetch failure, as fetch's own");
  t.type(direct, GuardedFetchError);
  t.equal((direct as GuardedFetchError).code, 'TARGET_BLOCKED');
  t.match(direct.message, /private, loopback or reserved address \(loopback\)/, `it says why: ${direct.message}`);
  t.equal(received.filter((r) => r.url === '/json').length, 1, 'nothing reached the server (only the JSON test did)');

  // A public-looking name resolving to loopback.
  const named = guardedFetch(new TargetGuard(false, tableLookup({ 'llm.example.com': '127.0.0.1' })).client());
  const rebound = await failure(named(`https://llm.example.com:${port}/json`));
  t.equal((rebound as GuardedFetchError).code, 'TARGET_BLOCKED', rebound.message);

  // DNS rebinding: public when checked before dialling, loopback by the time of the request.
  const table = { 'model.example.com': '93.184.216.34' };
  const guard = new TargetGuard(false, tableLookup(table), 0);
  const checked = await guard.check(`https://model.example.com:${port}/v1`);
  t.ok(checked.ok, 'the check before dialling passes');
  table['model.example.com'] = '127.0.0.1';
  const late = await failure(guardedFetch(guard.client())(`https://model.example.com:${port}/json`));
  t.equal((late as GuardedFetchError).code, 'TARGET_BLOCKED', 'the request itself is refused');
  t.match(late.message, /loopback/);

  // Where private targets are allowed, a name is connected to at the address the guard resolved (no second lookup).
  const res = await devFetch(tableLookup({ 'llm.test': '127.0.0.1' }))(`http://llm.test:${port}/json`);
  t.equal(res.status, 200, 'llm.test (unknown to the system resolver) reached through its checked address');
  await res.body?.cancel();
});

t.test('the chat model streams from the OpenAI-compatible simulator through the guarded fetch; a refused target is a connection error saying why', async (t) => {
  const sim = new OpenAiChatSimulator({ apiKey: 'sk-guarded-fetch-test', defaultReply: { text: 'Hello there. How can I help you today?' } });
  await sim.start();
  t.teardown(() => sim.stop());
  const model = new OpenAiChatModel({ baseUrl: sim.baseUrl, apiKey: 'sk-guarded-fetch-test', model: 'm', firstTokenTimeoutMs: 5_000, totalTimeoutMs: 10_000, fetch: devFetch() });
  const deltas: string[] = [];
  let done: unknown;
  for await (const event of model.stream({ messages: [{ role: 'user', content: 'hi' }] })) {
    if (event.type === 'text') deltas.push(event.delta);
    if (event.type === 'done') done = event.result;
  }
  t.ok(deltas.length > 1, `streamed in ${deltas.length} deltas`);
  t.equal(deltas.join(''), 'Hello there. How can I help you today?');
  t.match(done, { text: 'Hello there. How can I help you today?' });
  t.equal(sim.requests.length, 1);

  const refused = new OpenAiChatModel({ baseUrl: sim.baseUrl.replace('http:', 'https:'), apiKey: 'sk-guarded-fetch-test', model: 'm', retries: 0, fetch: guardedFetch(new TargetGuard(false).client()) });
  const err = await failure(refused.complete({ messages: [{ role: 'user', content: 'hi' }] }));
  t.match(err.message, /cannot reach the provider: the target is a private, loopback or reserved address/, err.message);
  t.equal(sim.requests.length, 1, 'the simulator was not asked');
});

t.test('the transcription recognizer uploads its WAV (multipart) through the guarded fetch', async (t) => {
  const stt = new OpenAiTranscriptionSimulator();
  await stt.start({ apiKey: 'stt-guarded-fetch-test' });
  t.teardown(() => stt.stop());
  stt.script('I would like to talk to a person');
  const recognizer = new OpenAiTranscriptionRecognizer({ id: 'stt', baseUrl: stt.baseUrl, apiKey: 'stt-guarded-fetch-test', model: 'whisper-1', locales: ['en-US'], fetch: devFetch() });
  const heard = await recognizer.recognize({ pcm: new Int16Array(8000).map((_, i) => Math.round(8000 * Math.sin(i / 3))), locale: 'en-US' });
  t.equal(heard.text, 'I would like to talk to a person');
  t.ok(stt.requests.length === 1 && stt.requests[0].authorized, 'the provider got the audio with its key');

  const refused = new OpenAiTranscriptionRecognizer({ id: 'stt', baseUrl: stt.baseUrl.replace('http:', 'https:'), apiKey: 'stt-guarded-fetch-test', model: 'whisper-1', locales: ['en-US'], retries: 0, fetch: guardedFetch(new TargetGuard(false).client()) });
  const err = await failure(refused.recognize({ pcm: new Int16Array(800), locale: 'en-US' }));
  t.match(err.message, /cannot reach the provider: the target is a private, loopback or reserved address \(loopback\) \(TARGET_BLOCKED\)/, err.message);
  t.equal(stt.requests.length, 1, 'the provider was not asked again');
});
