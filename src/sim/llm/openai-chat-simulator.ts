import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OpenAiSimServer, type SimRequestBase } from '../openai-sim-server.js';

/** A tool call the scripted model makes. */
export interface ChatSimToolCall {
  name: string;
  /** An object (sent as its JSON), or a text sent verbatim: invalid JSON included, to test how clients cope. */
  arguments: Record<string, unknown> | string;
  /** Default: a fresh "call_…" id, as OpenAI makes them. */
  id?: string;
}

/** What a tool call was answered with, as the follow-up sees it. */
export interface ChatSimToolResult {
  toolCallId: string;
  /** The name of the function called, from the assistant message that made the call. */
  name: string;
  content: string;
}

/** One scripted answer. */
export interface ChatSimReply {
  text?: string;
  toolCalls?: ChatSimToolCall[];
  /**
   * Wait before the first token. Streamed, the headers and the role chunk go out first, as a real model's do; not
   * streamed, nothing is sent until then. Default 0: answers at once.
   */
  delayMs?: number;
  /** Wait between chunks. Default 0. */
  chunkDelayMs?: number;
  /** Answer this HTTP status with an OpenAI-shaped error instead (after delayMs). */
  status?: number;
  /** The error's message; default one like OpenAI's for the status. */
  errorMessage?: string;
  /** With a status: sent as Retry-After-Ms and Retry-After (rounded up to seconds). 429 defaults to 1,000. */
  retryAfterMs?: number;
  /** Default "tool_calls" when the answer has tool calls, else "stop". */
  finishReason?: string;
  /** Streamed: the connection is cut after this many text or tool-call chunks, with no finish reason or [DONE]. */
  dropAfterChunks?: number;
  /** The answer once the tool results come back (keyed by the ids of this reply's tool calls). Default "Done." */
  followUp?: ChatSimReply | ((results: ChatSimToolResult[], request: SimChatRequest) => ChatSimReply);
}

export interface ChatSimRule {
  /**
   * Matched against the last user message: a RegExp, or a text it must contain (case-insensitive). Absent: any
   * conversation.
   */
  match?: RegExp | string;
  reply: ChatSimReply | ((request: SimChatRequest) => ChatSimReply);
  /** Only the first N matching requests get this rule; later ones go to the next rules. */
  times?: number;
  /** Recorded with the requests it answered; default "rule <index>". */
  label?: string;
}

export interface OpenAiChatSimulatorOptions {
  /** Tried in order; the first that matches answers. Replaceable later through `rules`. */
  rules?: ChatSimRule[];
  /** The answer when no rule matches. Default: "You said: <the last user message>". */
  defaultReply?: ChatSimReply;
  /** When set, requests must carry "Authorization: Bearer <apiKey>"; otherwise any or none is accepted. */
  apiKey?: string;
  /** Models it accepts (and lists at GET /v1/models); default any non-empty name. */
  models?: string[];
  /** Characters per text chunk; default one word (with its leading space) per chunk, about a token. */
  chunkChars?: number;
  /** Characters per tool-argument fragment. Default 8. */
  argumentChunkChars?: number;
  /** Larger request bodies are refused with 413. Default 1 MB. */
  maxBodyBytes?: number;
}

/** One request as the simulator saw it and answered it. */
export interface SimChatRequest extends SimRequestBase {
  /** The JSON body, as received. */
  body?: Record<string, unknown>;
  model?: unknown;
  stream: boolean;
  messages: Array<Record<string, unknown>>;
  tools: Array<Record<string, unknown>>;
  /** The first system (or developer) message's text. */
  systemPrompt?: string;
  lastUserMessage?: string;
  /** The label of the rule that answered, "default", or "follow-up". */
  answeredBy?: string;
  /** Text and tool-call chunks written. */
  chunksSent: number;
  /** The whole answer was written. */
  completed: boolean;
  /** The client closed the connection before the answer was complete (a cancelled generation). */
  clientClosed: boolean;
  /** The simulator cut the connection as scripted (dropAfterChunks). */
  dropped: boolean;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);
