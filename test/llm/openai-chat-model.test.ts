import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import t, { type Test } from 'tap';
import { assistantMessage, type ChatEvent, type ChatMessage, type ChatRequest, type ChatTool } from '../../src/llm/chat-model.js';
import {
  LlmAbortedError,
  LlmAuthError,
  LlmBadRequestError,
  LlmBadResponseError,
  LlmError,
  LlmRateLimitedError,
  LlmTimeoutError,
  LlmUnavailableError,
} from '../../src/llm/errors.js';
import { classifyLlmFailure, OPENAI_CHAT_ERRORS, sanitiseLlmDetail } from '../../src/llm/llm-errors-table.js';
import { OpenAiChatModel, type OpenAiChatModelOptions } from '../../src/llm/openai-chat-model.js';
import { SentenceChunker } from '../../src/llm/sentence-chunker.js';
import { OpenAiChatSimulator, type SimChatRequest } from '../../src/sim/llm/openai-chat-simulator.js';

const KEY = 'sk-ferry-llm-test-7c2e91b04d';
const SYSTEM = 'You are the Ferry front desk. Be brief.';
const TOOLS: ChatTool[] = [
  {
    name: 'transfer',
    description: 'Hand the caller to a person',
    parameters: { type: 'object', properties: { destination: { type: 'string', enum: ['sales', 'support'] } }, required: ['destination'] },
  },
  { name: 'end_call', description: 'Hang up' },
];

const sim = new OpenAiChatSimulator({ apiKey: KEY, argumentChunkChars: 5 });
t.before(() => sim.start());
t.teardown(() => sim.stop());

function model(options: Partial<OpenAiChatModelOptions> = {}): OpenAiChatModel {
  return new OpenAiChatModel({
    baseUrl: sim.baseUrl,
    apiKey: KEY,
    model: 'ferry-test-model',
    firstTokenTimeoutMs: 3_000,
    totalTimeoutMs: 6_000,
    retryDelayMs: 10,
    backoffMs: 20,
    ...options,
  });
}

function conversation(said: string): ChatRequest {
  return { messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: said }], tools: TOOLS };
}

