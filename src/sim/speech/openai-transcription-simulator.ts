import type { IncomingMessage, ServerResponse } from 'node:http';
import { OpenAiSimServer, type SimRequestBase } from '../openai-sim-server.js';
import { AudioFormatError } from '../../audio/errors.js';
import { wavToTelephonyPcm } from '../../audio/telephony-audio.js';
import { TELEPHONY_RATE } from '../../audio/resample.js';
import type { SpeechRecognizer } from '../../speech/recognition/speech-recognizer.js';

export interface OpenAiTranscriptionSimulatorOptions {
  /**
   * What hears the uploaded audio when no scripted transcript is queued, e.g. a PocketsphinxRecognizer; used only
   * when it is available. Without one (or with it unavailable) an unscripted request is heard as silence ("").
   */
  recognizer?: SpeechRecognizer;
  /** Models it accepts; default any non-empty name. */
  models?: string[];
  /** Larger request bodies are refused with 413. Default 4 MB. */
  maxBodyBytes?: number;
  /** Longest audio accepted. Default 60 s. */
  maxSeconds?: number;
}

/** One request as the simulator saw it and answered it. */
export interface SimTranscriptionRequest extends SimRequestBase {
  model?: string;
  language?: string;
  prompt?: string;
  responseFormat?: string;
  fileName?: string;
  /** The uploaded WAV's own rate and length, when it decoded. */
  sampleRate?: number;
  audioSeconds?: number;
  /** Where the transcript came from. */
  heardBy?: 'script' | 'recognizer' | 'nothing';
  text?: string;
  /** The scripted fault or delay applied, if any. */
  fault?: string;
}

/** A scripted failure for the next request(s). */
export interface SimTranscriptionFault {
  status: number;
  message?: string;
  /** Sent as Retry-After, in seconds. */
  retryAfterSeconds?: number;
  /** How many requests get it. Default 1. */
  times?: number;
}

const PATH = '/v1/audio/transcriptions';
const FORMATS = new Set(['json', 'text', 'verbose_json']);
const KNOWN_FORMATS = new Set(['json', 'text', 'verbose_json', 'srt', 'vtt']);

/**
 * An OpenAI-compatible speech-to-text server (`POST /v1/audio/transcriptions`, multipart/form-data) on 127.0.0.1 for
 * tests and local runs. It checks the Bearer key and the form as OpenAI does, requires a WAV it can decode, answers in
 * json, text or verbose_json, and errors in OpenAI's shape. What it "hears" is, in order: the next transcript the
 * test queued with `script()`, else what `recognizer` (e.g. Pocketsphinx) makes of the audio, else silence.
 * Faults (a status, optionally with Retry-After) and delays are queued too. Uses node:http only.
 */
export class OpenAiTranscriptionSimulator extends OpenAiSimServer<SimTranscriptionRequest> {
  private readonly transcripts: string[] = [];
  private readonly faults: SimTranscriptionFault[] = [];
  private readonly delays: number[] = [];
  private readonly maxSeconds: number;

  constructor(private readonly options: OpenAiTranscriptionSimulatorOptions = {}) {
    super('transcription', options.maxBodyBytes ?? 4 * 1024 * 1024);
    this.maxSeconds = options.maxSeconds ?? 60;
  }

  /** What the next requests are heard as, in order (ahead of the recognizer). */
  script(...transcripts: string[]): void {
    this.transcripts.push(...transcripts);
  }

  /** The next request(s) fail with this status (after any delay). */
  fail(fault: SimTranscriptionFault): void {
    this.faults.push({ ...fault, times: fault.times ?? 1 });
  }

  /** The next request waits this long before answering (or until the client leaves). */
  delay(ms: number): void {
    this.delays.push(ms);
  }

  async start(options: { port?: number; apiKey: string }): Promise<void> {
    await this.listen(options.port, options.apiKey);
  }

  protected record(common: SimRequestBase): SimTranscriptionRequest {
    return { ...common };
  }