const DEFAULT_FOLLOW_UP: ChatSimReply = { text: 'Done.' };
type FollowUp = NonNullable<ChatSimReply['followUp']>;

/**
 * An OpenAI-compatible chat-completions server (`POST /v1/chat/completions`) on 127.0.0.1 for tests, local runs and
 * benches: validates the request as OpenAI does (the conversation's tool-call pairing included), answers from a
 * script matched on the last user message, and streams as OpenAI does: server-sent events of
 * `chat.completion.chunk`s, tool calls as `tool_calls` deltas by index (id and name first, then argument fragments),
 * a finish reason, usage when asked, `data: [DONE]`. Non-streamed requests get one `chat.completion`. Uses node:http only.
 */
export class OpenAiChatSimulator extends OpenAiSimServer<SimChatRequest> {
  /** Tried in order; tests may replace or extend them between requests. */
  rules: ChatSimRule[];
  defaultReply: ChatSimReply | undefined;
  private readonly ruleUses = new Map<ChatSimRule, number>();
  /** Which reply made each tool call, so the tool result gets that reply's follow-up. */
  private readonly followUps = new Map<string, { followUp: FollowUp; name: string }>();
  private readonly settledWaiters = new Map<SimChatRequest, Promise<void>>();

  constructor(private readonly options: OpenAiChatSimulatorOptions = {}) {
    super('chat', options.maxBodyBytes ?? 1024 * 1024);
    this.rules = [...(options.rules ?? [])];
    this.defaultReply = options.defaultReply;
  }

  async start(options: { port?: number } = {}): Promise<void> {
    await this.listen(options.port, this.options.apiKey);
  }

  /**
   * Resolves with the request once its exchange is over: the answer written, or the client gone. Rejects after
   * `timeoutMs` (default 5 s) so a test waiting for a close that never comes fails instead of hanging.
   */
  async settled(entry: SimChatRequest, timeoutMs = 5_000): Promise<SimChatRequest> {
    const done = this.settledWaiters.get(entry);
    if (!done) throw new Error('not a request this simulator received');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`request ${entry.path} not settled within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([done, late]);
      return entry;
    } finally {
      clearTimeout(timer);
    }
  }

  protected record(common: SimRequestBase, res: ServerResponse): SimChatRequest {
    const entry: SimChatRequest = {
      ...common,
      stream: false,
      messages: [],
      tools: [],
      chunksSent: 0,
      completed: false,
      clientClosed: false,
      dropped: false,
    };
    this.settledWaiters.set(
      entry,
      new Promise((resolve) =>
        res.once('close', () => {
          if (!entry.completed && !entry.dropped) entry.clientClosed = true;
          resolve();
        }),
      ),
    );
    return entry;
  }

  protected override written(entry: SimChatRequest): void {
    entry.completed = true;
  }

  protected async answer(req: IncomingMessage, res: ServerResponse, entry: SimChatRequest): Promise<void> {
    if (entry.method === 'GET' && entry.path === '/v1/models') {
      req.resume();
      if (this.guard(req, res, entry, { path: '/v1/models', method: 'GET' })) return;
      return this.json(res, entry, 200, { object: 'list', data: (this.options.models ?? ['ferry-test-model']).map((id) => ({ id, object: 'model', created: 0, owned_by: 'ferry' })) });
    }
    if (this.guard(req, res, entry, { path: '/v1/chat/completions', method: 'POST' })) return;
    const body = await this.readJson(req, res, entry);
    if (body === null) return;
    entry.body = body;
    entry.model = body.model;
    entry.stream = body.stream === true;
    if (Array.isArray(body.messages)) entry.messages = body.messages as Array<Record<string, unknown>>;
    if (Array.isArray(body.tools)) entry.tools = body.tools as Array<Record<string, unknown>>;
    const invalid = this.validate(body);
    if (invalid) return this.error(res, entry, 400, invalid.message, 'invalid_request_error', invalid.code, invalid.param);
    entry.systemPrompt = textOf(entry.messages.find((m) => m.role === 'system' || m.role === 'developer')?.content);
    const lastUser = [...entry.messages].reverse().find((m) => m.role === 'user');
    entry.lastUserMessage = lastUser === undefined ? undefined : textOf(lastUser.content);

    const reply = this.pickReply(entry);
    if (reply.delayMs && !entry.stream) {
      await this.sleep(reply.delayMs, res);
      if (res.destroyed) return;
    }
    if (reply.status !== undefined) {
      if (reply.delayMs && entry.stream) await this.sleep(reply.delayMs, res);
      if (!res.destroyed) this.scriptedError(res, entry, reply);
      return;
    }
    const calls = (reply.toolCalls ?? []).map((call) => ({
      id: call.id ?? `call_${randomBytes(12).toString('base64url')}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
    for (const call of calls) this.followUps.set(call.id, { followUp: reply.followUp ?? DEFAULT_FOLLOW_UP, name: call.name });
    const answer: Answer = {
      id: `chatcmpl-${randomBytes(12).toString('base64url')}`,
      created: Math.floor(Date.now() / 1000),
      model: body.model as string,
      text: reply.text ?? '',
      calls,
      finishReason: reply.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
      usage: usageOf(entry.messages, reply.text ?? '', calls),
    };
    if (!entry.stream) {
      this.json(res, entry, 200, completionOf(answer), () => {
        entry.chunksSent = 1;
      });
      return;
    }
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    await this.streamAnswer(res, entry, answer, reply, options?.include_usage === true);
  }

