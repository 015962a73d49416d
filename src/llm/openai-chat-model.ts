import type * as OpenAiSdk from 'openai';
import type {
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type {
  ChatCallOptions,
  ChatCompleteOptions,
  ChatEvent,
  ChatMessage,
  ChatModel,
  ChatRequest,
  ChatResult,
  ChatTool,
  ChatToolChoice,
} from './chat-model.js';
import { ChunkAssembler, MalformedAnswerError } from './chunk-assembler.js';
import { LlmBadRequestError, type LlmError } from './errors.js';
import { GuardedHttpError } from '../security/guarded-http.js';
import { boundedErrorAnswer, loadOpenAiSdk, PROVIDER_HEADERS, providerHeaders, retryAfterMs } from '../util/openai-compatible.js';
import { classifyLlmFailure, type LlmFailureAction, type LlmFailureKind } from './llm-errors-table.js';

export interface OpenAiChatModelOptions {
  /** The API root, e.g. "https://api.openai.com/v1" or "http://127.0.0.1:11434/v1" (the SDK appends /chat/completions). */
  baseUrl: string;
  /** Sent as a Bearer token; never logged, never in an error message. Empty for local servers that need none. */
  apiKey?: string;
  model: string;
  /** A label for logs and errors; default "llm <model>". */
  id?: string;
  temperature?: number;
  maxTokens?: number;
  /** The request field for maxTokens: "max_tokens" (default, what compatible servers read) or OpenAI's newer name. */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens';
  /** From the call to the first text or tool-call fragment, retries included. Default 5 s. */
  firstTokenTimeoutMs?: number;
  /** From the call to the end of the answer. Default 30 s. */
  totalTimeoutMs?: number;
  /** Further requests after a retryable failure, only before the first token. Default 2. */
  retries?: number;
  /** The pause before asking again after a `retry` failure (connection, 5xx). Default 100 ms. */
  retryDelayMs?: number;
  /** The first `back-off` wait when the provider gave no Retry-After; doubled each time. Default 500 ms. */
  backoffMs?: number;
  /** A Retry-After longer than this is not waited for: the error goes to the caller with its retryAfterMs. Default 2 s. */
  maxRetryWaitMs?: number;
  /** Ask for usage in the stream (`stream_options.include_usage`). Default true; a few old servers refuse it. */
  includeUsage?: boolean;
  /** Cap on the bytes of one streamed answer; reading stops past it. Default 1 MB. */
  maxAnswerBytes?: number;
  /**
   * What requests go through; default the global fetch. A customer's endpoint gets guardedFetch(…) (SSRF guard at
   * each request, connections only to checked addresses).
   */
  fetch?: typeof fetch;
}

type Sdk = typeof OpenAiSdk;
type Client = OpenAiSdk.OpenAI;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Why a generation's requests were cut: the caller (barge-in) or one of the two deadlines. */
type StopReason = 'caller' | 'first-token' | 'total';

/**
 * A chat model over any OpenAI-compatible `POST /chat/completions` endpoint (OpenAI, vLLM, llama.cpp, Ollama, …),
 * always streamed: text deltas go to the caller as they come, tool calls are assembled from their fragments, and
 * usage and time to first token are measured.
 *
 * Retries are Ferry's, not the SDK's (maxRetries 0), and happen only before the first token: once the caller has
 * text, a second answer would not continue it. Both deadlines span the retries, so a caller on the line waits at
 * most `firstTokenTimeoutMs` for the agent to start speaking, whatever happens underneath.
 */
export class OpenAiChatModel implements ChatModel {
  readonly id: string;
  // Private fields: util.inspect and JSON.stringify of the model cannot show the key or the client holding it.
  readonly #apiKey: string;
  readonly #secrets: readonly string[];
  #client: Promise<Client> | undefined;
  private readonly baseUrl: string;
  private readonly model: string;
  private readonly temperature: number | undefined;
  private readonly maxTokens: number | undefined;
  private readonly maxTokensField: 'max_tokens' | 'max_completion_tokens';
  private readonly firstTokenTimeoutMs: number;
  private readonly totalTimeoutMs: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly backoffMs: number;
  private readonly maxRetryWaitMs: number;
  private readonly includeUsage: boolean;
  private readonly maxAnswerBytes: number;
  private readonly send: typeof fetch;

  constructor(options: OpenAiChatModelOptions) {
    this.model = options.model;
    this.id = options.id ?? `llm ${options.model}`;
    this.#apiKey = options.apiKey ?? '';
    this.#secrets = [this.#apiKey];
    // Lenient about the root: a full endpoint URL or a trailing slash is taken back to the API root.
    this.baseUrl = new URL(options.baseUrl).toString().replace(/\/$/, '').replace(/\/chat\/completions$/, '');
    this.temperature = options.temperature;
    this.maxTokens = options.maxTokens;
    this.maxTokensField = options.maxTokensField ?? 'max_tokens';
    this.firstTokenTimeoutMs = Math.ceil(options.firstTokenTimeoutMs ?? 5_000);
    this.totalTimeoutMs = Math.max(this.firstTokenTimeoutMs, Math.ceil(options.totalTimeoutMs ?? 30_000));
    this.retries = Math.max(0, options.retries ?? 2);
    this.retryDelayMs = options.retryDelayMs ?? 100;
    this.backoffMs = options.backoffMs ?? 500;
    this.maxRetryWaitMs = options.maxRetryWaitMs ?? 2_000;
    this.includeUsage = options.includeUsage ?? true;
    this.maxAnswerBytes = options.maxAnswerBytes ?? 1024 * 1024;
    this.send = options.fetch ?? ((input, init) => fetch(input, init));
  }

  stream(request: ChatRequest, options: ChatCallOptions = {}): AsyncIterable<ChatEvent> {
    return this.generate(request, options.signal);
  }

  async complete(request: ChatRequest, options: ChatCompleteOptions = {}): Promise<ChatResult> {
    for await (const event of this.generate(request, options.signal)) {
      options.onEvent?.(event);
      if (event.type === 'done') return event.result;
    }
    // generate() ends with `done` or throws.
    throw new Error('the chat stream ended without a result');
  }

  private async *generate(request: ChatRequest, signal: AbortSignal | undefined): AsyncGenerator<ChatEvent, void, undefined> {
    const started = performance.now();
    const body = this.requestBody(request);
    const turn = new Turn(signal, this.firstTokenTimeoutMs, this.totalTimeoutMs);
    try {
      const { sdk, client } = await this.connect();
      let firstTokenMs: number | undefined;
      for (let attempt = 1; ; attempt++) {
        const attemptAbort = new AbortController();
        const unlink = turn.link(attemptAbort);
        try {
          if (turn.stopped) throw new Stopped();
          const assembler = new ChunkAssembler();
          const stream = await client.chat.completions.create(body, { signal: attemptAbort.signal });
          for await (const chunk of stream) {
            const progress = assembler.add(chunk);
            if (progress.token && firstTokenMs === undefined) {
              firstTokenMs = Math.round(performance.now() - started);
              turn.firstTokenArrived();
              yield { type: 'first-token', latencyMs: firstTokenMs };
            }
            if (progress.text !== '') yield { type: 'text', delta: progress.text };
          }
          // The SDK ends a stream quietly when its request is aborted: that is no answer.
          if (attemptAbort.signal.aborted) throw new Stopped();
          const answer = assembler.finish();
          const totalMs = Math.round(performance.now() - started);
          turn.close();
          for (const call of answer.toolCalls) yield { type: 'tool-call', call };
          const result: ChatResult = {
            text: answer.text,
            toolCalls: answer.toolCalls,
            finishReason: answer.finishReason,
            timings: firstTokenMs === undefined ? { totalMs } : { timeToFirstTokenMs: firstTokenMs, totalMs },
            attempts: attempt,
          };
          if (answer.usage) result.usage = answer.usage;
          if (answer.model) result.model = answer.model;
          yield { type: 'done', result };
          return;
        } catch (err) {
          const { error, action } = this.classify(sdk, err, turn, attempt);
          if (firstTokenMs !== undefined || action === 'fail' || attempt > this.retries) throw error;
          const wait = action === 'back-off' ? (error.retryAfterMs ?? this.backoffMs * 2 ** (attempt - 1)) : this.retryDelayMs;
          // A wait past the first-token deadline would only turn the provider's answer into a less useful timeout.
          if (wait > this.maxRetryWaitMs || wait >= turn.firstTokenMsLeft()) throw error;
          const slept = await turn.sleep(wait);
          if (!slept) throw this.classify(sdk, error, turn, attempt).error;
        } finally {
          unlink();
          // Closes the HTTP request whatever ended the attempt: an error, the caller's abort, or a consumer's break.
          attemptAbort.abort();
        }
      }
    } finally {
      turn.close();
    }
  }

  private classify(sdk: Sdk, err: unknown, turn: Turn, attempts: number): { error: LlmError; action: LlmFailureAction } {
    const failure = (kind: LlmFailureKind, detail?: string, extra: { retryAfterMs?: number; cause?: unknown } = {}) =>
      classifyLlmFailure({ model: this.id, kind, detail, attempts, secrets: this.#secrets, ...extra });
    if (turn.stopReason === 'caller') return failure('aborted');
    if (turn.stopReason === 'first-token') return failure('timeout', `no first token within ${this.firstTokenTimeoutMs} ms`);
    if (turn.stopReason === 'total') return failure('timeout', `no complete answer within ${this.totalTimeoutMs} ms`);
    // Ferry's own findings may reach the SDK as the cause of a connection error (thrown inside fetch).
    const own = findCause(err, MalformedAnswerError);
    if (own) return failure(own.kind, own.message);
    if (err instanceof sdk.APIConnectionTimeoutError) return failure('timeout', 'the connection timed out');
    if (err instanceof sdk.APIUserAbortError) return failure('aborted');
    if (err instanceof sdk.APIConnectionError || !(err instanceof sdk.APIError)) {
      if (err instanceof SyntaxError) return failure('malformed', 'a stream event is not valid JSON');
      // The SSRF guard's refusal (a name now pointing inside, say) or its own finding: Ferry's words, safe to show.
      const guarded = findCause(err, GuardedHttpError);
      if (guarded) return failure('connection', `cannot reach the provider: ${guarded.message}`, { cause: { code: guarded.kind } });
      const code = networkCode(err);
      return failure('connection', `cannot reach the provider, or it broke off (${code})`, { cause: { code } });
    }
    const body = err.error as { message?: unknown } | undefined;
    const said = typeof body?.message === 'string' ? body.message : err.message.replace(/^\d{3} /, '');
    // An error object inside a 200 event stream: the server failed mid-generation.
    if (err.status === undefined) return failure('stream-error', said);
    const retryAfter = err.headers ? retryAfterMs(err.headers) : undefined;
    return failure(`${err.status}`, said, retryAfter === undefined ? {} : { retryAfterMs: retryAfter });
  }

  private connect(): Promise<{ sdk: Sdk; client: Client }> {
    this.#client ??= loadOpenAiSdk().then(
      (sdk) =>
        new sdk.OpenAI({
          // The SDK insists on a key; a keyless local server gets none on the wire (see chatFetch).
          apiKey: this.#apiKey === '' ? 'no-key' : this.#apiKey,
          baseURL: this.baseUrl,
          // Ferry's deadlines govern (Turn); this only bounds a request the deadlines somehow missed.
          timeout: this.totalTimeoutMs + 1_000,
          maxRetries: 0,
          // Never the OPENAI_* environment of the host: this may be a third party's server.
          organization: null,
          project: null,
          adminAPIKey: null,
          webhookSecret: null,
          // Ferry logs for itself; the SDK's debug level would print requests.
          logLevel: 'off',
          fetch: chatFetch(this.send, this.#apiKey !== '', this.maxAnswerBytes),
        }),
    );
    const client = this.#client;
    return Promise.all([loadOpenAiSdk(), client]).then(([sdk, c]) => ({ sdk, client: c }));
  }

  private requestBody(request: ChatRequest): ChatCompletionCreateParamsStreaming {
    if (!Array.isArray(request.messages) || request.messages.length === 0) {
      throw new LlmBadRequestError(`chat model "${this.id}": the conversation has no messages`);
    }
    const body: ChatCompletionCreateParamsStreaming = {
      model: this.model,
      messages: request.messages.map((message) => this.wireMessage(message)),
      stream: true,
    };
    if (this.includeUsage) body.stream_options = { include_usage: true };
    const temperature = request.temperature ?? this.temperature;
    if (temperature !== undefined) body.temperature = temperature;
    const maxTokens = request.maxTokens ?? this.maxTokens;
    if (maxTokens !== undefined) body[this.maxTokensField] = maxTokens;
    if (request.tools && request.tools.length > 0) {
      body.tools = request.tools.map((tool) => this.wireTool(tool));
      if (request.toolChoice !== undefined) body.tool_choice = wireToolChoice(request.toolChoice);
    }
    return body;
  }

  private wireMessage(message: ChatMessage): ChatCompletionMessageParam {
    switch (message.role) {
      case 'system':
      case 'user':
        return { role: message.role, content: message.content };
      case 'assistant': {
        const toolCalls = message.toolCalls ?? [];
        if (toolCalls.length === 0) return { role: 'assistant', content: message.content ?? '' };
        return {
          role: 'assistant',
          content: message.content,
          tool_calls: toolCalls.map((call) => ({
            id: call.id,
            type: 'function' as const,
            // Providers refuse an empty arguments text in the conversation; a call without arguments sent "{}".
            function: { name: call.name, arguments: call.argumentsJson.trim() === '' ? '{}' : call.argumentsJson },
          })),
        };
      }
      case 'tool':
        return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
      default:
        throw new LlmBadRequestError(`chat model "${this.id}": unknown message role ${JSON.stringify((message as { role: unknown }).role)}`);
    }
  }

  private wireTool(tool: ChatTool): ChatCompletionFunctionTool {
    if (typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name)) {
      throw new LlmBadRequestError(`chat model "${this.id}": the tool name ${JSON.stringify(tool.name)} is not 1–64 letters, digits, _ or -`);
    }
    return {
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        parameters: tool.parameters ?? { type: 'object', properties: {} },
      },
    };
  }
}

function wireToolChoice(choice: ChatToolChoice): ChatCompletionToolChoiceOption {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
}

/** Thrown when the turn has stopped (caller or deadline); classify() reads the reason from the turn. */
class Stopped extends Error {}

/**
 * One generation's cancellation: the caller's signal and the two deadlines, each of which aborts the request in
 * flight and remembers why. The first-token deadline is disarmed when the first token arrives.
 */
class Turn {
  stopReason: StopReason | undefined;
  private readonly attempts = new Set<AbortController>();
  private readonly firstTokenDeadline: number;
  private firstTokenTimer: NodeJS.Timeout | undefined;
  private readonly totalTimer: NodeJS.Timeout;
  private readonly onCallerAbort = (): void => this.stop('caller');

  constructor(
    private readonly signal: AbortSignal | undefined,
    firstTokenTimeoutMs: number,
    totalTimeoutMs: number,
  ) {
    this.firstTokenDeadline = performance.now() + firstTokenTimeoutMs;
    this.firstTokenTimer = setTimeout(() => this.stop('first-token'), firstTokenTimeoutMs);
    this.totalTimer = setTimeout(() => this.stop('total'), totalTimeoutMs);
    if (signal?.aborted) this.stopReason = 'caller';
    else signal?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  get stopped(): boolean {
    return this.stopReason !== undefined;
  }

  /** Aborts `attempt` when the turn stops; the returned function undoes the link. */
  link(attempt: AbortController): () => void {
    if (this.stopped) attempt.abort();
    this.attempts.add(attempt);
    return () => this.attempts.delete(attempt);
  }

  firstTokenArrived(): void {
    clearTimeout(this.firstTokenTimer);
    this.firstTokenTimer = undefined;
  }

  firstTokenMsLeft(): number {
    return this.firstTokenTimer === undefined ? Infinity : this.firstTokenDeadline - performance.now();
  }

  /** Waits `ms`: true, or false as soon as the turn stops meanwhile. */
  sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = new AbortController();
      const unlink = this.link(wake);
      const timer = setTimeout(() => {
        unlink();
        resolve(true);
      }, ms);
      wake.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        unlink();
        resolve(false);
      });
    });
  }

  close(): void {
    clearTimeout(this.firstTokenTimer);
    clearTimeout(this.totalTimer);
    this.signal?.removeEventListener('abort', this.onCallerAbort);
  }

  private stop(reason: StopReason): void {
    if (this.stopped) return;
    this.stopReason = reason;
    for (const attempt of this.attempts) attempt.abort();
  }
}