  protected async answer(req: IncomingMessage, res: ServerResponse, entry: SimTranscriptionRequest): Promise<void> {
    if (this.guard(req, res, entry, { path: PATH, method: 'POST' })) return;
    const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(req.headers['content-type'] ?? '');
    if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? '') || !boundary) {
      req.resume();
      return this.error(res, entry, 400, 'The request must be multipart/form-data.', 'invalid_request_error');
    }
    const body = await this.readBody(req, res, entry);
    if (body === null) return;
    const form = parseMultipart(body, boundary[1] ?? boundary[2]);
    if (!form) return this.error(res, entry, 400, 'The multipart body could not be parsed.', 'invalid_request_error');
    const field = (name: string): string | undefined => form.find((part) => part.name === name && part.filename === undefined)?.data.toString('utf8');
    entry.model = field('model');
    entry.language = field('language');
    entry.prompt = field('prompt');
    entry.responseFormat = field('response_format');
    const file = form.find((part) => part.name === 'file');
    entry.fileName = file?.filename;

    const delay = this.delays.shift();
    if (delay !== undefined) {
      entry.fault = `delay ${delay}`;
      await this.sleep(delay, res);
      if (res.destroyed) return;
    }
    const fault = this.faults[0];
    if (fault) {
      if (--fault.times! <= 0) this.faults.shift();
      entry.fault = `${entry.fault ? `${entry.fault}, ` : ''}${fault.status}`;
      if (fault.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(fault.retryAfterSeconds));
      const type = fault.status === 429 ? 'requests' : fault.status >= 500 ? 'server_error' : 'invalid_request_error';
      return this.error(res, entry, fault.status, fault.message ?? `Simulated error ${fault.status}`, type);
    }

    if (!entry.model) return this.error(res, entry, 400, "Missing required parameter: 'model'.", 'invalid_request_error', 'missing_required_parameter', 'model');
    if (this.options.models && !this.options.models.includes(entry.model)) {
      return this.error(res, entry, 404, `The model '${entry.model}' does not exist.`, 'invalid_request_error', 'model_not_found', 'model');
    }
    if (!file || file.filename === undefined) {
      return this.error(res, entry, 400, "Missing required parameter: 'file'.", 'invalid_request_error', 'missing_required_parameter', 'file');
    }
    const format = entry.responseFormat ?? 'json';
    if (!KNOWN_FORMATS.has(format)) {
      return this.error(res, entry, 400, `Invalid value for 'response_format': ${JSON.stringify(format)}.`, 'invalid_request_error', 'invalid_value', 'response_format');
    }
    if (!FORMATS.has(format)) {
      return this.error(res, entry, 400, `This server answers only json, text and verbose_json, not ${format}.`, 'invalid_request_error', 'unsupported_value', 'response_format');
    }
    let pcm: Int16Array;
    try {
      pcm = wavToTelephonyPcm(file.data, { maxBytes: this.maxBodyBytes, maxDurationSeconds: this.maxSeconds });
      entry.sampleRate = readWavRate(file.data);
      entry.audioSeconds = pcm.length / TELEPHONY_RATE;
    } catch (err) {
      if (!(err instanceof AudioFormatError)) throw err;
      return this.error(res, entry, 400, `Invalid file format: ${err.message}. This server reads WAV only.`, 'invalid_request_error', 'invalid_value', 'file');
    }

    const text = await this.hear(pcm, entry);
    entry.text = text;
    if (format === 'text') {
      entry.status = 200;
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`${text}\n`);
      return;
    }
    const answer =
      format === 'json'
        ? { text }
        : {
            task: 'transcribe',
            language: languageName(entry.language),
            duration: entry.audioSeconds,
            text,
            segments: text === '' ? [] : [{ id: 0, seek: 0, start: 0, end: entry.audioSeconds, text, tokens: [], temperature: 0, avg_logprob: -0.2, compression_ratio: 1, no_speech_prob: 0.01 }],
          };
    this.json(res, entry, 200, answer);
  }

  private async hear(pcm: Int16Array, entry: SimTranscriptionRequest): Promise<string> {
    const scripted = this.transcripts.shift();
    if (scripted !== undefined) {
      entry.heardBy = 'script';
      return scripted;
    }
    const recognizer = this.options.recognizer;
    if (recognizer && (await recognizer.available())) {
      entry.heardBy = 'recognizer';
      return (await recognizer.recognize({ pcm, locale: entry.language ?? 'en' })).text;
    }
    entry.heardBy = 'nothing';
    return '';
  }
}

interface FormPart {
  name?: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

/** A multipart/form-data body's parts, or null when it is not one (RFC 7578; CRLF line ends as every client sends). */
export function parseMultipart(body: Buffer, boundary: string): FormPart[] | null {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FormPart[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) return null;
  // Each pass moves past one delimiter, so the walk ends within body.length / delimiter.length steps.
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString('latin1') === '--') return parts;
    if (body.subarray(at, at + 2).toString('latin1') !== '\r\n') return null;
    const headerEnd = body.indexOf('\r\n\r\n', at + 2);
    if (headerEnd < 0) return null;
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd + 4);
    if (next < 0) return null;
    const part: FormPart = { data: body.subarray(headerEnd + 4, next) };
    for (const line of body.subarray(at + 2, headerEnd).toString('utf8').split('\r\n')) {
      const [key, ...rest] = line.split(':');
      const value = rest.join(':').trim();
      if (/^content-disposition$/i.test(key.trim())) {
        part.name = /\bname="([^"]*)"/i.exec(value)?.[1];
        part.filename = /\bfilename="([^"]*)"/i.exec(value)?.[1];
      } else if (/^content-type$/i.test(key.trim())) {
        part.contentType = value;
      }
    }
    parts.push(part);
    at = next + 2;
  }
}

/** The rate a WAV declares (its fmt chunk has been checked by the decoder already). */
function readWavRate(wav: Buffer): number | undefined {
  const fmt = wav.indexOf('fmt ', 12, 'latin1');
  return fmt < 0 || fmt + 16 > wav.length ? undefined : wav.readUInt32LE(fmt + 12);
}

function languageName(code: string | undefined): string {
  try {
    return code ? (new Intl.DisplayNames(['en'], { type: 'language' }).of(code) ?? code).toLowerCase() : 'english';
  } catch {
    return code ?? 'english';
  }
}
