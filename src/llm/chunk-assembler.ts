import type { ChatFinishReason, ChatToolCall, ChatUsage } from './chat-model.js';

/** A streamed answer that is not a chat completion, ended without saying why, or grew over the cap. */
export class MalformedAnswerError extends Error {
  constructor(
    message: string,
    readonly kind: 'malformed' | 'truncated' | 'too-large' = 'malformed',
  ) {
    super(message);
    this.name = 'MalformedAnswerError';
  }
}

interface PartialToolCall {
  index: number;
  id: string;
  name: string;
  argumentsJson: string;
}

export interface AssembledAnswer {
  text: string;
  toolCalls: ChatToolCall[];
  finishReason: ChatFinishReason;
  usage?: ChatUsage;
  model?: string;
}

/** What one chunk added: text to pass on, and whether it carried a token (text or a tool-call fragment). */
export interface ChunkProgress {
  text: string;
  token: boolean;
}

/**
 * Puts a streamed chat completion back together, chunk by chunk, as OpenAI sends it: `choices[0].delta.content`
 * fragments, `tool_calls` fragments keyed by `index` (the first with `id` and `function.name`, the rest with pieces of
 * `function.arguments`), a `finish_reason`, and with `stream_options.include_usage` a last chunk with `usage` and no
 * choices. Its size is bounded by the byte cap on the stream it reads (see OpenAiChatModel). Tolerates what compatible servers do differently: the whole name repeated in every fragment, no `index`
 * (fragments then follow the `id`), no `id` (one is made up so the conversation can refer to the call).
 */
export class ChunkAssembler {
  private text = '';
  private readonly calls: PartialToolCall[] = [];
  private finishReason: string | undefined;
  private usage: ChatUsage | undefined;
  private model: string | undefined;

  add(chunk: unknown): ChunkProgress {
    if (typeof chunk !== 'object' || chunk === null) throw new MalformedAnswerError('a stream event is not a JSON object');
    const { choices, usage, model } = chunk as { choices?: unknown; usage?: unknown; model?: unknown };
    if (typeof model === 'string' && model !== '') this.model = model;
    if (usage !== undefined && usage !== null) this.usage = readUsage(usage);
    if (choices === undefined || choices === null) return { text: '', token: false };
    if (!Array.isArray(choices)) throw new MalformedAnswerError('"choices" is not a list');
    // Ferry asks for one choice (n = 1); a server sending more is answered by its first.
    const choice = choices.find((c: { index?: unknown } | null) => c !== null && typeof c === 'object' && (c.index ?? 0) === 0) as
      | { delta?: unknown; finish_reason?: unknown }
      | undefined;
    if (!choice) return { text: '', token: false };
    if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') this.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (delta === undefined || delta === null) return { text: '', token: false };
    if (typeof delta !== 'object') throw new MalformedAnswerError('"delta" is not an object');
    const { content, tool_calls: toolCalls } = delta as { content?: unknown; tool_calls?: unknown };
    let token = false;
    let text = '';
    if (typeof content === 'string' && content !== '') {
      text = content;
      this.text += content;
      token = true;
    }
    if (toolCalls !== undefined && toolCalls !== null) {
      if (!Array.isArray(toolCalls)) throw new MalformedAnswerError('"tool_calls" is not a list');
      for (const fragment of toolCalls) {
        this.addToolFragment(fragment);
        token = true;
      }
    }
    return { text, token };
  }

  /** The answer; throws when the stream ended without a finish reason or a tool call has no name. */
  finish(): AssembledAnswer {
    if (this.finishReason === undefined) throw new MalformedAnswerError('the stream ended before the answer was finished', 'truncated');
    const toolCalls = this.calls.map((call) => {
      if (call.name === '') throw new MalformedAnswerError(`tool call ${call.index} has no function name`);
      return parseToolCall(call);
    });
    const answer: AssembledAnswer = { text: this.text, toolCalls, finishReason: this.finishReason };
    if (this.usage) answer.usage = this.usage;
    if (this.model) answer.model = this.model;
    return answer;
  }

  private addToolFragment(fragment: unknown): void {
    if (typeof fragment !== 'object' || fragment === null) throw new MalformedAnswerError('a tool call fragment is not an object');
    const { index, id, function: fn } = fragment as { index?: unknown; id?: unknown; function?: unknown };
    const callId = typeof id === 'string' && id !== '' ? id : undefined;
    let call: PartialToolCall | undefined;
    if (typeof index === 'number' && Number.isInteger(index) && index >= 0) {
      call = this.calls.find((c) => c.index === index);
      if (!call) {
        if (this.calls.length >= MAX_TOOL_CALLS) throw new MalformedAnswerError(`more than ${MAX_TOOL_CALLS} tool calls`);
        call = { index, id: '', name: '', argumentsJson: '' };
        this.calls.push(call);
      }
    } else {
      // No index: a new id starts a new call; a fragment without one continues the last.
      call = callId === undefined ? this.calls.at(-1) : this.calls.find((c) => c.id === callId);
      if (!call) {
        if (this.calls.length >= MAX_TOOL_CALLS) throw new MalformedAnswerError(`more than ${MAX_TOOL_CALLS} tool calls`);
        call = { index: this.calls.length, id: '', name: '', argumentsJson: '' };
        this.calls.push(call);
      }
    }
    if (callId !== undefined && call.id === '') call.id = callId;
    if (fn === undefined || fn === null) return;
    if (typeof fn !== 'object') throw new MalformedAnswerError('a tool call "function" is not an object');
    const { name, arguments: args } = fn as { name?: unknown; arguments?: unknown };
    // OpenAI sends the name whole in the first fragment; some servers repeat it in every one, a few stream it in pieces.
    if (typeof name === 'string' && name !== '' && name !== call.name) call.name += name;
    if (typeof args === 'string') call.argumentsJson += args;
    // A few servers send the arguments parsed, in one piece.
    else if (typeof args === 'object' && args !== null) call.argumentsJson += JSON.stringify(args);
  }
}

/** More tool calls than any voice turn needs: a server looping on fragments. */
const MAX_TOOL_CALLS = 32;

function parseToolCall(call: PartialToolCall): ChatToolCall {
  const id = call.id === '' ? `call_ferry_${call.index}` : call.id;
  const base = { id, name: call.name, argumentsJson: call.argumentsJson };
  // A function without parameters: OpenAI sends "{}", some servers send nothing.
  if (call.argumentsJson.trim() === '') return { ...base, arguments: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(call.argumentsJson);
  } catch (err) {
    return { ...base, argumentsError: `the arguments are not valid JSON (${(err as Error).message})` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { ...base, argumentsError: 'the arguments are not a JSON object' };
  }
  return { ...base, arguments: parsed as Record<string, unknown> };
}

function readUsage(usage: unknown): ChatUsage {
  if (typeof usage !== 'object' || usage === null) throw new MalformedAnswerError('"usage" is not an object');
  const { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total } = usage as Record<string, unknown>;
  const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0);
  return {
    promptTokens: count(prompt),
    completionTokens: count(completion),
    totalTokens: typeof total === 'number' ? count(total) : count(prompt) + count(completion),
  };
}