function findCause<T extends Error>(err: unknown, type: new (...args: never[]) => T): T | undefined {
  // A short chain: the SDK wraps fetch's error once, undici once more.
  for (let at = err, depth = 0; at !== undefined && at !== null && depth < 4; at = (at as { cause?: unknown }).cause, depth++) {
    if (at instanceof type) return at;
  }
  return undefined;
}

/** undici's "fetch failed" and "terminated" say little; the cause's code (ECONNREFUSED, UND_ERR_SOCKET …) says what. */
function networkCode(err: unknown): string {
  for (let at = err, depth = 0; at !== undefined && at !== null && depth < 4; at = (at as { cause?: unknown }).cause, depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
  }
  return (err as Error | undefined)?.name ?? 'unknown';
}


/**
 * The fetch the SDK uses. It sends only the headers the API needs (the SDK adds X-Stainless-* telemetry and whatever
 * OPENAI_CUSTOM_HEADERS holds, none of which a third party's server should get), and no Authorization when there is
 * no key. An error answer's body is read to at most 16 kB and put in OpenAI's {"error": {"message"}} shape when it
 * came in another common one; a successful answer must be an event stream, and is cut off past `maxAnswerBytes`.
 */
function chatFetch(send: typeof fetch, sendKey: boolean, maxAnswerBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await send(input, { ...init, headers: providerHeaders(init, PROVIDER_HEADERS, sendKey) });
    if (!response.body) return response;
    if (response.status >= 400) return boundedErrorAnswer(response);
    if (response.status >= 300) return response;
    const type = response.headers.get('content-type') ?? '';
    if (!/^text\/event-stream\b/i.test(type)) {
      await response.body.cancel().catch(() => undefined);
      throw new MalformedAnswerError(`the provider answered ${type || 'no content type'}, not an event stream`);
    }
    let total = 0;
    const capped = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          total += chunk.byteLength;
          if (total > maxAnswerBytes) controller.error(new MalformedAnswerError(`the answer is over ${maxAnswerBytes} bytes`, 'too-large'));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(capped, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}


