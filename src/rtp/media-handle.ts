/** The main thread's side of one session hosted in a media worker: commands go over, events come back. */
import { EventEmitter } from 'node:events';
import { dtmfEventCode } from './dtmf.js';
import type { DigitSource, MediaSessionStats, Negotiated, RemoteAddress } from './media-session.js';
import type { WorkerRequest } from './media-worker.js';
import type { SpeechRun } from './speech-profiler.js';

export interface MediaHandleEvents {
  digit: [digit: string, source: DigitSource];
  playbackDone: [];
  rtpTimeout: [];
  /** The far end's speech in its first audio (OpenOptions.speechProfile). */
  speechProfile: [runs: SpeechRun[]];
}

export interface MediaStopResult {
  stats: MediaSessionStats;
  /** The received audio (8 kHz), when the session was opened with `record`. */
  recording?: Int16Array;
}

/** How a handle reaches its worker (the engine's side). */
export interface HandleTransport {
  post(request: WorkerRequest, transfer?: ArrayBuffer[]): void;
  stop(id: number): Promise<MediaStopResult>;
}

export interface PlayOptions {
  /** Move the samples' buffer to the worker instead of copying it (default true; the caller's array is then empty). */
  transfer?: boolean;
}

export class MediaHandle extends EventEmitter<MediaHandleEvents> {
  private stopping: Promise<MediaStopResult> | undefined;

  constructor(readonly id: number, readonly localPort: number, private readonly transport: HandleTransport) {
    super();
  }

  /** Where to send RTP (RTCP goes to port + 1), and the codec and event payload type the SDP answer chose. */
  setRemote(remote: RemoteAddress, negotiated?: Negotiated): void {
    this.transport.post({ op: 'remote', id: this.id, remote, negotiated });
  }

  /**
   * Queues 8 kHz audio; `playbackDone` fires when the queue has drained. The buffer is transferred when the
   * array owns all of it (not a view into a larger or shared one), so the caller must not use it afterwards.
   */
  play(pcm: Int16Array, options: PlayOptions = {}): void {
    if (this.stopping) return;
    const buffer = pcm.buffer;
    const movable = (options.transfer ?? true) && buffer instanceof ArrayBuffer && pcm.byteOffset === 0 && pcm.byteLength === buffer.byteLength;
    this.transport.post({ op: 'play', id: this.id, pcm }, movable ? [buffer] : undefined);
  }

  /** Resolves on the next `playbackDone`. */
  played(): Promise<void> {
    return new Promise((resolve) => this.once('playbackDone', () => resolve()));
  }

  /** Sends keys (0-9 * # A-D) as RFC 4733 events. */
  sendDigits(digits: string): void {
    for (const digit of digits) if (dtmfEventCode(digit) < 0) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
    if (this.stopping) return;
    this.transport.post({ op: 'digits', id: this.id, digits });
  }

  /** Closes the session: its final stats and recording. Idempotent. */
  stop(): Promise<MediaStopResult> {
    this.stopping ??= this.transport.stop(this.id);
    return this.stopping;
  }
}
