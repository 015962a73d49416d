/** A tool call the assistant made, as sent back to the model in the conversation. */
export interface ChatToolCallMessage {
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text, sent back verbatim. */
  argumentsJson: string;
}

/** One message of the conversation, in Ferry's words (the adapter maps them to the provider's wire format). */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ChatToolCallMessage[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A function the model may call, described by a JSON schema of its parameters. */
export interface ChatTool {
  /** ^[a-zA-Z0-9_-]{1,64}$, as OpenAI requires. */
  name: string;
  /** What the model reads to decide when to call it. */
  description?: string;
  /** A JSON schema of an object; default: no parameters. */
  parameters?: Record<string, unknown>;
}

export type ChatToolChoice = 'auto' | 'none' | 'required' | { name: string };

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ChatTool[];
  toolChoice?: ChatToolChoice;
  /** Overrides the model's configured value for this request. */
  temperature?: number;
  /** Overrides the model's configured value for this request. */
  maxTokens?: number;
}

/** A tool call assembled from the streamed fragments. */
export interface ChatToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them (an empty text when it wrote none). */
  argumentsJson: string;
  /** The parsed arguments; absent when they are not a JSON object (then `argumentsError` says why). */
  arguments?: Record<string, unknown>;
  /** Why the arguments are unusable: the model wrote invalid JSON, or JSON that is not an object. */
  argumentsError?: string;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** Why the model stopped: "stop", "length", "tool_calls", "content_filter", or a provider's own word. */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | (string & {});

export interface ChatTimings {
  /** From the call to the first text or tool-call fragment, retries included; absent when the answer had none. */
  timeToFirstTokenMs?: number;
  /** From the call to the end of the answer. */
  totalMs: number;
}

export interface ChatResult {
  /** All the text deltas joined. */
  text: string;
  toolCalls: ChatToolCall[];
  finishReason: ChatFinishReason;
  /** As the provider counted, when it said (streamed usage is asked for unless switched off). */
  usage?: ChatUsage;
  timings: ChatTimings;
  /** The model the provider says answered. */
  model?: string;
  /** Requests made, 1 when the first succeeded. */
  attempts: number;
}

/**
 * What a streamed generation reports, in order: `first-token` once (before the first text or tool call), `text`
 * deltas as they come (so speech can start on the first sentence), each `tool-call` once complete, then `done`.
 */
export type ChatEvent =
  | { type: 'first-token'; latencyMs: number }
  | { type: 'text'; delta: string }
  | { type: 'tool-call'; call: ChatToolCall }
  | { type: 'done'; result: ChatResult };

export interface ChatCallOptions {
  /** Cancels the generation (barge-in): the HTTP request is closed and the stream throws LlmAbortedError. */
  signal?: AbortSignal;
}

export interface ChatCompleteOptions extends ChatCallOptions {
  /** Each event as it arrives, for callers who want the result and the stream both. */
  onEvent?: (event: ChatEvent) => void;
}

/**
 * A conversational language model. Failures are LlmErrors (see llm-errors-table.ts); a generation is retried only
 * before its first token, so a consumer never sees text twice.
 */
export interface ChatModel {
  /** A label for logs and error messages, e.g. "llm gpt-4o-mini"; never holds a secret. */
  readonly id: string;
  stream(request: ChatRequest, options?: ChatCallOptions): AsyncIterable<ChatEvent>;
  /** The whole answer; the same generation as stream(), consumed. */
  complete(request: ChatRequest, options?: ChatCompleteOptions): Promise<ChatResult>;
}

/** The assistant's turn as it goes back into the conversation, tool calls included. */
export function assistantMessage(result: Pick<ChatResult, 'text' | 'toolCalls'>): ChatMessage {
  const toolCalls = result.toolCalls.map((call) => ({ id: call.id, name: call.name, argumentsJson: call.argumentsJson }));
  return {
    role: 'assistant',
    content: result.text === '' && toolCalls.length > 0 ? null : result.text,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
  };
}
