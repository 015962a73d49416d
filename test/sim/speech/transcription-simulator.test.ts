import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { encodeWav } from '../../../src/audio/wav.js';
import { OpenAiTranscriptionSimulator, parseMultipart } from '../../../src/sim/speech/openai-transcription-simulator.js';
import { EspeakSynthesizer } from '../../../src/speech/espeak-synthesizer.js';
import { OpenAiTranscriptionRecognizer } from '../../../src/speech/recognition/openai-transcription-recognizer.js';
import { PocketsphinxRecognizer } from '../../../src/speech/recognition/pocketsphinx-recognizer.js';

const KEY = 'sk-sim-transcribe-1234567890';
const hasTools = ((): boolean => {
  try {
    execFileSync('sh', ['-c', 'command -v pocketsphinx_continuous && command -v espeak-ng'], { stdio: 'ignore' });
    return existsSync('/usr/share/pocketsphinx/model/en-us/en-us.lm.bin');
  } catch {
    return false;
  }
})();

const sim = new OpenAiTranscriptionSimulator();
t.before(() => sim.start({ apiKey: KEY }));
t.teardown(() => sim.stop());

function form(fields: Record<string, string>, file?: { name: string; bytes: Buffer; type?: string }): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  if (file) body.append('file', new Blob([file.bytes], { type: file.type ?? 'audio/wav' }), file.name);
  return body;
}
const wav = encodeWav(new Int16Array(16_000).map((_, i) => Math.round(4_000 * Math.sin(i / 3))), 16_000);
const post = (body: FormData | string, key = KEY, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${sim.baseUrl}/audio/transcriptions`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, ...headers } });

t.test('multipart parsing: fields and the file, byte for byte', async (t) => {
  const body = Buffer.from('--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n\r\n--x\u0000\r\n--xyz--\r\n', 'latin1');
  t.same(parseMultipart(body, 'xyz')?.map((p) => [p.name, p.filename, p.contentType, p.data.toString('latin1')]), [
    ['model', undefined, undefined, 'whisper-1'],
    ['file', 'a.wav', 'audio/wav', '\r\n--x\u0000'],
  ]);
  t.equal(parseMultipart(Buffer.from('no boundary here'), 'xyz'), null);
  t.equal(parseMultipart(Buffer.from('--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\nunterminated'), 'xyz'), null);
});

t.test('OpenAI-shaped answers: json, text, verbose_json', async (t) => {
  sim.script('one', 'two', 'three');
  const json = await post(form({ model: 'whisper-1' }, { name: 'a.wav', bytes: wav }));
  t.same([json.status, await json.json()], [200, { text: 'one' }]);
  const text = await post(form({ model: 'whisper-1', response_format: 'text' }, { name: 'a.wav', bytes: wav }));
  t.same([text.status, text.headers.get('content-type'), await text.text()], [200, 'text/plain; charset=utf-8', 'two\n']);
  const verbose = await post(form({ model: 'whisper-1', response_format: 'verbose_json', language: 'fr' }, { name: 'a.wav', bytes: wav }));
  t.match(await verbose.json(), { task: 'transcribe', language: 'french', duration: 1, text: 'three', segments: [{ text: 'three', avg_logprob: Number }] });
  t.match(sim.requests.slice(-1), [{ sampleRate: 16_000, audioSeconds: 1, heardBy: 'script', language: 'fr' }]);
});

t.test('refusals as OpenAI words them', async (t) => {
  const cases: Array<[string, Promise<Response>, number, RegExp]> = [
    ['wrong key', post(form({ model: 'whisper-1' }, { name: 'a.wav', bytes: wav }), 'sk-nope'), 401, /Incorrect API key/],
    ['not multipart', post('{"model":"whisper-1"}', KEY, { 'content-type': 'application/json' }), 400, /multipart/],
    ['no file', post(form({ model: 'whisper-1' })), 400, /'file'/],
    ['no model', post(form({}, { name: 'a.wav', bytes: wav })), 400, /'model'/],
    ['not WAV', post(form({ model: 'whisper-1' }, { name: 'a.mp3', bytes: Buffer.from('ID3 not audio'), type: 'audio/mpeg' })), 400, /Invalid file format: not a WAV file/],
    ['srt', post(form({ model: 'whisper-1', response_format: 'srt' }, { name: 'a.wav', bytes: wav })), 400, /only json, text and verbose_json/],
  ];
  for (const [what, pending, status, message] of cases) {
    const res = await pending;
    const body = (await res.json()) as { error: { message: string } };
    t.equal(res.status, status, what);
    t.match(body.error.message, message, what);
  }
  const get = await fetch(`${sim.baseUrl}/audio/transcriptions`, { headers: { authorization: `Bearer ${KEY}` } });
  t.equal(get.status, 405);
});

const NEEDS_TOOLS = hasTools ? {} : { skip: 'needs pocketsphinx, pocketsphinx-en-us and espeak-ng (Debian)' };

t.test('pocketsphinx behind the simulator hears espeak-ng, through the real adapter over HTTP', NEEDS_TOOLS, async (t) => {
  const hearing = new OpenAiTranscriptionSimulator({ recognizer: new PocketsphinxRecognizer() });
  await hearing.start({ apiKey: KEY });
  t.teardown(() => hearing.stop());
  const pcm = await new EspeakSynthesizer().synthesize({ text: 'I want to talk to a person', voice: 'en-US', rate: 120 });
  const stt = new OpenAiTranscriptionRecognizer({ id: 'whisper', baseUrl: hearing.baseUrl, apiKey: KEY, model: 'whisper-1', locales: ['en-US'], timeoutMs: 20_000 });
  const { text } = await stt.recognize({ pcm, locale: 'en-US' });
  t.comment(`heard "${text}"`);
  t.ok(text.split(' ').includes('talk'), `"talk" in "${text}"`);
  t.match(hearing.requests, [{ heardBy: 'recognizer', sampleRate: 8_000, language: 'en', status: 200 }]);
});