  private pickReply(entry: SimChatRequest): ChatSimReply {
    const last = entry.messages.at(-1);
    if (last?.role === 'tool') {
      // The trailing tool messages answer the last assistant message's calls.
      const results: ChatSimToolResult[] = [];
      for (let i = entry.messages.length - 1; i >= 0 && entry.messages[i].role === 'tool'; i--) {
        const message = entry.messages[i];
        const id = String(message.tool_call_id);
        results.unshift({ toolCallId: id, name: this.followUps.get(id)?.name ?? '', content: textOf(message.content) ?? '' });
      }
      const made = this.followUps.get(results[0].toolCallId);
      entry.answeredBy = 'follow-up';
      const followUp = made?.followUp ?? DEFAULT_FOLLOW_UP;
      return typeof followUp === 'function' ? followUp(results, entry) : followUp;
    }
    const said = entry.lastUserMessage ?? '';
    for (const [index, rule] of this.rules.entries()) {
      const uses = this.ruleUses.get(rule) ?? 0;
      if (rule.times !== undefined && uses >= rule.times) continue;
      if (!matches(rule.match, said)) continue;
      this.ruleUses.set(rule, uses + 1);
      entry.answeredBy = rule.label ?? `rule ${index}`;
      return typeof rule.reply === 'function' ? rule.reply(entry) : rule.reply;
    }
    entry.answeredBy = 'default';
    return this.defaultReply ?? { text: said === '' ? 'Hello.' : `You said: ${said}` };
  }

