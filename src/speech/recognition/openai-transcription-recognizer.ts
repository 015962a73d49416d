import { performance } from 'node:perf_hooks';
import type OpenAI from 'openai';
import { TELEPHONY_RATE } from '../../audio/resample.js';
import { encodeWav } from '../../audio/wav.js';
import { SpeechError, SpeechInputError, SpeechUnavailableError } from '../errors.js';
import type { SpeechFailureCode } from '../speech-errors-table.js';
import { toBcp47 } from '../voices.js';
import type { RecognitionRequest, RecognitionResult, SpeechRecognizer } from './speech-recognizer.js';
import { servesLocale } from './speech-recognizer.js';
import { classifyTranscriptionFailure } from './transcription-errors-table.js';
import { GuardedHttpError } from '../../security/guarded-http.js';
import { boundedErrorAnswer, loadOpenAiSdk, PROVIDER_HEADERS, providerHeaders, retryAfterMs, type OpenAiSdk } from '../../util/openai-compatible.js';

export type TranscriptionResponseFormat = 'json' | 'text' | 'verbose_json';

export interface OpenAiTranscriptionOptions {
  /** The recognizer id in the catalogue, e.g. "openai" or "whisper-local". */
  id: string;
  /** The API root, e.g. "https://api.openai.com/v1" (the SDK appends /audio/transcriptions). */
  baseUrl: string;
  /** Sent as a Bearer token; never logged, never in an error message. An empty key leaves the engine unavailable. */
  apiKey: string;
  /** E.g. "whisper-1", "gpt-4o-mini-transcribe". */
  model: string;
  /** The BCP 47 locales the operator lets this provider hear (Whisper hears ~100 languages; the catalogue says which). */
  locales: string[];
  /** Per attempt, from the request to the whole answer. Default 10 s: a caller is waiting. */
  timeoutMs?: number;
  /** Default "json"; "verbose_json" also gives a confidence (from the segments' average log-probability). */
  responseFormat?: TranscriptionResponseFormat;
  /** Longest utterance accepted. Default 60 s. */
  maxSeconds?: number;
  /** Further attempts after a retryable answer (429, 5xx, connection failure; never after a timeout). Default 1. */
  retries?: number;
  /** A Retry-After longer than this is not waited for: the error goes to the caller with its retryAfterMs. Default 1 s. */
  maxRetryWaitMs?: number;
  /**
   * What requests go through; default the global fetch. A customer's endpoint gets guardedFetch(…) (SSRF guard at
   * each request, connections only to checked addresses).
   */
  fetch?: typeof fetch;
}

/** Wait before retrying an answer that gave no Retry-After. */
const DEFAULT_RETRY_WAIT_MS = 250;
const SENT_HEADERS = [...PROVIDER_HEADERS, 'content-length'];
/** Error answers are short JSON; more than this is not read. */
/** The prompt is a hint, not a document: OpenAI reads only its last 224 tokens. */
const MAX_PROMPT_LENGTH = 800;

type OpenAiModule = OpenAiSdk;
type Outcome = { ok: true; text: string; confidence?: number } | { ok: false; code: SpeechFailureCode; error: SpeechError };


/**
 * Speech-to-text over an OpenAI-compatible `POST /audio/transcriptions` (OpenAI's Whisper and gpt-4o transcribe
 * models, or a self-hosted Whisper server speaking the same API). The utterance goes up as an 8 kHz WAV with the
 * locale's language and the hints as `prompt`. Retries are Ferry's and bounded (the SDK's maxRetries is 0), as in
 * OpenAiSpeechEngine; failures are classified by OPENAI_TRANSCRIPTION_ERRORS.
 */
export class OpenAiTranscriptionRecognizer implements SpeechRecognizer {
  readonly id: string;
  // Private fields: util.inspect and JSON.stringify of the recognizer cannot show the key or the client holding it.
  readonly #apiKey: string;
  #client: Promise<OpenAI> | undefined;
  private readonly baseUrl: string;
  private readonly model: string;
  private readonly served: string[];
  private readonly timeoutMs: number;
  private readonly responseFormat: TranscriptionResponseFormat;
  private readonly maxSeconds: number;
  private readonly retries: number;
  private readonly maxRetryWaitMs: number;
  private readonly send: typeof fetch;

