import type OpenAI from 'openai';
import PQueue from 'p-queue';
import { AudioFormatError } from '../audio/errors.js';
import { wavToTelephonyPcm } from '../audio/telephony-audio.js';
import { SpeechBusyError, SpeechError, SpeechInputError, SpeechUnavailableError } from './errors.js';
import type { SpeechEngine, SpeechVoice, SynthesisRequest, VoiceGender, VoiceQuality } from './speech-engine.js';
import { classifySpeechFailure, type SpeechFailureCode } from './speech-errors-table.js';
import { boundedErrorAnswer, loadOpenAiSdk, providerHeaders, retryAfterMs, type OpenAiSdk } from '../util/openai-compatible.js';
import { findVoice, toBcp47 } from './voices.js';

/** One voice of the provider and the locale it speaks, as the operator configures it. */
export interface OpenAiSpeechVoiceConfig {
  /** BCP 47, e.g. "tw-GH". */
  locale: string;
  /** The provider's voice name, sent as `voice` (e.g. "twi"). */
  voice: string;
  name?: string;
  gender?: VoiceGender;
  /** Said honestly: a natural-sounding neural voice, or a robotic one. */
  quality: VoiceQuality;
}

export interface OpenAiSpeechEngineOptions {
  /** The engine id in the voice catalogue, e.g. "mms". */
  id: string;
  /** The API root, e.g. "https://tts.example.org/v1" (the SDK appends /audio/speech). */
  baseUrl: string;
  /** Sent as a Bearer token; never logged, never in an error message. An empty key leaves the engine unavailable. */
  apiKey: string;
  model: string;
  voices: OpenAiSpeechVoiceConfig[];
  /** Per attempt, from the request to the last byte of audio. Default 15 s. */
  timeoutMs?: number;
  /** Longest text accepted, in UTF-16 code units. Default 1,000 (OpenAI's own limit is 4,096). */
  maxTextLength?: number;
  /** Cap on the WAV answer; reading stops past it. Default 16 MB (≈ 5.8 min at 24 kHz). */
  maxAudioBytes?: number;
  /** Longest audio accepted. Default 300 s. */
  maxDurationSeconds?: number;
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
  /** Requests allowed to wait for a free slot; beyond them synthesize rejects with SpeechBusyError. Default 32. */
  maxQueued?: number;
  /** Further attempts after a retryable answer (429, 5xx, connection failure; never after a timeout). Default 1. */
  retries?: number;
  /** A Retry-After longer than this is not waited for: the error goes to the caller with its retryAfterMs. Default 2 s. */
  maxRetryWaitMs?: number;
  /**
   * What requests go through; default the global fetch. A customer's endpoint would get guardedFetch(…) (SSRF guard
   * at each request, connections only to checked addresses); the operator's own provider needs none.
   */
  fetch?: typeof fetch;
}

/** Words per minute that map to the API's `speed` 1.0. */
export const OPENAI_SPEECH_NORMAL_RATE = 150;
export const OPENAI_SPEECH_MIN_RATE = 75;
export const OPENAI_SPEECH_MAX_RATE = 300;

type FailureInput = { code: SpeechFailureCode; detail?: string; retryAfterMs?: number };

/** Wait before retrying an answer that gave no Retry-After. */
const DEFAULT_RETRY_WAIT_MS = 500;
/** Error answers are short JSON; more than this is not read. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/**
 * Text-to-speech over an OpenAI-compatible `POST /audio/speech` endpoint (OpenAI itself, or a self-hosted server of
 * Meta's MMS-TTS models, which give Twi and Ewe: espeak-ng has neither). Asks for WAV, reads it under a byte cap and
 * a deadline, and decodes it to 8 kHz for calls.
 *
 * Retries are Ferry's, not the SDK's (maxRetries 0): the SDK sleeps as long as any Retry-After says, unbounded and
 * not abortable, and retries timeouts, which would keep a caller on the line for three times the timeout. Here a
 * retryable answer is asked again `retries` times (default once), after its Retry-After when that is at most
 * `maxRetryWaitMs`; a longer Retry-After, a timeout and the last failure go to the caller marked retryable.
 */
export class OpenAiSpeechEngine implements SpeechEngine {
  readonly id: string;
  // Private fields: util.inspect and JSON.stringify of the engine cannot show the key or the client, which holds it.
  readonly #apiKey: string;
  #client: Promise<{ client: OpenAI; sdk: OpenAiSdk }> | undefined;
  readonly #secrets: readonly string[];
  private readonly model: string;
  private readonly catalogue: SpeechVoice[];
  private readonly timeoutMs: number;
  private readonly maxTextLength: number;
  private readonly maxAudioBytes: number;
  private readonly maxDurationSeconds: number;
  private readonly maxQueued: number;
  private readonly retries: number;
  private readonly maxRetryWaitMs: number;
  private readonly pool: PQueue;
  private readonly baseURL: string;
  private readonly send: typeof fetch;

