import PQueue from 'p-queue';
import { AudioFormatError } from '../audio/errors.js';
import { resample, TELEPHONY_RATE } from '../audio/resample.js';
import { decodeWav } from '../audio/wav.js';
import { SpeechBusyError, SpeechFailedError, SpeechInputError, SpeechUnavailableError } from './errors.js';
import { runProcess, type ProcessResult } from './run-process.js';
import type { SpeechEngine, SpeechVoice, SynthesisRequest } from './speech-engine.js';
import { ESPEAK_ENGINE_ID, findVoice, parseEspeakVoices } from './voices.js';

export interface EspeakOptions {
  /** The program; a bare name is looked up in PATH. Default "espeak-ng". */
  binary?: string;
  /** Per run; the process is killed after it. Default 10 s. */
  timeoutMs?: number;
  /** Longest text accepted, in UTF-16 code units. Default 1,000 (about two minutes of speech). */
  maxTextLength?: number;
  /** Cap on espeak-ng's WAV output; past it the process is killed. Default 16 MB (≈ 6 min at 22 kHz). */
  maxOutputBytes?: number;
  /** Runs at once. Default 2: each is a process at full speed on one core. */
  concurrency?: number;
  /** Requests allowed to wait for a free run; beyond them synthesize rejects with SpeechBusyError. Default 32. */
  maxQueued?: number;
}

export const ESPEAK_MIN_RATE = 80;
export const ESPEAK_MAX_RATE = 450;
/** Words per minute: a little slower than espeak-ng's 175, easier to follow on a narrowband call. */
export const ESPEAK_DEFAULT_RATE = 150;

const INSTALL_HINT = 'install the Debian package espeak-ng (apt-get install espeak-ng)';
/** C0 controls other than tab and newlines, and DEL: nothing to speak, and NUL would end the text early. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/**
 * Offline text-to-speech by the espeak-ng program, run as a separate process (its library is GPL-3.0; Ferry is
 * Apache-2.0 and only executes it). The text goes on stdin, never in argv, so text such as "--help" is spoken rather
 * than parsed; SSML is off (no -m), so markup in customer text is read out, not obeyed. Runs are pooled so a burst
 * of calls cannot fork one process each.
 */
export class EspeakSynthesizer implements SpeechEngine {
  readonly id = ESPEAK_ENGINE_ID;
  private readonly binary: string;
  private readonly timeoutMs: number;
  private readonly maxTextLength: number;
  private readonly maxOutputBytes: number;
  private readonly maxQueued: number;
  private readonly pool: PQueue;
  private availability?: Promise<boolean>;
  private catalogue?: Promise<SpeechVoice[]>;

  constructor(options: EspeakOptions = {}) {
    this.binary = options.binary ?? 'espeak-ng';
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxTextLength = options.maxTextLength ?? 1_000;
    this.maxOutputBytes = options.maxOutputBytes ?? 16 * 1024 * 1024;
    this.maxQueued = options.maxQueued ?? 32;
    this.pool = new PQueue({ concurrency: options.concurrency ?? 2 });
  }

  /** Whether the program runs here (checked once, by `espeak-ng --version`). */
  available(): Promise<boolean> {
    this.availability ??= this.run(['--version'], '').then(
      (result) => result.code === 0,
      (err: unknown) => {
        // A missing program stays missing; anything else (out of processes …) is asked again next time.
        if (!(err instanceof SpeechUnavailableError)) this.availability = undefined;
        return false;
      },
    );
    return this.availability;
  }

  /** The installed voices, read once from `espeak-ng --voices`. */
  voices(): Promise<SpeechVoice[]> {
    this.catalogue ??= this.loadVoices().catch((err: unknown) => {
      // Asked again next time: a failed listing is not a fact about the host.
      this.catalogue = undefined;
      throw err;
    });
    return this.catalogue;
  }

  async synthesize(request: SynthesisRequest): Promise<Int16Array> {
    const text = this.checkText(request.text);
    const rate = checkRate(request.rate ?? ESPEAK_DEFAULT_RATE);
    if (!(await this.available())) throw this.unavailable();
    const voice = findVoice(await this.voices(), request.voice);
    if (!voice) throw new SpeechInputError(`espeak-ng has no voice for "${request.voice}"`);
    if (this.pool.size >= this.maxQueued) {
      throw new SpeechBusyError(`speech synthesis is busy (${this.pool.size} requests waiting); try again shortly`);
    }
    // -b 1: the input is UTF-8. No -m: SSML and other markup stay plain text.
    const args = ['-v', voice.id, '-s', String(rate), '-b', '1', '--stdin', '--stdout'];
    const result = await this.pool.add(() => this.run(args, text));
    return this.toTelephonyPcm(this.checkResult(result, 'synthesis'));
  }

  private async loadVoices(): Promise<SpeechVoice[]> {
    if (!(await this.available())) throw this.unavailable();
    const result = await this.run(['--voices'], '');
    const voices = parseEspeakVoices(this.checkResult(result, 'listing voices').toString('utf8'));
    if (voices.length === 0) throw new SpeechFailedError('espeak-ng listed no voices');
    return voices;
  }

  private async run(args: string[], input: string): Promise<ProcessResult> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
    if (process.env.ESPEAK_DATA_PATH) env.ESPEAK_DATA_PATH = process.env.ESPEAK_DATA_PATH;
    try {
      return await runProcess(this.binary, args, input, { timeoutMs: this.timeoutMs, maxStdoutBytes: this.maxOutputBytes }, env);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES') throw this.unavailable(err);
      throw new SpeechFailedError(`cannot start espeak-ng: ${(err as Error).message}`, { cause: err });
    }
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

  private checkResult(result: ProcessResult, what: string): Buffer {
    if (result.killedFor === 'timeout') throw new SpeechFailedError(`espeak-ng ${what} took over ${this.timeoutMs} ms`);
    if (result.killedFor === 'output') {
      throw new SpeechFailedError(`espeak-ng ${what} wrote over ${this.maxOutputBytes} bytes`);
    }
    if (result.code !== 0) {
      const how = result.code === null ? `was killed by ${result.signal}` : `exited with ${result.code}`;
      throw new SpeechFailedError(`espeak-ng ${what} ${how}${result.stderr ? `: ${result.stderr}` : ''}`);
    }
    return result.stdout;
  }

  private toTelephonyPcm(wav: Buffer): Int16Array {
    try {
      // espeak-ng streams its WAV, so the header's data size is a placeholder (0x7ffff000).
      const { pcm, sampleRate } = decodeWav(wav, {
        maxBytes: this.maxOutputBytes,
        maxDurationSeconds: Infinity,
        streamedLength: true,
      });
      return resample(pcm, sampleRate, TELEPHONY_RATE);
    } catch (err) {
      if (err instanceof AudioFormatError) throw new SpeechFailedError(`espeak-ng output: ${err.message}`, { cause: err });
      throw err;
    }
  }

  private unavailable(cause?: unknown): SpeechUnavailableError {
    return new SpeechUnavailableError(`text-to-speech is unavailable: cannot run ${this.binary}; ${INSTALL_HINT}`, { cause });
  }
}

function checkRate(rate: number): number {
  if (!Number.isFinite(rate) || rate < ESPEAK_MIN_RATE || rate > ESPEAK_MAX_RATE) {
    throw new SpeechInputError(`the speaking rate must be ${ESPEAK_MIN_RATE}–${ESPEAK_MAX_RATE} words a minute`);
  }
  return Math.round(rate);
}
