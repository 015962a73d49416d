import { access, constants, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import PQueue from 'p-queue';
import { resample, TELEPHONY_RATE } from '../../audio/resample.js';
import { encodeWav } from '../../audio/wav.js';
import { SpeechBusyError, SpeechFailedError, SpeechInputError, SpeechUnavailableError } from '../errors.js';
import { runProcess, type ProcessResult } from '../run-process.js';
import type { RecognitionRequest, RecognitionResult, SpeechRecognizer } from './speech-recognizer.js';
import { servesLocale } from './speech-recognizer.js';

export interface PocketsphinxOptions {
  /** The program; a bare name is looked up in PATH. Default "pocketsphinx_continuous". */
  binary?: string;
  /**
   * The model folder as Debian's pocketsphinx-en-us lays it out: the acoustic model in `en-us/`, the language model
   * `en-us.lm.bin` and the dictionary `cmudict-en-us.dict`. Default /usr/share/pocketsphinx/model/en-us.
   */
  modelDir?: string;
  /** Per utterance; the process is killed after it. Default 15 s. */
  timeoutMs?: number;
  /** Cap on the program's output (the hypotheses); past it the process is killed. Default 64 kB. */
  maxOutputBytes?: number;
  /** Longest utterance accepted. Default 30 s: a turn of a call, not a recording. */
  maxSeconds?: number;
  /** Runs at once. Default 2: each is a process at full speed on one core. */
  concurrency?: number;
  /** Requests allowed to wait for a free run; beyond them recognize rejects with SpeechBusyError. Default 16. */
  maxQueued?: number;
  /**
   * Condition telephone audio for the wideband (16 kHz) model: fill the empty 4–8 kHz band with a faint noise floor
   * and start cepstral normalisation from narrowband statistics. Default true; turn off for a model trained on 8 kHz.
   */
  narrowband?: boolean;
}

export const POCKETSPHINX_ENGINE_ID = 'pocketsphinx';
export const POCKETSPHINX_DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

/** The model's rate: Debian's en-us acoustic model is trained on 16 kHz speech. */
const MODEL_RATE = 16_000;
const INSTALL_HINT = 'install the Debian packages pocketsphinx and pocketsphinx-en-us';
/**
 * The noise floor's peak, in 16-bit units (about −55 dBFS RMS): a telephone line's own hiss level. Without it the
 * upper mel filters of the 16 kHz front end see digital silence, their log energies dive, and every frame is heard
 * as "ah" (measured: espeak-ng's "I want to talk to a person" at 8 kHz decoded as "ha ha ha").
 */
const NOISE_FLOOR = 100;
/**
 * Cepstral means of narrowband speech plus that floor, measured with this model on 12 s of espeak-ng speech (the log
 * line "cmn_live … Update to"). The model's own -cmninit (41.00,-5.29,…) is for wideband speech; since live CMN only
 * updates at the end of an utterance, starting from it mis-hears the whole first (often only) utterance.
 */
const NARROWBAND_CMNINIT = '59.17,6.89,-13.28,22.83,-8.17,-8.86,2.78,-20.98,-4.67,-1.90,-2.26,2.58,-9.57';
const LOG_KEPT = 4_096;

/**
 * Offline speech-to-text by CMU Pocketsphinx's `pocketsphinx_continuous`, one process per utterance (its library is
 * BSD-licensed, but Debian's build ships the program; loading the 134,000-word dictionary dominates each run, about
 * 0.6 s of the ≈1 s a 2-second utterance takes here). The utterance is written as a 16 kHz WAV to a private temp
 * folder, which is removed afterwards whatever happens. US English only: the only model Debian packages.
 *
 * `hints` are not used: this build offers only a fixed language model or a closed grammar, and a grammar made of
 * hints would force every utterance onto those words.
 */
export class PocketsphinxRecognizer implements SpeechRecognizer {
  readonly id = POCKETSPHINX_ENGINE_ID;
  private readonly binary: string;
  private readonly modelDir: string;
  private readonly timeoutMs: number;
  private readonly maxOutputBytes: number;
  private readonly maxSeconds: number;
  private readonly maxQueued: number;
  private readonly narrowband: boolean;
  private readonly pool: PQueue;
  private availability?: Promise<boolean>;

  constructor(options: PocketsphinxOptions = {}) {
    this.binary = options.binary ?? 'pocketsphinx_continuous';
    this.modelDir = options.modelDir ?? POCKETSPHINX_DEFAULT_MODEL_DIR;
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
    this.maxSeconds = options.maxSeconds ?? 30;
    this.maxQueued = options.maxQueued ?? 16;
    this.narrowband = options.narrowband ?? true;
    this.pool = new PQueue({ concurrency: options.concurrency ?? 2 });
  }

  /** Whether the program starts and the model files are there (checked once). */
  available(): Promise<boolean> {
    this.availability ??= this.check().catch(() => {
      // Out of processes or the like: not a fact about the host, so asked again next time.
      this.availability = undefined;
      return false;
    });
    return this.availability;
  }

  locales(): Promise<string[]> {
    return Promise.resolve(['en-US']);
  }

  async recognize(request: RecognitionRequest): Promise<RecognitionResult> {
    const started = performance.now();
    const pcm = checkPcm(request.pcm, this.maxSeconds);
    if (!servesLocale(['en-US'], request.locale)) {
      throw new SpeechInputError(`pocketsphinx hears only en-US, not "${request.locale}"`);
    }
    if (!(await this.available())) throw this.unavailable();
    if (pcm.length === 0) return { text: '', engineMs: performance.now() - started };
    if (this.pool.size >= this.maxQueued) {
      throw new SpeechBusyError(`speech recognition is busy (${this.pool.size} utterances waiting); try again shortly`);
    }
    const text = await this.pool.add(() => this.decode(pcm));
    return { text, engineMs: performance.now() - started };
  }

  private async check(): Promise<boolean> {
    for (const file of [join(this.modelDir, 'en-us', 'mdef'), this.lmPath, this.dictPath]) {
      try {
        await access(file, constants.R_OK);
      } catch {
        return false;
      }
    }
    try {
      // With no arguments the program prints its usage and exits 1: it starting at all is what is asked.
      await this.run([]);
      return true;
    } catch (err) {
      if (err instanceof SpeechUnavailableError) return false;
      throw err;
    }
  }

  private get lmPath(): string {
    return join(this.modelDir, 'en-us.lm.bin');
  }

  private get dictPath(): string {
    return join(this.modelDir, 'cmudict-en-us.dict');
  }

  private async decode(pcm: Int16Array): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'ferry-pocketsphinx-'));
    try {
      const wav = join(dir, 'utterance.wav');
      const log = join(dir, 'decoder.log');
      await writeFile(wav, encodeWav(this.toModelRate(pcm), MODEL_RATE), { mode: 0o600 });
      const hmm = this.narrowband ? await this.narrowbandModel(dir) : join(this.modelDir, 'en-us');
      const args = ['-infile', wav, '-hmm', hmm, '-lm', this.lmPath, '-dict', this.dictPath, '-logfn', log];
      const result = await this.run(args);
      if (result.killedFor === 'timeout') throw new SpeechFailedError(`pocketsphinx took over ${this.timeoutMs} ms`);
      if (result.killedFor === 'output') throw new SpeechFailedError(`pocketsphinx wrote over ${this.maxOutputBytes} bytes`);
      if (result.code !== 0) {
        const how = result.code === null ? `was killed by ${result.signal}` : `exited with ${result.code}`;
        const said = await logErrors(log);
        throw new SpeechFailedError(`pocketsphinx ${how}${said ? `: ${said}` : ''}`);
      }
      return parseHypotheses(result.stdout.toString('utf8'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** 8 kHz → 16 kHz, with the noise floor when conditioning for narrowband. */
  private toModelRate(pcm: Int16Array): Int16Array {
    const wide = resample(pcm, TELEPHONY_RATE, MODEL_RATE);
    if (!this.narrowband) return wide;
    // A fixed seed: the same utterance is always heard the same way.
    let seed = 0x2545f491;
    for (let i = 0; i < wide.length; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      const noise = Math.round(((seed >>> 8) / 0xffffff - 0.5) * 2 * NOISE_FLOOR);
      wide[i] = Math.max(-32768, Math.min(32767, wide[i] + noise));
    }
    return wide;
  }

  /**
   * The acoustic model with the narrowband -cmninit. This build lets feat.params override the command line, so the
   * folder is rebuilt as symlinks to the model's files next to a rewritten feat.params (cheap: eight links).
   */
  private async narrowbandModel(dir: string): Promise<string> {
    const source = join(this.modelDir, 'en-us');
    const target = join(dir, 'hmm');
    await mkdir(target);
    for (const name of await readdir(source)) {
      if (name !== 'feat.params') await symlink(join(source, name), join(target, name));
    }
    const params = await readFile(join(source, 'feat.params'), 'utf8');
    const cmn = `-cmninit ${NARROWBAND_CMNINIT}`;
    await writeFile(join(target, 'feat.params'), /^-cmninit .*$/m.test(params) ? params.replace(/^-cmninit .*$/m, cmn) : `${params}\n${cmn}\n`);
    return target;
  }

  private async run(args: string[]): Promise<ProcessResult> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
    try {
      return await runProcess(this.binary, args, '', { timeoutMs: this.timeoutMs, maxStdoutBytes: this.maxOutputBytes }, env);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES') throw this.unavailable(err);
      throw new SpeechFailedError(`cannot start pocketsphinx: ${(err as Error).message}`, { cause: err });
    }
  }

  private unavailable(cause?: unknown): SpeechUnavailableError {
    return new SpeechUnavailableError(
      `speech recognition is unavailable: cannot run ${this.binary} with the model in ${this.modelDir}; ${INSTALL_HINT}`,
      { cause },
    );
  }
}

function checkPcm(pcm: unknown, maxSeconds: number): Int16Array {
  if (!(pcm instanceof Int16Array)) throw new SpeechInputError('the audio must be 16-bit PCM (an Int16Array)');
  const seconds = pcm.length / TELEPHONY_RATE;
  if (seconds > maxSeconds) {
    throw new SpeechInputError(`the utterance lasts ${seconds.toFixed(1)} s, over the limit of ${maxSeconds} s`);
  }
  return pcm;
}

/**
 * The program prints one line per stretch of speech its voice detector found; together they are the utterance.
 * Alternate pronunciations ("read(2)") and fillers ("<sil>", "[NOISE]") are not words.
 */
export function parseHypotheses(stdout: string): string {
  return stdout
    .split(/\s+/)
    .map((word) => word.replace(/\(\d+\)$/, ''))
    .filter((word) => word !== '' && !/^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(word))
    .join(' ');
}

/** The ERROR and FATAL lines of the decoder's log, one line, bounded. */
async function logErrors(path: string): Promise<string> {
  let log: string;
  try {
    const bytes = await readFile(path);
    log = bytes.subarray(Math.max(0, bytes.length - LOG_KEPT)).toString('utf8');
  } catch {
    return '';
  }
  return log
    .split('\n')
    .filter((line) => /^(ERROR|FATAL)/.test(line))
    .join('; ')
    .slice(0, 300);
}