  constructor(options: OpenAiSpeechEngineOptions) {
    this.id = options.id;
    this.model = options.model;
    this.timeoutMs = Math.ceil(options.timeoutMs ?? 15_000);
    this.maxTextLength = options.maxTextLength ?? 1_000;
    this.maxAudioBytes = options.maxAudioBytes ?? 16 * 1024 * 1024;
    this.maxDurationSeconds = options.maxDurationSeconds ?? 300;
    this.maxQueued = options.maxQueued ?? 32;
    this.retries = options.retries ?? 1;
    this.maxRetryWaitMs = options.maxRetryWaitMs ?? 2_000;
    this.pool = new PQueue({ concurrency: options.concurrency ?? 4 });
    this.catalogue = buildCatalogue(options.id, options.voices);
    this.#secrets = [options.apiKey];
    this.#apiKey = options.apiKey;
    this.baseURL = new URL(options.baseUrl).toString().replace(/\/$/, '');
    this.send = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** The SDK client, made on the first request (the SDK is loaded then, not when the gateway starts). */
  private connect(): Promise<{ client: OpenAI; sdk: OpenAiSdk }> {
    this.#client ??= loadOpenAiSdk().then((sdk) => ({
      sdk,
      client: new sdk.OpenAI({
        apiKey: this.#apiKey,
        baseURL: this.baseURL,
        timeout: this.timeoutMs,
        maxRetries: 0,
        // Never the OPENAI_* environment of the host: this may be a third party's server.
        organization: null,
        project: null,
        adminAPIKey: null,
        webhookSecret: null,
        // Ferry logs for itself; the SDK's debug level would print requests.
        logLevel: 'off',
        fetch: providerFetch(this.send),
      }),
    }));
    return this.#client;
  }

  /** True when configured with a key and at least one voice; the provider is not asked. */
  available(): Promise<boolean> {
    return Promise.resolve(this.#apiKey !== '' && this.catalogue.length > 0);
  }

  voices(): Promise<SpeechVoice[]> {
    return Promise.resolve(this.catalogue.map((voice) => ({ ...voice, alsoServes: [...voice.alsoServes] })));
  }

  async synthesize(request: SynthesisRequest): Promise<Int16Array> {
    const text = this.checkText(request.text);
    const speed = request.rate === undefined ? undefined : checkRate(request.rate);
    const voice = findVoice(this.catalogue, request.voice);
    if (!voice) throw new SpeechInputError(`speech provider "${this.id}" has no voice for "${request.voice}"`);
    if (!this.#apiKey) throw new SpeechUnavailableError(`speech provider "${this.id}" has no API key configured`);
    if (this.pool.size >= this.maxQueued) {
      throw new SpeechBusyError(`speech provider "${this.id}" is busy (${this.pool.size} requests waiting); try again shortly`);
    }
    const wav = await this.pool.add(async () => this.requestWithRetries(await this.connect(), voice.id, text, speed));
    try {
      return wavToTelephonyPcm(wav, {
        maxBytes: this.maxAudioBytes,
        maxDurationSeconds: this.maxDurationSeconds,
        // Servers that stream their WAV (OpenAI among them) declare a placeholder data size.
        streamedLength: true,
      });
    } catch (err) {
      if (!(err instanceof AudioFormatError)) throw err;
      throw this.failure({ code: 'unreadable', detail: `the audio is unusable: ${err.message}` });
    }
  }

  private async requestWithRetries(api: { client: OpenAI; sdk: OpenAiSdk }, voice: string, text: string, speed: number | undefined): Promise<Buffer> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.attempt(api, voice, text, speed);
      if (outcome.ok) return outcome.wav;
      const { code, error } = outcome;
      const wait = error.retryAfterMs ?? DEFAULT_RETRY_WAIT_MS;
      if (!error.retryable || code === 'timeout' || attempt >= this.retries || wait > this.maxRetryWaitMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** One request: the audio, or the failure classified (never throws for the provider's doing). */
  private async attempt(
    { client, sdk }: { client: OpenAI; sdk: OpenAiSdk },
    voice: string,
    input: string,
    speed: number | undefined,
  ): Promise<{ ok: true; wav: Buffer } | { ok: false; code: SpeechFailureCode; error: SpeechError }> {
    // The SDK's timeout ends when the headers arrive; this one also covers reading the audio.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.timeoutMs);
    try {
      const response = await client.audio.speech.create(
        { model: this.model, voice, input, response_format: 'wav', ...(speed === undefined ? {} : { speed }) },
        { signal: deadline.signal },
      );
      return { ok: true, wav: await readCapped(response, this.maxAudioBytes, deadline.signal) };
    } catch (err) {
      const code = deadline.signal.aborted ? 'timeout' : failureCode(err, sdk);
      const failure: FailureInput = { code, detail: this.detailOf(code, err, sdk) };
      if (err instanceof sdk.APIError && err.headers) failure.retryAfterMs = retryAfterMs(err.headers);
      return { ok: false, code, error: this.failure(failure) };
    } finally {
      clearTimeout(timer);
    }
  }

  private detailOf(code: SpeechFailureCode, err: unknown, sdk: OpenAiSdk): string {
    if (code === 'timeout') return `no complete answer within ${this.timeoutMs} ms`;
    if (err instanceof AudioTooLarge) return err.message;
    if (err instanceof sdk.APIError && err.status !== undefined) {
      const body = err.error as { message?: unknown } | undefined;
      return typeof body?.message === 'string' ? body.message : err.message.replace(/^\d{3} /, '');
    }
    // Connection failures: undici's "fetch failed" says little, its cause's code (ECONNREFUSED …) says what.
    const cause = (err as { cause?: { code?: unknown; cause?: { code?: unknown } } } | undefined)?.cause;
    const reason = cause?.code ?? cause?.cause?.code ?? (err as Error | undefined)?.name ?? 'unknown';
    return `cannot reach the provider (${String(reason)})`;
  }

  private failure(failure: FailureInput): SpeechError {
    return classifySpeechFailure({ engine: this.id, secrets: this.#secrets, ...failure });
  }

  private checkText(text: unknown): string {
    if (typeof text !== 'string') throw new SpeechInputError('the text to speak must be a string');
    if (text.length > this.maxTextLength) {
      throw new SpeechInputError(`the text to speak is ${text.length} characters, over the limit of ${this.maxTextLength}`);
    }
    const clean = text.replace(CONTROL_CHARACTERS, ' ');
    if (clean.trim() === '') throw new SpeechInputError('the text to speak is empty');
    return clean;
  }
}

/** The configured voices as catalogue entries; a voice configured for several locales is one entry serving them all. */
function buildCatalogue(engine: string, configs: readonly OpenAiSpeechVoiceConfig[]): SpeechVoice[] {
  const byId = new Map<string, SpeechVoice>();
  for (const config of configs) {
    const locale = toBcp47(config.locale);
    const language = locale.split('-')[0];
    const existing = byId.get(config.voice);
    if (existing) {
      existing.alsoServes.push({ locale, priority: 1 });
      continue;
    }
    byId.set(config.voice, {
      id: config.voice,
      locale,
      // A tw-GH voice also serves a plain "tw", after any voice made for exactly that.
      alsoServes: language === locale ? [] : [{ locale: language, priority: 5 }],
      name: config.name ?? `${locale} (${config.voice})`,
      gender: config.gender ?? 'unknown',
      engine,
      quality: config.quality,
    });
  }
  return [...byId.values()];
}

function checkRate(rate: number): number {
  if (!Number.isFinite(rate) || rate < OPENAI_SPEECH_MIN_RATE || rate > OPENAI_SPEECH_MAX_RATE) {
    throw new SpeechInputError(`the speaking rate must be ${OPENAI_SPEECH_MIN_RATE}–${OPENAI_SPEECH_MAX_RATE} words a minute`);
  }
  return Math.round((rate / OPENAI_SPEECH_NORMAL_RATE) * 100) / 100;
}

function failureCode(err: unknown, sdk: OpenAiSdk): SpeechFailureCode {
  if (err instanceof AudioTooLarge) return 'too-large';
  if (err instanceof sdk.APIConnectionTimeoutError) return 'timeout';
  if (err instanceof sdk.APIError && err.status !== undefined) return `${err.status}`;
  return 'connection';
}


class AudioTooLarge extends Error {}

/**
 * The answer's bytes, at most `cap`: a Content-Length over it is refused before reading, and a body without one
 * (chunked) is read chunk by chunk and cancelled as soon as it passes the cap, so memory stays bounded either way.
 */
async function readCapped(response: Response, cap: number, signal: AbortSignal): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > cap) {
    await response.body?.cancel().catch(() => undefined);
    throw new AudioTooLarge(`the audio is ${declared} bytes, over the limit of ${cap}`);
  }
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  // Each read either ends the stream, adds at least one byte, or (on abort) throws; the cap bounds the loop.
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > cap) {
      await reader.cancel().catch(() => undefined);
      throw new AudioTooLarge(`the audio is over the limit of ${cap} bytes`);
    }
    chunks.push(value);
  }
  // A cancel on abort ends the stream early as if complete: never take a cut-off answer for the audio.
  if (signal.aborted) throw new Error('aborted');
  return Buffer.concat(chunks, total);
}

/**
 * The fetch the SDK uses. It sends only the headers the API needs: the SDK adds its X-Stainless-* telemetry (OS,
 * architecture, runtime version) and whatever OPENAI_CUSTOM_HEADERS holds, none of which a third party's server
 * should get. An error answer's body is read to at most 16 kB (the SDK reads it whole), and a body in another common
 * shape ({"detail": …}, {"error": "…"}) is rewritten as OpenAI's {"error": {"message"}} so the provider's words reach
 * the error.
 */
function providerFetch(send: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await send(input, { ...init, headers: providerHeaders(init) });
    // Under 400 (a redirect not followed) there is no error body to bound, and some such statuses may carry none.
    return response.status < 400 ? response : boundedErrorAnswer(response);
  };
}

