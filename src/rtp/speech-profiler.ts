/** A stretch of the far end's audio that carried speech, in ms from its first audio packet. */
export type SpeechRun = [startMs: number, endMs: number];

const FRAME_MS = 20;
/** A 20 ms frame louder than this (RMS, dBFS) is speech; line noise and comfort noise sit well below. */
const VOICED_DBFS = -42;
/** Gaps shorter than this between voiced frames are pauses inside one run (between words). */
const BRIDGE_MS = 300;

/**
 * Which parts of the first `windowMs` of the far end's audio were speech, placed by RTP timestamp (a late or lost
 * packet does not shift the rest). Fed the decoded 8 kHz frames as they arrive; done once the window has passed.
 */
export class SpeechProfiler {
  private firstTimestamp: number | null = null;
  private readonly runs: SpeechRun[] = [];
  private done = false;

  constructor(readonly windowMs: number) {}

  /** One decoded frame; the profile when this frame closes the window, else null. */
  push(timestamp: number, samples: Int16Array, count: number): SpeechRun[] | null {
    if (this.done || count === 0) return null;
    this.firstTimestamp ??= timestamp;
    const atMs = ((timestamp - this.firstTimestamp) >>> 0) / 8;
    if (atMs >= this.windowMs) return this.finish();
    let sum = 0;
    for (let i = 0; i < count; i++) sum += samples[i] * samples[i];
    const dbfs = 10 * Math.log10(sum / count / (32768 * 32768) + 1e-12);
    if (dbfs > VOICED_DBFS) {
      const last = this.runs[this.runs.length - 1];
      if (last && atMs - last[1] <= BRIDGE_MS) last[1] = atMs + FRAME_MS;
      else this.runs.push([atMs, atMs + FRAME_MS]);
    }
    return null;
  }

  /** The profile as far as it got (the call ended, or the far end went quiet). */
  finish(): SpeechRun[] {
    this.done = true;
    return this.runs.map((r) => [r[0], Math.min(r[1], this.windowMs)]);
  }

  get finished(): boolean {
    return this.done;
  }
}
