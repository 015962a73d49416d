import type { IncomingMessage, ServerResponse } from 'node:http';
import { OpenAiSimServer, type SimRequestBase } from '../openai-sim-server.js';
import { encodeWav } from '../../audio/wav.js';
import { speechTones } from './speech-tones.js';

export interface OpenAiSpeechSimulatorOptions {
  /** Voices it speaks. Default "twi" and "ewe" (as a server of Meta's MMS-TTS models would name them). */
  voices?: string[];
  /** Models it accepts; default any non-empty name. */
  models?: string[];
  /** Rate of the audio it answers. Default 24,000 Hz like OpenAI (MMS-TTS servers answer 16,000). */
  sampleRate?: number;
  /** Speaking time per character. Default 70 ms. */
  msPerCharacter?: number;
  /** Longest audio it makes. Default 30 s. */
  maxSeconds?: number;
  /** Larger request bodies are refused with 413. Default 64 kB. */
  maxBodyBytes?: number;
  /** How long "[[slow]]" and "[[slow-body]]" stall. Default 5 s. */
  slowMs?: number;
  /** What "[[endless]]" streams at most before it ends by itself. Default 32 MB. */
  endlessBytes?: number;
  /** Faults for every request to a voice, e.g. { ewe: '503' }: any fault name below. */
  voiceFaults?: Record<string, string>;
}

/** One request as the simulator saw it and answered it. */
export interface SimSpeechRequest extends SimRequestBase {
  model?: unknown;
  voice?: unknown;
  /** As received, fault marker included. */
  input?: unknown;
  responseFormat?: unknown;
  speed?: unknown;
  fault?: string;
  /** Audio bytes written to the socket. */
  bytesSent: number;
  /** The whole answer was written (false when the client went away first). */
  completed: boolean;
}

