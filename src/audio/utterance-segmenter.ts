/**
 * Turn-taking from a voice activity detector: cuts a stream of 20 ms 8 kHz frames into utterances. `speechStart`
 * fires once speech has lasted `startMs` (a click or a cough is shorter), `utterance` once it has been followed by
 * `endSilenceMs` of non-speech (or reached `maxUtteranceMs`), with its audio from `preRollMs` before the start (the
 * detector reacts a little late; a recogniser wants the onset) to the end of the last speech frame.
 *
 * It has no clock: time is the frames it was given, so the same frames always give the same events. Offsets are ms
 * since its first frame. After the first utterance's buffer is allocated, push() allocates nothing until an
 * utterance ends (its PCM is a fresh copy the listener owns and may transfer).
 */
import { EventEmitter } from 'node:events';

export const SEGMENTER_SAMPLE_RATE = 8000;
export const SEGMENTER_FRAME_MS = 20;
export const SEGMENTER_FRAME_SAMPLES = 160;

/** What classifies a frame: a Vad, or a stand-in in tests. */
export interface SpeechDetector {
  isSpeech(frame: Int16Array): boolean;
}

export interface UtteranceSegmenterOptions {
  /**
   * Speech needed before it counts as the start of an utterance (default 100 ms). WebRTC's VAD calls the first
   * 80 ms of a new noise floor (a line that was digitally silent starts hissing) speech in modes 2-3, 100-140 ms in
   * modes 0-1: the default stays above the former.
   */
  startMs?: number;
  /** Non-speech that ends an utterance (default 600 ms). */
  endSilenceMs?: number;
  /** An utterance is ended at this length, measured from its start (default 30 s). */
  maxUtteranceMs?: number;
  /** Audio kept from before the start (default 200 ms). */
  preRollMs?: number;
}

export type UtteranceEndReason = 'silence' | 'maxLength';

export interface UtteranceInfo {
  /** Where the speech started: ms since the segmenter's first frame. */
  startMs: number;
  /** Where the last speech frame ended (the PCM ends here too; it begins `pcm.length / 8` ms earlier). */
  endMs: number;
  /** What ended it: `endSilenceMs` of non-speech, or `maxUtteranceMs`. */
  reason: UtteranceEndReason;
}

export interface UtteranceSegmenterEvents {
  /** `startMs` of speech has been heard; `atMs` is where that speech began. */
  speechStart: [atMs: number];
  /** The utterance's audio (8 kHz, from the pre-roll to the end of the last speech frame) and its timings. */
  utterance: [pcm: Int16Array, info: UtteranceInfo];
}

/** The resolved settings, in frames. */
interface Frames {
  start: number;
  endSilence: number;
  max: number;
  preRoll: number;
}

const framesOf = (ms: number): number => Math.ceil(ms / SEGMENTER_FRAME_MS);

export class UtteranceSegmenter extends EventEmitter<UtteranceSegmenterEvents> {
  private readonly frames: Frames;
  /** Frames before an utterance: the pre-roll and the speech run that may become a start. */
  private readonly ring: Int16Array;
  private readonly ringFrames: number;
  private ringHead = 0;
  private ringCount = 0;
  /** The utterance so far (allocated at the first start, kept for the next). */
  private utteranceBuffer: Int16Array | null = null;
  private utteranceSamples = 0;
  /** Samples of the utterance up to the end of its last speech frame. */
  private lastSpeechSamples = 0;
  private speaking = false;
  private speechRun = 0;
  private silenceRun = 0;
  private startFrame = 0;
  private lastSpeechFrame = 0;
  /** Frames seen: the clock. */
  private frameIndex = 0;
  /** write()'s partial frame. */
  private readonly pending = new Int16Array(SEGMENTER_FRAME_SAMPLES);
  private pendingLength = 0;

  constructor(private readonly detector: SpeechDetector, options: UtteranceSegmenterOptions = {}) {
    super();
    const startMs = options.startMs ?? 100;
    const endSilenceMs = options.endSilenceMs ?? 600;
    const maxUtteranceMs = options.maxUtteranceMs ?? 30_000;
    const preRollMs = options.preRollMs ?? 200;
    for (const [name, value] of Object.entries({ startMs, endSilenceMs, maxUtteranceMs, preRollMs })) {
      if (!Number.isFinite(value) || value < 0) throw new RangeError(`UtteranceSegmenter: ${name} must be a finite number ≥ 0, not ${value}`);
    }
    this.frames = {
      start: Math.max(1, framesOf(startMs)),
      endSilence: Math.max(1, framesOf(endSilenceMs)),
      max: Math.max(1, framesOf(maxUtteranceMs)),
      preRoll: framesOf(preRollMs),
    };
    if (this.frames.max < this.frames.start) throw new RangeError('UtteranceSegmenter: maxUtteranceMs is shorter than startMs');
    this.ringFrames = this.frames.preRoll + this.frames.start;
    this.ring = new Int16Array(this.ringFrames * SEGMENTER_FRAME_SAMPLES);
  }

  /** Whether an utterance has started and not yet ended. */
  get inUtterance(): boolean {
    return this.speaking;
  }

  /** The clock: ms of audio given so far (frames pushed or skipped). */
  get elapsedMs(): number {
    return this.frameIndex * SEGMENTER_FRAME_MS;
  }