  constructor(options: OpenAiTranscriptionOptions) {
    this.id = options.id;
    this.#apiKey = options.apiKey;
    this.baseUrl = new URL(options.baseUrl).toString().replace(/\/$/, '');
    this.model = options.model;
    this.served = options.locales.map(toBcp47);
    this.timeoutMs = Math.ceil(options.timeoutMs ?? 10_000);
    this.responseFormat = options.responseFormat ?? 'json';
    this.maxSeconds = options.maxSeconds ?? 60;
    this.retries = options.retries ?? 1;
    this.maxRetryWaitMs = options.maxRetryWaitMs ?? 1_000;
    this.send = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** True when configured with a key and a locale; the provider is not asked. */
  available(): Promise<boolean> {
    return Promise.resolve(this.#apiKey !== '' && this.served.length > 0);
  }

  locales(): Promise<string[]> {
    return Promise.resolve([...this.served]);
  }

  async recognize(request: RecognitionRequest): Promise<RecognitionResult> {
    const started = performance.now();
    if (!(request.pcm instanceof Int16Array)) throw new SpeechInputError('the audio must be 16-bit PCM (an Int16Array)');
    const seconds = request.pcm.length / TELEPHONY_RATE;
    if (seconds > this.maxSeconds) {
      throw new SpeechInputError(`the utterance lasts ${seconds.toFixed(1)} s, over the limit of ${this.maxSeconds} s`);
    }
    if (!servesLocale(this.served, request.locale)) {
      throw new SpeechInputError(`speech-to-text provider "${this.id}" is not configured for "${request.locale}"`);
    }
    if (this.#apiKey === '') throw new SpeechUnavailableError(`speech-to-text provider "${this.id}" has no API key configured`);
    // Nothing to hear; providers answer an empty WAV with a 400.
    if (request.pcm.length === 0) return { text: '', engineMs: performance.now() - started };
    const wav = encodeWav(request.pcm, TELEPHONY_RATE);
    const language = toBcp47(request.locale).split('-')[0];
    const prompt = promptOf(request.hints);
    const { text, confidence } = await this.requestWithRetries(wav, language, prompt);
    const result: RecognitionResult = { text, engineMs: performance.now() - started };
    if (confidence !== undefined) result.confidence = confidence;
    return result;
  }

  private client(): Promise<OpenAI> {
    this.#client ??= loadOpenAiSdk().then(
      ({ default: OpenAIClient }) =>
        new OpenAIClient({
          apiKey: this.#apiKey,
          baseURL: this.baseUrl,
          timeout: this.timeoutMs,
          maxRetries: 0,
          // Never the OPENAI_* environment of the host: this may be a third party's server.
          organization: null,
          project: null,
          adminAPIKey: null,
          webhookSecret: null,
          logLevel: 'off',
          fetch: providerFetch(this.send),
        }),
    );
    return this.#client;
  }

  private async requestWithRetries(wav: Buffer, language: string, prompt: string | undefined): Promise<{ text: string; confidence?: number }> {
    const [module, client] = await Promise.all([loadOpenAiSdk(), this.client()]);
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.attempt(module, client, wav, language, prompt);
      if (outcome.ok) return outcome;
      const { code, error } = outcome;
      const wait = error.retryAfterMs ?? DEFAULT_RETRY_WAIT_MS;
      if (!error.retryable || code === 'timeout' || attempt >= this.retries || wait > this.maxRetryWaitMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** One request: the transcript, or the failure classified (never throws for the provider's doing). */
  private async attempt(module: OpenAiModule, client: OpenAI, wav: Buffer, language: string, prompt: string | undefined): Promise<Outcome> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.timeoutMs);
    try {
      const file = await module.toFile(wav, 'utterance.wav', { type: 'audio/wav' });
      const answer: unknown = await client.audio.transcriptions.create(
        { file, model: this.model, language, response_format: this.responseFormat, ...(prompt === undefined ? {} : { prompt }) },
        { signal: deadline.signal },
      );
      const read = readAnswer(answer);
      if (read) return { ok: true, ...read };
      return { ok: false, code: 'unreadable', error: this.failure('unreadable', 'the answer has no transcript') };
    } catch (err) {
      const code: SpeechFailureCode = deadline.signal.aborted ? 'timeout' : failureCode(module, err);
      const retryAfter = err instanceof module.APIError && err.headers ? retryAfterMs(err.headers) : undefined;
      return { ok: false, code, error: this.failure(code, this.detailOf(module, code, err), retryAfter) };
    } finally {
      clearTimeout(timer);
    }
  }

  private detailOf(module: OpenAiModule, code: SpeechFailureCode, err: unknown): string {
    if (code === 'timeout') return `no answer within ${this.timeoutMs} ms`;
    if (err instanceof module.APIError && err.status !== undefined) {
      const body = err.error as { message?: unknown } | undefined;
      return typeof body?.message === 'string' ? body.message : err.message.replace(/^\d{3} /, '');
    }
    const cause = (err as { cause?: { code?: unknown; cause?: { code?: unknown } } } | undefined)?.cause;
    // The SSRF guard's refusal (a name now pointing inside, say): Ferry's words, safe to show.
    const guarded = cause?.cause;
    if (guarded instanceof GuardedHttpError) return `cannot reach the provider: ${guarded.message} (${guarded.kind})`;
    const reason = cause?.code ?? cause?.cause?.code ?? (err as Error | undefined)?.name ?? 'unknown';
    return `cannot reach the provider (${String(reason)})`;
  }

  private failure(code: SpeechFailureCode, detail: string, retryAfterMs?: number): SpeechError {
    return classifyTranscriptionFailure({ engine: this.id, code, detail, retryAfterMs, secrets: [this.#apiKey] });
  }
}

/** Hints as Whisper's prompt: a comma-separated list of the words to expect, bounded. */
function promptOf(hints: readonly string[] | undefined): string | undefined {
  const words = (hints ?? []).map((hint) => String(hint).replace(/\s+/g, ' ').trim()).filter((hint) => hint !== '');
  if (words.length === 0) return undefined;
  const prompt = words.join(', ');
  return prompt.length > MAX_PROMPT_LENGTH ? prompt.slice(0, MAX_PROMPT_LENGTH) : prompt;
}

/** The text of a json / verbose_json object or a text answer; undefined when there is none. */
function readAnswer(answer: unknown): { text: string; confidence?: number } | undefined {
  if (typeof answer === 'string') return { text: answer.trim() };
  if (typeof answer !== 'object' || answer === null) return undefined;
  const { text, segments } = answer as { text?: unknown; segments?: unknown };
  if (typeof text !== 'string') return undefined;
  const result: { text: string; confidence?: number } = { text: text.trim() };
  if (Array.isArray(segments)) {
    const logprobs = segments
      .map((segment) => (segment as { avg_logprob?: unknown } | null)?.avg_logprob)
      .filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
    if (logprobs.length > 0) {
      const mean = logprobs.reduce((sum, value) => sum + value, 0) / logprobs.length;
      result.confidence = Math.min(1, Math.max(0, Math.exp(mean)));
    }
  }
  return result;
}

function failureCode(module: OpenAiModule, err: unknown): SpeechFailureCode {
  if (err instanceof module.APIConnectionTimeoutError) return 'timeout';
  if (err instanceof module.APIError && err.status !== undefined) return `${err.status}`;
  return 'connection';
}


/**
 * The fetch the SDK uses: only the headers the API needs (no X-Stainless-* telemetry, no OPENAI_CUSTOM_HEADERS), and
 * an error body read to at most 16 kB, rewritten to OpenAI's {"error": {"message"}} when it came in another common
 * shape, so the provider's words reach the error.
 */
function providerFetch(send: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await send(input, { ...init, headers: providerHeaders(init, SENT_HEADERS) });
    return response.status < 400 ? response : boundedErrorAnswer(response, 'wrap');
  };
}

