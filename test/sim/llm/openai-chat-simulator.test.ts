import t from 'tap';
import { OpenAiChatSimulator } from '../../../src/sim/llm/openai-chat-simulator.js';

const KEY = 'sim-llm-key-0123456789';

const sim = new OpenAiChatSimulator({
  apiKey: KEY,
  models: ['ferry-test-model'],
  argumentChunkChars: 4,
  rules: [
    { match: /weather in (\w+)/i, label: 'weather', reply: { toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Accra' } }], followUp: { text: 'It is sunny.' } } },
    { match: 'PERSON', label: 'person', times: 1, reply: { text: 'Putting you through.' } },
    { match: 'slow', reply: { text: 'At last.', delayMs: 300 } },
    { match: 'limit', reply: { status: 429, retryAfterMs: 1_500 } },
  ],
});
t.before(() => sim.start());
t.teardown(() => sim.stop());

const WEATHER_TOOL = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

function chat(body: unknown, key: string | null = KEY): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return fetch(`${sim.baseUrl}/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body) });
}

/** The `data:` payloads of a server-sent event stream, [DONE] as a string. */
async function events(response: Response): Promise<unknown[]> {
  const text = await response.text();
  if (!text.endsWith('\n\n')) throw new Error('an event does not end with a blank line');
  return text
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      if (!block.startsWith('data: ')) throw new Error(`not an SSE data line: ${block}`);
      const data = block.slice('data: '.length);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

type Chunk = { object: string; id: string; usage?: unknown; choices: Array<{ index: number; delta: Record<string, any>; finish_reason: string | null }> };

t.test('streamed text: chat.completion.chunk events, a finish reason, usage when asked, then [DONE]', async (t) => {
  const response = await chat({ model: 'ferry-test-model', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello there you' }] });
  t.equal(response.status, 200);
  t.match(response.headers.get('content-type'), /^text\/event-stream/);
  const all = await events(response);
  t.equal(all.at(-1), '[DONE]');
  const chunks = all.slice(0, -1) as Chunk[];
  t.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id), 'one id for the whole answer');
  t.same(chunks[0].choices[0].delta, { role: 'assistant', content: '', refusal: null }, 'the role first, as OpenAI does');
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  t.equal(text, 'You said: hello there you', 'the default answer echoes');
  t.ok(chunks.filter((c) => c.choices[0]?.delta.content).length >= 5, 'a word a chunk');
  const finish = chunks.at(-2)!;
  t.same(finish.choices[0], { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
  const usage = chunks.at(-1)!;
  t.same(usage.choices, [], 'the usage chunk has no choices');
  t.match(usage.usage, { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number });
  t.ok(chunks.slice(0, -1).every((c) => c.usage === null), 'usage: null on every other chunk');
  t.match(sim.requests.at(-1), { authorized: true, stream: true, answeredBy: 'default', lastUserMessage: 'hello there you', completed: true, status: 200 });
});

t.test('tool calls: chunked tool_calls deltas by index, id and name first, then argument fragments', async (t) => {
  const messages = [
    { role: 'system', content: 'You tell the weather.' },
    { role: 'user', content: 'What is the weather in Accra?' },
  ];
  const all = await events(await chat({ model: 'ferry-test-model', stream: true, messages, tools: [WEATHER_TOOL] }));
  const chunks = all.slice(0, -1) as Chunk[];
  const toolDeltas = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
  t.same(toolDeltas[0], { index: 0, id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '' } });
  const fragments = toolDeltas.slice(1);
  t.ok(fragments.length > 1, `${fragments.length} argument fragments`);
  t.ok(fragments.every((d) => d.index === 0 && d.id === undefined && Object.keys(d.function).join() === 'arguments'));
  t.equal(fragments.map((d) => d.function.arguments).join(''), '{"city":"Accra"}');
  t.equal(chunks.at(-1)!.choices[0].finish_reason, 'tool_calls');
  t.match(sim.requests.at(-1), { answeredBy: 'weather', systemPrompt: 'You tell the weather.', tools: [WEATHER_TOOL] });

  // The tool result gets the rule's follow-up, not streamed this time.
  const followUp = await chat({
    model: 'ferry-test-model',
    messages: [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Accra"}' } }] },
      { role: 'tool', tool_call_id: 'call_w1', content: '31 °C, clear' },
    ],
    tools: [WEATHER_TOOL],
  });
  t.equal(followUp.status, 200);
  const completion = (await followUp.json()) as { object: string; choices: Array<{ message: { role: string; content: string }; finish_reason: string }>; usage: unknown };
  t.equal(completion.object, 'chat.completion');
  t.match(completion.choices[0], { message: { role: 'assistant', content: 'It is sunny.' }, finish_reason: 'stop' });
  t.match(completion.usage, { total_tokens: Number });
  t.equal(sim.requests.at(-1)!.answeredBy, 'follow-up');

  // Not streamed, tool calls come whole.
  const whole = (await (await chat({ model: 'ferry-test-model', messages, tools: [WEATHER_TOOL] })).json()) as { choices: Array<{ message: unknown }> };
  t.same(whole.choices[0].message, {
    role: 'assistant',
    content: null,
    refusal: null,
    tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Accra"}' } }],
  });
});

t.test('rules: case-insensitive substrings, regexes, a use limit, else the default', async (t) => {
  const say = async (content: string): Promise<string> => {
    const body = (await (await chat({ model: 'ferry-test-model', messages: [{ role: 'user', content }] })).json()) as { choices: Array<{ message: { content: string } }> };
    return body.choices[0].message.content;
  };
  t.equal(await say('I want a person please'), 'Putting you through.');
  t.equal(sim.requests.at(-1)!.answeredBy, 'person');
  t.equal(await say('I want a person please'), 'You said: I want a person please', 'times: 1 used up');
  t.equal(sim.requests.at(-1)!.answeredBy, 'default');
});

t.test('the key, the model, the body and the tool-call pairing are checked as OpenAI does', async (t) => {
  const ok = { model: 'ferry-test-model', messages: [{ role: 'user', content: 'hi' }] };
  for (const key of [null, 'wrong']) {
    const response = await chat(ok, key);
    t.equal(response.status, 401);
    t.match(await response.json(), { error: { code: 'invalid_api_key', type: 'invalid_request_error' } });
  }
  const cases: Array<[string, unknown, RegExp]> = [
    ['unknown model', { ...ok, model: 'gpt-9' }, /does not exist/],
    ['no messages', { ...ok, messages: [] }, /empty array/],
    ['a bad role', { ...ok, messages: [{ role: 'robot', content: 'x' }] }, /role/],
    ['a tool result without a call', { ...ok, messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'call_1', content: 'y' }] }, /preceeding message with 'tool_calls'/],
    [
      'a call left unanswered',
      { ...ok, messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'user', content: 'x' }] },
      /did not have response messages: c1/,
    ],
    ['a bad tool name', { ...ok, tools: [{ type: 'function', function: { name: 'has space' } }] }, /tools\[0\]/],
    ['stream_options without stream', { ...ok, stream_options: { include_usage: true } }, /only allowed when 'stream'/],
  ];
  for (const [what, body, message] of cases) {
    const response = await chat(body);
    t.equal(response.status, 400, what);
    t.match(((await response.json()) as { error: { message: string } }).error.message, message, what);
  }
  const notJson = await fetch(`${sim.baseUrl}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: '{' });
  t.equal(notJson.status, 400);
  t.equal((await fetch(`${sim.url}/v2/other`)).status, 404);
  const models = (await (await fetch(`${sim.baseUrl}/models`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { data: Array<{ id: string }> };
  t.same(
    models.data.map((m) => m.id),
    ['ferry-test-model'],
  );
});

t.test('scripted errors carry Retry-After; a delay holds back the tokens', async (t) => {
  const limited = await chat({ model: 'ferry-test-model', messages: [{ role: 'user', content: 'over the limit' }] });
  t.equal(limited.status, 429);
  t.equal(limited.headers.get('retry-after-ms'), '1500');
  t.equal(limited.headers.get('retry-after'), '2');
  t.match(await limited.json(), { error: { code: 'rate_limit_exceeded' } });

  const started = performance.now();
  const slow = await chat({ model: 'ferry-test-model', stream: true, messages: [{ role: 'user', content: 'be slow' }] });
  t.equal(slow.status, 200, 'the headers came');
  const all = await events(slow);
  // A lower bound only: the answer cannot have come sooner than the scripted delay.
  t.ok(performance.now() - started >= 300, 'the tokens came after the delay');
  t.same((all[0] as Chunk).choices[0].delta, { role: 'assistant', content: '', refusal: null });
  t.equal(all.at(-1), '[DONE]');
});

t.test('a client that leaves mid-stream is seen leaving', async (t) => {
  const local = new OpenAiChatSimulator({ defaultReply: { text: 'word '.repeat(100), chunkDelayMs: 10 } });
  await local.start();
  t.teardown(() => local.stop());
  const leave = new AbortController();
  const response = await fetch(`${local.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'any', stream: true, messages: [{ role: 'user', content: 'talk' }] }),
    signal: leave.signal,
  });
  const reader = response.body!.getReader();
  await reader.read();
  leave.abort();
  const entry = await local.settled(local.requests[0]);
  t.match(entry, { authorized: true, clientClosed: true, completed: false, dropped: false });
  t.ok(entry.chunksSent < 100, `${entry.chunksSent} of 100 chunks were written`);
});