/** The requests the simulator received while `run` ran, and what `run` settled with. */
async function observe<T>(run: () => Promise<T>): Promise<{ requests: SimChatRequest[]; result: T | undefined; error: unknown }> {
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

async function collect(events: AsyncIterable<ChatEvent>): Promise<ChatEvent[]> {
  const seen: ChatEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

/** Asserts `error` is an LlmError of `type` with `code`, and has no trace of the key, however it is printed. */
type LlmErrorClass = new (message: string) => LlmError;

function checkError(t: Test, error: unknown, type: LlmErrorClass, code: string, retryable: boolean): LlmError {
  t.type(error, type);
  const err = error as LlmError;
  t.equal(err.code, code, `code ${code}`);
  t.equal(err.retryable, retryable, `${err.name} retryable: ${retryable}`);
  for (const printed of [err.message, String(err.stack), inspect(err, { depth: 10 }), JSON.stringify(err)]) {
    t.notOk(printed.includes(KEY), 'the key appears nowhere in the error');
  }
  return err;
}

function reset(): void {
  sim.rules = [];
  sim.defaultReply = undefined;
}

t.test('streamed text: deltas in order, first-token before them, usage and latency in the result', async (t) => {
  reset();
  const reply = 'Hello, this is Ferry. How can I help you today? I can put you through to sales or support.';
  sim.rules = [{ match: /^hi\b/i, reply: { text: reply }, label: 'greeting' }];
  const { requests, result: events } = await observe(() => collect(model({ temperature: 0.3, maxTokens: 120 }).stream(conversation('Hi there'))));
  const types = events!.map((e) => e.type);
  t.equal(types[0], 'first-token');
  t.equal(types.at(-1), 'done');
  const deltas = events!.filter((e) => e.type === 'text').map((e) => (e as { delta: string }).delta);
  t.ok(deltas.length > 5, `the text came in ${deltas.length} deltas, not at once`);
  t.equal(deltas.join(''), reply);
  const done = events!.at(-1) as Extract<ChatEvent, { type: 'done' }>;
  t.equal(done.result.text, reply);
  t.same(done.result.toolCalls, []);
  t.equal(done.result.finishReason, 'stop');
  t.equal(done.result.attempts, 1);
  t.equal(done.result.model, 'ferry-test-model');
  t.ok(done.result.usage && done.result.usage.promptTokens > 0 && done.result.usage.completionTokens > 0, 'usage as counted by the provider');
  t.equal(done.result.usage!.totalTokens, done.result.usage!.promptTokens + done.result.usage!.completionTokens);
  const { timeToFirstTokenMs, totalMs } = done.result.timings;
  t.ok(timeToFirstTokenMs !== undefined && timeToFirstTokenMs >= 0 && timeToFirstTokenMs <= totalMs, `first token ${timeToFirstTokenMs} ms of ${totalMs} ms`);
  t.equal((events![0] as { latencyMs: number }).latencyMs, timeToFirstTokenMs);

  t.equal(requests.length, 1);
  const sent = requests[0];
  t.match(sent, { authorized: true, stream: true, answeredBy: 'greeting', systemPrompt: SYSTEM, lastUserMessage: 'Hi there', completed: true });
  t.match(sent.body, { model: 'ferry-test-model', temperature: 0.3, max_tokens: 120, stream_options: { include_usage: true } });
  t.same(
    sent.tools.map((tool) => (tool.function as { name: string }).name),
    ['transfer', 'end_call'],
  );
  t.same((sent.tools[0].function as { parameters: unknown }).parameters, TOOLS[0].parameters, 'the JSON schema as given');
  t.same((sent.tools[1].function as { parameters: unknown }).parameters, { type: 'object', properties: {} }, 'no parameters: an empty object schema');
  t.notOk(sent.headerNames.some((name) => name.startsWith('x-stainless')), 'no SDK telemetry headers');
});

t.test('sentences for speech come out of the stream before it ends', async (t) => {
  reset();
  sim.rules = [{ match: 'opening hours', reply: { text: 'We are open from nine to five. On Saturdays we close at noon! Anything else?', chunkDelayMs: 30 } }];
  const chunker = new SentenceChunker();
  const spoken: Array<{ sentence: string; beforeDone: boolean }> = [];
  for await (const event of model().stream(conversation('What are your opening hours?'))) {
    if (event.type !== 'text') continue;
    // Whether the simulator was still writing the answer when the sentence was ready to speak.
    for (const sentence of chunker.push(event.delta)) spoken.push({ sentence, beforeDone: !sim.requests.at(-1)!.completed });
  }
  for (const sentence of chunker.flush()) spoken.push({ sentence, beforeDone: false });
  t.same(
    spoken.map((s) => s.sentence),
    ['We are open from nine to five.', 'On Saturdays we close at noon!', 'Anything else?'],
  );
  t.ok(spoken[0].beforeDone && spoken[1].beforeDone, 'the first sentences were ready while the model was still writing');
});

t.test('several tool calls assembled from fragments, then the follow-up after the tool results', async (t) => {
  reset();
  sim.rules = [
    {
      match: /person|human/,
      reply: {
        text: 'One moment.',
        toolCalls: [
          { name: 'transfer', arguments: { destination: 'support', reason: 'caller asked for a person, "politely"' } },
          { name: 'end_call', arguments: {} },
        ],
        followUp: (results) => ({ text: `Transferring you now (${results.map((r) => `${r.name}: ${r.content}`).join('; ')}).` }),
      },
    },
  ];
  const request = conversation('I want to talk to a person');
  const seen: ChatEvent[] = [];
  const { requests, result } = await observe(() => model().complete(request, { onEvent: (e) => seen.push(e) }));
  t.equal(result!.finishReason, 'tool_calls');
  t.equal(result!.text, 'One moment.');
  t.equal(result!.toolCalls.length, 2);
  const [transfer, endCall] = result!.toolCalls;
  t.match(transfer, { id: /^call_/, name: 'transfer', arguments: { destination: 'support', reason: 'caller asked for a person, "politely"' } });
  t.equal(transfer.argumentsError, undefined);
  t.match(endCall, { id: /^call_/, name: 'end_call', arguments: {} });
  t.not(transfer.id, endCall.id);
  t.same(
    seen.filter((e) => e.type === 'tool-call').map((e) => (e as { call: { name: string } }).call.name),
    ['transfer', 'end_call'],
    'one tool-call event each, once complete',
  );
  t.equal(seen.at(-1)!.type, 'done', 'onEvent saw the whole stream');

  // The conversation goes back with the assistant's calls and their results; the simulator checks the pairing.
  const followUp: ChatMessage[] = [
    ...request.messages,
    assistantMessage(result!),
    { role: 'tool', toolCallId: transfer.id, content: 'ringing support' },
    { role: 'tool', toolCallId: endCall.id, content: 'not needed' },
  ];
  const second = await observe(() => model().complete({ messages: followUp, tools: TOOLS }));
  t.equal(second.error, undefined);
  t.equal(second.result!.text, 'Transferring you now (transfer: ringing support; end_call: not needed).');
  t.equal(second.requests[0].answeredBy, 'follow-up');
  t.match(second.requests[0].messages[2], {
    role: 'assistant',
    content: 'One moment.',
    tool_calls: [
      { id: transfer.id, type: 'function', function: { name: 'transfer', arguments: JSON.stringify(transfer.arguments) } },
      { id: endCall.id, type: 'function', function: { name: 'end_call', arguments: '{}' } },
    ],
  });
  t.match(second.requests[0].messages[3], { role: 'tool', tool_call_id: transfer.id, content: 'ringing support' });
  t.ok(requests.length === 1 && second.requests.length === 1);

  // A tool result with no call before it is the caller's mistake, and the provider says so.
  const orphan = await observe(() => model().complete({ messages: [...request.messages, { role: 'tool', toolCallId: 'call_nobody', content: 'x' }] }));
  checkError(t, orphan.error, LlmBadRequestError, 'bad-request', false);
  t.match((orphan.error as Error).message, /role 'tool' must be a response/);
  t.equal(orphan.requests.length, 1, 'a bad request is not retried');
});

t.test('invalid JSON arguments are reported as such, with the text the model wrote', async (t) => {
  reset();
  sim.rules = [
    {
      match: 'broken',
      reply: {
        toolCalls: [
          { name: 'transfer', arguments: '{"destination": "sales"' },
          { name: 'transfer', arguments: '["sales"]' },
          { name: 'end_call', arguments: '' },
        ],
      },
    },
  ];
  const result = await model().complete(conversation('broken tools please'));
  const [unclosed, notObject, empty] = result.toolCalls;
  t.equal(unclosed.argumentsJson, '{"destination": "sales"');
  t.equal(unclosed.arguments, undefined);
  t.match(unclosed.argumentsError, /not valid JSON/);
  t.equal(notObject.arguments, undefined);
  t.match(notObject.argumentsError, /not a JSON object/);
  t.same(empty.arguments, {}, 'no arguments at all: an empty object');
  t.equal(result.text, '');
  t.equal(assistantMessage(result).content, null, 'an assistant turn of tool calls only has null content');
});

t.test('barge-in: aborting mid-stream closes the HTTP request and throws LlmAbortedError', async (t) => {
  reset();
  sim.rules = [{ match: 'story', reply: { text: 'Once upon a time '.repeat(40), chunkDelayMs: 20 } }];
  const barge = new AbortController();
  const texts: string[] = [];
  const { requests, error } = await observe(async () => {
    for await (const event of model().stream(conversation('tell me a story'), { signal: barge.signal })) {
      if (event.type !== 'text') continue;
      texts.push(event.delta);
      if (texts.length === 3) barge.abort();
    }
  });
  checkError(t, error, LlmAbortedError, 'aborted', false);
  t.equal(texts.length, 3, 'no text after the abort');
  t.equal(requests.length, 1, 'an abort is not retried');
  const entry = await sim.settled(requests[0]);
  t.equal(entry.clientClosed, true, 'the simulator saw the client close the connection');
  t.equal(entry.completed, false);
  t.ok(entry.chunksSent < 80, `the simulator stopped writing (${entry.chunksSent} of 80 chunks)`);

  // A consumer that simply stops reading closes the request too.
  const quit = await observe(async () => {
    for await (const event of model().stream(conversation('tell me a story'))) if (event.type === 'text') break;
  });
  t.equal(quit.error, undefined);
  const left = await sim.settled(quit.requests[0]);
  t.equal(left.clientClosed, true, 'breaking out of the loop closed the connection');

  // Aborted before it started: no request at all.
  const early = await observe(() => model().complete(conversation('tell me a story'), { signal: AbortSignal.abort() }));
  checkError(t, early.error, LlmAbortedError, 'aborted', false);
  t.equal(early.requests.length, 0);
});

t.test('no first token in time: LlmTimeoutError, not retried, request closed', async (t) => {
  reset();
  sim.rules = [{ match: 'slow', reply: { text: 'Finally.', delayMs: 3_000 } }];
  const { requests, error } = await observe(() => model({ firstTokenTimeoutMs: 250 }).complete(conversation('be slow')));
  const err = checkError(t, error, LlmTimeoutError, 'timeout', false);
  t.match(err.message, /no first token within 250 ms/);
  t.equal(err.attempts, 1);
  t.equal(requests.length, 1, 'a timeout is not retried: the caller is waiting');
  t.equal((await sim.settled(requests[0])).clientClosed, true);

  // Tokens that start in time but never finish hit the total deadline.
  sim.rules = [{ match: 'slow', reply: { text: 'Once upon a time '.repeat(40), chunkDelayMs: 50 } }];
  const total = await observe(() => model({ firstTokenTimeoutMs: 250, totalTimeoutMs: 400 }).complete(conversation('be slow')));
  t.match(checkError(t, total.error, LlmTimeoutError, 'timeout', false).message, /no complete answer within 400 ms/);
  t.equal((await sim.settled(total.requests[0])).clientClosed, true);
});

t.test('429: rate-limited, retried within the bound after the Retry-After', async (t) => {
  reset();
  sim.rules = [
    { match: 'busy', times: 2, reply: { status: 429, retryAfterMs: 30 } },
    { match: 'busy', reply: { text: 'Now I can answer.' } },
  ];
  const { requests, result } = await observe(() => model({ retries: 2 }).complete(conversation('are you busy')));
  t.equal(result?.text, 'Now I can answer.');
  t.equal(result?.attempts, 3);
  t.same(
    requests.map((r) => r.status),
    [429, 429, 200],
  );

  // Always throttled: at most 1 + retries requests, then the error with the provider's Retry-After.
  sim.rules = [{ match: 'busy', reply: { status: 429, retryAfterMs: 30 } }];
  const always = await observe(() => model({ retries: 2 }).complete(conversation('are you busy')));
  const err = checkError(t, always.error, LlmRateLimitedError, 'rate-limited', true);
  t.equal(err.retryAfterMs, 30);
  t.equal(err.status, 429);
  t.equal(err.attempts, 3);
  t.equal(always.requests.length, 3, 'bounded: the first request and two retries');

  // A Retry-After longer than the model may wait goes straight to the caller.
  sim.rules = [{ match: 'busy', reply: { status: 429, retryAfterMs: 60_000 } }];
  const long = await observe(() => model().complete(conversation('are you busy')));
  t.equal(checkError(t, long.error, LlmRateLimitedError, 'rate-limited', true).retryAfterMs, 60_000);
  t.equal(long.requests.length, 1);
});

t.test('401: auth, never retried, the key nowhere in the error', async (t) => {
  reset();
  const wrong = await observe(() => model({ apiKey: 'sk-wrong-key-0000000000' }).complete(conversation('hello')));
  const err = checkError(t, wrong.error, LlmAuthError, 'auth', false);
  t.match(err.message, /refused the key \(HTTP 401\)/);
  t.equal(wrong.requests.length, 1);
  t.equal(wrong.requests[0].authorized, false);

  // A server that echoes the key in its error text: the message keeps none of it.
  sim.rules = [{ match: 'echo', reply: { status: 400, errorMessage: `Bad request with header Authorization: Bearer ${KEY}` } }];
  const echo = await observe(() => model().complete(conversation('echo')));
  t.match(checkError(t, echo.error, LlmBadRequestError, 'bad-request', false).message, /\[redacted\]/);
});

t.test('unavailable: 5xx and dropped streams retried before the first token only; refused connections too', async (t) => {
  reset();
  sim.rules = [
    { match: 'flaky', times: 1, reply: { status: 500 } },
    { match: 'flaky', times: 1, reply: { text: 'never finished', dropAfterChunks: 0 } },
    { match: 'flaky', reply: { text: 'Third time lucky.' } },
  ];
  const flaky = await observe(() => model().complete(conversation('flaky')));
  t.equal(flaky.result?.text, 'Third time lucky.');
  t.equal(flaky.result?.attempts, 3);

  // After text has gone to the caller, a broken stream is the caller's to handle: a second answer would not fit.
  sim.rules = [{ match: 'flaky', reply: { text: 'This will break off in the middle', dropAfterChunks: 2 } }];
  const texts: string[] = [];
  const broken = await observe(async () => {
    for await (const event of model().stream(conversation('flaky'))) if (event.type === 'text') texts.push(event.delta);
  });
  checkError(t, broken.error, LlmUnavailableError, 'unavailable', true);
  t.equal(texts.length, 2);
  t.equal(broken.requests.length, 1, 'not retried once text was out');

  const closed = await closedPort();
  const refused = await observe(() => model({ baseUrl: `http://127.0.0.1:${closed}/v1` }).complete(conversation('hello')));
  const err = checkError(t, refused.error, LlmUnavailableError, 'unavailable', true);
  t.match(err.message, /ECONNREFUSED/);
  t.equal(err.attempts, 3);
});

t.test('a local server without a key: no Authorization header at all', async (t) => {
  const open = new OpenAiChatSimulator();
  await open.start();
  t.teardown(() => open.stop());
  const local = new OpenAiChatModel({ baseUrl: `${open.baseUrl}/chat/completions`, apiKey: '', model: 'llama3', includeUsage: false, maxTokensField: 'max_completion_tokens', maxTokens: 50 });
  const result = await local.complete({ messages: [{ role: 'user', content: 'ping' }] });
  t.equal(result.text, 'You said: ping');
  t.equal(result.usage, undefined, 'usage not asked for');
  t.notOk(open.requests[0].headerNames.includes('authorization'));
  t.equal(open.requests[0].body?.stream_options, undefined);
  t.equal(open.requests[0].body?.max_completion_tokens, 50);
  t.equal(open.requests[0].path, '/v1/chat/completions', 'a full endpoint URL is taken back to the API root');
  t.notOk(inspect(local).includes(KEY));
});

t.test('answers that are not a chat stream: bad-response', async (t) => {
  const answers: Array<(res: import('node:http').ServerResponse) => void> = [
    (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices":[]}'),
    (res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {not json\n\n'),
    (res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x'.repeat(3_000) } }] })}\n\n`),
  ];
  let next = 0;
  const odd = createServer((req, res) => {
    req.resume();
    answers[next++](res);
  });
  const port = await listen(odd);
  t.teardown(() => new Promise<void>((resolve) => odd.close(() => resolve())));
  const odd_model = new OpenAiChatModel({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', maxAnswerBytes: 2_048, retries: 0 });
  for (const expected of [/not an event stream/, /not valid JSON/, /over 2048 bytes/]) {
    const error = await odd_model.complete({ messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    t.match(checkError(t, error, LlmBadResponseError, 'bad-response', false).message, expected);
  }
});

t.test('requests Ferry can tell are wrong never reach the provider', async (t) => {
  const before = sim.requests.length;
  for (const request of [{ messages: [] }, { messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'no spaces allowed' }] }] as ChatRequest[]) {
    const error = await model().complete(request).catch((err: unknown) => err);
    checkError(t, error, LlmBadRequestError, 'bad-request', false);
  }
  t.equal(sim.requests.length, before);
});

t.test('the error table: every row gives its class, and the action decides retryable', async (t) => {
  const classes: Record<string, LlmErrorClass> = {
    timeout: LlmTimeoutError,
    unavailable: LlmUnavailableError,
    'rate-limited': LlmRateLimitedError,
    auth: LlmAuthError,
    'bad-request': LlmBadRequestError,
    'bad-response': LlmBadResponseError,
    aborted: LlmAbortedError,
  };
  for (const [kind, rule] of Object.entries(OPENAI_CHAT_ERRORS)) {
    const { error, action } = classifyLlmFailure({ model: 'llm m', kind: kind as never, detail: `said ${KEY}`, secrets: [KEY] });
    t.type(error, classes[rule.code], `${kind} → ${rule.code}`);
    t.equal(action, rule.action);
    t.equal(error.retryable, rule.action !== 'fail');
    t.notOk(error.message.includes(KEY));
  }
  t.equal(classifyLlmFailure({ model: 'm', kind: '507', secrets: [] }).action, 'retry', 'an unlisted 5xx is retried');
  t.equal(classifyLlmFailure({ model: 'm', kind: '529', secrets: [] }).action, 'back-off', '529 overloaded backs off');
  t.equal(classifyLlmFailure({ model: 'm', kind: '418', secrets: [] }).error.code, 'bad-request', 'an unlisted 4xx is final');
  t.equal(sanitiseLlmDetail(`a\u0000b Bearer abc.def sk-${'z'.repeat(12)} ${'y'.repeat(300)}`, []).length, 200);
  t.match(sanitiseLlmDetail('token Bearer abc.def here', []), 'token [redacted] here');
});

t.test('the openai SDK is imported lazily: no value import at the top of src/llm', async (t) => {
  const dir = new URL('../../src/llm/', import.meta.url);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const source = readFileSync(new URL(file, dir), 'utf8');
    t.notMatch(source, /^import\s+(?!type\b)[^;]*from\s+'openai/m, `${file}: only type imports of openai`);
  }
});

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A port nothing listens on: one the system gave out, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
