/**
 * Voice activity detection: WebRTC's VAD (libfvad, compiled to WASM by @echogarden/fvad-wasm). Its GMM classifier
 * tells speech from noise, steady tones and clicks far better than a level threshold, at about a microsecond and a
 * half per 20 ms frame. The WASM module loads on first use (or preloadVad()), once per thread, and is shared by
 * every Vad on that thread; each Vad is one libfvad instance with its own adaptive state.
 */
import type { FvadModule } from '@echogarden/fvad-wasm';

/** How readily audio counts as speech: 0 the most (quality), 3 the least (very aggressive; noisy lines). */
export type VadMode = 0 | 1 | 2 | 3;
export type VadSampleRate = 8000 | 16000 | 32000 | 48000;

export interface VadOptions {
  /** Default 2: aggressive enough for phone lines, and a word's weak consonants still count. */
  mode?: VadMode;
  /** Default 8000 (telephony). */
  sampleRate?: VadSampleRate;
  /**
   * A new (or reset) detector calls any audio above digital silence speech for its first 80-140 ms, until it has
   * learnt the line's noise: its answers are "not speech" for this long (default 200 ms), while it still learns.
   */
  warmupMs?: number;
}

/** The largest frame libfvad takes: 30 ms at 48 kHz. */
const MAX_FRAME_SAMPLES = 1440;

interface Loaded {
  module: FvadModule;
  /** One frame's worth of WASM memory per thread: isSpeech() copies in and classifies synchronously, so Vads share it. */
  scratch: number;
}

let loading: Promise<Loaded> | undefined;

function load(): Promise<Loaded> {
  loading ??= (async () => {
    const { default: createFvad } = await import('@echogarden/fvad-wasm');
    const module = await createFvad();
    const scratch = module._malloc(MAX_FRAME_SAMPLES * 2);
    if (scratch === 0) throw new Error('VAD: no WASM memory for a frame');
    return { module, scratch };
  })();
  // A failed load is not cached: the next create() tries again.
  loading.catch(() => (loading = undefined));
  return loading;
}

/** Starts loading the WASM module now (e.g. at worker start), so a later create() does not wait for it. */
export function preloadVad(): Promise<void> {
  return load().then(() => undefined);
}

export class Vad {
  private instance: number;
  private readonly frameLengths: readonly number[];
  private readonly warmupSamples: number;
  /** Samples still to classify before answers count (warmupMs). */
  private warmupLeft: number;

  private constructor(
    private readonly loaded: Loaded,
    instance: number,
    readonly sampleRate: VadSampleRate,
    private currentMode: VadMode,
    warmupMs: number,
  ) {
    this.instance = instance;
    const perMs = sampleRate / 1000;
    this.frameLengths = [10 * perMs, 20 * perMs, 30 * perMs];
    this.warmupSamples = Math.round(warmupMs * perMs);
    this.warmupLeft = this.warmupSamples;
  }

  /** A detector; the first on a thread waits for the WASM module to load. */
  static async create(options: VadOptions = {}): Promise<Vad> {
    const mode = options.mode ?? 2;
    const sampleRate = options.sampleRate ?? 8000;
    const warmupMs = options.warmupMs ?? 200;
    checkMode(mode);
    if (!Number.isFinite(warmupMs) || warmupMs < 0) throw new RangeError(`VAD: warmupMs must be a finite number ≥ 0, not ${warmupMs}`);
    const loaded = await load();
    const { module } = loaded;
    const instance = module._fvad_new();
    if (instance === 0) throw new Error('VAD: no WASM memory for a detector');
    if (module._fvad_set_sample_rate(instance, sampleRate) !== 0 || module._fvad_set_mode(instance, mode) !== 0) {
      module._fvad_free(instance);
      throw new RangeError(`VAD: sample rate ${sampleRate} is not 8000, 16000, 32000 or 48000`);
    }
    return new Vad(loaded, instance, sampleRate, mode, warmupMs);
  }

  get mode(): VadMode {
    return this.currentMode;
  }

  set mode(mode: VadMode) {
    checkMode(mode);
    this.loaded.module._fvad_set_mode(this.liveInstance(), mode);
    this.currentMode = mode;
  }

  /**
   * Whether one frame of 10, 20 or 30 ms (at 8 kHz: 80, 160 or 240 samples) is speech. The detector adapts to the
   * line's noise as it goes, so feed it the stream's frames in order. Allocates nothing.
   */
  isSpeech(frame: Int16Array): boolean {
    const instance = this.liveInstance();
    const length = frame.length;
    if (length !== this.frameLengths[0] && length !== this.frameLengths[1] && length !== this.frameLengths[2]) {
      throw new RangeError(`VAD: a frame is 10, 20 or 30 ms (${this.frameLengths.join(', ')} samples at ${this.sampleRate} Hz), not ${length} samples`);
    }
    const { module, scratch } = this.loaded;
    module.HEAP16.set(frame, scratch >> 1);
    const speech = module._fvad_process(instance, scratch, length) === 1;
    if (this.warmupLeft <= 0) return speech;
    this.warmupLeft -= length;
    return false;
  }

  /** Forgets what it learnt of the line (a new call on the same detector); the warm-up starts again. */
  reset(): void {
    const { module } = this.loaded;
    const instance = this.liveInstance();
    module._fvad_reset(instance);
    // fvad_reset also restores the defaults.
    module._fvad_set_sample_rate(instance, this.sampleRate);
    module._fvad_set_mode(instance, this.currentMode);
    this.warmupLeft = this.warmupSamples;
  }

  /** Frees the detector's WASM memory. Idempotent; the Vad is unusable afterwards. */
  close(): void {
    if (this.instance === 0) return;
    this.loaded.module._fvad_free(this.instance);
    this.instance = 0;
  }

  private liveInstance(): number {
    if (this.instance === 0) throw new Error('VAD: used after close()');
    return this.instance;
  }
}

function checkMode(mode: number): void {
  if (!(mode === 0 || mode === 1 || mode === 2 || mode === 3)) throw new RangeError(`VAD: mode is 0, 1, 2 or 3, not ${mode}`);
}