  /** Audio of any length: split into 20 ms frames (a partial one waits for the next call). */
  write(samples: Int16Array, count = samples.length): void {
    let at = 0;
    while (at < count) {
      const take = Math.min(SEGMENTER_FRAME_SAMPLES - this.pendingLength, count - at);
      for (let i = 0; i < take; i++) this.pending[this.pendingLength + i] = samples[at + i];
      this.pendingLength += take;
      at += take;
      if (this.pendingLength === SEGMENTER_FRAME_SAMPLES) {
        this.pendingLength = 0;
        this.push(this.pending);
      }
    }
  }

  /** One 20 ms frame (160 samples), classified by the detector. */
  push(frame: Int16Array): void {
    if (frame.length !== SEGMENTER_FRAME_SAMPLES) throw new RangeError(`UtteranceSegmenter: a frame is ${SEGMENTER_FRAME_SAMPLES} samples, not ${frame.length}`);
    this.accept(frame, this.detector.isSpeech(frame));
  }

  /**
   * A frame known not to be speech, given as `frame` without asking the detector: the gaps of a far end that
   * stops sending in silence (DTX), so an utterance still ends on time.
   */
  pushSilence(frame: Int16Array): void {
    if (frame.length !== SEGMENTER_FRAME_SAMPLES) throw new RangeError(`UtteranceSegmenter: a frame is ${SEGMENTER_FRAME_SAMPLES} samples, not ${frame.length}`);
    this.accept(frame, false);
  }

  /** Moves the clock on by `frames` frames not looked at (listening paused), so later offsets stay on the stream's timeline. */
  skip(frames = 1): void {
    if (!Number.isInteger(frames) || frames < 0) throw new RangeError(`UtteranceSegmenter: skip() takes a whole number of frames, not ${frames}`);
    this.frameIndex += frames;
  }

  /** Drops what was heard (a partial utterance is discarded without an event); the clock keeps its place. */
  reset(): void {
    this.speaking = false;
    this.speechRun = 0;
    this.silenceRun = 0;
    this.ringCount = 0;
    this.ringHead = 0;
    this.utteranceSamples = 0;
    this.lastSpeechSamples = 0;
    this.pendingLength = 0;
  }

  private accept(frame: Int16Array, speech: boolean): void {
    const index = this.frameIndex++;
    if (this.speaking) this.continueUtterance(frame, speech, index);
    else this.awaitStart(frame, speech, index);
  }

  private awaitStart(frame: Int16Array, speech: boolean, index: number): void {
    // Into the ring, overwriting the oldest frame once it is full.
    const slot = (this.ringHead + this.ringCount) % this.ringFrames;
    this.ring.set(frame, slot * SEGMENTER_FRAME_SAMPLES);
    if (this.ringCount < this.ringFrames) this.ringCount++;
    else this.ringHead = (this.ringHead + 1) % this.ringFrames;
    this.speechRun = speech ? this.speechRun + 1 : 0;
    if (this.speechRun < this.frames.start) return;

    this.speaking = true;
    this.silenceRun = 0;
    this.startFrame = index - this.frames.start + 1;
    this.lastSpeechFrame = index;
    this.utteranceBuffer ??= new Int16Array((this.frames.preRoll + this.frames.max) * SEGMENTER_FRAME_SAMPLES);
    // The ring's frames, oldest first, open the utterance: the pre-roll, then the speech run.
    const buffer = this.utteranceBuffer;
    for (let i = 0; i < this.ringCount; i++) {
      const from = ((this.ringHead + i) % this.ringFrames) * SEGMENTER_FRAME_SAMPLES;
      buffer.set(this.ring.subarray(from, from + SEGMENTER_FRAME_SAMPLES), i * SEGMENTER_FRAME_SAMPLES);
    }
    this.utteranceSamples = this.ringCount * SEGMENTER_FRAME_SAMPLES;
    this.lastSpeechSamples = this.utteranceSamples;
    this.ringCount = 0;
    this.ringHead = 0;
    this.emit('speechStart', this.startFrame * SEGMENTER_FRAME_MS);
    if (this.frames.start >= this.frames.max) this.end('maxLength');
  }

  private continueUtterance(frame: Int16Array, speech: boolean, index: number): void {
    this.utteranceBuffer!.set(frame, this.utteranceSamples);
    this.utteranceSamples += SEGMENTER_FRAME_SAMPLES;
    if (speech) {
      this.silenceRun = 0;
      this.lastSpeechFrame = index;
      this.lastSpeechSamples = this.utteranceSamples;
    } else {
      this.silenceRun++;
    }
    if (this.silenceRun >= this.frames.endSilence) this.end('silence');
    else if (index - this.startFrame + 1 >= this.frames.max) this.end('maxLength');
  }

  private end(reason: UtteranceEndReason): void {
    const buffer = this.utteranceBuffer!;
    const pcm = buffer.slice(0, this.lastSpeechSamples);
    const info: UtteranceInfo = { startMs: this.startFrame * SEGMENTER_FRAME_MS, endMs: (this.lastSpeechFrame + 1) * SEGMENTER_FRAME_MS, reason };
    // The silence that ended it is not in its audio: its last frames are the next utterance's pre-roll.
    const keep = Math.min(this.frames.preRoll, (this.utteranceSamples - this.lastSpeechSamples) / SEGMENTER_FRAME_SAMPLES);
    const from = this.utteranceSamples - keep * SEGMENTER_FRAME_SAMPLES;
    this.ring.set(buffer.subarray(from, this.utteranceSamples), 0);
    this.ringHead = 0;
    this.ringCount = keep;
    this.speaking = false;
    this.speechRun = 0;
    this.silenceRun = 0;
    this.utteranceSamples = 0;
    this.lastSpeechSamples = 0;
    this.emit('utterance', pcm, info);
  }
}