const DEFAULT_VOICES = ['twi', 'ewe'];
const FORMATS = new Set(['wav', 'pcm']);
const KNOWN_FORMATS = new Set(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']);
const MAX_INPUT = 4096;
/**
 * Input starting with "[[name]]" or "[[name*N]]" (only the first N requests with that exact input) gets a fault:
 * a status (400, 401, 404, 429, 500, 503 …), "slow" (no answer for slowMs), "slow-body" (headers and half the audio,
 * then a stall), "chunked" (no Content-Length, a streamed WAV header as OpenAI sends), "endless" (a streamed WAV that
 * does not end until endlessBytes or the client leaves), "mp3" (bytes that are not WAV), "echo" (a 400 repeating
 * the Authorization header, as careless servers do).
 */
const FAULT_MARKER = /^\[\[([a-z0-9-]+)(?:\*(\d+))?\]\]\s*/;
const STREAMED_SIZE = 0xffffffff;
const CHUNK_BYTES = 16 * 1024;

/**
 * An OpenAI-compatible text-to-speech server (`POST /v1/audio/speech`) on 127.0.0.1 for tests and local runs: checks
 * the Bearer key and the body as OpenAI does, answers errors in OpenAI's shape, and speaks a speech-like pattern of
 * tones (WAV, or raw 16-bit little-endian PCM, at `sampleRate`) whose length grows with the text. Faults are
 * scripted by input prefix or by voice. Uses node:http only.
 */
export class OpenAiSpeechSimulator extends OpenAiSimServer<SimSpeechRequest> {
  private readonly voices: ReadonlySet<string>;
  private readonly sampleRate: number;
  private readonly slowMs: number;
  private readonly endlessBytes: number;
  private readonly faultUses = new Map<string, number>();

  constructor(private readonly options: OpenAiSpeechSimulatorOptions = {}) {
    super('speech', options.maxBodyBytes ?? 64 * 1024);
    this.voices = new Set(options.voices ?? DEFAULT_VOICES);
    this.sampleRate = options.sampleRate ?? 24_000;
    this.slowMs = options.slowMs ?? 5_000;
    this.endlessBytes = options.endlessBytes ?? 32 * 1024 * 1024;
  }

  async start(options: { port?: number; apiKey: string }): Promise<void> {
    await this.listen(options.port, options.apiKey);
  }

  protected record(common: SimRequestBase): SimSpeechRequest {
    return { ...common, bytesSent: 0, completed: false };
  }

  protected override written(entry: SimSpeechRequest): void {
    entry.completed = true;
  }

  protected async answer(req: IncomingMessage, res: ServerResponse, entry: SimSpeechRequest): Promise<void> {
    if (this.guard(req, res, entry, { path: '/v1/audio/speech', method: 'POST' })) return;
    const body = await this.readJson(req, res, entry);
    if (body === null) return;
    entry.model = body.model;
    entry.voice = body.voice;
    entry.input = body.input;
    entry.responseFormat = body.response_format;
    entry.speed = body.speed;
    const invalid = this.validate(body);
    if (invalid) return this.error(res, entry, 400, invalid.message, 'invalid_request_error', invalid.code, invalid.param);

    let text = body.input as string;
    const marker = FAULT_MARKER.exec(text);
    let fault = this.options.voiceFaults?.[body.voice as string];
    if (marker) {
      text = text.slice(marker[0].length);
      const uses = (this.faultUses.get(body.input as string) ?? 0) + 1;
      this.faultUses.set(body.input as string, uses);
      if (marker[2] === undefined || uses <= Number(marker[2])) fault = marker[1];
    }
    entry.fault = fault;
    const format = (body.response_format as string | undefined) ?? 'mp3';
    const speed = (body.speed as number | undefined) ?? 1;
    if (fault && (await this.applyFault(fault, req, res, entry))) return;

    const pcm = speechTones(text, {
      sampleRate: this.sampleRate,
      msPerCharacter: this.options.msPerCharacter ?? 70,
      speed,
      maxSeconds: this.options.maxSeconds ?? 30,
    });
    const audio = format === 'pcm' ? pcmBytes(pcm) : encodeWav(pcm, this.sampleRate);
    if (fault === 'chunked' || fault === 'slow-body') {
      if (format === 'wav') markStreamed(audio);
      return this.stream(res, entry, audio, fault === 'slow-body');
    }
    res.writeHead(200, { 'content-type': format === 'pcm' ? 'audio/pcm' : 'audio/wav', 'content-length': audio.length });
    entry.status = 200;
    res.end(audio, () => {
      entry.bytesSent = audio.length;
      entry.completed = true;
    });
  }

  /** True when the fault has answered the request. */
  private async applyFault(fault: string, req: IncomingMessage, res: ServerResponse, entry: SimSpeechRequest): Promise<boolean> {
    if (/^\d{3}$/.test(fault)) {
      const status = Number(fault);
      if (status === 429) res.setHeader('retry-after', '1');
      this.simulatedError(res, entry, status, status === 429 ? 'Rate limit reached for requests. Please try again in 1s.' : undefined);
      return true;
    }
    switch (fault) {
      case 'slow':
        await this.sleep(this.slowMs, res);
        if (!res.destroyed) this.error(res, entry, 504, 'Too slow', 'server_error');
        return true;
      case 'mp3':
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        entry.status = 200;
        res.end(Buffer.from('ID3\u0004\u0000\u0000\u0000\u0000\u0000\u0000not really an mp3'));
        entry.completed = true;
        return true;
      case 'echo':
        this.error(res, entry, 400, `Bad request with header Authorization: ${req.headers.authorization ?? ''}`, 'invalid_request_error');
        return true;
      case 'endless':
        await this.endless(res, entry);
        return true;
      default:
        return false;
    }
  }

  private validate(body: Record<string, unknown>): { message: string; param: string; code: string } | undefined {
    const { model, input, voice, response_format: format, speed } = body;
    if (typeof model !== 'string' || model === '') {
      return { message: "Missing required parameter: 'model'.", param: 'model', code: 'missing_required_parameter' };
    }
    if (this.options.models && !this.options.models.includes(model)) {
      return { message: `The model '${model}' does not exist.`, param: 'model', code: 'model_not_found' };
    }
    if (typeof input !== 'string' || input === '') {
      return { message: "Missing required parameter: 'input'.", param: 'input', code: 'missing_required_parameter' };
    }
    if (input.length > MAX_INPUT) {
      return { message: `'input' is over ${MAX_INPUT} characters.`, param: 'input', code: 'string_above_max_length' };
    }
    if (typeof voice !== 'string' || !this.voices.has(voice)) {
      const supported = [...this.voices].map((v) => `'${v}'`).join(', ');
      return { message: `Invalid value for 'voice': ${JSON.stringify(voice)}. Supported values are: ${supported}.`, param: 'voice', code: 'invalid_value' };
    }
    const wanted = format ?? 'mp3';
    if (typeof wanted !== 'string' || !KNOWN_FORMATS.has(wanted)) {
      return { message: `Invalid value for 'response_format': ${JSON.stringify(format)}.`, param: 'response_format', code: 'invalid_value' };
    }
    if (!FORMATS.has(wanted)) {
      return { message: `This server speaks only wav and pcm, not ${wanted}.`, param: 'response_format', code: 'unsupported_value' };
    }
    if (speed !== undefined && (typeof speed !== 'number' || !(speed >= 0.25 && speed <= 4))) {
      return { message: "'speed' must be a number from 0.25 to 4.0.", param: 'speed', code: 'invalid_value' };
    }
    return undefined;
  }

  /** Audio without Content-Length, in chunks; with `stall`, half of it then nothing until the client leaves. */
  private async stream(res: ServerResponse, entry: SimSpeechRequest, audio: Buffer, stall: boolean): Promise<void> {
    res.writeHead(200, { 'content-type': 'audio/wav' });
    entry.status = 200;
    const end = stall ? Math.floor(audio.length / 2) : audio.length;
    for (let at = 0; at < end && !res.destroyed; at += CHUNK_BYTES) {
      const chunk = audio.subarray(at, Math.min(end, at + CHUNK_BYTES));
      entry.bytesSent += chunk.length;
      if (!res.write(chunk)) await this.drained(res);
    }
    if (stall) {
      await this.sleep(this.slowMs, res);
      res.destroy();
      return;
    }
    res.end(() => {
      entry.completed = true;
    });
  }

  /** A streamed WAV of tones that goes on until endlessBytes or until the client goes away. */
  private async endless(res: ServerResponse, entry: SimSpeechRequest): Promise<void> {
    const header = encodeWav(new Int16Array(0), this.sampleRate);
    markStreamed(header);
    const tone = pcmBytes(speechTones('la '.repeat(40), { sampleRate: this.sampleRate, msPerCharacter: 70, speed: 1, maxSeconds: 10 }));
    res.writeHead(200, { 'content-type': 'audio/wav' });
    entry.status = 200;
    res.write(header);
    // Bounded by endlessBytes, and ends early once the client has gone.
    for (let sent = 0; sent < this.endlessBytes && !res.destroyed; ) {
      const chunk = tone.subarray(0, Math.min(tone.length, this.endlessBytes - sent));
      sent += chunk.length;
      entry.bytesSent = sent;
      if (!res.write(chunk)) await this.drained(res);
    }
    if (res.destroyed) return;
    res.end(() => {
      entry.completed = true;
    });
  }

  private drained(res: ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}

function pcmBytes(pcm: Int16Array): Buffer {
  const out = Buffer.alloc(pcm.length * 2);
  for (let i = 0; i < pcm.length; i++) out.writeInt16LE(pcm[i], i * 2);
  return out;
}

/** The RIFF and data sizes as a server streaming its WAV writes them: unknown, all ones. */
function markStreamed(wav: Buffer): void {
  wav.writeUInt32LE(STREAMED_SIZE, 4);
  wav.writeUInt32LE(STREAMED_SIZE, 40);
}