  private async streamAnswer(res: ServerResponse, entry: SimChatRequest, answer: Answer, reply: ChatSimReply, includeUsage: boolean): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    entry.status = 200;
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> => ({
      id: answer.id,
      object: 'chat.completion.chunk',
      created: answer.created,
      model: answer.model,
      system_fingerprint: 'fp_ferry_sim',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    });
    let written: Promise<void> = Promise.resolve();
    const send = (data: unknown): void => {
      written = new Promise((resolve) => res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`, () => resolve()));
    };
    send(chunk({ role: 'assistant', content: '', refusal: null }));
    if (reply.delayMs) await this.sleep(reply.delayMs, res);

    const deltas: Array<Record<string, unknown>> = [];
    for (const piece of this.textPieces(answer.text)) deltas.push({ content: piece });
    const fragment = Math.max(1, this.options.argumentChunkChars ?? 8);
    for (const [index, call] of answer.calls.entries()) {
      deltas.push({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
      for (let at = 0; at < call.arguments.length; at += fragment) {
        deltas.push({ tool_calls: [{ index, function: { arguments: call.arguments.slice(at, at + fragment) } }] });
      }
    }
    for (const delta of deltas) {
      if (res.destroyed) return;
      if (reply.dropAfterChunks !== undefined && entry.chunksSent >= reply.dropAfterChunks) {
        entry.dropped = true;
        // What was sent reaches the client first: the cut comes after those chunks, not instead of them.
        await written;
        res.destroy();
        return;
      }
      send(chunk(delta));
      entry.chunksSent++;
      if (reply.chunkDelayMs) await this.sleep(reply.chunkDelayMs, res);
    }
    if (res.destroyed) return;
    send(chunk({}, answer.finishReason));
    if (includeUsage) {
      send({ id: answer.id, object: 'chat.completion.chunk', created: answer.created, model: answer.model, system_fingerprint: 'fp_ferry_sim', choices: [], usage: answer.usage });
    }
    send('[DONE]');
    res.end(() => {
      entry.completed = true;
    });
  }

  private textPieces(text: string): string[] {
    if (text === '') return [];
    const size = this.options.chunkChars;
    if (size !== undefined && size > 0) {
      const pieces: string[] = [];
      for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
      return pieces;
    }
    return text.match(/\s*\S+\s*$|\s*\S+/g) ?? [text];
  }

  private validate(body: Record<string, unknown>): { message: string; param: string; code: string } | undefined {
    const { model, messages, tools, tool_choice: toolChoice, stream, stream_options: streamOptions } = body;
    if (typeof model !== 'string' || model === '') {
      return { message: 'you must provide a model parameter', param: 'model', code: 'missing_required_parameter' };
    }
    if (this.options.models && !this.options.models.includes(model)) {
      return { message: `The model \`${model}\` does not exist or you do not have access to it.`, param: 'model', code: 'model_not_found' };
    }
    if (!Array.isArray(messages) || messages.length === 0) {
      return { message: "Invalid 'messages': empty array. Expected an array with minimum length 1.", param: 'messages', code: 'empty_array' };
    }
    const invalidMessage = validateMessages(messages);
    if (invalidMessage) return invalidMessage;
    if (streamOptions !== undefined && streamOptions !== null && stream !== true) {
      return { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: 'stream_options', code: 'invalid_value' };
    }
    const names = new Set<string>();
    if (tools !== undefined) {
      if (!Array.isArray(tools)) return { message: "Invalid type for 'tools': expected an array.", param: 'tools', code: 'invalid_type' };
      for (const [i, tool] of tools.entries()) {
        const fn = (tool as { type?: unknown; function?: { name?: unknown; parameters?: unknown } } | null)?.function;
        if ((tool as { type?: unknown } | null)?.type !== 'function' || typeof fn?.name !== 'string' || !TOOL_NAME.test(fn.name)) {
          return { message: `Invalid 'tools[${i}]': a function with a name of 1–64 letters, digits, _ or - is required.`, param: `tools[${i}]`, code: 'invalid_value' };
        }
        if (fn.parameters !== undefined && (typeof fn.parameters !== 'object' || fn.parameters === null || Array.isArray(fn.parameters))) {
          return { message: `Invalid 'tools[${i}].function.parameters': expected an object.`, param: `tools[${i}].function.parameters`, code: 'invalid_type' };
        }
        names.add(fn.name);
      }
    }
    if (toolChoice !== undefined && typeof toolChoice === 'object' && toolChoice !== null) {
      const name = (toolChoice as { function?: { name?: unknown } }).function?.name;
      if (typeof name !== 'string' || !names.has(name)) {
        return { message: `Invalid 'tool_choice': no tool named ${JSON.stringify(name)} among 'tools'.`, param: 'tool_choice', code: 'invalid_value' };
      }
    }
    return undefined;
  }

  private scriptedError(res: ServerResponse, entry: SimChatRequest, reply: ChatSimReply): void {
    const status = reply.status!;
    const retryAfter = reply.retryAfterMs ?? (status === 429 ? 1_000 : undefined);
    if (retryAfter !== undefined) {
      res.setHeader('retry-after-ms', String(retryAfter));
      res.setHeader('retry-after', String(Math.ceil(retryAfter / 1000)));
    }
    this.simulatedError(res, entry, status, reply.errorMessage);
  }
}

interface Answer {
  id: string;
  created: number;
  model: string;
  text: string;
  calls: Array<{ id: string; name: string; arguments: string }>;
  finishReason: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

function completionOf(answer: Answer): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: answer.calls.length > 0 && answer.text === '' ? null : answer.text, refusal: null };
  if (answer.calls.length > 0) {
    message.tool_calls = answer.calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  }
  return {
    id: answer.id,
    object: 'chat.completion',
    created: answer.created,
    model: answer.model,
    system_fingerprint: 'fp_ferry_sim',
    choices: [{ index: 0, message, logprobs: null, finish_reason: answer.finishReason }],
    usage: answer.usage,
  };
}

/**
 * OpenAI's pairing rules for tool calls: a tool message answers a call of the assistant message before it, and an
 * assistant message with tool calls is followed by an answer to each of them before anything else.
 */
function validateMessages(messages: unknown[]): { message: string; param: string; code: string } | undefined {
  let open = new Set<string>();
  for (const [i, raw] of messages.entries()) {
    const message = raw as { role?: unknown; content?: unknown; tool_calls?: unknown; tool_call_id?: unknown } | null;
    const param = `messages[${i}]`;
    if (typeof message !== 'object' || message === null || typeof message.role !== 'string' || !ROLES.has(message.role)) {
      return { message: `Invalid '${param}.role': expected one of system, developer, user, assistant, tool.`, param: `${param}.role`, code: 'invalid_value' };
    }
    if (message.role !== 'tool' && open.size > 0) {
      return {
        message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
          `The following tool_call_ids did not have response messages: ${[...open].join(', ')}`,
        param: param,
        code: 'invalid_value',
      };
    }
    const hasContent = typeof message.content === 'string' || Array.isArray(message.content);
    if (message.role === 'tool') {
      if (typeof message.tool_call_id !== 'string' || !open.has(message.tool_call_id)) {
        return { message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: param, code: 'invalid_value' };
      }
      open.delete(message.tool_call_id);
      if (!hasContent) return { message: `Missing required parameter: '${param}.content'.`, param: `${param}.content`, code: 'missing_required_parameter' };
      continue;
    }
    if (message.role === 'assistant') {
      const calls = message.tool_calls;
      if (calls !== undefined && calls !== null) {
        if (!Array.isArray(calls) || calls.length === 0) return { message: `Invalid '${param}.tool_calls': expected a non-empty array.`, param: `${param}.tool_calls`, code: 'invalid_value' };
        open = new Set();
        for (const call of calls as Array<{ id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null>) {
          if (typeof call?.id !== 'string' || typeof call.function?.name !== 'string' || typeof call.function.arguments !== 'string') {
            return { message: `Invalid '${param}.tool_calls': each needs an id and a function with a name and arguments.`, param: `${param}.tool_calls`, code: 'invalid_value' };
          }
          open.add(call.id);
        }
        continue;
      }
    }
    if (!hasContent) return { message: `Missing required parameter: '${param}.content'.`, param: `${param}.content`, code: 'missing_required_parameter' };
  }
  return undefined;
}

function matches(match: RegExp | string | undefined, said: string): boolean {
  if (match === undefined) return true;
  if (typeof match === 'string') return said.toLowerCase().includes(match.toLowerCase());
  match.lastIndex = 0;
  return match.test(said);
}

/** A message's text: a string, or the text parts of a content array joined. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .map((part: { type?: unknown; text?: unknown } | null) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

/** About four characters a token, as OpenAI's English averages. */
function usageOf(messages: Array<Record<string, unknown>>, text: string, calls: Answer['calls']): Answer['usage'] {
  const tokens = (chars: number): number => Math.max(1, Math.ceil(chars / 4));
  const promptChars = messages.reduce((sum, m) => sum + (textOf(m.content)?.length ?? 0) + JSON.stringify(m.tool_calls ?? '').length, 0);
  const completionChars = text.length + calls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  const prompt = tokens(promptChars);
  const completion = tokens(completionChars);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
